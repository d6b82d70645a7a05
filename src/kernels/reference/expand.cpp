// Expand: broadcasts the input against a shape (numpy rules in both
// directions: a 1 in `shape` keeps the input dim). Dtype-agnostic.

#include <fmt/format.h>

#include "kernels/reference/common.h"

namespace hetsched::kernels {
namespace {

void check_expand(const Node& node, const Graph& graph) {
  if (node.input(0) == kNoValue || node.input(1) == kNoValue) throw_invalid(node, "needs input and shape");
  check_input_dtypes(node, graph, {DType::kInt64}, {1});
}

std::vector<Tensor> compute_expand(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = required_input(node, inputs, 0);
  const Tensor& shape_t = required_input(node, inputs, 1);
  if (shape_t.rank() > 1) throw_runtime(node, "shape must be 1-D");
  Shape target = shape_t.to_int64_vector();
  for (int64_t d : target)
    if (d < 0) throw_runtime(node, fmt::format("shape value {} is negative", d));
  Shape out_shape = broadcast_shapes(node, x.shape(), target);
  Tensor out(x.dtype(), out_shape);
  strided_copy(x.raw(), 0, broadcast_strides(x.shape(), out_shape), out_shape, out.raw(), dtype_size(x.dtype()));
  return {out};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("Expand", check_expand, compute_expand);

}  // namespace hetsched::kernels
