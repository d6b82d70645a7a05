// MaxUnpool — reference kernel: a zero tensor of the unpooled shape
// ((in - 1) * stride + kernel - pads per spatial dim) with X's values written
// at I's positions (MaxPool's indices, flattened over that whole shape); an
// output_shape input at least as large pads each dim at its end.
// Supported: float32 and float64 X, int64 I.
// Refused: other dtypes.
#include <fmt/format.h>

#include "kernels/reference/common.h"

namespace hetsched::kernels {
namespace {

void check_max_unpool(const Node& node, const Graph& graph) {
  check_input_dtypes(node, graph, kFloatTypes, {0});
  if (node.attr_ints("kernel_shape").empty()) throw_invalid(node, "kernel_shape is required");
}

std::vector<Tensor> compute_max_unpool(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = required_input(node, inputs, 0);
  const std::vector<int64_t> indices = required_input(node, inputs, 1).to_int64_vector();
  if (static_cast<int64_t>(indices.size()) != x.numel()) throw_runtime(node, "I must have X's shape");
  const std::vector<int64_t> kernel = node.attr_ints("kernel_shape");
  const size_t n_spatial = kernel.size();
  if (x.rank() != static_cast<int64_t>(n_spatial) + 2) throw_runtime(node, "X's rank does not fit kernel_shape");
  const std::vector<int64_t> strides = node.attr_ints("strides", std::vector<int64_t>(n_spatial, 1));
  const std::vector<int64_t> pads = node.attr_ints("pads", std::vector<int64_t>(2 * n_spatial, 0));
  // I indexes the unpooled shape; a larger output_shape pads at the end of
  // each dim, so each index is moved to the same coordinates there.
  Shape unpooled{x.dim(0), x.dim(1)};
  for (size_t d = 0; d < n_spatial; ++d)
    unpooled.push_back((x.dim(static_cast<int64_t>(d) + 2) - 1) * strides[d] + kernel[d] - pads[d] - pads[d + n_spatial]);
  Shape shape = inputs.size() > 2 && inputs[2] ? Shape(inputs[2]->to_int64_vector()) : unpooled;
  if (shape.size() != unpooled.size()) throw_runtime(node, "output_shape must have X's rank");
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] < unpooled[d])
      throw_runtime(node, fmt::format("output_shape {} is smaller than {}", shape_to_string(shape),
                                      shape_to_string(unpooled)));
  const std::vector<int64_t> from = strides_of(unpooled), to = strides_of(shape);
  const std::vector<double> v = x.to_double_vector();
  std::vector<double> y(static_cast<size_t>(shape_numel(shape)), 0.0);
  for (size_t i = 0; i < v.size(); ++i) {
    if (indices[i] < 0 || indices[i] >= shape_numel(unpooled))
      throw_runtime(node, fmt::format("index {} outside the unpooled {}", indices[i], shape_to_string(unpooled)));
    int64_t at = 0;
    for (size_t d = 0; d < shape.size(); ++d) at += indices[i] / from[d] % unpooled[d] * to[d];
    y[static_cast<size_t>(at)] = v[i];
  }
  return {float_tensor_of(node, x.dtype(), shape, y)};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("MaxUnpool", check_max_unpool, compute_max_unpool);

}  // namespace hetsched::kernels
