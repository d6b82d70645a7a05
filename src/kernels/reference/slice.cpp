// Slice: starts/ends/axes as attributes before opset 10, starts/ends/axes/steps
// as inputs from opset 10. Negative steps and out-of-range starts/ends are
// clamped as the spec says. Dtype-agnostic strided byte copy.
#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "kernels/reference/slice.h"

namespace hetsched::kernels {
namespace {

bool attribute_form(const Node& node) { return node.has_attr("starts") || node.has_attr("ends"); }

void check_slice(const Node& node, const Graph& graph) {
  if (attribute_form(node)) {
    if (!node.has_attr("starts") || !node.has_attr("ends"))
      throw_invalid(node, "attributes 'starts' and 'ends' are both required");
    if (node.inputs.size() > 1) throw_invalid(node, "has both slice attributes and slice inputs");
    return;
  }
  if (node.opset < 10) throw_invalid(node, "attributes 'starts' and 'ends' are required before opset 10");
  if (node.input(1) == kNoValue || node.input(2) == kNoValue)
    throw_invalid(node, "inputs 'starts' and 'ends' are required");
  check_input_dtypes(node, graph, {DType::kInt32, DType::kInt64}, {1, 2, 3, 4});
}

std::vector<Tensor> compute_slice(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = required_input(node, inputs, 0);
  SliceGeometry geometry = slice_geometry(node, x.shape(), inputs);
  Tensor out(x.dtype(), geometry.out_shape);
  std::vector<int64_t> in_strides = strides_of(x.shape());
  std::vector<int64_t> strides(in_strides.size());
  int64_t base = 0;
  for (size_t d = 0; d < in_strides.size(); ++d) {
    base += geometry.first[d] * in_strides[d];
    strides[d] = geometry.step[d] * in_strides[d];
  }
  strided_copy(x.raw(), base, strides, geometry.out_shape, out.raw(), dtype_size(x.dtype()));
  return {out};
}

}  // namespace

SliceGeometry slice_geometry(const Node& node, const Shape& shape, const std::vector<const Tensor*>& inputs) {
  std::vector<int64_t> starts, ends, axes, steps;
  if (attribute_form(node)) {
    starts = node.attr_ints("starts");
    ends = node.attr_ints("ends");
    axes = node.attr_ints("axes");
  } else {
    starts = required_input(node, inputs, 1).to_int64_vector();
    ends = required_input(node, inputs, 2).to_int64_vector();
    axes = optional_int64_input(inputs, 3);
    steps = optional_int64_input(inputs, 4);
  }
  size_t n = starts.size();
  if (axes.empty())
    for (size_t i = 0; i < n; ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(n, 1);
  if (ends.size() != n || axes.size() != n || steps.size() != n)
    throw_runtime(node, fmt::format("starts, ends, axes and steps have {}, {}, {} and {} values", n, ends.size(),
                                    axes.size(), steps.size()));

  const int64_t rank = static_cast<int64_t>(shape.size());
  SliceGeometry g{std::vector<int64_t>(static_cast<size_t>(rank), 0), std::vector<int64_t>(static_cast<size_t>(rank), 1),
                  shape};
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (size_t i = 0; i < n; ++i) {
    if (axes[i] < -rank || axes[i] >= rank)
      throw_runtime(node, fmt::format("axis {} is out of range for rank {}", axes[i], rank));
    size_t a = static_cast<size_t>(axes[i] < 0 ? axes[i] + rank : axes[i]);
    if (seen[a]) throw_runtime(node, fmt::format("axis {} is repeated", axes[i]));
    seen[a] = true;
    int64_t dim = shape[a];
    int64_t step = steps[i];
    if (step == 0) throw_runtime(node, fmt::format("step for axis {} is 0", axes[i]));
    // A step longer than the dim takes one element at most, like the dim itself.
    int64_t max_step = std::max<int64_t>(dim, 1);
    step = std::clamp(step, -max_step, max_step);
    int64_t start = starts[i], end = ends[i], count = 0;
    if (start < 0) start += dim;
    if (end < 0) end += dim;
    if (dim == 0) {
      start = 0;
    } else if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      count = end > start ? (end - start - 1) / step + 1 : 0;
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      count = start > end ? (start - end - 1) / -step + 1 : 0;
    }
    if (count == 0) start = 0;
    g.first[a] = start;
    g.step[a] = step;
    g.out_shape[a] = count;
  }
  return g;
}

HETSCHED_REFERENCE_KERNEL("Slice", check_slice, compute_slice);

}  // namespace hetsched::kernels
