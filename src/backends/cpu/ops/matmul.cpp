// MatMul on oneDNN's matmul primitive (numpy.matmul semantics).
//
// float32 (operands in bfloat16 on a device computing in it:
// Lowering::compute_type); 1-D operands ([K] as [1, K] or [K, 1], the added dim
// dropped from the output); batched operands whose batch dims broadcast
// (ranks equalised with leading 1s, oneDNN broadcasts size-1 batch dims of
// either operand). When B has no batch (or an all-1 one) A's batch is folded
// into its rows: one large 2-D product. A constant B is reordered once into
// the layout the primitive prefers. Fuses, per fusion_group(), a following
// Add of a constant bias vector (oneDNN's bias) and an activation (eltwise
// post-op).
// Refused: other dtypes, batch dims that do not broadcast, ranks above 12,
// empty tensors.
#include <optional>

#include "backends/cpu/eltwise.h"
#include "backends/cpu/lowering.h"

namespace hetsched::cpu {
namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;
using dims = dnnl::memory::dims;

dims plain_strides(const dims& d) {
  dims s(d.size(), 1);
  for (size_t i = d.size() - 1; i-- > 0;) s[i] = s[i + 1] * d[i + 1];
  return s;
}

dnnl::memory::desc plain(const dims& d, dt type) { return dnnl::memory::desc(d, type, plain_strides(d)); }

bool lower_matmul(Lowering& l) {
  const Graph& g = l.graph();
  const Node& node = l.node();
  if (!l.has_input(0) || !l.has_input(1) || node.outputs.empty() || node.outputs[0] == kNoValue) return false;
  const Value& a = l.input_value(0);
  const Value& b = l.input_value(1);
  const Value& y = g.values[node.outputs[0]];
  if (a.dtype != DType::kFloat32 || b.dtype != DType::kFloat32 || y.dtype != DType::kFloat32) return false;
  if (a.shape.empty() || b.shape.empty()) return false;
  if (shape_numel(a.shape) == 0 || shape_numel(b.shape) == 0) return false;
  Shape as = a.shape, bs = b.shape;
  const bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
  if (a_vec) as.insert(as.begin(), 1);
  if (b_vec) bs.push_back(1);
  const int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
  if (bs[bs.size() - 2] != K) return false;
  Shape a_batch(as.begin(), as.end() - 2), b_batch(bs.begin(), bs.end() - 2);
  size_t nb = std::max(a_batch.size(), b_batch.size());
  if (nb + 2 > DNNL_MAX_NDIMS) return false;
  while (a_batch.size() < nb) a_batch.insert(a_batch.begin(), 1);
  while (b_batch.size() < nb) b_batch.insert(b_batch.begin(), 1);
  Shape batch(nb);
  bool b_shared = true;
  for (size_t i = 0; i < nb; ++i) {
    if (a_batch[i] != b_batch[i] && a_batch[i] != 1 && b_batch[i] != 1) return false;
    batch[i] = std::max(a_batch[i], b_batch[i]);
    b_shared = b_shared && b_batch[i] == 1;
  }
  Shape out = batch;
  if (!a_vec) out.push_back(M);
  if (!b_vec) out.push_back(N);
  if (y.shape != out) return false;

  // The product's dims: A's batch folded into M when B is shared.
  dims src_dims, w_dims, dst_dims;
  if (b_shared) {
    int64_t rows = shape_numel(a_batch) * M;
    src_dims = {rows, K};
    w_dims = {K, N};
    dst_dims = {rows, N};
  } else {
    src_dims.assign(a_batch.begin(), a_batch.end());
    w_dims.assign(b_batch.begin(), b_batch.end());
    dst_dims.assign(batch.begin(), batch.end());
    src_dims.insert(src_dims.end(), {M, K});
    w_dims.insert(w_dims.end(), {K, N});
    dst_dims.insert(dst_dims.end(), {M, N});
  }

  // Fused bias and activation.
  std::vector<NodeId> group = l.fusion_group();
  ValueId result = node.outputs[0];
  std::optional<Tensor> bias;
  dims bias_dims;
  dnnl::post_ops post_ops;
  std::vector<NodeId> fused;
  if (group.size() > 1 && g.nodes[group[1]].op_type == "Add") {
    const Node& add = g.nodes[group[1]];
    ValueId other = add.inputs[0] == result ? add.inputs[1] : add.inputs[0];
    const Tensor& t = *g.values[other].initializer;
    if (t.dtype() != DType::kFloat32 || (t.numel() != 1 && t.numel() != N)) return false;
    bias_dims.assign(dst_dims.size(), 1);
    bias_dims.back() = t.numel();
    bias = t.reshaped(Shape(bias_dims.begin(), bias_dims.end()));
    result = add.outputs[0];
    fused.push_back(group[1]);
  }
  for (NodeId n : fuse_activation(g, group, fused.size() + 1, result, post_ops)) fused.push_back(n);
  dnnl::primitive_attr attr;
  attr.set_post_ops(post_ops);

  const bool b_constant = l.input_is_constant(1);
  const dt ct = l.compute_type();
  dnnl::memory::desc w_md = b_constant ? dnnl::memory::desc(w_dims, ct, tag::any) : plain(w_dims, ct);
  dnnl::memory::desc bias_md;
  if (bias) bias_md = plain(bias_dims, dt::f32);
  std::optional<dnnl::matmul::primitive_desc> pd;
  try {
    pd.emplace(dnnl::matmul::desc(plain(src_dims, ct), w_md, bias_md, plain(dst_dims, dt::f32)), attr, l.engine());
  } catch (const dnnl::error&) {
    return false;
  }

  // Everything is decided: emit. Plain buffers hold the bytes of the
  // primitive's (reshaped) plain operands.
  BufferId src = l.compute_input(0);
  BufferId weights = b_constant ? l.new_constant(l.constant(1).reshaped(Shape(w_dims.begin(), w_dims.end())),
                                                 pd->weights_desc())
                                : l.compute_input(1);
  std::vector<std::pair<int, BufferId>> args = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}};
  if (bias) args.push_back({DNNL_ARG_BIAS, l.new_constant(*bias)});
  args.push_back({DNNL_ARG_DST, l.output(result)});
  for (NodeId n : fused) l.absorb(n);
  l.emit(dnnl::matmul(*pd), std::move(args));
  return true;
}

}  // namespace

HETSCHED_CPU_LOWERING("MatMul", lower_matmul, "oneDNN matmul, with a following bias Add and activation fused",
                      "not float32; batch dims that do not broadcast; rank above 12; empty tensors");

}  // namespace hetsched::cpu
