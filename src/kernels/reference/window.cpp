// HannWindow, HammingWindow, BlackmanWindow — reference kernels (opset 17):
// `size` samples of a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N), N = size
// when `periodic` (the default; for spectral analysis) else size - 1
// (symmetric; for filter design). Hann a0 = a1 = 0.5; Hamming a0 = 25/46,
// a1 = 21/46; Blackman 0.42, 0.5, 0.08 (as ONNX defines them).
// Supported: output_datatype float (the default) and double. Refused: others.
#include <cmath>
#include <numbers>

#include <fmt/format.h>

#include "kernels/reference/common.h"
#include "kernels/reference/signal_common.h"

namespace hetsched::kernels {
namespace {

struct Coefficients {
  double a0, a1, a2;
};

void check_window(const Node& node, const Graph& graph) {
  check_input_dtypes(node, graph, {DType::kInt32, DType::kInt64}, {0});
  output_datatype(node);  // refuses another dtype at load
}

std::vector<Tensor> window(const Node& node, const std::vector<const Tensor*>& inputs, Coefficients c) {
  int64_t size = required_input(node, inputs, 0).to_int64_vector().at(0);
  if (size < 0) throw_runtime(node, fmt::format("size {} is negative", size));
  bool periodic = node.attr_int("periodic", 1) != 0;
  double period = static_cast<double>(periodic ? size : size - 1);
  std::vector<double> w(static_cast<size_t>(size));
  for (int64_t n = 0; n < size; ++n) {
    double x = period > 0 ? 2 * std::numbers::pi * static_cast<double>(n) / period : 0.0;
    w[static_cast<size_t>(n)] = c.a0 - c.a1 * std::cos(x) + c.a2 * std::cos(2 * x);
  }
  return {float_tensor_of(node, output_datatype(node), {size}, w)};
}

std::vector<Tensor> compute_hann(const Node& node, const std::vector<const Tensor*>& inputs) {
  return window(node, inputs, {0.5, 0.5, 0.0});
}

std::vector<Tensor> compute_hamming(const Node& node, const std::vector<const Tensor*>& inputs) {
  return window(node, inputs, {25.0 / 46.0, 21.0 / 46.0, 0.0});
}

std::vector<Tensor> compute_blackman(const Node& node, const std::vector<const Tensor*>& inputs) {
  return window(node, inputs, {0.42, 0.5, 0.08});
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("HannWindow", check_window, compute_hann);
HETSCHED_REFERENCE_KERNEL("HammingWindow", check_window, compute_hamming);
HETSCHED_REFERENCE_KERNEL("BlackmanWindow", check_window, compute_blackman);

}  // namespace hetsched::kernels
