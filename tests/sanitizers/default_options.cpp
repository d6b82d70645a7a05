// Default runtime options of the sanitizers, compiled into every executable
// of a HETSCHED_SANITIZE build (cmake/HetschedSanitize.cmake). The runtimes
// call these before main; ASAN_OPTIONS, UBSAN_OPTIONS, LSAN_OPTIONS and
// TSAN_OPTIONS in the environment are read afterwards and win. Each option is
// explained in docs/reliability.md.
#ifndef HETSCHED_SANITIZER_SUPPRESSIONS
#error "HETSCHED_SANITIZER_SUPPRESSIONS (the folder of the .supp files) must be defined"
#endif

#define HETSCHED_SUPPRESSIONS(file) "suppressions=" HETSCHED_SANITIZER_SUPPRESSIONS "/" file

extern "C" {

// halt_on_error: the first report ends the process with a failure, so a test
// cannot pass over one. allocator_may_return_null: a request larger than
// memory returns null as in a plain build (the engine turns that into
// ErrorCode::kResource) instead of ASan aborting the process itself.
// detect_leaks: LeakSanitizer at exit. check_initialization_order and
// strict_init_order: static constructors reading another file's globals
// before they are built.
const char* __asan_default_options() {
  return "halt_on_error=1:abort_on_error=0:allocator_may_return_null=1:detect_leaks=1:"
         "check_initialization_order=1:strict_init_order=1";
}

const char* __lsan_default_options() { return HETSCHED_SUPPRESSIONS("lsan.supp") ":print_suppressions=0"; }

// print_stacktrace: where the undefined behaviour happened, not just the line.
const char* __ubsan_default_options() {
  return "halt_on_error=1:print_stacktrace=1:" HETSCHED_SUPPRESSIONS("ubsan.supp");
}

// second_deadlock_stack: both stacks of a lock-order inversion.
const char* __tsan_default_options() {
  return "halt_on_error=1:second_deadlock_stack=1:" HETSCHED_SUPPRESSIONS("tsan.supp") ":print_suppressions=0";
}

}  // extern "C"
