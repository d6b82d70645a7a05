// ReduceMean, ReduceSum, ReduceMax, ReduceMin and ReduceProd on oneDNN, by
// whichever primitive is fast for the case (oneDNN 2.6's jit reduction costs
// ~0.2 us per output element; its reference loop — every non-innermost
// reduction, every norm — runs ~75-100x slower than the reference kernel, so
// ReduceL1/L2/SumSquare are not lowered at all):
//   - Mean/Max over exactly the spatial dims of a blocked [N, C, spatial...]
//     input: a global pooling in the input's layout (no reorder);
//   - Sum/Mean over one contiguous block of dims of the plain input, viewed
//     as [P, R, Q] (size-1 dims dropped): a matmul with a constant ones
//     operand (ones[1, R] x X[P][R, Q]), Mean dividing by R in a binary
//     post-op;
//   - Max/Min/Prod over the innermost dims when those hold >= 256 elements
//     per output: the reduction primitive on the plain input, as [P, R].
// float32 only. Axes from the `axes` attribute or a constant int64 input 1
// (whichever the node has, like the reference); none reduces everything.
// keepdims=0 outputs are plain, their bytes those of the keepdims shape.
// Refused: other dtypes, noop_with_empty_axes=1 with no axes (the identity),
// non-constant axes, invalid axes, empty tensors, and the cases above that
// no fast kernel covers (the reference kernel is faster there).
#include <optional>

#include "backends/cpu/lowering.h"

namespace hetsched::cpu {
namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;
using dims = dnnl::memory::dims;
using alg = dnnl::algorithm;

constexpr int64_t kMinReductionLength = 256;

dims plain_strides(const dims& d) {
  dims s(d.size(), 1);
  for (size_t i = d.size() - 1; i-- > 0;) s[i] = s[i + 1] * d[i + 1];
  return s;
}

dnnl::memory::desc plain_f32(const dims& d) { return dnnl::memory::desc(d, dt::f32, plain_strides(d)); }

bool is_ref_impl(const dnnl::primitive_desc_base& pd) { return std::string(pd.impl_info_str()).rfind("ref", 0) == 0; }

enum class Kind { kMean, kSum, kMax, kMin, kProd };

std::optional<Kind> kind_of(const std::string& op) {
  if (op == "ReduceMean") return Kind::kMean;
  if (op == "ReduceSum") return Kind::kSum;
  if (op == "ReduceMax") return Kind::kMax;
  if (op == "ReduceMin") return Kind::kMin;
  if (op == "ReduceProd") return Kind::kProd;
  return std::nullopt;
}

// The output buffer: keepdims=0 outputs are plain (the bytes of the plain
// keepdims-shaped dst); keepdims=1 ones take the primitive's dst layout.
BufferId output_for(Lowering& l, bool keepdims, const dnnl::memory::desc& dst) {
  return l.output(l.node().outputs[0], keepdims ? std::optional(dst) : std::nullopt);
}

// Global average or max pooling over the spatial dims, in the input's layout.
// keepdims=0 needs a dst whose bytes are plain [N, C]: the layout oneDNN
// prefers when it is (e.g. channels-last), else plain.
bool lower_global_pool(Lowering& l, bool max, const dims& src_dims, const dims& dst_dims, bool keepdims) {
  dims kernel(src_dims.begin() + 2, src_dims.end());
  dims strides(kernel.size(), 1), pads(kernel.size(), 0);
  dnnl::memory::desc src_md = l.input_desc(0);
  auto make = [&](const dnnl::memory::desc& dst_md) -> std::optional<dnnl::pooling_forward::primitive_desc> {
    try {
      dnnl::pooling_forward::primitive_desc pd(
          dnnl::pooling_forward::desc(dnnl::prop_kind::forward_inference,
                                      max ? alg::pooling_max : alg::pooling_avg_exclude_padding, src_md, dst_md,
                                      strides, kernel, pads, pads),
          l.engine());
      if (is_ref_impl(pd)) return std::nullopt;
      return pd;
    } catch (const dnnl::error&) {
      return std::nullopt;
    }
  };
  auto pd = make(dnnl::memory::desc(dst_dims, dt::f32, tag::any));
  if (pd && !keepdims) {
    dims nc = {dst_dims[0], dst_dims[1]};
    if (pd->dst_desc().reshape(nc, true) != plain_f32(nc)) pd = make(plain_f32(dst_dims));
  }
  if (!pd) return false;
  BufferId src = l.input(0, src_md);
  BufferId dst = output_for(l, keepdims, pd->dst_desc());
  l.emit(dnnl::pooling_forward(*pd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
  return true;
}

// Sum (or Mean) of the plain input viewed as [P, R, Q] over R, as a matmul
// with ones.
bool lower_sum_matmul(Lowering& l, int64_t P, int64_t R, int64_t Q, bool mean) {
  dims src_dims, w_dims, dst_dims;
  bool x_is_src = Q == 1 && P > 1;  // X[P, R] x ones[R, 1]; else ones x X
  if (x_is_src) {
    src_dims = {P, R}, w_dims = {R, 1}, dst_dims = {P, 1};
  } else if (P == 1) {
    src_dims = {1, R}, w_dims = {R, Q}, dst_dims = {1, Q};
  } else {
    src_dims = {1, 1, R}, w_dims = {P, R, Q}, dst_dims = {P, 1, Q};
  }
  dims scalar(dst_dims.size(), 1);
  dnnl::primitive_attr attr;
  if (mean) {
    dnnl::post_ops ops;
    ops.append_binary(alg::binary_div, plain_f32(scalar));
    attr.set_post_ops(ops);
  }
  dnnl::memory::desc w_md = x_is_src ? dnnl::memory::desc(w_dims, dt::f32, tag::any) : plain_f32(w_dims);
  std::optional<dnnl::matmul::primitive_desc> pd;
  try {
    pd.emplace(dnnl::matmul::desc(plain_f32(src_dims), w_md, plain_f32(dst_dims)), attr, l.engine());
  } catch (const dnnl::error&) {
    return false;
  }
  if (is_ref_impl(*pd)) return false;
  dims ones_dims = x_is_src ? w_dims : src_dims;
  Tensor ones(DType::kFloat32, Shape(ones_dims.begin(), ones_dims.end()));
  std::fill(ones.data<float>(), ones.data<float>() + ones.numel(), 1.0f);
  BufferId x = l.input(0);  // plain: the bytes of the [P, R, Q] view
  BufferId ones_buffer = l.new_constant(std::move(ones), x_is_src ? std::optional(pd->weights_desc()) : std::nullopt);
  std::vector<std::pair<int, BufferId>> args = {{DNNL_ARG_SRC, x_is_src ? x : ones_buffer},
                                                {DNNL_ARG_WEIGHTS, x_is_src ? ones_buffer : x}};
  if (mean) {
    Tensor count(DType::kFloat32, Shape(scalar.begin(), scalar.end()));
    count.data<float>()[0] = static_cast<float>(R);
    args.push_back({DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, l.new_constant(std::move(count))});
  }
  args.push_back({DNNL_ARG_DST, l.output(l.node().outputs[0])});  // plain: the bytes of [P, 1, Q]
  l.emit(dnnl::matmul(*pd), std::move(args));
  return true;
}

// The reduction primitive over the innermost dims of the plain input, viewed
// as [P, R] (the output's plain bytes are [P, 1]'s).
bool lower_reduction(Lowering& l, Kind kind, int64_t P, int64_t R) {
  alg algorithm = kind == Kind::kMax   ? alg::reduction_max
                  : kind == Kind::kMin ? alg::reduction_min
                                       : alg::reduction_mul;
  std::optional<dnnl::reduction::primitive_desc> pd;
  try {
    pd.emplace(dnnl::reduction::desc(algorithm, plain_f32({P, R}), plain_f32({P, 1}), 0.0f, 0.0f), l.engine());
  } catch (const dnnl::error&) {
    return false;
  }
  if (is_ref_impl(*pd)) return false;
  BufferId src = l.input(0);
  BufferId dst = l.output(l.node().outputs[0]);
  l.emit(dnnl::reduction(*pd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
  return true;
}

bool lower_reduce(Lowering& l) {
  const Node& node = l.node();
  auto kind = kind_of(node.op_type);
  if (!kind || !l.has_input(0) || node.outputs.size() != 1 || node.outputs[0] == kNoValue) return false;
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

  // Mean or Max over exactly the spatial dims of a blocked input: pooling.
  const bool mean_or_max = *kind == Kind::kMean || *kind == Kind::kMax;
  bool spatial = rank >= 3 && rank <= 5 && !reduced[0] && !reduced[1];
  for (size_t d = 2; d < reduced.size(); ++d) spatial = spatial && reduced[d];
  if (spatial && mean_or_max && l.input_desc(0) != plain_f32(src_dims))
    return lower_global_pool(l, *kind == Kind::kMax, src_dims, dst_dims, keepdims);

  // [P, R, Q]: the reduced dims (size-1 dims aside) must be one block.
  int64_t P = 1, R = 1, Q = 1;
  int stage = 0;  // 0: before the block, 1: in it, 2: after it
  for (size_t d = 0; d < src_dims.size(); ++d) {
    if (src_dims[d] == 1) continue;
    if (reduced[d]) {
      if (stage == 2) return false;
      stage = 1;
      R *= src_dims[d];
    } else {
      if (stage == 1) stage = 2;
      (stage == 0 ? P : Q) *= src_dims[d];
    }
  }
  if (*kind == Kind::kSum || *kind == Kind::kMean) return lower_sum_matmul(l, P, R, Q, *kind == Kind::kMean);
  if (Q == 1 && R >= kMinReductionLength) return lower_reduction(l, *kind, P, R);
  return false;
}

}  // namespace

HETSCHED_CPU_LOWERING("ReduceMean", lower_reduce, "oneDNN pooling (spatial dims of a blocked input) or matmul",
                      "not float32; axes computed at run time; reduced dims that are not one contiguous block; "
                      "noop_with_empty_axes 1 without axes");
HETSCHED_CPU_LOWERING("ReduceSum", lower_reduce, "oneDNN matmul with a ones operand",
                      "not float32; axes computed at run time; reduced dims that are not one contiguous block; "
                      "noop_with_empty_axes 1 without axes");
HETSCHED_CPU_LOWERING("ReduceMax", lower_reduce, "oneDNN pooling (spatial dims of a blocked input) or reduction",
                      "not float32; axes computed at run time; other than the innermost dims with at least 256 "
                      "elements per output (the reference kernel is faster there)");
HETSCHED_CPU_LOWERING("ReduceMin", lower_reduce, "oneDNN reduction",
                      "not float32; axes computed at run time; other than the innermost dims with at least 256 "
                      "elements per output (the reference kernel is faster there)");
HETSCHED_CPU_LOWERING("ReduceProd", lower_reduce, "oneDNN reduction",
                      "not float32; axes computed at run time; other than the innermost dims with at least 256 "
                      "elements per output (the reference kernel is faster there)");

}  // namespace hetsched::cpu
