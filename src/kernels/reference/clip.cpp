// Reference kernel for Clip.
//   opset < 11: bounds are the float attributes min/max (defaults -FLT_MAX /
//               FLT_MAX), float inputs only;
//   opset >= 11: bounds are optional scalar inputs 1 and 2 of the input's
//               dtype (integers from opset 12); an omitted bound is no bound.
// The form is chosen by what the node has (attributes present, or inputs
// present), falling back on the opset. When min > max every value becomes
// max, as the spec says. NaN inputs stay NaN.
#include <cfloat>
#include <cstdint>
#include <optional>

#include <fmt/format.h>

#include "kernels/reference/common.h"

namespace hetsched::kernels {
namespace {

bool uses_attributes(const Node& node) {
  if (node.has_attr("min") || node.has_attr("max")) return true;
  bool has_inputs = node.input(1) != kNoValue || node.input(2) != kNoValue;
  return !has_inputs && node.opset < 11;
}

template <typename T>
Tensor clip_typed(const Tensor& x, std::optional<T> lo, std::optional<T> hi) {
  Tensor out(x.dtype(), x.shape());
  const T* px = x.data<T>();
  T* po = out.data<T>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    T v = px[i];
    if (lo && v < *lo) v = *lo;
    if (hi && v > *hi) v = *hi;
    po[i] = v;
  }
  return out;
}

std::vector<Tensor> clip_compute(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = required_input(node, inputs, 0);
  if (uses_attributes(node)) {
    const double lo = node.attr_float("min", -FLT_MAX);
    const double hi = node.attr_float("max", FLT_MAX);
    return {dispatch_float(node, x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      return clip_typed<T>(x, static_cast<T>(lo), static_cast<T>(hi));
    })};
  }
  return {dispatch_numeric(node, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    auto bound = [&](size_t index) -> std::optional<T> {
      if (index >= inputs.size() || inputs[index] == nullptr) return std::nullopt;
      const Tensor& b = *inputs[index];
      if (b.dtype() != x.dtype())
        throw_runtime(node, fmt::format("bound input {} has dtype {}, expected {}", index, dtype_name(b.dtype()),
                                        dtype_name(x.dtype())));
      if (b.numel() != 1)
        throw_runtime(node, fmt::format("bound input {} must be a scalar, got shape {}", index,
                                        shape_to_string(b.shape())));
      return b.data<T>()[0];
    };
    return clip_typed<T>(x, bound(1), bound(2));
  })};
}

void check_clip(const Node& node, const Graph& graph) {
  if (uses_attributes(node)) {
    if (node.input(1) != kNoValue || node.input(2) != kNoValue)
      throw_invalid(node, "bounds given both as attributes and as inputs");
    check_input_dtypes(node, graph, kFloatTypes);
  } else {
    check_input_dtypes(node, graph, kNumericTypes);
  }
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("Clip", check_clip, clip_compute);

}  // namespace hetsched::kernels
