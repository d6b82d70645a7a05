// Squeeze and Unsqueeze: axes as an attribute before opset 13, as an input
// from 13. Squeeze without axes drops every dim of size 1. Data is copied.
#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kernels/reference/common.h"

namespace hetsched::kernels {
namespace {

void check_axes_form(const Node& node, const Graph& graph) {
  if (node.has_attr("axes") && node.input(1) != kNoValue)
    throw_invalid(node, "has both an 'axes' attribute and an 'axes' input");
  check_input_dtypes(node, graph, {DType::kInt64}, {1});
}

void check_unsqueeze(const Node& node, const Graph& graph) {
  check_axes_form(node, graph);
  if (!node.has_attr("axes") && node.input(1) == kNoValue) throw_invalid(node, "needs axes");
}

// Axes from the attribute or the input; `present` tells whether any were given.
std::vector<int64_t> axes_of(const Node& node, const std::vector<const Tensor*>& inputs, bool* present) {
  if (node.has_attr("axes")) {
    *present = true;
    return node.attr_ints("axes");
  }
  *present = inputs.size() > 1 && inputs[1] != nullptr;
  return optional_int64_input(inputs, 1);
}

// Normalizes axes against `rank`; throws on out-of-range or repeated axes.
std::vector<bool> axis_mask(const Node& node, const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<bool> mask(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    if (a < -rank || a >= rank)
      throw_runtime(node, fmt::format("axis {} is out of range for rank {}", a, rank));
    size_t n = static_cast<size_t>(a < 0 ? a + rank : a);
    if (mask[n]) throw_runtime(node, fmt::format("axes [{}] repeat an axis", fmt::join(axes, ",")));
    mask[n] = true;
  }
  return mask;
}

std::vector<Tensor> compute_squeeze(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = required_input(node, inputs, 0);
  bool present = false;
  std::vector<int64_t> axes = axes_of(node, inputs, &present);
  Shape shape;
  if (axes.empty()) {
    for (int64_t d : x.shape())
      if (d != 1) shape.push_back(d);
  } else {
    std::vector<bool> mask = axis_mask(node, axes, x.rank());
    for (int64_t d = 0; d < x.rank(); ++d) {
      if (!mask[static_cast<size_t>(d)]) {
        shape.push_back(x.dim(d));
      } else if (x.dim(d) != 1) {
        throw_runtime(node, fmt::format("cannot squeeze axis {} of size {} (input {})", d, x.dim(d),
                                        shape_to_string(x.shape())));
      }
    }
  }
  return {x.clone().reshaped(shape)};
}

std::vector<Tensor> compute_unsqueeze(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = required_input(node, inputs, 0);
  bool present = false;
  std::vector<int64_t> axes = axes_of(node, inputs, &present);
  if (!present) throw_runtime(node, "axes are missing");
  int64_t out_rank = x.rank() + static_cast<int64_t>(axes.size());
  std::vector<bool> mask = axis_mask(node, axes, out_rank);
  Shape shape;
  size_t next = 0;
  for (int64_t d = 0; d < out_rank; ++d) shape.push_back(mask[static_cast<size_t>(d)] ? 1 : x.shape()[next++]);
  return {x.clone().reshaped(shape)};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("Squeeze", check_axes_form, compute_squeeze);
HETSCHED_REFERENCE_KERNEL("Unsqueeze", check_unsqueeze, compute_unsqueeze);

}  // namespace hetsched::kernels
