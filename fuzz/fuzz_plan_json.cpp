// libFuzzer target: plan files (plan_from_json, then validate_plan and
// plan_memory) for the fixed graph and platform of fuzz/data/.
#include "fuzz_common.h"
#include "fuzz_inputs.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const hetsched::fuzz::PlanFixture fixture(HETSCHED_FUZZ_DATA_DIR);
  std::string text(reinterpret_cast<const char*>(data), size);
  hetsched::fuzz::expect_error_or_success("plan", [&] { hetsched::fuzz::plan_json_input(text, fixture); });
  return 0;
}
