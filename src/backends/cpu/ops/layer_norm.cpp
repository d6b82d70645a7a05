// LayerNormalization on oneDNN (layer_normalization forward inference:
// statistics computed, not given), scale and optional bias as use_scale /
// use_shift, in the input's layout.
//
// oneDNN normalises over the last dim only: the node's normalised dims
// (axis..rank-1) must hold one dim that is not 1, the last one (e.g. axis
// -1, or [.., 1, D] with axis -2).
// Supported: float32, X of rank 2 to 5; Scale and B constants broadcastable
// to the normalised shape; epsilon; stash_type 1.
// Refused: the Mean and InvStdDev outputs; Scale or B computed at run time;
// other dtypes; normalisation over several dims.
#include <optional>

#include "backends/cpu/lowering.h"

namespace hetsched::cpu {
namespace {

// `t` (broadcastable to `norm_shape`, whose dims are 1 but the last, of
// `len`) as `len` float32 values; nullopt when it does not broadcast.
std::optional<Tensor> expand_last(const Tensor& t, const Shape& norm_shape, int64_t len) {
  if (t.dtype() != DType::kFloat32 || t.rank() > static_cast<int64_t>(norm_shape.size())) return std::nullopt;
  for (int64_t i = 0; i < t.rank(); ++i) {
    int64_t d = t.dim(t.rank() - 1 - i), want = norm_shape[norm_shape.size() - 1 - static_cast<size_t>(i)];
    if (d != 1 && d != want) return std::nullopt;
  }
  if (t.numel() != 1 && t.numel() != len) return std::nullopt;
  const float* v = t.data<float>();
  std::vector<float> out(static_cast<size_t>(len));
  for (int64_t i = 0; i < len; ++i) out[static_cast<size_t>(i)] = t.numel() == 1 ? v[0] : v[i];
  return Tensor::from_vector<float>({len}, out);
}

bool lower_layer_norm(Lowering& l) {
  const Node& node = l.node();
  if (node.attr_int("stash_type", 1) != 1) return false;
  if (node.outputs.empty() || node.outputs[0] == kNoValue) return false;
  for (size_t i = 1; i < node.outputs.size(); ++i)
    if (node.outputs[i] != kNoValue) return false;
  if (!l.has_input(0) || !l.input_is_constant(1) || (l.has_input(2) && !l.input_is_constant(2))) return false;
  const Value& x = l.input_value(0);
  const Value& y = l.graph().values[node.outputs[0]];
  if (x.dtype != DType::kFloat32 || y.dtype != DType::kFloat32 || y.shape != x.shape) return false;
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  if (rank < 2 || rank > 5 || shape_numel(x.shape) == 0) return false;
  int64_t axis = node.attr_int("axis", -1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return false;
  for (int64_t d = axis; d + 1 < rank; ++d)
    if (x.shape[static_cast<size_t>(d)] != 1) return false;  // normalises over more than the last dim
  const Shape norm_shape(x.shape.begin() + axis, x.shape.end());
  const int64_t len = x.shape.back();
  auto scale = expand_last(l.constant(1), norm_shape, len);
  std::optional<Tensor> shift;
  if (l.has_input(2)) shift = expand_last(l.constant(2), norm_shape, len);
  if (!scale || (l.has_input(2) && !shift)) return false;

  const float epsilon = node.attr_float("epsilon", 1e-5f);
  auto flags = dnnl::normalization_flags::use_scale;
  if (shift) flags = flags | dnnl::normalization_flags::use_shift;
  dnnl::layer_normalization_forward::primitive_desc pd;
  auto make = [&](const dnnl::memory::desc& data) {
    dnnl::layer_normalization_forward::desc desc(dnnl::prop_kind::forward_inference, data, epsilon, flags);
    pd = dnnl::layer_normalization_forward::primitive_desc(desc, l.engine());
  };
  try {
    make(l.input_desc(0));
  } catch (const dnnl::error&) {
    try {
      make(plain_desc(x.dtype, x.shape));  // a layout it cannot read: plain
    } catch (const dnnl::error&) {
      return false;
    }
  }
  BufferId src = l.input(0, pd.src_desc());
  BufferId dst = l.output(node.outputs[0], pd.dst_desc());
  std::vector<std::pair<int, BufferId>> args = {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}};
  args.push_back({DNNL_ARG_SCALE, l.new_constant(std::move(*scale))});
  if (shift) args.push_back({DNNL_ARG_SHIFT, l.new_constant(std::move(*shift))});
  l.emit(dnnl::layer_normalization_forward(pd), std::move(args));
  return true;
}

}  // namespace

HETSCHED_CPU_LOWERING("LayerNormalization", lower_layer_norm, "oneDNN layer normalization",
                      "not float32; rank outside 2-5; normalisation over more than the last dim; Scale or B computed "
                      "at run time; the Mean or InvStdDev outputs; stash_type other than 1");

}  // namespace hetsched::cpu
