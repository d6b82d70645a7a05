// LayerNormalization on the GPU: the own kernel, one block per row of the
// normalised dims. Scale and B of exactly the normalised shape (leading 1s
// allowed); the optional Mean and InvStdDev outputs are not produced here.
#include <fmt/format.h>

#include "backends/cuda/ops/op_util.h"
#include "kernels/reference/common.h"

namespace hetsched::cuda::ops {
namespace {

// Whether `param` (Scale or B) holds one value per normalised element, laid
// out like them: its shape is X's trailing dims from `axis`, maybe with
// leading 1s.
bool matches_normalised(const Shape& param, const Shape& x, size_t axis) {
  Shape trailing(x.begin() + static_cast<std::ptrdiff_t>(axis), x.end());
  Shape p = param;
  while (p.size() > trailing.size() && p.front() == 1) p.erase(p.begin());
  while (trailing.size() > p.size() && trailing.front() == 1) trailing.erase(trailing.begin());
  return p == trailing;
}

std::string layer_norm_declines(const Graph& graph, const Node& node) {
  if (node.input(0) == kNoValue || node.input(1) == kNoValue) return "no X or no Scale";
  if (std::string why = need_float32(graph, node); !why.empty()) return why;
  for (size_t i = 1; i < node.outputs.size(); ++i)
    if (node.outputs[i] != kNoValue) return "the Mean or InvStdDev outputs";
  if (node.attr_int("stash_type", 1) != 1) return "stash_type other than 1";
  const Shape& x = graph.values[node.input(0)].shape;
  if (x.empty()) return "a scalar X";
  int64_t rank = static_cast<int64_t>(x.size());
  int64_t axis = node.attr_int("axis", -1);
  if (axis < -rank || axis >= rank) return "an axis out of range";
  size_t a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
  for (size_t i : {size_t{1}, size_t{2}}) {
    ValueId v = node.input(i);
    if (v != kNoValue && !matches_normalised(graph.values[v].shape, x, a))
      return "Scale or B broadcast over the normalised dims";
  }
  return "";
}

class LayerNormOp : public GpuOp {
 public:
  explicit LayerNormOp(const GpuPrepare& p) : GpuOp(p, "CUDA layer normalization") {
    const Node& node = p.node();
    const Shape& x = shape_of(p.graph, node.inputs[0]);
    int64_t rank = static_cast<int64_t>(x.size());
    int64_t axis = kernels::normalize_axis(node, node.attr_int("axis", -1), rank);
    rows_ = 1;
    cols_ = 1;
    for (int64_t d = 0; d < rank; ++d) (d < axis ? rows_ : cols_) *= x[static_cast<size_t>(d)];
    epsilon_ = node.attr_float("epsilon", 1e-5f);
    x_ = bind(p, node.inputs[0]);
    scale_ = bind(p, node.inputs[1]);
    bias_ = bind(p, node.input(2));
  }

  void enqueue(const GpuStream& s, const void* const* in, void* const* out) const override {
    kern::layer_norm(static_cast<const float*>(data(x_, in)), static_cast<const float*>(data(scale_, in)),
                     bias_.present() ? static_cast<const float*>(data(bias_, in)) : nullptr,
                     static_cast<float*>(out[0]), rows_, cols_, epsilon_, s.stream);
  }

 private:
  Operand x_, scale_, bias_;
  int64_t rows_ = 1, cols_ = 1;
  float epsilon_ = 1e-5f;
};

std::unique_ptr<GpuOp> prepare_layer_norm(const GpuPrepare& p) { return std::make_unique<LayerNormOp>(p); }

}  // namespace

HETSCHED_CUDA_KERNEL("LayerNormalization", layer_norm_declines, prepare_layer_norm, "own CUDA kernel (block per row)");

}  // namespace hetsched::cuda::ops
