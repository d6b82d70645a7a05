// LayerNormalization (opset 17) — reference kernel.
//
// For each slice X[i0, ..., i_{axis-1}, :, ..., :] (the normalized dims are
// axis..rank-1): Y = (X - mean) / sqrt(var + epsilon) * Scale + B, with the
// population variance. Mean and variance are computed in double.
// Supported: float32 and float64 (X, Scale, B of one dtype); axis (negative
// too); epsilon; B optional; Scale and B of the normalized shape or
// unidirectionally broadcastable to it; stash_type 1; the optional outputs
// Mean and InvStdDev (float32 per stash_type 1, of shape X.shape[:axis]
// followed by 1s).
// Refused: stash_type other than 1; other dtypes.
#include <cmath>

#include <fmt/format.h>

#include "kernels/reference/common.h"

namespace hetsched::kernels {
namespace {

void check_layer_norm(const Node& node, const Graph& graph) {
  check_input_dtypes(node, graph, kFloatTypes);
  int64_t stash = node.attr_int("stash_type", 1);
  if (stash != 1)
    throw_unsupported(node, fmt::format("stash_type {} is not supported (only 1, float32)", stash));
}

// `t` broadcast to `norm_shape`, as double values in row-major order.
std::vector<double> expand_to(const Node& node, const Tensor& t, const Shape& norm_shape, const char* name) {
  bool ok = t.rank() <= static_cast<int64_t>(norm_shape.size());
  for (int64_t i = 0; ok && i < t.rank(); ++i) {
    int64_t d = t.dim(t.rank() - 1 - i), want = norm_shape[norm_shape.size() - 1 - static_cast<size_t>(i)];
    ok = d == 1 || d == want;
  }
  if (!ok)
    throw_runtime(node, fmt::format("{} has shape {}, which does not broadcast to the normalized shape {}",
                                    name, shape_to_string(t.shape()), shape_to_string(norm_shape)));
  std::vector<double> src = t.to_double_vector();
  std::vector<int64_t> st = broadcast_strides(t.shape(), norm_shape);
  int64_t n = shape_numel(norm_shape);
  std::vector<double> out(static_cast<size_t>(n));
  std::vector<int64_t> index(norm_shape.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = 0;
    for (size_t d = 0; d < index.size(); ++d) off += index[d] * st[d];
    out[static_cast<size_t>(i)] = src[static_cast<size_t>(off)];
    for (size_t d = index.size(); d-- > 0;) {
      if (++index[d] < norm_shape[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

std::vector<Tensor> compute_layer_norm(const Node& node, const std::vector<const Tensor*>& inputs) {
  int64_t stash = node.attr_int("stash_type", 1);
  if (stash != 1)
    throw_unsupported(node, fmt::format("stash_type {} is not supported (only 1, float32)", stash));
  const Tensor& X = required_input(node, inputs, 0);
  const Tensor& S = required_input(node, inputs, 1);
  const Tensor* B = inputs.size() > 2 ? inputs[2] : nullptr;
  if (S.dtype() != X.dtype() || (B && B->dtype() != X.dtype()))
    throw_runtime(node, "X, Scale and B must have the same dtype");
  const int64_t axis = normalize_axis(node, node.attr_int("axis", -1), X.rank());
  const double eps = node.attr_float("epsilon", 1e-5f);
  Shape norm_shape(X.shape().begin() + axis, X.shape().end());
  const int64_t inner = shape_numel(norm_shape);
  const int64_t outer =
      inner == 0 ? shape_numel(Shape(X.shape().begin(), X.shape().begin() + axis)) : X.numel() / inner;
  std::vector<double> scale = expand_to(node, S, norm_shape, "Scale");
  std::vector<double> bias =
      B ? expand_to(node, *B, norm_shape, "B") : std::vector<double>(scale.size(), 0.0);

  Shape stat_shape(X.shape().begin(), X.shape().begin() + axis);
  stat_shape.resize(static_cast<size_t>(X.rank()), 1);
  Tensor Y(X.dtype(), X.shape());
  Tensor mean_t(DType::kFloat32, stat_shape), inv_t(DType::kFloat32, stat_shape);
  float* mean_out = mean_t.data<float>();
  float* inv_out = inv_t.data<float>();
  dispatch_float(node, X.dtype(), [&](auto t) {
    using T = decltype(t);
    const T* x = X.data<T>();
    T* y = Y.data<T>();
    for (int64_t o = 0; o < outer; ++o) {
      const T* xo = x + o * inner;
      T* yo = y + o * inner;
      double sum = 0;
      for (int64_t i = 0; i < inner; ++i) sum += static_cast<double>(xo[i]);
      const double mean = sum / static_cast<double>(inner);
      double sq = 0;
      for (int64_t i = 0; i < inner; ++i) {
        double d = static_cast<double>(xo[i]) - mean;
        sq += d * d;
      }
      const double inv = 1.0 / std::sqrt(sq / static_cast<double>(inner) + eps);
      for (int64_t i = 0; i < inner; ++i) {
        size_t si = static_cast<size_t>(i);
        yo[i] = static_cast<T>((static_cast<double>(xo[i]) - mean) * inv * scale[si] + bias[si]);
      }
      mean_out[o] = static_cast<float>(mean);
      inv_out[o] = static_cast<float>(inv);
    }
  });
  std::vector<Tensor> outs = {Y};
  for (size_t i = 1; i < node.outputs.size() && i < 3; ++i)
    outs.push_back(node.outputs[i] == kNoValue ? Tensor() : (i == 1 ? mean_t : inv_t));
  return outs;
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("LayerNormalization", check_layer_norm, compute_layer_norm);

}  // namespace hetsched::kernels
