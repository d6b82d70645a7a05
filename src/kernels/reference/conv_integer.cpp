// ConvInteger — reference kernel (opset 10).
//
// y (int32) = Conv(x - x_zero_point, w - w_zero_point) with Conv's attributes
// (auto_pad, dilations, group, kernel_shape, pads, strides). x and w: uint8
// or int8; x_zero_point: one value; w_zero_point: one value or one per output
// channel; both 0 when absent. The padding is 0 after the shift, as the spec
// says. Computed by the Conv kernel on int64 (exact), wrapped to int32.
#include "kernels/reference/quantize_common.h"

namespace hetsched::kernels {

// Conv(x - x_zp, w - w_zp) + bias, exact in int64; shared with QLinearConv.
Tensor integer_conv(const Node& node, const Tensor& x, const Tensor* x_zp, const Tensor& w, const Tensor* w_zp,
                    const Tensor* bias) {
  if (x_zp && x_zp->numel() != 1) throw_runtime(node, "x_zero_point must hold one value");
  Tensor x64 = quant::widen_minus_zero_point<int64_t>(node, x, x_zp, 1, "x");
  Tensor w64 = quant::widen_minus_zero_point<int64_t>(node, w, w_zp, 0, "w");
  std::vector<const Tensor*> conv_inputs = {&x64, &w64};
  Tensor b64;
  if (bias) {
    if (bias->dtype() != DType::kInt32)
      throw_runtime(node, fmt::format("B must be int32, got {}", dtype_name(bias->dtype())));
    b64 = Tensor(DType::kInt64, bias->shape());
    for (int64_t i = 0; i < bias->numel(); ++i) b64.data<int64_t>()[i] = bias->data<int32_t>()[i];
    conv_inputs.push_back(&b64);
  }
  return find_reference_kernel("Conv")->compute(node, conv_inputs)[0];
}

namespace {

void check_conv_integer(const Node& node, const Graph& graph) { check_input_dtypes(node, graph, quant::k8BitTypes); }

std::vector<Tensor> compute_conv_integer(const Node& node, const std::vector<const Tensor*>& inputs) {
  Tensor acc = integer_conv(node, required_input(node, inputs, 0), inputs.size() > 2 ? inputs[2] : nullptr,
                            required_input(node, inputs, 1), inputs.size() > 3 ? inputs[3] : nullptr, nullptr);
  Tensor y(DType::kInt32, acc.shape());
  for (int64_t i = 0; i < acc.numel(); ++i) y.data<int32_t>()[i] = static_cast<int32_t>(acc.data<int64_t>()[i]);
  return {y};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("ConvInteger", check_conv_integer, compute_conv_integer);

}  // namespace hetsched::kernels
