// ReduceMean, ReduceSum, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2
// and ReduceSumSquare on oneDNN's reduction primitive.
//
// float32 only. Axes from the `axes` attribute or a constant int64 input 1
// (whichever the node has, like the reference); none reduces everything.
// keepdims=1 keeps the input's layout when oneDNN has an optimized kernel for
// it (a blocked input stays blocked); keepdims=0 writes the plain output,
// whose bytes are those of the keepdims shape.
// Refused: other dtypes, noop_with_empty_axes=1 with no axes (the identity),
// non-constant axes, invalid axes, empty tensors, ranks oneDNN rejects.
#include <optional>

#include "backends/cpu/lowering.h"

namespace hetsched::cpu {
namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;
using dims = dnnl::memory::dims;
using alg = dnnl::algorithm;

dims plain_strides(const dims& d) {
  dims s(d.size(), 1);
  for (size_t i = d.size() - 1; i-- > 0;) s[i] = s[i + 1] * d[i + 1];
  return s;
}

bool is_ref_impl(const dnnl::primitive_desc_base& pd) { return std::string(pd.impl_info_str()).rfind("ref", 0) == 0; }

struct ReduceAlg {
  alg algorithm;
  float p = 0.0f;
};

std::optional<ReduceAlg> reduce_alg(const std::string& op) {
  if (op == "ReduceMean") return ReduceAlg{alg::reduction_mean};
  if (op == "ReduceSum") return ReduceAlg{alg::reduction_sum};
  if (op == "ReduceMax") return ReduceAlg{alg::reduction_max};
  if (op == "ReduceMin") return ReduceAlg{alg::reduction_min};
  if (op == "ReduceProd") return ReduceAlg{alg::reduction_mul};
  if (op == "ReduceL1") return ReduceAlg{alg::reduction_norm_lp_sum, 1.0f};
  if (op == "ReduceL2") return ReduceAlg{alg::reduction_norm_lp_sum, 2.0f};
  if (op == "ReduceSumSquare") return ReduceAlg{alg::reduction_norm_lp_power_p_sum, 2.0f};
  return std::nullopt;
}

std::optional<dnnl::reduction::primitive_desc> make_reduction(const ReduceAlg& ra, const dnnl::memory::desc& src,
                                                              const dnnl::memory::desc& dst,
                                                              const dnnl::engine& engine) {
  try {
    return dnnl::reduction::primitive_desc(dnnl::reduction::desc(ra.algorithm, src, dst, ra.p, 0.0f), engine);
  } catch (const dnnl::error&) {
    return std::nullopt;
  }
}

bool lower_reduce(Lowering& l) {
  const Node& node = l.node();
  auto ra = reduce_alg(node.op_type);
  if (!ra || !l.has_input(0) || node.outputs.size() != 1 || node.outputs[0] == kNoValue) return false;
  const Value& x = l.input_value(0);
  const Value& y = l.graph().values[node.outputs[0]];
  if (x.dtype != DType::kFloat32 || y.dtype != DType::kFloat32) return false;
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  if (rank == 0 || rank > DNNL_MAX_NDIMS || shape_numel(x.shape) == 0) return false;

  std::vector<int64_t> axes;
  if (node.has_attr("axes")) {
    axes = node.attr_ints("axes");
  } else if (l.has_input(1)) {
    if (!l.input_is_constant(1) || l.constant(1).dtype() != DType::kInt64) return false;
    axes = l.constant(1).to_int64_vector();
  }
  if (axes.empty() && node.attr_int("noop_with_empty_axes", 0) != 0) return false;
  std::vector<bool> reduced(static_cast<size_t>(rank), axes.empty());
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) return false;
    size_t d = static_cast<size_t>(a < 0 ? a + rank : a);
    if (reduced[d]) return false;
    reduced[d] = true;
  }
  const bool keepdims = node.attr_int("keepdims", 1) != 0;
  dims src_dims(x.shape.begin(), x.shape.end()), dst_dims = src_dims;
  Shape out;
  for (size_t d = 0; d < src_dims.size(); ++d) {
    if (reduced[d]) dst_dims[d] = 1;
    if (!reduced[d] || keepdims) out.push_back(dst_dims[d]);
  }
  if (out != y.shape) return false;

  // Keep the input's layout when it is blocked and has a fast kernel.
  dnnl::memory::desc plain_src(src_dims, dt::f32, plain_strides(src_dims));
  dnnl::memory::desc plain_dst(dst_dims, dt::f32, plain_strides(dst_dims));
  dnnl::memory::desc src_md = l.input_desc(0);
  std::optional<dnnl::reduction::primitive_desc> pd;
  if (src_md != plain_src) {
    pd = make_reduction(*ra, src_md, keepdims ? dnnl::memory::desc(dst_dims, dt::f32, tag::any) : plain_dst,
                        l.engine());
    if (pd && is_ref_impl(*pd)) pd.reset();
  }
  if (!pd) {
    src_md = plain_src;
    pd = make_reduction(*ra, src_md, plain_dst, l.engine());
    if (!pd) return false;
  }
  BufferId src = l.input(0, src_md);
  // keepdims=0: the plain output's bytes are the keepdims-shaped plain dst's.
  BufferId dst = l.output(node.outputs[0], keepdims ? std::optional(pd->dst_desc()) : std::nullopt);
  l.emit(dnnl::reduction(*pd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
  return true;
}

}  // namespace

HETSCHED_CPU_LOWERING("ReduceMean", lower_reduce);
HETSCHED_CPU_LOWERING("ReduceSum", lower_reduce);
HETSCHED_CPU_LOWERING("ReduceMax", lower_reduce);
HETSCHED_CPU_LOWERING("ReduceMin", lower_reduce);
HETSCHED_CPU_LOWERING("ReduceProd", lower_reduce);
HETSCHED_CPU_LOWERING("ReduceL1", lower_reduce);
HETSCHED_CPU_LOWERING("ReduceL2", lower_reduce);
HETSCHED_CPU_LOWERING("ReduceSumSquare", lower_reduce);

}  // namespace hetsched::cpu
