// OneHot: indices (any numeric dtype, negative ones count from depth, out of
// [-depth, depth) gives an all-off row), depth (one numeric value), values
// [off, on] whose dtype the output takes; the new axis goes at `axis`.
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "kernels/reference/common.h"

namespace hetsched::kernels {
namespace {

void check_one_hot(const Node& node, const Graph& graph) {
  if (node.input(0) == kNoValue || node.input(1) == kNoValue || node.input(2) == kNoValue)
    throw_invalid(node, "needs indices, depth and values");
  check_input_dtypes(node, graph, kNumericTypes, {0, 1});
}

std::vector<Tensor> compute_one_hot(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& indices = required_input(node, inputs, 0);
  const Tensor& depth_t = required_input(node, inputs, 1);
  const Tensor& values = required_input(node, inputs, 2);
  if (depth_t.numel() != 1) throw_runtime(node, "'depth' must hold one value");
  if (values.numel() != 2) throw_runtime(node, "'values' must hold two values [off, on]");
  int64_t depth = size_from_double(node, depth_t.to_double_vector()[0], "depth");
  int64_t rank = indices.rank();
  int64_t axis = node.attr_int("axis", -1);
  if (axis < -(rank + 1) || axis > rank)
    throw_runtime(node, fmt::format("axis {} is out of range for output rank {}", axis, rank + 1));
  if (axis < 0) axis += rank + 1;

  Shape out_shape = indices.shape();
  out_shape.insert(out_shape.begin() + axis, depth);
  Tensor out(values.dtype(), out_shape);
  size_t es = dtype_size(values.dtype());
  const auto* off = static_cast<const std::byte*>(values.raw());
  const std::byte* on = off + es;
  auto* dst = static_cast<std::byte*>(out.raw());
  for (int64_t i = 0; i < out.numel(); ++i) std::memcpy(dst + static_cast<size_t>(i) * es, off, es);

  int64_t inner = 1;
  for (int64_t d = axis; d < rank; ++d) inner *= indices.dim(d);
  std::vector<double> idx = indices.to_double_vector();
  for (size_t k = 0; k < idx.size(); ++k) {
    double v = idx[k];
    if (!(std::fabs(v) < 9.0e18)) continue;  // NaN, inf, or far outside any depth
    int64_t i = static_cast<int64_t>(v);
    if (i < 0) i += depth;
    if (i < 0 || i >= depth) continue;
    int64_t o = static_cast<int64_t>(k) / inner, r = static_cast<int64_t>(k) % inner;
    std::memcpy(dst + static_cast<size_t>((o * depth + i) * inner + r) * es, on, es);
  }
  return {out};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("OneHot", check_one_hot, compute_one_hot);

}  // namespace hetsched::kernels
