// Reference kernel for CumSum(x, axis): running sums along `axis` (a scalar
// or 1-element int32/int64 input, may be negative). exclusive=1 leaves the
// current element out of its own sum; reverse=1 sums from the end.
// Float inputs accumulate in double; integer inputs wrap modulo 2^bits.
#include <cstdint>
#include <type_traits>

#include <fmt/format.h>

#include "kernels/reference/common.h"

namespace hetsched::kernels {
namespace {

std::vector<Tensor> cumsum_compute(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = required_input(node, inputs, 0);
  const Tensor& axis_t = required_input(node, inputs, 1);
  if (axis_t.dtype() != DType::kInt32 && axis_t.dtype() != DType::kInt64)
    throw_runtime(node, fmt::format("axis must be int32 or int64, got {}", dtype_name(axis_t.dtype())));
  if (axis_t.numel() != 1 || axis_t.rank() > 1)
    throw_runtime(node, fmt::format("axis must be a scalar, got shape {}", shape_to_string(axis_t.shape())));
  if (x.rank() == 0) throw_runtime(node, "input must have rank >= 1");
  const int64_t axis = normalize_axis(node, axis_t.to_int64_vector()[0], x.rank());
  const bool exclusive = node.attr_int("exclusive", 0) != 0;
  const bool reverse = node.attr_int("reverse", 0) != 0;

  int64_t outer = 1, inner = 1;
  const int64_t n = x.dim(axis);
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (d < axis) outer *= x.dim(d);
    if (d > axis) inner *= x.dim(d);
  }
  return {dispatch_numeric(node, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    // double for floats; uint64 (modular) for integers.
    using Acc = std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>;
    Tensor out(x.dtype(), x.shape());
    const T* px = x.data<T>();
    T* po = out.data<T>();
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t base = o * n * inner + i;
        Acc acc = 0;
        for (int64_t step = 0; step < n; ++step) {
          const int64_t k = reverse ? n - 1 - step : step;
          const int64_t at = base + k * inner;
          Acc v;
          if constexpr (std::is_floating_point_v<T>) v = static_cast<double>(px[at]);
          else v = static_cast<uint64_t>(static_cast<std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>(px[at]));
          if (!exclusive) acc += v;
          po[at] = static_cast<T>(acc);
          if (exclusive) acc += v;
        }
      }
    }
    return out;
  })};
}

void check_cumsum(const Node& node, const Graph& graph) {
  check_input_dtypes(node, graph, kNumericTypes, {0});
  check_input_dtypes(node, graph, {DType::kInt32, DType::kInt64}, {1});
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("CumSum", check_cumsum, cumsum_compute);

}  // namespace hetsched::kernels
