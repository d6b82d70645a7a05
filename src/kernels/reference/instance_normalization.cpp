// InstanceNormalization — reference kernel.
//
// For each image n and channel c: Y = scale[c] * (X - mean) / sqrt(var + epsilon)
// + B[c], with mean and (population) variance over the spatial dims,
// computed in double.
// Supported: float32 and float64 (input, scale and B of one dtype); X of rank
// >= 2 (N, C, spatial...); epsilon.
// Refused: other dtypes.
#include <cmath>

#include <fmt/format.h>

#include "kernels/reference/common.h"

namespace hetsched::kernels {
namespace {

void check_instance_norm(const Node& node, const Graph& graph) {
  check_input_dtypes(node, graph, kFloatTypes);
}

std::vector<Tensor> compute_instance_norm(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& X = required_input(node, inputs, 0);
  const Tensor& S = required_input(node, inputs, 1);
  const Tensor& B = required_input(node, inputs, 2);
  if (X.rank() < 2)
    throw_runtime(
        node, fmt::format("input has shape {}, expected rank >= 2 (N, C, ...)", shape_to_string(X.shape())));
  if (S.dtype() != X.dtype() || B.dtype() != X.dtype())
    throw_runtime(node, "input, scale and B must have the same dtype");
  const int64_t N = X.dim(0), C = X.dim(1);
  if (S.numel() != C || B.numel() != C)
    throw_runtime(node, fmt::format("scale {} and B {} must have {} values (the channels of input {})",
                                    shape_to_string(S.shape()), shape_to_string(B.shape()), C,
                                    shape_to_string(X.shape())));
  const double eps = node.attr_float("epsilon", 1e-5f);
  const int64_t inner = N * C == 0 ? 0 : X.numel() / (N * C);
  std::vector<double> scale = S.to_double_vector(), bias = B.to_double_vector();
  Tensor Y(X.dtype(), X.shape());
  dispatch_float(node, X.dtype(), [&](auto t) {
    using T = decltype(t);
    const T* x = X.data<T>();
    T* y = Y.data<T>();
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c) {
        const T* xp = x + (n * C + c) * inner;
        T* yp = y + (n * C + c) * inner;
        double sum = 0;
        for (int64_t i = 0; i < inner; ++i) sum += static_cast<double>(xp[i]);
        const double mean = sum / static_cast<double>(inner);
        double sq = 0;
        for (int64_t i = 0; i < inner; ++i) {
          double d = static_cast<double>(xp[i]) - mean;
          sq += d * d;
        }
        const double a = scale[static_cast<size_t>(c)] / std::sqrt(sq / static_cast<double>(inner) + eps);
        const double b = bias[static_cast<size_t>(c)];
        for (int64_t i = 0; i < inner; ++i)
          yp[i] = static_cast<T>((static_cast<double>(xp[i]) - mean) * a + b);
      }
  });
  return {Y};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("InstanceNormalization", check_instance_norm, compute_instance_norm);

}  // namespace hetsched::kernels
