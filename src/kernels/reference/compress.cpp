// Compress — reference kernel: the slices along `axis` (the flattened input
// without one) where the 1-D bool condition is true; a condition shorter
// than the axis leaves the rest out. The output's length depends on the data.
// Supported: every dtype the engine has.
#include <cstring>

#include <fmt/format.h>

#include "kernels/reference/common.h"

namespace hetsched::kernels {
namespace {

std::vector<Tensor> compute_compress(const Node& node, const std::vector<const Tensor*>& inputs) {
  Tensor x = required_input(node, inputs, 0);
  const Tensor& condition = required_input(node, inputs, 1);
  if (condition.rank() != 1) throw_runtime(node, "condition must be 1-D");
  int64_t axis = 0;
  if (node.has_attr("axis")) axis = normalize_axis(node, node.attr_int("axis", 0), x.rank());
  else x = x.reshaped({x.numel()});
  const int64_t n = x.dim(axis);
  if (condition.numel() > n)
    throw_runtime(node, fmt::format("condition of {} for an axis of {}", condition.numel(), n));
  const std::vector<int64_t> keep = condition.to_int64_vector();
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
  const size_t inner_bytes = n == 0 || outer == 0 ? 0 : x.nbytes() / static_cast<size_t>(outer * n);
  std::vector<int64_t> kept;
  for (size_t i = 0; i < keep.size(); ++i)
    if (keep[i]) kept.push_back(static_cast<int64_t>(i));
  Shape shape = x.shape();
  shape[static_cast<size_t>(axis)] = static_cast<int64_t>(kept.size());
  Tensor y(x.dtype(), shape);
  const auto* src = static_cast<const std::byte*>(x.raw());
  auto* dst = static_cast<std::byte*>(y.raw());
  for (int64_t o = 0; o < outer; ++o)
    for (size_t k = 0; k < kept.size(); ++k)
      std::memcpy(dst + (static_cast<size_t>(o) * kept.size() + k) * inner_bytes,
                  src + static_cast<size_t>(o * n + kept[k]) * inner_bytes, inner_bytes);
  return {y};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("Compress", nullptr, compute_compress);

}  // namespace hetsched::kernels
