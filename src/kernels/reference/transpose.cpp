// Transpose: permutes axes (default perm reverses them). Dtype-agnostic.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kernels/reference/common.h"

namespace hetsched::kernels {
namespace {

void check_transpose(const Node& node, const Graph& graph) {
  if (node.input(0) == kNoValue) throw_invalid(node, "input 'data' is missing");
  if (!node.has_attr("perm")) return;
  std::vector<int64_t> perm = node.attr_ints("perm");
  std::vector<bool> seen(perm.size(), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(perm.size()) || seen[static_cast<size_t>(p)])
      throw_invalid(node, fmt::format("perm [{}] is not a permutation", fmt::join(perm, ",")));
    seen[static_cast<size_t>(p)] = true;
  }
  const Value& x = graph.values[node.input(0)];
  if (x.has_shape && x.shape.size() != perm.size())
    throw_invalid(node, fmt::format("perm [{}] does not match input rank {}", fmt::join(perm, ","), x.shape.size()));
}

std::vector<Tensor> compute_transpose(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = required_input(node, inputs, 0);
  size_t rank = static_cast<size_t>(x.rank());
  std::vector<int64_t> perm = node.attr_ints("perm");
  if (perm.empty() && !node.has_attr("perm"))
    for (size_t i = 0; i < rank; ++i) perm.push_back(static_cast<int64_t>(rank - 1 - i));
  std::vector<bool> seen(rank, false);
  bool ok = perm.size() == rank;
  for (size_t i = 0; ok && i < rank; ++i) {
    ok = perm[i] >= 0 && perm[i] < static_cast<int64_t>(rank) && !seen[static_cast<size_t>(perm[i])];
    if (ok) seen[static_cast<size_t>(perm[i])] = true;
  }
  if (!ok)
    throw_runtime(node, fmt::format("perm [{}] is not a permutation of the {} axes of {}", fmt::join(perm, ","), rank,
                                    shape_to_string(x.shape())));
  std::vector<int64_t> in_strides = strides_of(x.shape());
  Shape out_shape(rank);
  std::vector<int64_t> strides(rank);
  for (size_t i = 0; i < rank; ++i) {
    out_shape[i] = x.dim(perm[i]);
    strides[i] = in_strides[static_cast<size_t>(perm[i])];
  }
  Tensor out(x.dtype(), out_shape);
  strided_copy(x.raw(), 0, strides, out_shape, out.raw(), dtype_size(x.dtype()));
  return {out};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("Transpose", check_transpose, compute_transpose);

}  // namespace hetsched::kernels
