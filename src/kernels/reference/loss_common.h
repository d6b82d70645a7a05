// The negative log-likelihood loss the two loss ops share (internal):
// NegativeLogLikelihoodLoss applies it to its input, SoftmaxCrossEntropyLoss
// to the log-softmax of its scores.
#pragma once

#include <string>

#include <fmt/format.h>

#include "kernels/reference/common.h"

namespace hetsched::kernels::loss {

// Load-time checks of both ops: `reduction` one of none, sum, mean; the
// input (0) float, the target (1) int32 or int64, the weight (2) float.
inline void check_loss(const Node& node, const Graph& graph) {
  std::string reduction = node.attr_string("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    throw_invalid(node, fmt::format("reduction '{}': expected none, sum or mean", reduction));
  check_input_dtypes(node, graph, kFloatTypes, {0});
  check_input_dtypes(node, graph, {DType::kInt32, DType::kInt64}, {1});
  if (node.input(2) != kNoValue) check_input_dtypes(node, graph, kFloatTypes, {2});
}

// log_p: [N, C, d1..dk] log-probabilities of `shape`; target [N, d1..dk]
// class indices; weight [C] or nullptr. Per element, loss = -log_p[n, t, d]
// * weight[t] (weight 1 without one), 0 where t == ignore_index. reduction
// none: that tensor; sum: its sum; mean: its sum over the sum of the weights
// of the elements not ignored (0 / 0 when all are: NaN, as ONNX's reference).
template <typename T>
Tensor negative_log_likelihood(const Node& node, const T* log_p, const Shape& shape, const Tensor& target,
                               const Tensor* weight, DType dtype) {
  if (shape.size() < 2) throw_runtime(node, fmt::format("input of rank {}: expected [N, C, ...]", shape.size()));
  const int64_t n_batch = shape[0], n_classes = shape[1];
  Shape target_shape{n_batch};
  int64_t inner = 1;
  for (size_t d = 2; d < shape.size(); ++d) {
    target_shape.push_back(shape[d]);
    inner *= shape[d];
  }
  if (target.shape() != target_shape)
    throw_runtime(node, fmt::format("target of shape {}: expected {} for an input of shape {}",
                                    shape_to_string(target.shape()), shape_to_string(target_shape),
                                    shape_to_string(shape)));
  if (weight && weight->shape() != Shape{n_classes})
    throw_runtime(node, fmt::format("weight of shape {}: expected [{}]", shape_to_string(weight->shape()), n_classes));
  std::vector<int64_t> t = target.to_int64_vector();
  std::vector<double> w = weight ? weight->to_double_vector() : std::vector<double>{};
  const bool has_ignore = node.has_attr("ignore_index");
  const int64_t ignore = node.attr_int("ignore_index", 0);
  const std::string reduction = node.attr_string("reduction", "mean");
  Tensor per_element(dtype, target_shape);
  T* out = per_element.data<T>();
  double sum = 0, weight_sum = 0;
  for (int64_t n = 0; n < n_batch; ++n)
    for (int64_t i = 0; i < inner; ++i) {
      const size_t at = static_cast<size_t>(n * inner + i);
      const int64_t c = t[at];
      if (has_ignore && c == ignore) {
        out[at] = T(0);
        continue;
      }
      if (c < 0 || c >= n_classes)
        throw_runtime(node, fmt::format("target {} at element {}: expected a class in [0, {})", c, at, n_classes));
      const double wc = weight ? w[static_cast<size_t>(c)] : 1.0;
      const double loss = -static_cast<double>(log_p[(n * n_classes + c) * inner + i]) * wc;
      out[at] = static_cast<T>(loss);
      sum += loss;
      weight_sum += wc;
    }
  if (reduction == "none") return per_element;
  Tensor reduced(dtype, {});
  reduced.data<T>()[0] = static_cast<T>(reduction == "sum" ? sum : sum / weight_sum);
  return reduced;
}

}  // namespace hetsched::kernels::loss
