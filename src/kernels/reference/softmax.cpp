// Softmax and LogSoftmax — reference kernels.
//
// Opset >= 13: normalizes along the single dim `axis` (default -1).
// Opset < 13: X is coerced to 2-D [prod(shape[:axis]), prod(shape[axis:])]
// and each row is normalized (default axis 1; axis == rank is accepted and
// gives rows of one element).
// Softmax: exp(x - max) / sum(exp(x - max)); LogSoftmax: x - max - log(sum).
// Sums are accumulated in double.
// Supported: float32 and float64, any rank (a scalar is one row of one).
// Refused: other dtypes.
#include "kernels/reference/nn_common.h"

namespace hetsched::kernels {

namespace {

void check_softmax(const Node& node, const Graph& graph) { check_input_dtypes(node, graph, kFloatTypes); }

template <bool kLog>
std::vector<Tensor> compute_softmax(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& X = required_input(node, inputs, 0);
  int64_t outer, len, inner;
  nn::softmax_layout(node, X.shape(), outer, len, inner);
  Tensor Y(X.dtype(), X.shape());
  if (X.numel() == 0) return {Y};
  dispatch_float(node, X.dtype(), [&](auto t) {
    using T = decltype(t);
    nn::softmax_rows<kLog>(X.data<T>(), Y.data<T>(), outer, len, inner);
  });
  return {Y};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("Softmax", check_softmax, compute_softmax<false>);
HETSCHED_REFERENCE_KERNEL("LogSoftmax", check_softmax, compute_softmax<true>);

}  // namespace hetsched::kernels
