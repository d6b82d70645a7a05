// Gemm on oneDNN's matmul primitive: Y = alpha * A' * B' + beta * C.
//
// float32 (A and B in bfloat16 on a device computing in it:
// Lowering::compute_type). transA/transB are strides of the plain operands (a
// non-constant B^T is read in place; a constant B is transposed and reordered
// once into the layout the primitive prefers). C (opset 11: optional)
// broadcasts to M x N ([N], [1, N], [M, 1], [M, N], scalar):
//   - alpha == 1 and C constant: beta * C is the matmul bias;
//   - otherwise alpha is an eltwise_linear post-op and C (beta * C when
//     constant; non-constant only with beta == 1) a binary add post-op —
//     the reference's order of operations: (A'B') * alpha, then + beta * C.
// beta == 0 ignores C, like the reference. Fuses a following activation
// (eltwise post-op) per fusion_group().
// Refused: other dtypes, ranks other than 2, a non-constant C with beta != 1,
// a C that does not broadcast to M x N, empty tensors.
#include <optional>

#include "backends/cpu/eltwise.h"
#include "backends/cpu/lowering.h"

namespace hetsched::cpu {
namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;
using dims = dnnl::memory::dims;

bool lower_gemm(Lowering& l) {
  const Graph& g = l.graph();
  const Node& node = l.node();
  if (!l.has_input(0) || !l.has_input(1) || node.outputs.empty() || node.outputs[0] == kNoValue) return false;
  const Value& a = l.input_value(0);
  const Value& b = l.input_value(1);
  const Value& y = g.values[node.outputs[0]];
  if (a.dtype != DType::kFloat32 || b.dtype != DType::kFloat32 || y.dtype != DType::kFloat32) return false;
  if (a.shape.size() != 2 || b.shape.size() != 2) return false;
  const bool trans_a = node.attr_int("transA", 0) != 0, trans_b = node.attr_int("transB", 0) != 0;
  const float alpha = node.attr_float("alpha", 1.0f), beta = node.attr_float("beta", 1.0f);
  const int64_t M = trans_a ? a.shape[1] : a.shape[0], K = trans_a ? a.shape[0] : a.shape[1];
  const int64_t Kb = trans_b ? b.shape[1] : b.shape[0], N = trans_b ? b.shape[0] : b.shape[1];
  if (K != Kb || M <= 0 || N <= 0 || K <= 0) return false;
  if (y.shape != Shape{M, N}) return false;

  // C, as an M x N-broadcastable 2-D operand.
  bool use_c = l.has_input(2) && beta != 0.0f;
  dims c_dims;
  if (use_c) {
    const Value& c = l.input_value(2);
    if (c.dtype != DType::kFloat32 || c.shape.size() > 2) return false;
    Shape cs = c.shape;
    while (cs.size() < 2) cs.insert(cs.begin(), 1);
    if ((cs[0] != 1 && cs[0] != M) || (cs[1] != 1 && cs[1] != N)) return false;
    if (!c.is_constant() && beta != 1.0f) return false;
    c_dims = {cs[0], cs[1]};
  }
  const bool c_constant = use_c && l.input_is_constant(2);
  const bool c_as_bias = use_c && c_constant && alpha == 1.0f;

  // Post-ops: alpha, C, then the fused activation.
  std::vector<NodeId> group = l.fusion_group();
  dnnl::post_ops post_ops;
  if (alpha != 1.0f) post_ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_linear, alpha, 0.0f);
  int c_post_op = -1;
  if (use_c && !c_as_bias) {
    c_post_op = post_ops.len();
    post_ops.append_binary(dnnl::algorithm::binary_add, dnnl::memory::desc(c_dims, dt::f32, tag::ab));
  }
  ValueId result = node.outputs[0];
  std::vector<NodeId> fused = fuse_activation(g, group, 1, result, post_ops);
  dnnl::primitive_attr attr;
  attr.set_post_ops(post_ops);

  // A' (M x K) and B' (K x N) read through strides; constant B in the
  // primitive's preferred layout.
  const bool b_constant = l.input_is_constant(1);
  const dt ct = l.compute_type();
  dnnl::memory::desc src_md({M, K}, ct, trans_a ? dims{1, M} : dims{K, 1});
  dnnl::memory::desc w_md = b_constant ? dnnl::memory::desc({K, N}, ct, tag::any)
                                       : dnnl::memory::desc({K, N}, ct, trans_b ? dims{1, K} : dims{N, 1});
  dnnl::memory::desc bias_md;
  if (c_as_bias) bias_md = dnnl::memory::desc(c_dims, dt::f32, tag::ab);
  dnnl::memory::desc dst_md({M, N}, dt::f32, tag::ab);
  std::optional<dnnl::matmul::primitive_desc> pd;
  try {
    pd.emplace(dnnl::matmul::desc(src_md, w_md, bias_md, dst_md), attr, l.engine());
  } catch (const dnnl::error&) {
    return false;
  }

  // Everything is decided: emit.
  BufferId src = l.compute_input(0);
  BufferId weights;
  if (b_constant) {
    // N x K (transB) read as K x N through strides: the reorder into the
    // primitive's layout transposes it. (A copy loop before it took ~40 ms
    // for Faster R-CNN's 12544 x 1024 box head, at every compile.)
    std::optional<dnnl::memory::desc> source;
    if (trans_b) source = dnnl::memory::desc({K, N}, dt::f32, dims{1, K});
    weights = l.new_constant(l.constant(1), pd->weights_desc(), source);
  } else {
    weights = l.compute_input(1);
  }
  std::vector<std::pair<int, BufferId>> args = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}};
  if (use_c) {
    BufferId c;
    if (c_constant) {
      const Tensor& ct = l.constant(2);
      Tensor scaled(DType::kFloat32, Shape(c_dims.begin(), c_dims.end()));
      const float* s = ct.data<float>();
      float* d = scaled.data<float>();
      for (int64_t i = 0; i < ct.numel(); ++i) d[i] = beta == 1.0f ? s[i] : beta * s[i];
      c = l.new_constant(std::move(scaled));
    } else {
      c = l.input(2);  // plain; its bytes are the 2-D broadcast operand's
    }
    args.push_back({c_as_bias ? DNNL_ARG_BIAS : (DNNL_ARG_ATTR_MULTIPLE_POST_OP(c_post_op) | DNNL_ARG_SRC_1), c});
  }
  args.push_back({DNNL_ARG_DST, l.output(result)});
  for (NodeId n : fused) l.absorb(n);
  l.emit(dnnl::matmul(*pd), std::move(args));
  return true;
}

}  // namespace

HETSCHED_CPU_LOWERING("Gemm", lower_gemm, "oneDNN matmul, with a following activation fused",
                      "not float32; A or B not 2-D; a C computed at run time with beta != 1; a C that does not "
                      "broadcast to M x N; empty tensors");

}  // namespace hetsched::cpu
