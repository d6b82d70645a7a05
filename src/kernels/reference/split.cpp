// Split: cuts a tensor into parts along an axis. The part sizes come from the
// `split` attribute (before opset 13), the `split` input (from 13), or, when
// neither is given, from `num_outputs` (opset 18, last part smaller when the
// dim is not divisible) or an even split into as many parts as outputs.
#include <cstring>

#include <fmt/format.h>

#include "kernels/reference/split.h"

namespace hetsched::kernels {

std::vector<int64_t> split_sizes(const Node& node, const Shape& shape, const Tensor* split, int64_t* axis) {
  if (shape.empty()) throw_runtime(node, "cannot split a scalar");
  *axis = normalize_axis(node, node.attr_int("axis", 0), static_cast<int64_t>(shape.size()));
  const int64_t dim = shape[static_cast<size_t>(*axis)];
  const int64_t n_out = static_cast<int64_t>(node.outputs.size());
  std::vector<int64_t> sizes;
  if (node.has_attr("split")) {
    sizes = node.attr_ints("split");
  } else if (split != nullptr && split->numel() > 0) {  // empty = not given
    sizes = split->to_int64_vector();
  } else if (node.has_attr("num_outputs")) {
    int64_t n = node.attr_int("num_outputs", n_out);
    if (n <= 0) throw_runtime(node, fmt::format("num_outputs {} must be positive", n));
    int64_t chunk = (dim + n - 1) / n;
    sizes.assign(static_cast<size_t>(n), chunk);
    sizes.back() = dim - chunk * (n - 1);
    if (sizes.back() < 0)
      throw_runtime(node, fmt::format("dim {} cannot be split into {} parts of {}", dim, n, chunk));
  } else {
    if (dim % n_out != 0)
      throw_runtime(node, fmt::format("dim {} of axis {} cannot be split evenly into {} parts", dim, *axis, n_out));
    sizes.assign(static_cast<size_t>(n_out), dim / n_out);
  }
  if (static_cast<int64_t>(sizes.size()) != n_out)
    throw_runtime(node, fmt::format("{} split sizes for {} outputs", sizes.size(), n_out));
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) throw_runtime(node, fmt::format("split size {} is negative", s));
    total += s;
  }
  if (total != dim)
    throw_runtime(node, fmt::format("split sizes add up to {}, but axis {} has {}", total, *axis, dim));
  return sizes;
}

namespace {

void check_split(const Node& node, const Graph& graph) {
  if (node.outputs.empty()) throw_invalid(node, "needs at least one output");
  if (node.has_attr("split") && node.input(1) != kNoValue)
    throw_invalid(node, "has both a 'split' attribute and a 'split' input");
  check_input_dtypes(node, graph, {DType::kInt64}, {1});
  if (node.has_attr("num_outputs") && node.input(1) != kNoValue)
    throw_invalid(node, "has both 'num_outputs' and a 'split' input");
  if (node.has_attr("num_outputs") &&
      node.attr_int("num_outputs", 0) != static_cast<int64_t>(node.outputs.size()))
    throw_invalid(node, fmt::format("num_outputs is {} but the node has {} outputs", node.attr_int("num_outputs", 0),
                                    node.outputs.size()));
}

std::vector<Tensor> compute_split(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = required_input(node, inputs, 0);
  int64_t axis = 0;
  const std::vector<int64_t> sizes =
      split_sizes(node, x.shape(), inputs.size() > 1 ? inputs[1] : nullptr, &axis);
  const int64_t dim = x.dim(axis);

  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
  size_t es = dtype_size(x.dtype());
  size_t in_row = static_cast<size_t>(dim * inner) * es;
  const auto* src = static_cast<const std::byte*>(x.raw());

  std::vector<Tensor> outs;
  int64_t offset = 0;  // along the axis
  for (int64_t s : sizes) {
    Shape shape = x.shape();
    shape[axis] = s;
    Tensor out(x.dtype(), shape);
    size_t bytes = static_cast<size_t>(s * inner) * es;
    auto* dst = static_cast<std::byte*>(out.raw());
    if (bytes > 0)
      for (int64_t o = 0; o < outer; ++o)
        std::memcpy(dst + static_cast<size_t>(o) * bytes,
                    src + static_cast<size_t>(o) * in_row + static_cast<size_t>(offset * inner) * es, bytes);
    offset += s;
    outs.push_back(std::move(out));
  }
  return outs;
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("Split", check_split, compute_split);

}  // namespace hetsched::kernels
