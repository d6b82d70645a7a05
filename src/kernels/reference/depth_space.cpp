// DepthToSpace (modes DCR and CRD) and SpaceToDepth on 4-D NCHW tensors:
// a reshape to 6-D, a transpose and a reshape back, done as one strided copy.

#include <fmt/format.h>

#include "kernels/reference/common.h"

namespace hetsched::kernels {
namespace {

void check_block_op(const Node& node, const Graph& graph) {
  if (node.input(0) == kNoValue) throw_invalid(node, "input 'input' is missing");
  if (node.attr_int("blocksize", 0) < 1) throw_invalid(node, "attribute 'blocksize' must be >= 1");
  std::string mode = node.attr_string("mode", "DCR");
  if (node.op_type == "DepthToSpace" && mode != "DCR" && mode != "CRD")
    throw_unsupported(node, fmt::format("mode '{}' is not supported (DCR, CRD)", mode));
  const Value& x = graph.values[node.input(0)];
  if (x.has_shape && x.shape.size() != 4)
    throw_invalid(node, fmt::format("input must be 4-D, got {}", shape_to_string(x.shape)));
}

// Copies x, viewed as `view` (6-D, row-major), to out with the view's axes
// permuted by `perm`.
Tensor permuted_copy(const Tensor& x, const Shape& view, const std::vector<size_t>& perm, const Shape& final_shape) {
  std::vector<int64_t> view_strides = strides_of(view);
  Shape out6(6);
  std::vector<int64_t> strides(6);
  for (size_t i = 0; i < 6; ++i) {
    out6[i] = view[perm[i]];
    strides[i] = view_strides[perm[i]];
  }
  Tensor out(x.dtype(), final_shape);
  strided_copy(x.raw(), 0, strides, out6, out.raw(), dtype_size(x.dtype()));
  return out;
}

std::vector<Tensor> compute_depth_to_space(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = required_input(node, inputs, 0);
  int64_t b = node.attr_int("blocksize", 0);
  if (b < 1) throw_runtime(node, "blocksize must be >= 1");
  if (x.rank() != 4) throw_runtime(node, fmt::format("input must be 4-D, got {}", shape_to_string(x.shape())));
  int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
  int64_t bb = size_product(node, b, b);
  if (c % bb != 0) throw_runtime(node, fmt::format("channels {} are not divisible by blocksize^2 = {}", c, bb));
  int64_t oc = c / bb;
  Shape final_shape{n, oc, size_product(node, h, b), size_product(node, w, b)};
  if (node.attr_string("mode", "DCR") == "CRD")
    return {permuted_copy(x, {n, oc, b, b, h, w}, {0, 1, 4, 2, 5, 3}, final_shape)};
  return {permuted_copy(x, {n, b, b, oc, h, w}, {0, 3, 4, 1, 5, 2}, final_shape)};
}

std::vector<Tensor> compute_space_to_depth(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = required_input(node, inputs, 0);
  int64_t b = node.attr_int("blocksize", 0);
  if (b < 1) throw_runtime(node, "blocksize must be >= 1");
  if (x.rank() != 4) throw_runtime(node, fmt::format("input must be 4-D, got {}", shape_to_string(x.shape())));
  int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
  if (h % b != 0 || w % b != 0)
    throw_runtime(node, fmt::format("spatial dims {}x{} are not divisible by blocksize {}", h, w, b));
  int64_t oc = size_product(node, c, size_product(node, b, b));
  return {permuted_copy(x, {n, c, h / b, b, w / b, b}, {0, 3, 5, 1, 2, 4}, {n, oc, h / b, w / b})};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("DepthToSpace", check_block_op, compute_depth_to_space);
HETSCHED_REFERENCE_KERNEL("SpaceToDepth", check_block_op, compute_space_to_depth);

}  // namespace hetsched::kernels
