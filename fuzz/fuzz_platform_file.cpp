// libFuzzer target: platform files (load_platform_file, then make_platform
// with every device the file declares).
#include "fuzz_common.h"
#include "fuzz_inputs.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static hetsched::fuzz::ScratchFile file("platform.json");
  const std::string& path = file.write(data, size);
  hetsched::fuzz::expect_error_or_success("platform file", [&] { hetsched::fuzz::platform_file_input(path); });
  return 0;
}
