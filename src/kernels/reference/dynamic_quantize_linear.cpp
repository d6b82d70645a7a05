// DynamicQuantizeLinear — reference kernel (opset 11).
//
// x (float32) to uint8 with a scale and zero point computed from x's range,
// which always includes 0, in float32 as the spec's reference does:
//   y_scale = (max(0, max x) - min(0, min x)) / 255
//   y_zero_point = saturate(round_half_to_even(0 - min(0, min x) / y_scale))
//   y = saturate(round_half_to_even(x / y_scale) + y_zero_point)
// An x of zeros only (or empty) has y_scale 0, y_zero_point 0 and y 0 (the
// spec's formula would divide by zero).
#include "kernels/reference/quantize_common.h"

namespace hetsched::kernels {
namespace {

void check_dynamic_quantize_linear(const Node& node, const Graph& graph) {
  check_input_dtypes(node, graph, {DType::kFloat32});
}

std::vector<Tensor> compute_dynamic_quantize_linear(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = required_input(node, inputs, 0);
  if (x.dtype() != DType::kFloat32) throw_runtime(node, fmt::format("x must be float32, got {}", dtype_name(x.dtype())));
  const float* in = x.data<float>();
  float lo = 0.0f, hi = 0.0f;
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (std::isnan(in[i])) throw_runtime(node, fmt::format("x holds NaN at element {}", i));
    lo = std::min(lo, in[i]);
    hi = std::max(hi, in[i]);
  }
  const float scale = (hi - lo) / 255.0f;
  Tensor y(DType::kUInt8, x.shape());
  uint8_t zp = 0;
  if (scale > 0.0f) {
    zp = quant::saturate_round<uint8_t>(0.0f - lo / scale, 0);
    uint8_t* out = y.data<uint8_t>();
    for (int64_t i = 0; i < x.numel(); ++i) out[i] = quant::saturate_round<uint8_t>(in[i] / scale, zp);
  }
  return {y, Tensor::scalar<float>(scale), Tensor::scalar<uint8_t>(zp)};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("DynamicQuantizeLinear", check_dynamic_quantize_linear, compute_dynamic_quantize_linear);

}  // namespace hetsched::kernels
