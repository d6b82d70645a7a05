// Reference kernels for the elementwise unary math and logic ops:
//   float math   Sqrt, Exp, Log, Erf, Reciprocal, Floor, Ceil, Round (half to
//                even), Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh,
//                Acosh, Atanh
//   numeric      Abs, Neg, Sign
//   predicates   Not, IsNaN, IsInf
// Float32 values are computed in double and rounded once, so results are the
// correctly rounded ones in (nearly) every case.
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include <fmt/format.h>

#include "kernels/reference/common.h"

namespace hetsched::kernels {
namespace {

// out[i] = f(x[i]), output dtype O.
template <typename O, typename T, typename F>
Tensor map1(const Tensor& x, F&& f) {
  Tensor out(dtype_of<O>(), x.shape());
  const T* px = x.data<T>();
  O* po = out.data<O>();
  for (int64_t i = 0; i < x.numel(); ++i) po[i] = f(px[i]);
  return out;
}

// --- Float math through a double -> double function.

double round_half_even(double x) {
  double r = std::round(x);  // halves away from zero
  if (std::fabs(x - std::trunc(x)) == 0.5) r = 2.0 * std::round(x / 2.0);
  return r;
}

double op_sqrt(double x) { return std::sqrt(x); }
double op_exp(double x) { return std::exp(x); }
double op_log(double x) { return std::log(x); }
double op_erf(double x) { return std::erf(x); }
double op_reciprocal(double x) { return 1.0 / x; }
double op_floor(double x) { return std::floor(x); }
double op_ceil(double x) { return std::ceil(x); }
double op_round(double x) { return round_half_even(x); }
double op_sin(double x) { return std::sin(x); }
double op_cos(double x) { return std::cos(x); }
double op_tan(double x) { return std::tan(x); }
double op_asin(double x) { return std::asin(x); }
double op_acos(double x) { return std::acos(x); }
double op_atan(double x) { return std::atan(x); }
double op_sinh(double x) { return std::sinh(x); }
double op_cosh(double x) { return std::cosh(x); }
double op_asinh(double x) { return std::asinh(x); }
double op_acosh(double x) { return std::acosh(x); }
double op_atanh(double x) { return std::atanh(x); }

template <double (*F)(double)>
std::vector<Tensor> float_unary(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = required_input(node, inputs, 0);
  return {dispatch_float(node, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    return map1<T, T>(x, [](T v) { return static_cast<T>(F(static_cast<double>(v))); });
  })};
}

void check_float(const Node& node, const Graph& graph) { check_input_dtypes(node, graph, kFloatTypes); }

// --- Abs, Neg, Sign (integers too; Abs/Neg of INT_MIN wrap to INT_MIN).

template <typename T>
T neg_wrap(T a) {
  if constexpr (std::is_floating_point_v<T>) return -a;
  else if constexpr (sizeof(T) < 4) return static_cast<T>(-static_cast<int32_t>(a));
  else return static_cast<T>(std::make_unsigned_t<T>(0) - static_cast<std::make_unsigned_t<T>>(a));
}

std::vector<Tensor> abs_compute(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = required_input(node, inputs, 0);
  return {dispatch_numeric(node, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    return map1<T, T>(x, [](T v) -> T {
      if constexpr (std::is_floating_point_v<T>) return std::fabs(v);
      else if constexpr (std::is_signed_v<T>) return v < 0 ? neg_wrap(v) : v;
      else return v;
    });
  })};
}

constexpr std::initializer_list<DType> kSignedTypes = {DType::kFloat32, DType::kFloat64, DType::kInt8,
                                                       DType::kInt16,   DType::kInt32,   DType::kInt64};

std::vector<Tensor> neg_compute(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = required_input(node, inputs, 0);
  if (x.dtype() == DType::kUInt8) throw_unsupported(node, "Neg of an unsigned dtype is not supported");
  return {dispatch_numeric(node, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    return map1<T, T>(x, [](T v) -> T { return neg_wrap(v); });
  })};
}

std::vector<Tensor> sign_compute(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = required_input(node, inputs, 0);
  return {dispatch_numeric(node, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    // NaN and zeros are returned unchanged.
    return map1<T, T>(x, [](T v) -> T { return v > 0 ? T(1) : v < 0 ? T(-1) : v; });
  })};
}

void check_numeric(const Node& node, const Graph& graph) { check_input_dtypes(node, graph, kNumericTypes); }
void check_signed(const Node& node, const Graph& graph) { check_input_dtypes(node, graph, kSignedTypes); }

// --- Not, IsNaN, IsInf (bool output).

std::vector<Tensor> not_compute(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = required_input(node, inputs, 0);
  if (x.dtype() != DType::kBool)
    throw_unsupported(node, fmt::format("input must be bool, got {}", dtype_name(x.dtype())));
  return {map1<bool, bool>(x, [](bool v) { return !v; })};
}

void check_bool(const Node& node, const Graph& graph) { check_input_dtypes(node, graph, {DType::kBool}); }

std::vector<Tensor> isnan_compute(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = required_input(node, inputs, 0);
  return {dispatch_float(node, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    return map1<bool, T>(x, [](T v) { return std::isnan(v); });
  })};
}

std::vector<Tensor> isinf_compute(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = required_input(node, inputs, 0);
  const bool negative = node.attr_int("detect_negative", 1) != 0;
  const bool positive = node.attr_int("detect_positive", 1) != 0;
  return {dispatch_float(node, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    return map1<bool, T>(x, [&](T v) {
      return std::isinf(v) && ((v > 0 && positive) || (v < 0 && negative));
    });
  })};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("Sqrt", check_float, float_unary<op_sqrt>);
HETSCHED_REFERENCE_KERNEL("Exp", check_float, float_unary<op_exp>);
HETSCHED_REFERENCE_KERNEL("Log", check_float, float_unary<op_log>);
HETSCHED_REFERENCE_KERNEL("Erf", check_float, float_unary<op_erf>);
HETSCHED_REFERENCE_KERNEL("Reciprocal", check_float, float_unary<op_reciprocal>);
HETSCHED_REFERENCE_KERNEL("Floor", check_float, float_unary<op_floor>);
HETSCHED_REFERENCE_KERNEL("Ceil", check_float, float_unary<op_ceil>);
HETSCHED_REFERENCE_KERNEL("Round", check_float, float_unary<op_round>);
HETSCHED_REFERENCE_KERNEL("Sin", check_float, float_unary<op_sin>);
HETSCHED_REFERENCE_KERNEL("Cos", check_float, float_unary<op_cos>);
HETSCHED_REFERENCE_KERNEL("Tan", check_float, float_unary<op_tan>);
HETSCHED_REFERENCE_KERNEL("Asin", check_float, float_unary<op_asin>);
HETSCHED_REFERENCE_KERNEL("Acos", check_float, float_unary<op_acos>);
HETSCHED_REFERENCE_KERNEL("Atan", check_float, float_unary<op_atan>);
HETSCHED_REFERENCE_KERNEL("Sinh", check_float, float_unary<op_sinh>);
HETSCHED_REFERENCE_KERNEL("Cosh", check_float, float_unary<op_cosh>);
HETSCHED_REFERENCE_KERNEL("Asinh", check_float, float_unary<op_asinh>);
HETSCHED_REFERENCE_KERNEL("Acosh", check_float, float_unary<op_acosh>);
HETSCHED_REFERENCE_KERNEL("Atanh", check_float, float_unary<op_atanh>);
HETSCHED_REFERENCE_KERNEL("Abs", check_numeric, abs_compute);
HETSCHED_REFERENCE_KERNEL("Neg", check_signed, neg_compute);
HETSCHED_REFERENCE_KERNEL("Sign", check_numeric, sign_compute);
HETSCHED_REFERENCE_KERNEL("Not", check_bool, not_compute);
HETSCHED_REFERENCE_KERNEL("IsNaN", check_float, isnan_compute);
HETSCHED_REFERENCE_KERNEL("IsInf", check_float, isinf_compute);

}  // namespace hetsched::kernels
