// DynamicQuantizeLinear — reference kernel (opset 11).
//
// x (float32) to uint8 with a scale and zero point computed from x's range,
// which always includes 0, in float32 as the spec's reference does:
//   y_scale = (max(0, max x) - min(0, min x)) / 255
//   y_zero_point = saturate(round_half_to_even(0 - min(0, min x) / y_scale))
//   y = saturate(round_half_to_even(x / y_scale) + y_zero_point)
// An x of zeros only (or empty) has y_scale 0, y_zero_point 0 and y 0 (the
// spec's formula would divide by zero).
#include <cmath>

#include "kernels/reference/dynamic_quantize.h"

namespace hetsched::kernels {
namespace {

void check_dynamic_quantize_linear(const Node& node, const Graph& graph) {
  check_input_dtypes(node, graph, {DType::kFloat32});
}

std::vector<Tensor> compute_dynamic_quantize_linear(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = required_input(node, inputs, 0);
  if (x.dtype() != DType::kFloat32) throw_runtime(node, fmt::format("x must be float32, got {}", dtype_name(x.dtype())));
  const float* in = x.data<float>();
  const int64_t n = x.numel();
  dynamic_quant::Range range = dynamic_quant::range(in, n);
  if (range.n_nan > 0)
    for (int64_t j = 0; j < n; ++j)
      if (std::isnan(in[j])) throw_runtime(node, fmt::format("x holds NaN at element {}", j));
  const float scale = dynamic_quant::scale_of(range);
  Tensor y(DType::kUInt8, x.shape());
  uint8_t zp = 0;
  if (scale > 0.0f) {
    zp = dynamic_quant::zero_point_of(range, scale);
    dynamic_quant::quantize(in, n, scale, zp, y.data<uint8_t>());
  }
  return {y, Tensor::scalar<float>(scale), Tensor::scalar<uint8_t>(zp)};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("DynamicQuantizeLinear", check_dynamic_quantize_linear, compute_dynamic_quantize_linear);

}  // namespace hetsched::kernels
