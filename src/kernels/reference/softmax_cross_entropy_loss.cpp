// SoftmaxCrossEntropyLoss — reference kernel (opset 12+).
//
// scores [N, C] or [N, C, d1..dk], labels [N] or [N, d1..dk], optional
// weights [C]: the log-softmax of the scores over C (as LogSoftmax computes
// it), then the negative log-likelihood
// of the labels as NegativeLogLikelihoodLoss computes it (loss_common.h:
// `reduction`, `ignore_index`). Outputs: the loss and, when asked for, the
// log-probabilities [N, C, d1..dk].
// Supported: float32 and float64 scores and weights, int32 and int64 labels.
// Refused: other dtypes.
#include <algorithm>

#include "kernels/reference/loss_common.h"
#include "kernels/reference/nn_common.h"

namespace hetsched::kernels {

namespace {

std::vector<Tensor> compute_sce_loss(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& scores = required_input(node, inputs, 0);
  const Tensor& labels = required_input(node, inputs, 1);
  const Tensor* weights = inputs.size() > 2 ? inputs[2] : nullptr;
  const Shape& shape = scores.shape();
  if (shape.size() < 2) throw_runtime(node, fmt::format("scores of rank {}: expected [N, C, ...]", shape.size()));
  const int64_t n_batch = shape[0], n_classes = shape[1];
  const int64_t inner = n_classes == 0 ? 0 : scores.numel() / std::max<int64_t>(n_batch * n_classes, 1);
  Tensor log_p(scores.dtype(), shape);
  Tensor loss = dispatch_float(node, scores.dtype(), [&](auto t) {
    using T = decltype(t);
    nn::softmax_rows<true>(scores.data<T>(), log_p.data<T>(), n_batch, n_classes, inner);
    return loss::negative_log_likelihood<T>(node, log_p.data<T>(), shape, labels, weights, scores.dtype());
  });
  std::vector<Tensor> outputs{loss};
  if (node.outputs.size() > 1) outputs.push_back(log_p);
  return outputs;
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("SoftmaxCrossEntropyLoss", loss::check_loss, compute_sce_loss);

}  // namespace hetsched::kernels
