// Identity: a copy of the input (tensors only; optional and sequence types
// never reach a kernel).
#include "kernels/reference/common.h"

namespace hetsched::kernels {
namespace {

std::vector<Tensor> compute_identity(const Node& node, const std::vector<const Tensor*>& inputs) {
  return {required_input(node, inputs, 0).clone()};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("Identity", nullptr, compute_identity);

}  // namespace hetsched::kernels
