// MatMulInteger — reference kernel (opset 10).
//
// Y (int32) = (A - a_zero_point) @ (B - b_zero_point), numpy.matmul's shapes.
// A and B: uint8 or int8; a_zero_point: one value or one per row of A (a
// 1-D tensor of A's second-to-last dim); b_zero_point: one value or one per
// column of B (of B's last dim); both 0 when absent. The product is the
// MatMul kernel's on int32 (wrapping, as the spec allows of its 32-bit
// accumulation).
#include "kernels/reference/quantize_common.h"

namespace hetsched::kernels {

// (A - a_zp) @ (B - b_zp) as int32; shared with QLinearMatMul.
Tensor integer_matmul(const Node& node, const Tensor& a, const Tensor* a_zp, const Tensor& b, const Tensor* b_zp) {
  Tensor a32 = quant::widen_minus_zero_point<int32_t>(node, a, a_zp, a.rank() - 2, "a");
  Tensor b32 = quant::widen_minus_zero_point<int32_t>(node, b, b_zp, b.rank() - 1, "b");
  return find_reference_kernel("MatMul")->compute(node, {&a32, &b32})[0];
}

namespace {

void check_matmul_integer(const Node& node, const Graph& graph) {
  check_input_dtypes(node, graph, quant::k8BitTypes);
}

std::vector<Tensor> compute_matmul_integer(const Node& node, const std::vector<const Tensor*>& inputs) {
  return {integer_matmul(node, required_input(node, inputs, 0), inputs.size() > 2 ? inputs[2] : nullptr,
                         required_input(node, inputs, 1), inputs.size() > 3 ? inputs[3] : nullptr)};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("MatMulInteger", check_matmul_integer, compute_matmul_integer);

}  // namespace hetsched::kernels
