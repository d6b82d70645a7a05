// QuantizeLinear — reference kernel (opsets 10 and 13).
//
// y = saturate(round_half_to_even(x / y_scale) + y_zero_point), the division
// in float32 as the spec's reference does. x: float32 or int32; y_scale:
// float32, one value or one per entry of `axis` (opset 13, default 1);
// y_zero_point: uint8 (the default, 0) or int8, shaped like y_scale; y has
// its type. Refused: float16 scales and the 16-bit, 4-bit and float8 outputs
// of later opsets.
#include "kernels/reference/quantize_common.h"

namespace hetsched::kernels {
namespace {

void check_quantize_linear(const Node& node, const Graph& graph) {
  check_input_dtypes(node, graph, {DType::kFloat32, DType::kInt32}, {0});
  check_input_dtypes(node, graph, {DType::kFloat32}, {1});
  check_input_dtypes(node, graph, quant::k8BitTypes, {2});
}

std::vector<Tensor> compute_quantize_linear(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = required_input(node, inputs, 0);
  const Tensor& scale = required_input(node, inputs, 1);
  const Tensor* zp = inputs.size() > 2 ? inputs[2] : nullptr;
  const int64_t axis = quant::axis_of(node, scale, x.rank());
  quant::PerAxis at(node, &scale, x.shape(), axis, "y_scale");
  if (zp && zp->numel() != scale.numel()) throw_runtime(node, "y_zero_point and y_scale differ in shape");
  std::vector<float> s = quant::scales(node, scale);
  std::vector<int32_t> z = quant::zero_points(zp);
  Tensor y(zp ? zp->dtype() : DType::kUInt8, x.shape());
  auto run = [&](auto* out, auto* in) {
    using Q = std::remove_pointer_t<decltype(out)>;
    for (int64_t i = 0; i < x.numel(); ++i) {
      size_t k = static_cast<size_t>(at(i));
      out[i] = quant::saturate_round<Q>(static_cast<float>(in[i]) / s[k], z[z.size() == 1 ? 0 : k]);
    }
  };
  auto over = [&](auto* out) {
    if (x.dtype() == DType::kFloat32) run(out, x.data<float>());
    else if (x.dtype() == DType::kInt32) run(out, x.data<int32_t>());
    else throw_runtime(node, fmt::format("x must be float32 or int32, got {}", dtype_name(x.dtype())));
  };
  if (y.dtype() == DType::kUInt8) over(y.data<uint8_t>());
  else if (y.dtype() == DType::kInt8) over(y.data<int8_t>());
  else throw_runtime(node, fmt::format("y_zero_point must be uint8 or int8, got {}", dtype_name(y.dtype())));
  return {y};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("QuantizeLinear", check_quantize_linear, compute_quantize_linear);

}  // namespace hetsched::kernels
