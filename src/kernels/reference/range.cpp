// Range: start, start+delta, ... up to (not including) limit; the count is
// max(ceil((limit - start) / delta), 0). Integer types are computed exactly.
#include <cmath>

#include <fmt/format.h>

#include "kernels/reference/common.h"

namespace hetsched::kernels {
namespace {

constexpr std::initializer_list<DType> kRangeTypes = {DType::kFloat32, DType::kFloat64, DType::kInt16,
                                                      DType::kInt32, DType::kInt64};

void check_range(const Node& node, const Graph& graph) {
  if (node.input(0) == kNoValue || node.input(1) == kNoValue || node.input(2) == kNoValue)
    throw_invalid(node, "needs start, limit and delta");
  check_input_dtypes(node, graph, kRangeTypes);
}

template <typename T>
T scalar_of(const Node& node, const Tensor& t, const char* what) {
  if (t.numel() != 1) throw_runtime(node, fmt::format("'{}' must hold one value, got {}", what, t.description()));
  return t.data<T>()[0];
}

std::vector<Tensor> compute_range(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& start_t = required_input(node, inputs, 0);
  const Tensor& limit_t = required_input(node, inputs, 1);
  const Tensor& delta_t = required_input(node, inputs, 2);
  DType dtype = start_t.dtype();
  if (limit_t.dtype() != dtype || delta_t.dtype() != dtype)
    throw_runtime(node, "start, limit and delta must have the same dtype");
  if (dtype == DType::kInt8 || dtype == DType::kUInt8)
    throw_unsupported(node, fmt::format("dtype {} is not supported", dtype_name(dtype)));
  return dispatch_numeric(node, dtype, [&](auto tag) {
    using T = decltype(tag);
    T start = scalar_of<T>(node, start_t, "start");
    T limit = scalar_of<T>(node, limit_t, "limit");
    T delta = scalar_of<T>(node, delta_t, "delta");
    if (delta == T(0)) throw_runtime(node, "delta is 0");
    int64_t n = 0;
    if constexpr (std::is_integral_v<T>) {
      __int128 diff = static_cast<__int128>(limit) - static_cast<__int128>(start);
      __int128 step = delta;
      if ((diff > 0 && step > 0) || (diff < 0 && step < 0)) {
        if (diff < 0) diff = -diff, step = -step;
        n = static_cast<int64_t>((diff + step - 1) / step);
      }
    } else {
      double count = std::ceil((static_cast<double>(limit) - static_cast<double>(start)) / static_cast<double>(delta));
      if (!std::isfinite(count)) throw_runtime(node, "the number of elements is not finite");
      n = count > 0 ? size_from_double(node, count, "the number of elements") : 0;
    }
    Tensor out(dtype, {n});
    T* dst = out.data<T>();
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(start + static_cast<T>(i) * delta);
    return std::vector<Tensor>{out};
  });
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("Range", check_range, compute_range);

}  // namespace hetsched::kernels
