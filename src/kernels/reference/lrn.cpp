// LRN (local response normalization across channels) — reference kernel.
//
// square_sum[n, c, ...] = sum of X[n, j, ...]^2 for j in
//   [c - floor((size - 1) / 2), c + ceil((size - 1) / 2)] clipped to [0, C);
// Y = X / (bias + alpha / size * square_sum) ^ beta. Computed in double.
// Supported: float32 and float64; X of rank >= 2 (N, C, spatial...); alpha,
// beta, bias, size (required, >= 1).
// Refused: other dtypes.
#include <cmath>

#include <fmt/format.h>

#include "kernels/reference/common.h"

namespace hetsched::kernels {
namespace {

int64_t read_size(const Node& node) {
  if (!node.has_attr("size")) throw_invalid(node, "attribute 'size' is required");
  int64_t size = node.attr_int("size", 1);
  if (size < 1) throw_invalid(node, fmt::format("attribute 'size' must be >= 1, got {}", size));
  return size;
}

void check_lrn(const Node& node, const Graph& graph) {
  check_input_dtypes(node, graph, kFloatTypes);
  read_size(node);
}

std::vector<Tensor> compute_lrn(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& X = required_input(node, inputs, 0);
  if (X.rank() < 2)
    throw_runtime(node,
                  fmt::format("X has shape {}, expected rank >= 2 (N, C, ...)", shape_to_string(X.shape())));
  const int64_t size = read_size(node);
  const double alpha = node.attr_float("alpha", 1e-4f), beta = node.attr_float("beta", 0.75f),
               bias = node.attr_float("bias", 1.0f);
  const int64_t N = X.dim(0), C = X.dim(1);
  const int64_t inner = N * C == 0 ? 0 : X.numel() / (N * C);
  const int64_t before = (size - 1) / 2, after = size - 1 - before;
  Tensor Y(X.dtype(), X.shape());
  dispatch_float(node, X.dtype(), [&](auto t) {
    using T = decltype(t);
    const T* x = X.data<T>();
    T* y = Y.data<T>();
    std::vector<double> sq(static_cast<size_t>(inner));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c) {
        std::fill(sq.begin(), sq.end(), 0.0);
        for (int64_t j = std::max<int64_t>(0, c - before); j <= std::min(C - 1, c + after); ++j) {
          const T* xj = x + (n * C + j) * inner;
          for (int64_t i = 0; i < inner; ++i)
            sq[static_cast<size_t>(i)] += static_cast<double>(xj[i]) * xj[i];
        }
        const T* xc = x + (n * C + c) * inner;
        T* yc = y + (n * C + c) * inner;
        for (int64_t i = 0; i < inner; ++i)
          yc[i] = static_cast<T>(
              static_cast<double>(xc[i]) /
              std::pow(bias + alpha / static_cast<double>(size) * sq[static_cast<size_t>(i)], beta));
      }
  });
  return {Y};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("LRN", check_lrn, compute_lrn);

}  // namespace hetsched::kernels
