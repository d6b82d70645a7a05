// GlobalAveragePool and GlobalMaxPool — reference kernels.
//
// Supported: float32 and float64; X of rank >= 2 (N, C, spatial...); the
// output keeps the rank, with every spatial dim 1. GlobalAveragePool sums in
// double; GlobalMaxPool propagates NaN. An empty spatial extent gives NaN
// (average) or -inf (max).
// Refused: other dtypes.
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "kernels/reference/common.h"

namespace hetsched::kernels {
namespace {

void check_global_pool(const Node& node, const Graph& graph) { check_input_dtypes(node, graph, kFloatTypes); }

template <bool kMax>
std::vector<Tensor> compute_global_pool(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& X = required_input(node, inputs, 0);
  if (X.rank() < 2)
    throw_runtime(node,
                  fmt::format("X has shape {}, expected rank >= 2 (N, C, ...)", shape_to_string(X.shape())));
  Shape out_shape = X.shape();
  for (size_t i = 2; i < out_shape.size(); ++i) out_shape[i] = 1;
  Tensor Y(X.dtype(), out_shape);
  const int64_t planes = X.dim(0) * X.dim(1);
  const int64_t size = planes == 0 ? 0 : X.numel() / planes;
  dispatch_float(node, X.dtype(), [&](auto t) {
    using T = decltype(t);
    const T* x = X.data<T>();
    T* y = Y.data<T>();
    for (int64_t p = 0; p < planes; ++p) {
      const T* xp = x + p * size;
      if constexpr (kMax) {
        T best = -std::numeric_limits<T>::infinity();
        for (int64_t i = 0; i < size; ++i) {
          if (std::isnan(xp[i])) {
            best = xp[i];
            break;
          }
          best = std::max(best, xp[i]);
        }
        y[p] = best;
      } else {
        double sum = 0;
        for (int64_t i = 0; i < size; ++i) sum += static_cast<double>(xp[i]);
        y[p] = static_cast<T>(sum / static_cast<double>(size));
      }
    }
  });
  return {Y};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("GlobalAveragePool", check_global_pool, compute_global_pool<false>);
HETSCHED_REFERENCE_KERNEL("GlobalMaxPool", check_global_pool, compute_global_pool<true>);

}  // namespace hetsched::kernels
