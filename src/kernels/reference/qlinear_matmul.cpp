// QLinearMatMul — reference kernel (opset 10).
//
// y = saturate(round_half_to_even(acc * (a_scale * b_scale / y_scale)) +
// y_zero_point), acc = (a - a_zero_point) @ (b - b_zero_point) in int32
// (MatMulInteger's product); the multiplier in float32, the product with acc
// in float64, as the spec's reference computes them. a's scale and zero
// point: one value or one per row; b's: one value or one per column; y's: one
// value. y has y_zero_point's type (uint8 or int8).
#include "kernels/reference/quantize_common.h"

namespace hetsched::kernels {

Tensor integer_matmul(const Node& node, const Tensor& a, const Tensor* a_zp, const Tensor& b, const Tensor* b_zp);

namespace {

void check_qlinear_matmul(const Node& node, const Graph& graph) {
  check_input_dtypes(node, graph, quant::k8BitTypes, {0, 2, 3, 5, 7});
  check_input_dtypes(node, graph, {DType::kFloat32}, {1, 4, 6});
}

std::vector<Tensor> compute_qlinear_matmul(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& a = required_input(node, inputs, 0);
  const Tensor& b = required_input(node, inputs, 3);
  if (a.rank() < 2 || b.rank() < 2)
    throw_runtime(node, fmt::format("a and b must have rank >= 2, got {} and {}", shape_to_string(a.shape()),
                                    shape_to_string(b.shape())));
  Tensor acc = integer_matmul(node, a, &required_input(node, inputs, 2), b, &required_input(node, inputs, 5));
  const Tensor& a_scale = required_input(node, inputs, 1);
  const Tensor& b_scale = required_input(node, inputs, 4);
  const Tensor& y_scale = required_input(node, inputs, 6);
  if (y_scale.numel() != 1) throw_runtime(node, "y_scale must hold one value");
  // The output's rows and columns index a's and b's scales.
  quant::PerAxis row(node, &a_scale, acc.shape(), acc.rank() - 2, "a_scale");
  quant::PerAxis col(node, &b_scale, acc.shape(), acc.rank() - 1, "b_scale");
  std::vector<float> sa = quant::scales(node, a_scale), sb = quant::scales(node, b_scale);
  const float sy = quant::scales(node, y_scale)[0];
  return {quant::requantize(node, acc, &required_input(node, inputs, 7), [&](int64_t i) {
    return sa[static_cast<size_t>(row(i))] * sb[static_cast<size_t>(col(i))] / sy;
  })};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("QLinearMatMul", check_qlinear_matmul, compute_qlinear_matmul);

}  // namespace hetsched::kernels
