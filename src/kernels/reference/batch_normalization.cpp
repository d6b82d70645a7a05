// BatchNormalization — reference kernel, inference mode only.
//
// Y = (X - mean) / sqrt(var + epsilon) * scale + B, per channel (dim 1),
// computed as X * a + b with a = scale / sqrt(var + epsilon) and
// b = B - mean * a evaluated in double per channel.
// Supported: X float32 or float64 of rank >= 2 (N, C, ...); scale, B, mean
// and var float32 or float64 (they may differ from X's dtype, as opset 15
// allows); epsilon; momentum (unused in inference); the opset 7-8 `spatial`
// attribute: spatial = 0 takes per-activation parameters of shape
// X.shape[1:] (or their flattening).
// Refused: training_mode = 1 (opset 14+) and any output beyond Y (running or
// saved mean/var, the training outputs of every opset); other dtypes.
#include <cmath>

#include <fmt/format.h>

#include "kernels/reference/common.h"

namespace hetsched::kernels {
namespace {

void check_refused(const Node& node) {
  if (node.attr_int("training_mode", 0) != 0)
    throw_unsupported(node, "training_mode=1 is not supported (inference only)");
  for (size_t i = 1; i < node.outputs.size(); ++i)
    if (node.outputs[i] != kNoValue)
      throw_unsupported(
          node, fmt::format("output {} (a training-mode statistic) is not supported (inference only)", i));
}

void check_batch_norm(const Node& node, const Graph& graph) {
  check_input_dtypes(node, graph, kFloatTypes);
  check_refused(node);
  for (size_t i = 0; i < 5; ++i)
    if (node.input(i) == kNoValue) throw_invalid(node, fmt::format("input {} is required", i));
}

std::vector<Tensor> compute_batch_norm(const Node& node, const std::vector<const Tensor*>& inputs) {
  check_refused(node);
  const Tensor& X = required_input(node, inputs, 0);
  if (X.rank() < 2)
    throw_runtime(node,
                  fmt::format("X has shape {}, expected rank >= 2 (N, C, ...)", shape_to_string(X.shape())));
  const bool spatial = node.attr_int("spatial", 1) != 0;
  const double eps = node.attr_float("epsilon", 1e-5f);
  const int64_t N = X.dim(0);
  // Parameters apply per "channel" of `inner` contiguous elements.
  int64_t channels = X.dim(1);
  if (!spatial) channels = shape_numel(Shape(X.shape().begin() + 1, X.shape().end()));
  const int64_t inner = N * channels == 0 ? 0 : X.numel() / (N * channels);
  std::vector<std::vector<double>> p;  // scale, B, mean, var
  const char* names[] = {"scale", "B", "mean", "var"};
  for (size_t i = 1; i < 5; ++i) {
    const Tensor& t = required_input(node, inputs, i);
    if (t.numel() != channels)
      throw_runtime(node, fmt::format("{} has shape {}, expected {} values", names[i - 1],
                                      shape_to_string(t.shape()), channels));
    p.push_back(t.to_double_vector());
  }
  std::vector<double> a(static_cast<size_t>(channels)), b(static_cast<size_t>(channels));
  for (size_t c = 0; c < a.size(); ++c) {
    a[c] = p[0][c] / std::sqrt(p[3][c] + eps);
    b[c] = p[1][c] - p[2][c] * a[c];
  }
  Tensor Y(X.dtype(), X.shape());
  dispatch_float(node, X.dtype(), [&](auto t) {
    using T = decltype(t);
    const T* x = X.data<T>();
    T* y = Y.data<T>();
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < channels; ++c) {
        const T ac = static_cast<T>(a[static_cast<size_t>(c)]),
                bc = static_cast<T>(b[static_cast<size_t>(c)]);
        const int64_t off = (n * channels + c) * inner;
        for (int64_t i = 0; i < inner; ++i) y[off + i] = x[off + i] * ac + bc;
      }
  });
  std::vector<Tensor> outs = {Y};
  for (size_t i = 1; i < node.outputs.size(); ++i) outs.emplace_back();
  return outs;
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("BatchNormalization", check_batch_norm, compute_batch_norm);

}  // namespace hetsched::kernels
