// NegativeLogLikelihoodLoss — reference kernel (opset 12+).
//
// input [N, C] or [N, C, d1..dk] (log-probabilities), target [N] or
// [N, d1..dk] (class indices), optional weight [C]; `reduction` none, sum
// or mean (default), `ignore_index` (see loss_common.h). Sums accumulate in
// double.
// Supported: float32 and float64 input and weight, int32 and int64 target.
// Refused: other dtypes. A target outside [0, C) that is not ignore_index is
// a run-time error naming it.
#include "kernels/reference/loss_common.h"

namespace hetsched::kernels {

namespace {

std::vector<Tensor> compute_nll_loss(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& input = required_input(node, inputs, 0);
  const Tensor& target = required_input(node, inputs, 1);
  const Tensor* weight = inputs.size() > 2 ? inputs[2] : nullptr;
  return {dispatch_float(node, input.dtype(), [&](auto t) {
    using T = decltype(t);
    return loss::negative_log_likelihood<T>(node, input.data<T>(), input.shape(), target, weight, input.dtype());
  })};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("NegativeLogLikelihoodLoss", loss::check_loss, compute_nll_loss);

}  // namespace hetsched::kernels
