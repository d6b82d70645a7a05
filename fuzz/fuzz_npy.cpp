// libFuzzer target: .npy input tensors (read_npy; what loads must survive a
// write_npy / read_npy round trip unchanged).
#include "fuzz_common.h"
#include "fuzz_inputs.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static hetsched::fuzz::ScratchFile file("input.npy");
  static hetsched::fuzz::ScratchFile copy("copy.npy");
  const std::string& path = file.write(data, size);
  hetsched::fuzz::expect_error_or_success(".npy tensor", [&] { hetsched::fuzz::npy_input(path, copy.path()); });
  return 0;
}
