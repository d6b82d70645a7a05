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
#include <cmath>
#include <limits>

#include <fmt/format.h>

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
    const T* x = X.data<T>();
    T* y = Y.data<T>();
    std::vector<T> mx(static_cast<size_t>(inner));
    std::vector<double> sum(static_cast<size_t>(inner));
    for (int64_t o = 0; o < outer; ++o) {
      const T* xo = x + o * len * inner;
      T* yo = y + o * len * inner;
      std::fill(mx.begin(), mx.end(), -std::numeric_limits<T>::infinity());
      std::fill(sum.begin(), sum.end(), 0.0);
      for (int64_t a = 0; a < len; ++a)
        for (int64_t i = 0; i < inner; ++i)
          mx[static_cast<size_t>(i)] = std::max(mx[static_cast<size_t>(i)], xo[a * inner + i]);
      for (int64_t a = 0; a < len; ++a)
        for (int64_t i = 0; i < inner; ++i) {
          T e = std::exp(xo[a * inner + i] - mx[static_cast<size_t>(i)]);
          if constexpr (!kLog) yo[a * inner + i] = e;
          sum[static_cast<size_t>(i)] += static_cast<double>(e);
        }
      for (int64_t a = 0; a < len; ++a)
        for (int64_t i = 0; i < inner; ++i) {
          size_t si = static_cast<size_t>(i);
          if constexpr (kLog)
            yo[a * inner + i] =
                static_cast<T>(static_cast<double>(xo[a * inner + i] - mx[si]) - std::log(sum[si]));
          else
            yo[a * inner + i] = static_cast<T>(static_cast<double>(yo[a * inner + i]) / sum[si]);
        }
    }
  });
  return {Y};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("Softmax", check_softmax, compute_softmax<false>);
HETSCHED_REFERENCE_KERNEL("LogSoftmax", check_softmax, compute_softmax<true>);

}  // namespace hetsched::kernels
