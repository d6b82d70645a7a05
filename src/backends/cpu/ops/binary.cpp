// Add, Sub, Mul, Div, Max, Min on oneDNN's binary primitive; Pow with a
// constant scalar exponent on the eltwise primitive (eltwise_pow).
//
// float32 only, numpy broadcasting. oneDNN wants operands of one rank (the
// smaller is unsqueezed with leading 1s, same bytes) and broadcasts only its
// second source, which must be the smaller one: a broadcast first input is
// swapped for Add/Mul/Max/Min, and for Sub computed as -(b - a) (an eltwise
// post-op; exact: negation and the rounding of a subtraction commute).
// Same-shape inputs run in the layout of a non-constant input (input 0's
// first): no reorder when it arrives blocked. A broadcast runs in the first
// of these that oneDNN has an optimized (non-reference) kernel for: the big
// input's layout with the small one plain, or in the same format; channels-
// last (when the big input is blocked: the layout 1x1 Convs prefer); plain.
// Refused: other dtypes, Max/Min with other than 2 inputs, a Div whose first
// input is the broadcast one, broadcasts that expand both inputs, ranks above
// 12, a full-size input of lower rank than the output beside one that
// broadcasts, Pow with a non-constant or non-scalar exponent.
#include <cmath>
#include <optional>
#include <tuple>

#include "backends/cpu/lowering.h"

namespace hetsched::cpu {
namespace {

using dt = dnnl::memory::data_type;
using dims = dnnl::memory::dims;
using alg = dnnl::algorithm;

dims plain_strides(const dims& d) {
  dims s(d.size(), 1);
  for (size_t i = d.size() - 1; i-- > 0;) s[i] = s[i + 1] * d[i + 1];
  return s;
}

dnnl::memory::desc plain_f32(const dims& d) { return dnnl::memory::desc(d, dt::f32, plain_strides(d)); }

// `shape` with leading 1s up to `rank` (at least 1 dim: oneDNN has no rank 0).
dims unsqueezed(const Shape& shape, size_t rank) {
  dims d(shape.begin(), shape.end());
  while (d.size() < std::max<size_t>(rank, 1)) d.insert(d.begin(), 1);
  return d;
}

// The format tag of `md` among the common ones of its rank, if any.
std::optional<dnnl::memory::format_tag> format_of(const dnnl::memory::desc& md) {
  using tag = dnnl::memory::format_tag;
  const dims d = md.dims();
  std::vector<tag> tags;
  switch (d.size()) {
    case 3: tags = {tag::abc, tag::acb, tag::aBc8b, tag::aBc16b}; break;
    case 4: tags = {tag::abcd, tag::acdb, tag::aBcd8b, tag::aBcd16b}; break;
    case 5: tags = {tag::abcde, tag::acdeb, tag::aBcde8b, tag::aBcde16b}; break;
    default: return std::nullopt;
  }
  for (tag t : tags)
    if (dnnl::memory::desc(d, md.data_type(), t) == md) return t;
  return std::nullopt;
}

dnnl::memory::format_tag channels_last(size_t rank) {
  using tag = dnnl::memory::format_tag;
  return rank == 3 ? tag::acb : rank == 4 ? tag::acdb : tag::acdeb;
}

bool is_ref_impl(const dnnl::primitive_desc_base& pd) { return std::string(pd.impl_info_str()).rfind("ref", 0) == 0; }

std::optional<dnnl::binary::primitive_desc> make_binary(alg algorithm, const dnnl::memory::desc& src0,
                                                        const dnnl::memory::desc& src1,
                                                        const dnnl::memory::desc& dst,
                                                        const dnnl::primitive_attr& attr,
                                                        const dnnl::engine& engine) {
  try {
    return dnnl::binary::primitive_desc(dnnl::binary::desc(algorithm, src0, src1, dst), attr, engine);
  } catch (const dnnl::error&) {
    return std::nullopt;
  }
}

bool lower_pow(Lowering& l) {
  const Node& node = l.node();
  if (!l.has_input(0) || !l.input_is_constant(1) || node.outputs.size() != 1) return false;
  const Value& x = l.input_value(0);
  const Value& y = l.graph().values[node.outputs[0]];
  if (x.dtype != DType::kFloat32 || y.dtype != DType::kFloat32 || y.shape != x.shape) return false;
  const Tensor& e = l.constant(1);
  if (e.numel() != 1) return false;
  double exponent = e.to_double_vector()[0];
  float beta = static_cast<float>(exponent);
  if (!std::isfinite(exponent) || static_cast<double>(beta) != exponent) return false;
  dnnl::memory::desc md = l.input_desc(0);
  std::optional<dnnl::eltwise_forward::primitive_desc> pd;
  try {
    pd.emplace(dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference, alg::eltwise_pow, md, 1.0f, beta),
               l.engine());
  } catch (const dnnl::error&) {
    return false;
  }
  BufferId src = l.input(0, md);
  BufferId dst = l.output(node.outputs[0], pd->dst_desc());
  l.emit(dnnl::eltwise_forward(*pd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
  return true;
}

bool lower_binary(Lowering& l) {
  const Node& node = l.node();
  const std::string& op = node.op_type;
  if (op == "Pow") return lower_pow(l);
  if (node.inputs.size() != 2 || !l.has_input(0) || !l.has_input(1)) return false;
  if (node.outputs.size() != 1 || node.outputs[0] == kNoValue) return false;
  if (node.has_attr("broadcast") || node.has_attr("axis")) return false;
  alg algorithm;
  bool commutative = true;
  if (op == "Add") algorithm = alg::binary_add;
  else if (op == "Sub") algorithm = alg::binary_sub, commutative = false;
  else if (op == "Mul") algorithm = alg::binary_mul;
  else if (op == "Div") algorithm = alg::binary_div, commutative = false;
  else if (op == "Max") algorithm = alg::binary_max;
  else if (op == "Min") algorithm = alg::binary_min;
  else return false;

  const Value& a = l.input_value(0);
  const Value& b = l.input_value(1);
  const Value& y = l.graph().values[node.outputs[0]];
  if (a.dtype != DType::kFloat32 || b.dtype != DType::kFloat32 || y.dtype != DType::kFloat32) return false;
  const size_t rank = y.shape.size();
  if (rank > DNNL_MAX_NDIMS || shape_numel(y.shape) == 0) return false;
  if (a.shape.size() > rank || b.shape.size() > rank) return false;
  dnnl::primitive_attr attr;

  if (a.shape == b.shape) {
    if (y.shape != a.shape) return false;
    // One layout for all three: a non-constant input's.
    size_t lead = !l.input_is_constant(0) || l.input_is_constant(1) ? 0 : 1;
    dnnl::memory::desc md = l.input_desc(lead);
    auto pd = make_binary(algorithm, md, md, md, attr, l.engine());
    dnnl::memory::desc plain = plain_f32(unsqueezed(a.shape, rank));
    if ((!pd || is_ref_impl(*pd)) && md != plain) {
      md = plain;
      pd = make_binary(algorithm, md, md, md, attr, l.engine());
    }
    if (!pd) return false;
    BufferId s0 = l.input(0, md), s1 = l.input(1, md);
    BufferId dst = l.output(node.outputs[0], md);
    l.emit(dnnl::binary(*pd), {{DNNL_ARG_SRC_0, s0}, {DNNL_ARG_SRC_1, s1}, {DNNL_ARG_DST, dst}});
    return true;
  }

  // Broadcast: the full-size input is oneDNN's src0. Of two inputs that
  // differ only in leading 1s (a bias [192] beside [1, 1, 192]), the one of
  // full rank: oneDNN's layouts for src0 are of the output's rank.
  dims da = unsqueezed(a.shape, rank), db = unsqueezed(b.shape, rank), dy = unsqueezed(y.shape, rank);
  size_t big;
  if (da == dy && a.shape.size() == rank) big = 0;
  else if (db == dy && b.shape.size() == rank) big = 1;
  else return false;  // both inputs expand, or the full-size one lacks leading 1s
  if (big == 1 && !commutative && op != "Sub") return false;
  if (big == 1 && op == "Sub") {
    dnnl::post_ops negate;
    negate.append_eltwise(1.0f, alg::eltwise_linear, -1.0f, 0.0f);
    attr.set_post_ops(negate);
  }
  size_t small = 1 - big;
  const dims& d_small = small == 0 ? da : db;
  // Layouts to try, first fast one wins: the big input's own (the small one
  // plain, or in the same format when it is constant or of full rank),
  // channels-last, plain.
  dnnl::memory::desc plain_big = plain_f32(dy), plain_small = plain_f32(d_small);
  dnnl::memory::desc big_own = l.input_desc(big);
  std::vector<std::pair<dnnl::memory::desc, dnnl::memory::desc>> candidates;
  if (big_own != plain_big) {
    candidates.emplace_back(big_own, plain_small);
    // (a constant of lower rank is reshaped to the full rank first)
    bool small_full_rank = (small == 0 ? a.shape.size() : b.shape.size()) == rank || l.input_is_constant(small);
    if (auto t = format_of(big_own); t && small_full_rank)
      candidates.emplace_back(big_own, dnnl::memory::desc(d_small, dt::f32, *t));
    if (rank >= 3 && rank <= 5)
      candidates.emplace_back(dnnl::memory::desc(dy, dt::f32, channels_last(rank)), plain_small);
  }
  candidates.emplace_back(plain_big, plain_small);
  std::optional<dnnl::binary::primitive_desc> pd;
  dnnl::memory::desc big_md, small_md;
  for (size_t c = 0; c < candidates.size() && !pd; ++c) {
    std::tie(big_md, small_md) = candidates[c];
    pd = make_binary(algorithm, big_md, small_md, big_md, attr, l.engine());
    if (pd && is_ref_impl(*pd) && c + 1 < candidates.size()) pd.reset();
  }
  if (!pd) return false;
  BufferId s_big = l.input(big, big_md);
  // Plain: the bytes of the unsqueezed operand. Blocked: a constant is
  // reshaped to the full rank, a non-constant has it.
  BufferId s_small;
  if (small_md == plain_small) s_small = l.input(small);
  else if (l.input_is_constant(small))
    s_small = l.new_constant(l.constant(small).reshaped(Shape(d_small.begin(), d_small.end())), small_md);
  else s_small = l.input(small, small_md);
  BufferId dst = l.output(node.outputs[0], big_md);
  l.emit(dnnl::binary(*pd), {{DNNL_ARG_SRC_0, s_big}, {DNNL_ARG_SRC_1, s_small}, {DNNL_ARG_DST, dst}});
  return true;
}

constexpr const char* kBinary = "oneDNN binary (numpy broadcasting)";
constexpr const char* kBinaryReference = "not float32; broadcasts that expand both inputs; rank above 12";

}  // namespace

HETSCHED_CPU_LOWERING("Add", lower_binary,
                      "oneDNN binary (numpy broadcasting); a residual Add after a Conv fused as its sum post-op, a "
                      "bias Add after a MatMul as its bias",
                      kBinaryReference);
HETSCHED_CPU_LOWERING("Sub", lower_binary, kBinary, kBinaryReference);
HETSCHED_CPU_LOWERING("Mul", lower_binary, kBinary, kBinaryReference);
HETSCHED_CPU_LOWERING("Div", lower_binary, kBinary,
                      "not float32; a broadcast first input; broadcasts that expand both inputs; rank above 12");
HETSCHED_CPU_LOWERING("Max", lower_binary, kBinary,
                      "not float32; other than 2 inputs; broadcasts that expand both inputs; rank above 12");
HETSCHED_CPU_LOWERING("Min", lower_binary, kBinary,
                      "not float32; other than 2 inputs; broadcasts that expand both inputs; rank above 12");
HETSCHED_CPU_LOWERING("Pow", lower_binary, "oneDNN eltwise pow",
                      "not float32; an exponent that is not a constant scalar");

}  // namespace hetsched::cpu
