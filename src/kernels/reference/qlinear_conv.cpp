// QLinearConv — reference kernel (opset 10).
//
// y = saturate(round_half_to_even(acc * (x_scale * w_scale[m] / y_scale)) +
// y_zero_point), acc = Conv(x - x_zero_point, w - w_zero_point) + B exact in
// int64 (ConvInteger's), m the output channel; the multiplier in float32,
// its product with acc in float64. x and w: uint8 or int8; x's and y's scale
// and zero point: one value; w's: one value or one per output channel; B:
// int32 (scale x_scale * w_scale, zero point 0). Conv's attributes. y has
// y_zero_point's type.
#include "kernels/reference/quantize_common.h"

namespace hetsched::kernels {

Tensor integer_conv(const Node& node, const Tensor& x, const Tensor* x_zp, const Tensor& w, const Tensor* w_zp,
                    const Tensor* bias);

namespace {

void check_qlinear_conv(const Node& node, const Graph& graph) {
  check_input_dtypes(node, graph, quant::k8BitTypes, {0, 2, 3, 5, 7});
  check_input_dtypes(node, graph, {DType::kFloat32}, {1, 4, 6});
  check_input_dtypes(node, graph, {DType::kInt32}, {8});
}

std::vector<Tensor> compute_qlinear_conv(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor* bias = inputs.size() > 8 ? inputs[8] : nullptr;
  Tensor acc = integer_conv(node, required_input(node, inputs, 0), &required_input(node, inputs, 2),
                            required_input(node, inputs, 3), &required_input(node, inputs, 5), bias);
  const Tensor& x_scale = required_input(node, inputs, 1);
  const Tensor& w_scale = required_input(node, inputs, 4);
  const Tensor& y_scale = required_input(node, inputs, 6);
  if (x_scale.numel() != 1 || y_scale.numel() != 1) throw_runtime(node, "x_scale and y_scale must hold one value");
  quant::PerAxis channel(node, &w_scale, acc.shape(), 1, "w_scale");
  const float sx = quant::scales(node, x_scale)[0], sy = quant::scales(node, y_scale)[0];
  std::vector<float> sw = quant::scales(node, w_scale);
  return {quant::requantize(node, acc, &required_input(node, inputs, 7),
                            [&](int64_t i) { return sx * sw[static_cast<size_t>(channel(i))] / sy; })};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("QLinearConv", check_qlinear_conv, compute_qlinear_conv);

}  // namespace hetsched::kernels
