// libFuzzer target: ONNX model files, loaded whole through load_model (parse,
// checker, shape inference, import, optimisations) and, when small, run once
// on the reference kernels (see fuzz_inputs.h and fuzz/README.md). Inputs
// are mutated mostly through the model's structure (onnx_mutator.h).
#include "fuzz_common.h"
#include "fuzz_inputs.h"
#include "onnx_mutator.h"

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  return hetsched::fuzz::mutate_onnx_model(data, size, max_size, seed);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static hetsched::fuzz::ScratchFile model("model.onnx");
  const std::string& path = model.write(data, size);
  hetsched::fuzz::expect_error_or_success("ONNX model", [&] { hetsched::fuzz::onnx_model_input(path); });
  return 0;
}
