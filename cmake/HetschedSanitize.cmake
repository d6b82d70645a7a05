# HETSCHED_SANITIZE: every target of the build (library, CLI, tests, Python
# module, anything added later) compiled and linked with sanitizers; see
# docs/reliability.md. `make check-sanitizers` uses it.
#
#   -DHETSCHED_SANITIZE=address,undefined   ASan + UBSan (LeakSanitizer included)
#   -DHETSCHED_SANITIZE=thread              TSan
#
# Every executable also gets tests/sanitizers/default_options.cpp: the
# runtime options (reports fail the run, suppression files) are compiled in,
# so a test binary run by hand, by ctest or by gtest's test discovery at
# build time behaves the same. ASAN_OPTIONS, UBSAN_OPTIONS, LSAN_OPTIONS and
# TSAN_OPTIONS in the environment still override them.
set(HETSCHED_SANITIZE "" CACHE STRING
  "Sanitizers for every target: address, undefined, thread, or a comma list such as address,undefined")
set_property(CACHE HETSCHED_SANITIZE PROPERTY STRINGS "" address undefined thread "address,undefined")

if(HETSCHED_SANITIZE)
  string(REPLACE "," ";" _hetsched_sanitizers "${HETSCHED_SANITIZE}")
  foreach(_s IN LISTS _hetsched_sanitizers)
    if(NOT _s MATCHES "^(address|undefined|thread)$")
      message(FATAL_ERROR "HETSCHED_SANITIZE: '${_s}' is not one of address, undefined, thread")
    endif()
  endforeach()
  if("thread" IN_LIST _hetsched_sanitizers AND "address" IN_LIST _hetsched_sanitizers)
    message(FATAL_ERROR "HETSCHED_SANITIZE: thread and address cannot be combined (two builds: see `make check-sanitizers`)")
  endif()
  string(REPLACE ";" "," _hetsched_sanitize_flag "${_hetsched_sanitizers}")
  # Frame pointers: whole stacks in reports at little cost.
  add_compile_options(-fsanitize=${_hetsched_sanitize_flag} -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${_hetsched_sanitize_flag})
  message(STATUS "hetsched: sanitizers ${_hetsched_sanitize_flag}")

  # Once every directory is configured: the default options into every
  # executable of the project (the runtime looks them up in the executable).
  function(_hetsched_sanitizer_defaults dir)
    get_property(_targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
    foreach(_t IN LISTS _targets)
      get_target_property(_type ${_t} TYPE)
      if(_type STREQUAL "EXECUTABLE")
        target_sources(${_t} PRIVATE ${PROJECT_SOURCE_DIR}/tests/sanitizers/default_options.cpp)
        set_property(SOURCE ${PROJECT_SOURCE_DIR}/tests/sanitizers/default_options.cpp TARGET_DIRECTORY ${_t}
          APPEND PROPERTY COMPILE_DEFINITIONS HETSCHED_SANITIZER_SUPPRESSIONS="${PROJECT_SOURCE_DIR}/tests/sanitizers")
      endif()
    endforeach()
    get_property(_subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
    foreach(_d IN LISTS _subdirs)
      _hetsched_sanitizer_defaults(${_d})
    endforeach()
  endfunction()
  cmake_language(DEFER DIRECTORY ${PROJECT_SOURCE_DIR} CALL _hetsched_sanitizer_defaults ${PROJECT_SOURCE_DIR})
endif()
