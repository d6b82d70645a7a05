// MatMulInteger on oneDNN's int8 matmul (VNNI or AMX where the CPU has
// them): A uint8 or int8 with one zero point (constant, or computed at run
// time as DynamicQuantizeLinear gives it: a run-time zero point of the
// primitive), B a constant int8 matrix [K, N] with zero points 0 (oneDNN has
// no weight zero points); A's batch dims folded into rows. The int32 product
// is exact, as the reference kernel's. Fuses a following Cast to float32
// (fusion.cpp): the primitive then writes float32, converting as Cast does
// (round to nearest); and after it a Mul by constant scales, one or one per
// column: the primitive's output scales, float(product) * scale as the Mul
// computes it; then a bias Add (a binary post-op, after the scales as the
// Add follows the Mul) and an activation.
#include "backends/cpu/eltwise.h"
#include "backends/cpu/lowering.h"

namespace hetsched::cpu {
namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

bool lower_matmul_integer(Lowering& l) {
  const Graph& g = l.graph();
  const Node& node = l.node();
  if (!l.has_input(0) || !l.input_is_constant(1) || node.outputs.empty()) return false;
  const Value& a = l.input_value(0);
  const Tensor& b = l.constant(1);
  if ((a.dtype != DType::kUInt8 && a.dtype != DType::kInt8) || b.dtype() != DType::kInt8 || b.rank() != 2) return false;
  if (a.shape.size() < 2 || a.shape.back() != b.dim(0) || shape_numel(a.shape) == 0 || b.numel() == 0) return false;
  if (l.has_input(2) && (l.input_value(2).dtype != a.dtype || shape_numel(l.input_value(2).shape) != 1)) return false;
  if (l.has_input(3)) {
    if (!l.input_is_constant(3)) return false;
    for (int64_t z : l.constant(3).to_int64_vector())
      if (z != 0) return false;
  }
  const int64_t K = b.dim(0), N = b.dim(1), rows = shape_numel(a.shape) / K;

  std::vector<NodeId> group = l.fusion_group();
  const bool to_float = group.size() > 1;

  dnnl::primitive_attr attr;
  dnnl::post_ops post_ops;
  std::optional<Tensor> bias;
  ValueId out = group.size() > 1 ? g.nodes[group[1]].outputs[0] : node.outputs[0];
  size_t next = std::min<size_t>(2, group.size());  // the next member to fuse
  // The constant input of group member `k`, a binary op reading `out`.
  auto other_input = [&](size_t k) -> const Tensor& {
    const Node& n = g.nodes[group[k]];
    return *g.values[n.inputs[n.inputs[0] == out ? 1 : 0]].initializer;
  };
  if (group.size() > next) {  // Mul by the scales
    const Tensor& scales = other_input(next);
    attr.set_output_scales(scales.numel() == 1 ? 0 : 1 << 1,
                           std::vector<float>(scales.data<float>(), scales.data<float>() + scales.numel()));
    out = g.nodes[group[next++]].outputs[0];
  }
  if (group.size() > next && g.nodes[group[next]].op_type == "Add") {  // the bias
    const Tensor& b = other_input(next);
    bias = b.reshaped({1, b.numel()});
    post_ops.append_binary(dnnl::algorithm::binary_add, dnnl::memory::desc({1, b.numel()}, dt::f32, tag::ab));
    out = g.nodes[group[next++]].outputs[0];
  }
  std::vector<NodeId> fused(group.begin() + 1, group.begin() + static_cast<std::ptrdiff_t>(next));
  for (NodeId n : fuse_activation(g, group, next, out, post_ops)) fused.push_back(n);
  attr.set_post_ops(post_ops);
  const bool runtime_zp = l.has_input(2) && !l.input_is_constant(2);
  if (runtime_zp) {
    attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
  } else if (l.has_input(2)) {
    int32_t zp = static_cast<int32_t>(l.constant(2).to_int64_vector()[0]);
    if (zp != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {zp});
  }
  std::optional<dnnl::matmul::primitive_desc> pd;
  try {
    pd.emplace(dnnl::matmul::desc(dnnl::memory::desc({rows, K}, *dnnl_type(a.dtype), tag::ab),
                                  dnnl::memory::desc({K, N}, dt::s8, tag::any),
                                  dnnl::memory::desc({rows, N}, to_float ? dt::f32 : dt::s32, tag::ab)),
               attr, l.engine());
  } catch (const dnnl::error&) {
    return false;  // an ISA without int8 matrix products
  }

  // Everything is decided: emit.
  std::vector<std::pair<int, BufferId>> args = {{DNNL_ARG_SRC, l.input(0)},
                                                {DNNL_ARG_WEIGHTS, l.new_constant(b, pd->weights_desc())}};
  if (runtime_zp) {
    // The zero point's byte as the int32 the primitive reads: a reorder.
    dnnl::memory::desc s32 = plain_desc(l.input_value(2).dtype, l.input_value(2).shape);
    s32.data.data_type = static_cast<dnnl_data_type_t>(dt::s32);
    args.push_back({DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, l.input(2, s32)});
  }
  if (bias) args.push_back({DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, l.new_constant(*bias)});
  args.push_back({DNNL_ARG_DST, l.output(out)});
  for (NodeId n : fused) l.absorb(n);
  l.emit(dnnl::matmul(*pd), std::move(args));
  return true;
}

}  // namespace

HETSCHED_CPU_LOWERING("MatMulInteger", lower_matmul_integer,
                      "oneDNN int8 matmul, with a following Cast to float32, Mul by constant scales, bias Add and "
                      "activation fused",
                      "B computed at run time or not a 2-D int8 matrix; B's zero points not 0; A's zero point not one "
                      "value; a CPU without int8 matrix products");

}  // namespace hetsched::cpu
