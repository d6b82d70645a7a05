// Shape (start/end from opset 15, clamped to [0, rank]) and Size: int64
// metadata of the input; exact, so constant folding can rely on them.
#include <algorithm>

#include "kernels/reference/common.h"

namespace hetsched::kernels {
namespace {

std::vector<Tensor> compute_shape(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = required_input(node, inputs, 0);
  int64_t rank = x.rank();
  int64_t start = node.attr_int("start", 0);
  int64_t end = node.attr_int("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  std::vector<int64_t> dims;
  for (int64_t d = start; d < end; ++d) dims.push_back(x.dim(d));
  return {Tensor::from_vector<int64_t>({static_cast<int64_t>(dims.size())}, dims)};
}

std::vector<Tensor> compute_size(const Node& node, const std::vector<const Tensor*>& inputs) {
  return {Tensor::scalar<int64_t>(required_input(node, inputs, 0).numel())};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("Shape", nullptr, compute_shape);
HETSCHED_REFERENCE_KERNEL("Size", nullptr, compute_size);

}  // namespace hetsched::kernels
