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

#include "kernels/reference/common.h"

namespace hetsched::kernels {

// Splits X's shape into (outer, axis_len, inner) per the opset's semantics of
// `axis`: elements [o, a, i] at offset (o * axis_len + a) * inner + i are
// normalized over a. Also used by Hardmax.
void softmax_layout(const Node& node, const Shape& shape, int64_t& outer, int64_t& axis_len, int64_t& inner) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (node.opset < 13) {
    int64_t axis = node.attr_int("axis", 1);
    if (axis != rank) axis = normalize_axis(node, axis, rank);
    outer = shape_numel(Shape(shape.begin(), shape.begin() + std::min(axis, rank)));
    axis_len = shape_numel(Shape(shape.begin() + std::min(axis, rank), shape.end()));
    inner = 1;
    return;
  }
  if (rank == 0) {
    normalize_axis(node, node.attr_int("axis", -1), rank);
    outer = axis_len = inner = 1;
    return;
  }
  int64_t axis = normalize_axis(node, node.attr_int("axis", -1), rank);
  outer = shape_numel(Shape(shape.begin(), shape.begin() + axis));
  axis_len = shape[static_cast<size_t>(axis)];
  inner = shape_numel(Shape(shape.begin() + axis + 1, shape.end()));
}

namespace {

void check_softmax(const Node& node, const Graph& graph) { check_input_dtypes(node, graph, kFloatTypes); }

template <bool kLog>
std::vector<Tensor> compute_softmax(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& X = required_input(node, inputs, 0);
  int64_t outer, len, inner;
  softmax_layout(node, X.shape(), outer, len, inner);
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
        for (int64_t i = 0; i < inner; ++i) mx[static_cast<size_t>(i)] = std::max(mx[static_cast<size_t>(i)], xo[a * inner + i]);
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
            yo[a * inner + i] = static_cast<T>(static_cast<double>(xo[a * inner + i] - mx[si]) - std::log(sum[si]));
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
