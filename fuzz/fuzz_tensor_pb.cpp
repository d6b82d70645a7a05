// libFuzzer target: serialized onnx.TensorProto input tensors
// (read_tensor_pb, external data included; what loads must survive a
// write_tensor_pb / read_tensor_pb round trip unchanged).
#include "fuzz_common.h"
#include "fuzz_inputs.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static hetsched::fuzz::ScratchFile file("input.pb");
  static hetsched::fuzz::ScratchFile copy("copy.pb");
  const std::string& path = file.write(data, size);
  hetsched::fuzz::expect_error_or_success(".pb tensor",
                                          [&] { hetsched::fuzz::tensor_pb_input(path, copy.path()); });
  return 0;
}
