// MeanVarianceNormalization — reference kernel.
//
// y = (x - mean) / (sqrt(mean(x^2) - mean^2) + 1e-9), the means over `axes`
// (default [0, 2, 3]), as ONNX's function body defines it; in double.
// Supported: float32 and float64.
// Refused: other dtypes.
#include <algorithm>
#include <cmath>

#include "kernels/reference/common.h"

namespace hetsched::kernels {
namespace {

void check_mvn(const Node& node, const Graph& graph) { check_input_dtypes(node, graph, kFloatTypes); }

std::vector<Tensor> compute_mvn(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = required_input(node, inputs, 0);
  std::vector<bool> reduced(static_cast<size_t>(x.rank()), false);
  for (int64_t axis : node.attr_ints("axes", {0, 2, 3})) reduced[normalize_axis(node, axis, x.rank())] = true;
  // Each element's group: its index with the reduced dims dropped.
  const std::vector<int64_t> strides = strides_of(x.shape());
  std::vector<int64_t> group_of(static_cast<size_t>(x.numel()));
  int64_t n_groups = 1;
  std::vector<int64_t> group_strides(static_cast<size_t>(x.rank()), 0);
  for (int64_t d = x.rank(); d-- > 0;) {
    if (reduced[d]) continue;
    group_strides[d] = n_groups;
    n_groups *= x.dim(d);
  }
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t g = 0;
    for (int64_t d = 0; d < x.rank(); ++d) g += (i / strides[d]) % x.dim(d) * group_strides[d];
    group_of[static_cast<size_t>(i)] = g;
  }
  const std::vector<double> v = x.to_double_vector();
  std::vector<double> sum(static_cast<size_t>(n_groups)), sum_sq(static_cast<size_t>(n_groups));
  std::vector<int64_t> count(static_cast<size_t>(n_groups));
  for (size_t i = 0; i < v.size(); ++i) {
    sum[group_of[i]] += v[i];
    sum_sq[group_of[i]] += v[i] * v[i];
    ++count[group_of[i]];
  }
  std::vector<double> y(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const int64_t g = group_of[i];
    const double mean = sum[g] / static_cast<double>(count[g]);
    const double variance = sum_sq[g] / static_cast<double>(count[g]) - mean * mean;
    y[i] = (v[i] - mean) / (std::sqrt(std::max(variance, 0.0)) + 1e-9);
  }
  return {float_tensor_of(node, x.dtype(), x.shape(), y)};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("MeanVarianceNormalization", check_mvn, compute_mvn);

}  // namespace hetsched::kernels
