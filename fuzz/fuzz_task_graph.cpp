// libFuzzer target: the task graphs of `hetsched schedule-dag`
// (parse_task_graph, then HEFT and PEFT on small graphs).
#include "fuzz_common.h"
#include "fuzz_inputs.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  hetsched::fuzz::expect_error_or_success("task graph", [&] { hetsched::fuzz::task_graph_input(text); });
  return 0;
}
