// DequantizeLinear — reference kernel (opsets 10 and 13).
//
// y = (x - x_zero_point) * x_scale in float32. x: uint8, int8, or int32 (a
// bias, with no zero point); x_scale: float32, one value or one per entry of
// `axis` (opset 13, default 1); x_zero_point: x's type, shaped like x_scale,
// 0 when absent. Refused: float16 scales and the 16-bit, 4-bit and float8
// inputs of later opsets.
#include "kernels/reference/quantize_common.h"

namespace hetsched::kernels {
namespace {

void check_dequantize_linear(const Node& node, const Graph& graph) {
  check_input_dtypes(node, graph, {DType::kUInt8, DType::kInt8, DType::kInt32}, {0, 2});
  check_input_dtypes(node, graph, {DType::kFloat32}, {1});
}

std::vector<Tensor> compute_dequantize_linear(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = required_input(node, inputs, 0);
  const Tensor& scale = required_input(node, inputs, 1);
  const Tensor* zp = inputs.size() > 2 ? inputs[2] : nullptr;
  const int64_t axis = quant::axis_of(node, scale, x.rank());
  quant::PerAxis at(node, &scale, x.shape(), axis, "x_scale");
  if (zp && zp->numel() != scale.numel()) throw_runtime(node, "x_zero_point and x_scale differ in shape");
  if (zp && zp->dtype() != x.dtype())
    throw_runtime(node, fmt::format("x_zero_point is {}, x {}", dtype_name(zp->dtype()), dtype_name(x.dtype())));
  std::vector<float> s = quant::scales(node, scale);
  std::vector<int32_t> z = quant::zero_points(zp);
  Tensor y(DType::kFloat32, x.shape());
  float* out = y.data<float>();
  auto run = [&](auto* in) {
    for (int64_t i = 0; i < x.numel(); ++i) {
      size_t k = static_cast<size_t>(at(i));
      int64_t q = static_cast<int64_t>(in[i]) - z[z.size() == 1 ? 0 : k];
      out[i] = static_cast<float>(q) * s[k];
    }
  };
  switch (x.dtype()) {
    case DType::kUInt8: run(x.data<uint8_t>()); break;
    case DType::kInt8: run(x.data<int8_t>()); break;
    case DType::kInt32: run(x.data<int32_t>()); break;
    default: throw_runtime(node, fmt::format("x must be uint8, int8 or int32, got {}", dtype_name(x.dtype())));
  }
  return {y};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("DequantizeLinear", check_dequantize_linear, compute_dequantize_linear);

}  // namespace hetsched::kernels
