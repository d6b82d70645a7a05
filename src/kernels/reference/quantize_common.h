// Helpers shared by the quantization reference kernels (QuantizeLinear,
// DequantizeLinear, DynamicQuantizeLinear, MatMulInteger, QLinearMatMul,
// ConvInteger, QLinearConv), following the ONNX spec's formulas literally:
//   quantize    q = saturate(round_half_to_even(x / scale) + zero_point)
//   dequantize  x = (q - zero_point) * scale
// Integer products are exact: 8-bit values minus their zero points are
// widened (int32 for matrix products, whose wrap-around the spec allows;
// int64 for convolutions) before any arithmetic.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "kernels/reference/common.h"

namespace hetsched::kernels::quant {

constexpr std::initializer_list<DType> k8BitTypes = {DType::kUInt8, DType::kInt8};

// round_half_to_even(v) + zero_point, saturated to Q's range; NaN gives the
// zero point. The current rounding mode is the default, to nearest even.
template <typename Q>
Q saturate_round(double v, int32_t zero_point) {
  if (std::isnan(v)) return static_cast<Q>(zero_point);
  double r = std::nearbyint(v) + zero_point;
  r = std::clamp(r, static_cast<double>(std::numeric_limits<Q>::lowest()),
                 static_cast<double>(std::numeric_limits<Q>::max()));
  return static_cast<Q>(r);
}

// saturate_round for a float32 v, in float32 and int32 steps the compiler
// vectorises (host code of the CPU backend, the dynamic quantization
// kernel), with the same result: v clamped to +-1024 saturates the same as v
// itself (zero points are within +-255); adding and subtracting 1.5 x 2^23
// rounds it to the nearest integer, ties to even (the default rounding
// mode), exactly for |v| <= 2^22; that integer converts exactly, and the
// zero point is added and the sum saturated in int32. NaN is not handled.
template <typename Q>
inline Q saturate_round_float(float v, int32_t zero_point) {
  constexpr float kRound = 12582912.0f;  // 1.5 x 2^23
  v = std::min(std::max(v, -1024.0f), 1024.0f);
  int32_t r = static_cast<int32_t>((v + kRound) - kRound) + zero_point;
  return static_cast<Q>(std::min<int32_t>(std::max<int32_t>(r, std::numeric_limits<Q>::lowest()),
                                          std::numeric_limits<Q>::max()));
}

// The per-element parameter (a scale or a zero point) of `param` for the
// element at `index` of a tensor of `shape`: `param` holds one value (per
// tensor), or one per entry of dim `axis` (per axis; 1-D of shape[axis]).
// Throws kRuntime naming the node and `what` for any other shape.
class PerAxis {
 public:
  PerAxis(const Node& node, const Tensor* param, const Shape& shape, int64_t axis, const char* what) {
    if (!param || param->numel() == 1) return;
    if (param->rank() != 1 || axis < 0 || axis >= static_cast<int64_t>(shape.size()) ||
        param->dim(0) != shape[static_cast<size_t>(axis)])
      throw_runtime(node, fmt::format("{} has shape {}: expected one value, or one per entry of axis {} of {}",
                                      what, shape_to_string(param->shape()), axis, shape_to_string(shape)));
    n_ = shape[static_cast<size_t>(axis)];
    inner_ = 1;
    for (size_t d = static_cast<size_t>(axis) + 1; d < shape.size(); ++d) inner_ *= shape[d];
  }
  // Index into the parameter's values of element `index`.
  int64_t operator()(int64_t index) const { return n_ == 0 ? 0 : (index / inner_) % n_; }
  bool per_tensor() const { return n_ == 0; }

 private:
  int64_t n_ = 0, inner_ = 1;
};

// The `axis` attribute (default 1) of a per-axis `scale`, normalized; 0 for
// one scale, which ignores it.
inline int64_t axis_of(const Node& node, const Tensor& scale, int64_t rank) {
  return scale.numel() == 1 ? 0 : normalize_axis(node, node.attr_int("axis", 1), rank);
}

// A zero point's values as int32 (0 when absent), and a scale's as float.
inline std::vector<int32_t> zero_points(const Tensor* zp) {
  if (!zp) return {0};
  std::vector<int64_t> v = zp->to_int64_vector();
  return std::vector<int32_t>(v.begin(), v.end());
}
inline std::vector<float> scales(const Node& node, const Tensor& scale) {
  if (scale.dtype() != DType::kFloat32)
    throw_runtime(node, fmt::format("a scale must be float32, got {}", dtype_name(scale.dtype())));
  return std::vector<float>(scale.data<float>(), scale.data<float>() + scale.numel());
}

// `x` (uint8 or int8) minus its zero point (per tensor, or per entry of
// `axis`), as a tensor of W (int32 or int64).
template <typename W>
Tensor widen_minus_zero_point(const Node& node, const Tensor& x, const Tensor* zp, int64_t axis, const char* what) {
  if (zp && zp->dtype() != x.dtype())
    throw_runtime(node, fmt::format("{}'s zero point is {}, the data {}", what, dtype_name(zp->dtype()),
                                    dtype_name(x.dtype())));
  PerAxis at(node, zp, x.shape(), axis, what);
  std::vector<int32_t> z = zero_points(zp);
  Tensor out(dtype_of<W>(), x.shape());
  W* o = out.data<W>();
  auto run = [&](auto* in) {
    for (int64_t i = 0; i < x.numel(); ++i) o[i] = static_cast<W>(in[i]) - z[static_cast<size_t>(at(i))];
  };
  if (x.dtype() == DType::kUInt8) run(x.data<uint8_t>());
  else if (x.dtype() == DType::kInt8) run(x.data<int8_t>());
  else throw_runtime(node, fmt::format("{} must be uint8 or int8, got {}", what, dtype_name(x.dtype())));
  return out;
}

// The output of a QLinear op: acc[i] * multiplier(i), rounded, plus y's zero
// point, saturated to the zero point's type (uint8 when absent).
template <typename Multiplier>
Tensor requantize(const Node& node, const Tensor& acc, const Tensor* y_zp, Multiplier&& multiplier) {
  DType type = y_zp ? y_zp->dtype() : DType::kUInt8;
  int32_t z = zero_points(y_zp)[0];
  if (y_zp && y_zp->numel() != 1) throw_runtime(node, "y_zero_point must hold one value");
  Tensor out(type, acc.shape());
  auto run = [&](auto* o, auto* a) {
    using Q = std::remove_pointer_t<decltype(o)>;
    for (int64_t i = 0; i < acc.numel(); ++i)
      o[i] = saturate_round<Q>(static_cast<double>(a[i]) * static_cast<double>(multiplier(i)), z);
  };
  auto over = [&](auto* o) {
    if (acc.dtype() == DType::kInt32) run(o, acc.data<int32_t>());
    else run(o, acc.data<int64_t>());
  };
  if (type == DType::kUInt8) over(out.data<uint8_t>());
  else if (type == DType::kInt8) over(out.data<int8_t>());
  else throw_runtime(node, fmt::format("y_zero_point must be uint8 or int8, got {}", dtype_name(type)));
  return out;
}

}  // namespace hetsched::kernels::quant
