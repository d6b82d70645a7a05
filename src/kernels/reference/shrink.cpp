// Shrink — reference kernel: y = x + bias where x < -lambd, x - bias where
// x > lambd, 0 otherwise (bias 0, lambd 0.5 by default).
// Supported: float32, float64 and the integer dtypes.
// Refused: other dtypes.
#include "kernels/reference/common.h"

namespace hetsched::kernels {
namespace {

void check_shrink(const Node& node, const Graph& graph) { check_input_dtypes(node, graph, kNumericTypes); }

std::vector<Tensor> compute_shrink(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = required_input(node, inputs, 0);
  const double bias = node.attr_float("bias", 0.0f), lambd = node.attr_float("lambd", 0.5f);
  Tensor y(x.dtype(), x.shape());
  dispatch_numeric(node, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* py = y.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      const double v = static_cast<double>(px[i]);
      py[i] = static_cast<T>(v < -lambd ? v + bias : v > lambd ? v - bias : 0.0);
    }
  });
  return {y};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("Shrink", check_shrink, compute_shrink);

}  // namespace hetsched::kernels
