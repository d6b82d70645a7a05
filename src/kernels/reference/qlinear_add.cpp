// QLinearAdd (ONNX Runtime's contrib op, domain com.microsoft) — reference
// kernel, as the load-time fusion of DequantizeLinear(A) +
// DequantizeLinear(B) -> QuantizeLinear makes it (graph/quantized_fusion.cpp):
//   C = saturate(round_half_to_even(((A - A_zp) * A_scale + (B - B_zp) *
//       B_scale) / C_scale) + C_zp)
// in exactly the float32 steps of those three reference kernels, so fusing
// changes no bit. Inputs: A, A_scale, A_zero_point, B, B_scale,
// B_zero_point, C_scale, C_zero_point; scales float32 and zero points of
// A's, B's and C's 8-bit types, one value each; A and B of C's shape (no
// broadcasting: the fusion makes none).
#include "kernels/reference/quantize_common.h"

namespace hetsched::kernels {
namespace {

void check_qlinear_add(const Node& node, const Graph& graph) {
  check_input_dtypes(node, graph, quant::k8BitTypes, {0, 2, 3, 5, 7});
  check_input_dtypes(node, graph, {DType::kFloat32}, {1, 4, 6});
}

std::vector<Tensor> compute_qlinear_add(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& a = required_input(node, inputs, 0);
  const Tensor& b = required_input(node, inputs, 3);
  if (a.shape() != b.shape())
    throw_runtime(node, fmt::format("A is {}, B {}: expected one shape", shape_to_string(a.shape()),
                                    shape_to_string(b.shape())));
  auto one = [&](size_t i, const char* what) -> const Tensor& {
    const Tensor& t = required_input(node, inputs, i);
    if (t.numel() != 1) throw_runtime(node, fmt::format("{} holds {} values: expected one", what, t.numel()));
    return t;
  };
  const float sa = one(1, "A_scale").data<float>()[0], sb = one(4, "B_scale").data<float>()[0],
              sc = one(6, "C_scale").data<float>()[0];
  const int32_t za = quant::zero_points(&one(2, "A_zero_point"))[0],
                zb = quant::zero_points(&one(5, "B_zero_point"))[0];
  const Tensor& c_zp = one(7, "C_zero_point");
  const int32_t zc = quant::zero_points(&c_zp)[0];
  Tensor c(c_zp.dtype(), a.shape());
  auto run = [&](auto* out, const auto* pa, const auto* pb) {
    using Q = std::remove_pointer_t<decltype(out)>;
    for (int64_t i = 0; i < a.numel(); ++i) {
      float fa = static_cast<float>(static_cast<int64_t>(pa[i]) - za) * sa;
      float fb = static_cast<float>(static_cast<int64_t>(pb[i]) - zb) * sb;
      out[i] = quant::saturate_round<Q>((fa + fb) / sc, zc);
    }
  };
  auto with_b = [&](auto* out, const auto* pa) {
    if (b.dtype() == DType::kUInt8) run(out, pa, b.data<uint8_t>());
    else run(out, pa, b.data<int8_t>());
  };
  auto with_a = [&](auto* out) {
    if (a.dtype() == DType::kUInt8) with_b(out, a.data<uint8_t>());
    else with_b(out, a.data<int8_t>());
  };
  if (c.dtype() == DType::kUInt8) with_a(c.data<uint8_t>());
  else with_a(c.data<int8_t>());
  return {c};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("QLinearAdd", check_qlinear_add, compute_qlinear_add);

}  // namespace hetsched::kernels
