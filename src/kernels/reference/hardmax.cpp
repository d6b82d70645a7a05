// Hardmax — reference kernel.
//
// 1 at the first maximum along the normalized dim(s), 0 elsewhere; the
// layout of `axis` follows the opset exactly as Softmax does (opset < 13:
// coerce to 2-D at axis, default 1; opset >= 13: single axis, default -1).
// NaN counts as the maximum (the first NaN wins).
// Supported: float32 and float64.
// Refused: other dtypes.
#include <cmath>

#include "kernels/reference/nn_common.h"

namespace hetsched::kernels {

namespace {

void check_hardmax(const Node& node, const Graph& graph) { check_input_dtypes(node, graph, kFloatTypes); }

std::vector<Tensor> compute_hardmax(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& X = required_input(node, inputs, 0);
  int64_t outer, len, inner;
  nn::softmax_layout(node, X.shape(), outer, len, inner);
  Tensor Y(X.dtype(), X.shape());  // zero-initialised
  if (X.numel() == 0) return {Y};
  dispatch_float(node, X.dtype(), [&](auto t) {
    using T = decltype(t);
    const T* x = X.data<T>();
    T* y = Y.data<T>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const T* xo = x + o * len * inner + i;
        int64_t best = 0;
        for (int64_t a = 1; a < len && !std::isnan(xo[best * inner]); ++a)
          if (xo[a * inner] > xo[best * inner] || std::isnan(xo[a * inner])) best = a;
        y[(o * len + best) * inner + i] = T(1);
      }
  });
  return {Y};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("Hardmax", check_hardmax, compute_hardmax);

}  // namespace hetsched::kernels
