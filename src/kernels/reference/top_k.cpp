// TopK — reference kernel.
//
// The k largest (largest=1, default) or smallest elements along `axis`
// (default -1) and their int64 indices, in order: ties go to the lower
// index, NaN counts as larger than every number (first when largest, last
// when smallest). sorted=0 leaves the order to the implementation; this one
// sorts anyway. k: the K input (opset 10+, one int64 element) or the `k`
// attribute (before 10); 0 <= k <= the axis's length. The outputs' shape
// depends on K's value when K is not a constant.
// Supported: float32, float64 and the integer dtypes.
// Refused: other dtypes.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <type_traits>

#include <fmt/format.h>

#include "kernels/reference/common.h"

namespace hetsched::kernels {
namespace {

void check_top_k(const Node& node, const Graph& graph) { check_input_dtypes(node, graph, kNumericTypes, {0}); }

std::vector<Tensor> compute_top_k(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = required_input(node, inputs, 0);
  int64_t k = node.attr_int("k", -1);
  if (node.opset >= 10) {
    const Tensor& k_input = required_input(node, inputs, 1);
    if (k_input.numel() != 1) throw_runtime(node, fmt::format("K of shape {}: expected one element",
                                                              shape_to_string(k_input.shape())));
    k = k_input.to_int64_vector()[0];
  }
  if (x.rank() == 0) throw_runtime(node, "input must have rank >= 1");
  const int64_t axis = normalize_axis(node, node.attr_int("axis", -1), x.rank());
  const int64_t n = x.dim(axis);
  if (k < 0 || k > n) throw_runtime(node, fmt::format("k = {}: expected 0..{} (the length of axis {})", k, n, axis));
  const bool largest = node.attr_int("largest", 1) != 0;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (d < axis) outer *= x.dim(d);
    if (d > axis) inner *= x.dim(d);
  }
  Shape out_shape = x.shape();
  out_shape[static_cast<size_t>(axis)] = k;
  Tensor values(x.dtype(), out_shape), indices(DType::kInt64, out_shape);
  int64_t* pi = indices.data<int64_t>();
  dispatch_numeric(node, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* pv = values.data<T>();
    // a before b: a ranks higher, or equal and of lower index.
    auto before = [&](T a, T b, int64_t ia, int64_t ib) {
      if constexpr (std::is_floating_point_v<T>) {
        bool na = std::isnan(a), nb = std::isnan(b);
        if (na || nb) return na && nb ? ia < ib : (largest ? na : nb);
      }
      if (a != b) return largest ? a > b : a < b;
      return ia < ib;
    };
    std::vector<int64_t> order(static_cast<size_t>(n));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const T* row = px + o * n * inner + i;
        std::iota(order.begin(), order.end(), int64_t{0});
        std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t a, int64_t b) {
          return before(row[a * inner], row[b * inner], a, b);
        });
        for (int64_t j = 0; j < k; ++j) {
          const int64_t at = (o * k + j) * inner + i;
          pv[at] = row[order[static_cast<size_t>(j)] * inner];
          pi[at] = order[static_cast<size_t>(j)];
        }
      }
  });
  return {values, indices};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("TopK", check_top_k, compute_top_k);

}  // namespace hetsched::kernels
