// Reference kernels for every broadcasting elementwise op:
//   arithmetic  Add, Sub, Mul, Div, Pow, Mod, BitShift
//   variadic    Min, Max, Sum, Mean (1..N inputs)
//   comparison  Equal, Greater, Less, GreaterOrEqual, LessOrEqual
//   logic       And, Or, Xor
//   selection   Where (3-way broadcast), PRelu (slope broadcast to X)
// They all share broadcast_loop(), numpy multidirectional broadcasting.
//
// Integer semantics (the spec leaves them to the implementation, these are
// C's): Add/Sub/Mul/Neg wrap modulo 2^bits; Div truncates toward zero and
// INT_MIN / -1 wraps to INT_MIN; division or Mod by zero throws kRuntime.
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include <fmt/format.h>

#include "kernels/reference/common.h"

namespace hetsched::kernels {
namespace {

// ---------------------------------------------------------------------------
// The broadcast loop.

// Calls fn(i, offsets) for every element i of `out_shape` (row-major order),
// with offsets[k] the element of input k (of shape *in_shapes[k]) that
// numpy broadcasting maps to i. Every input shape must broadcast to
// out_shape (rank <= out rank, each dim 1 or equal). Fast path when every
// input already has the output shape; otherwise an odometer over the outer
// dims with a tight loop over the innermost one (stride 0 on broadcast dims).
template <size_t N, typename Fn>
void broadcast_loop(const Shape& out_shape, const std::array<const Shape*, N>& in_shapes, Fn&& fn) {
  const int64_t total = shape_numel(out_shape);
  if (total == 0) return;
  std::array<int64_t, N> off{};
  bool same = true;
  for (const Shape* s : in_shapes) same = same && *s == out_shape;
  if (same) {  // also covers rank 0: a scalar output means scalar inputs
    for (int64_t i = 0; i < total; ++i) {
      off.fill(i);
      fn(i, off);
    }
    return;
  }
  const size_t rank = out_shape.size();
  std::array<std::vector<int64_t>, N> strides;
  std::array<int64_t, N> inner_stride{};
  for (size_t k = 0; k < N; ++k) {
    strides[k] = broadcast_strides(*in_shapes[k], out_shape);
    inner_stride[k] = strides[k][rank - 1];
  }
  const int64_t inner = out_shape[rank - 1];
  std::vector<int64_t> counter(rank, 0);
  std::array<int64_t, N> base{};
  for (int64_t o = 0; o < total; o += inner) {
    off = base;
    for (int64_t j = 0; j < inner; ++j) {
      fn(o + j, off);
      for (size_t k = 0; k < N; ++k) off[k] += inner_stride[k];
    }
    // Advance the odometer over dims rank-2 .. 0.
    for (size_t d = rank - 1; d-- > 0;) {
      for (size_t k = 0; k < N; ++k) base[k] += strides[k][d];
      if (++counter[d] < out_shape[d]) break;
      for (size_t k = 0; k < N; ++k) base[k] -= strides[k][d] * out_shape[d];
      counter[d] = 0;
    }
  }
}

// out[i] = f(a[..], b[..]) over the broadcast of a and b.
template <typename O, typename A, typename B, typename F>
Tensor map2(const Node& node, const Tensor& a, const Tensor& b, F&& f) {
  Shape out_shape = broadcast_shapes(node, a.shape(), b.shape());
  Tensor out(dtype_of<O>(), out_shape);
  const A* pa = a.data<A>();
  const B* pb = b.data<B>();
  O* po = out.data<O>();
  broadcast_loop<2>(out_shape, {&a.shape(), &b.shape()},
                    [&](int64_t i, const std::array<int64_t, 2>& off) { po[i] = f(pa[off[0]], pb[off[1]]); });
  return out;
}

// ---------------------------------------------------------------------------
// Integer helpers: wrap-around arithmetic without signed-overflow UB (and
// without the int promotion of 8/16-bit operands overflowing).

template <typename T, bool Small = (sizeof(T) < 4)>
struct WideUnsigned {
  using type = uint32_t;
};
template <typename T>
struct WideUnsigned<T, false> {
  using type = std::make_unsigned_t<T>;
};
template <typename T>
using WideU = typename WideUnsigned<T>::type;

template <typename T>
T add_op(T a, T b) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(static_cast<WideU<T>>(a) + static_cast<WideU<T>>(b));
  else return a + b;
}
template <typename T>
T sub_op(T a, T b) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(static_cast<WideU<T>>(a) - static_cast<WideU<T>>(b));
  else return a - b;
}
template <typename T>
T mul_op(T a, T b) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(static_cast<WideU<T>>(a) * static_cast<WideU<T>>(b));
  else return a * b;
}
template <typename T>
T neg_wrap(T a) {
  return static_cast<T>(WideU<T>(0) - static_cast<WideU<T>>(a));
}

// Float -> integer: truncation toward zero; NaN gives 0 and out-of-range
// values saturate (the spec leaves both undefined).
template <typename I>
I float_to_int(double v) {
  if (std::isnan(v)) return 0;
  double t = std::trunc(v);
  if (t <= static_cast<double>(std::numeric_limits<I>::lowest())) return std::numeric_limits<I>::lowest();
  if (t >= static_cast<double>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(t);
}

void require_same_dtype(const Node& node, const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype())
    throw_runtime(node, fmt::format("inputs have different dtypes {} and {}", dtype_name(a.dtype()),
                                    dtype_name(b.dtype())));
}

// Opset < 7 broadcast attributes are outside the supported range 7..18.
void refuse_legacy_broadcast(const Node& node) {
  if (node.has_attr("broadcast") || node.has_attr("axis"))
    throw_unsupported(node, "the legacy 'broadcast'/'axis' attributes (opset < 7) are not supported");
}

// ---------------------------------------------------------------------------
// Add, Sub, Mul, Div.

enum class Arith { kAdd, kSub, kMul, kDiv };

template <Arith kOp>
std::vector<Tensor> arith_compute(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& a = required_input(node, inputs, 0);
  const Tensor& b = required_input(node, inputs, 1);
  require_same_dtype(node, a, b);
  return {dispatch_numeric_wide(node, a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    return map2<T, T, T>(node, a, b, [&](T x, T y) -> T {
      if constexpr (kOp == Arith::kAdd) return add_op(x, y);
      else if constexpr (kOp == Arith::kSub) return sub_op(x, y);
      else if constexpr (kOp == Arith::kMul) return mul_op(x, y);
      else if constexpr (std::is_floating_point_v<T>) return x / y;
      else {
        if (y == 0) throw_runtime(node, "integer division by zero");
        if constexpr (std::is_signed_v<T>)
          if (y == -1) return neg_wrap(x);  // INT_MIN / -1 overflows
        return static_cast<T>(x / y);
      }
    });
  })};
}

void check_arith(const Node& node, const Graph& graph) {
  refuse_legacy_broadcast(node);
  check_input_dtypes(node, graph, kWideNumericTypes);
}

// ---------------------------------------------------------------------------
// Pow: the exponent may have another dtype than the base (opset >= 12); the
// output has the base's dtype.

// base^e for integers, wrapping like repeated multiplication. A negative
// exponent gives the truncated real result: 1, +-1 for base -1, else 0.
template <typename T>
T int_pow(const Node& node, T base, bool negative, uint64_t e) {
  if (negative) {
    if (base == 1) return 1;
    if constexpr (std::is_signed_v<T>)
      if (base == -1) return (e & 1) ? T(-1) : T(1);
    if (base == 0) throw_runtime(node, "integer 0 raised to a negative power");
    return 0;
  }
  WideU<T> result = 1, b = static_cast<WideU<T>>(base);
  while (e) {
    if (e & 1) result = static_cast<WideU<T>>(result * b);
    b = static_cast<WideU<T>>(b * b);
    e >>= 1;
  }
  return static_cast<T>(result);
}

// x^y rounded (float base) or truncated (integer base) to the base's dtype.
template <typename T, typename E>
T pow_elem(const Node& node, T x, E y) {
  if constexpr (std::is_floating_point_v<T> || std::is_floating_point_v<E>) {
    double r = std::pow(static_cast<double>(x), static_cast<double>(y));
    if constexpr (std::is_floating_point_v<T>) return static_cast<T>(r);
    else return float_to_int<T>(r);
  } else if constexpr (std::is_signed_v<E>) {
    const bool negative = y < 0;
    const uint64_t e = negative ? static_cast<uint64_t>(0) - static_cast<uint64_t>(y) : static_cast<uint64_t>(y);
    return int_pow<T>(node, x, negative, e);
  } else {
    return int_pow<T>(node, x, false, static_cast<uint64_t>(y));
  }
}

std::vector<Tensor> pow_compute(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& a = required_input(node, inputs, 0);
  const Tensor& b = required_input(node, inputs, 1);
  return {dispatch_numeric_wide(node, a.dtype(), [&](auto base_tag) {
    using T = decltype(base_tag);
    return dispatch_numeric_wide(node, b.dtype(), [&](auto exp_tag) {
      using E = decltype(exp_tag);
      return map2<T, T, E>(node, a, b, [&](T x, E y) { return pow_elem<T, E>(node, x, y); });
    });
  })};
}

void check_pow(const Node& node, const Graph& graph) {
  refuse_legacy_broadcast(node);
  check_input_dtypes(node, graph, kWideNumericTypes);
}

// ---------------------------------------------------------------------------
// Mod: fmod=0 (default) is the integer modulus with the sign of the divisor
// (Python's %); fmod=1 is C's fmod / %, with the sign of the dividend.
// Floating inputs require fmod=1.

bool is_float(DType d) { return d == DType::kFloat32 || d == DType::kFloat64; }

std::vector<Tensor> mod_compute(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& a = required_input(node, inputs, 0);
  const Tensor& b = required_input(node, inputs, 1);
  require_same_dtype(node, a, b);
  const bool fmod = node.attr_int("fmod", 0) != 0;
  if (is_float(a.dtype()) && !fmod) throw_invalid(node, "floating-point Mod requires fmod=1");
  return {dispatch_numeric_wide(node, a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    return map2<T, T, T>(node, a, b, [&](T x, T y) -> T {
      if constexpr (std::is_floating_point_v<T>) {
        return std::fmod(x, y);
      } else {
        if (y == 0) throw_runtime(node, "integer Mod by zero");
        if constexpr (std::is_signed_v<T>) {
          if (y == -1) return 0;  // INT_MIN % -1 overflows
          T r = static_cast<T>(x % y);
          if (!fmod && r != 0 && ((r < 0) != (y < 0))) r = static_cast<T>(r + y);
          return r;
        } else {
          return static_cast<T>(x % y);
        }
      }
    });
  })};
}

void check_mod(const Node& node, const Graph& graph) {
  check_input_dtypes(node, graph, kWideNumericTypes);
  int64_t fmod = node.attr_int("fmod", 0);
  if (fmod != 0 && fmod != 1) throw_invalid(node, fmt::format("fmod must be 0 or 1, got {}", fmod));
  for (size_t i = 0; i < 2; ++i) {
    ValueId id = node.input(i);
    if (id != kNoValue && is_float(graph.values[id].dtype) && fmod == 0)
      throw_invalid(node, "floating-point Mod requires fmod=1");
  }
}

// ---------------------------------------------------------------------------
// Variadic Min, Max, Sum, Mean: a left fold of the broadcasting binary op.
// Min/Max propagate NaN (like numpy's minimum/maximum).

enum class Variadic { kMin, kMax, kSum, kMean };

template <Variadic kOp>
std::vector<Tensor> variadic_compute(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& first = required_input(node, inputs, 0);
  for (size_t i = 1; i < inputs.size(); ++i) require_same_dtype(node, first, required_input(node, inputs, i));
  auto run = [&](auto tag) -> Tensor {
    using T = decltype(tag);
    auto op = [](T x, T y) -> T {
      if constexpr (kOp == Variadic::kMin || kOp == Variadic::kMax) {
        if constexpr (std::is_floating_point_v<T>) {
          if (std::isnan(x)) return x;
          if (std::isnan(y)) return y;
        }
        if constexpr (kOp == Variadic::kMin) return y < x ? y : x;
        else return y > x ? y : x;
      } else {
        return add_op(x, y);
      }
    };
    Tensor acc = first.clone();
    for (size_t i = 1; i < inputs.size(); ++i) acc = map2<T, T, T>(node, acc, *inputs[i], op);
    if constexpr (kOp == Variadic::kMean && std::is_floating_point_v<T>) {
      T* p = acc.data<T>();
      const T n = static_cast<T>(inputs.size());
      for (int64_t i = 0; i < acc.numel(); ++i) p[i] /= n;
    }
    return acc;
  };
  if constexpr (kOp == Variadic::kSum || kOp == Variadic::kMean)
    return {dispatch_float(node, first.dtype(), run)};
  else
    return {dispatch_numeric_wide(node, first.dtype(), run)};
}

template <Variadic kOp>
void check_variadic(const Node& node, const Graph& graph) {
  if (node.inputs.empty()) throw_invalid(node, "needs at least one input");
  if constexpr (kOp == Variadic::kSum || kOp == Variadic::kMean)
    check_input_dtypes(node, graph, kFloatTypes);
  else
    check_input_dtypes(node, graph, kWideNumericTypes);
}

// ---------------------------------------------------------------------------
// Comparisons (bool output).

enum class Compare { kEqual, kGreater, kLess, kGreaterOrEqual, kLessOrEqual };

template <Compare kOp>
std::vector<Tensor> compare_compute(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& a = required_input(node, inputs, 0);
  const Tensor& b = required_input(node, inputs, 1);
  require_same_dtype(node, a, b);
  auto run = [&](auto tag) {
    using T = decltype(tag);
    return map2<bool, T, T>(node, a, b, [](T x, T y) -> bool {
      if constexpr (kOp == Compare::kEqual) return x == y;
      else if constexpr (kOp == Compare::kGreater) return x > y;
      else if constexpr (kOp == Compare::kLess) return x < y;
      else if constexpr (kOp == Compare::kGreaterOrEqual) return x >= y;
      else return x <= y;
    });
  };
  if (kOp == Compare::kEqual && a.dtype() == DType::kBool) return {run(bool{})};
  return {dispatch_numeric_wide(node, a.dtype(), run)};
}

template <Compare kOp>
void check_compare(const Node& node, const Graph& graph) {
  refuse_legacy_broadcast(node);
  if constexpr (kOp == Compare::kEqual)
    check_input_dtypes(node, graph, {DType::kFloat32, DType::kFloat64, DType::kInt8, DType::kUInt8, DType::kInt16,
                                     DType::kInt32, DType::kInt64, DType::kUInt16, DType::kUInt32, DType::kUInt64,
                                     DType::kBool});
  else
    check_input_dtypes(node, graph, kWideNumericTypes);
}

// ---------------------------------------------------------------------------
// BitShift (unsigned integers): x << y or x >> y per `direction`; a shift by
// the width or more gives 0 (C leaves it undefined).

std::vector<Tensor> bit_shift_compute(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& a = required_input(node, inputs, 0);
  const Tensor& b = required_input(node, inputs, 1);
  require_same_dtype(node, a, b);
  const bool left = node.attr_string("direction", "") == "LEFT";
  return {dispatch_numeric_wide(node, a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_unsigned_v<T>) {
      return map2<T, T, T>(node, a, b, [&](T x, T y) -> T {
        if (y >= std::numeric_limits<T>::digits) return 0;
        return static_cast<T>(left ? static_cast<WideU<T>>(x) << y : static_cast<WideU<T>>(x) >> y);
      });
    } else {
      throw_unsupported(node, fmt::format("dtype {} is not an unsigned integer", dtype_name(a.dtype())));
      return Tensor();
    }
  })};
}

void check_bit_shift(const Node& node, const Graph& graph) {
  check_input_dtypes(node, graph, {DType::kUInt8, DType::kUInt16, DType::kUInt32, DType::kUInt64});
  std::string direction = node.attr_string("direction", "");
  if (direction != "LEFT" && direction != "RIGHT")
    throw_invalid(node, fmt::format("direction must be LEFT or RIGHT, got '{}'", direction));
}

// ---------------------------------------------------------------------------
// And, Or, Xor (bool inputs and output).

enum class Logic { kAnd, kOr, kXor };

template <Logic kOp>
std::vector<Tensor> logic_compute(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& a = required_input(node, inputs, 0);
  const Tensor& b = required_input(node, inputs, 1);
  if (a.dtype() != DType::kBool || b.dtype() != DType::kBool)
    throw_unsupported(node, fmt::format("inputs must be bool, got {} and {}", dtype_name(a.dtype()),
                                        dtype_name(b.dtype())));
  return {map2<bool, bool, bool>(node, a, b, [](bool x, bool y) -> bool {
    if constexpr (kOp == Logic::kAnd) return x && y;
    else if constexpr (kOp == Logic::kOr) return x || y;
    else return x != y;
  })};
}

void check_logic(const Node& node, const Graph& graph) {
  refuse_legacy_broadcast(node);
  check_input_dtypes(node, graph, {DType::kBool});
}

// ---------------------------------------------------------------------------
// Where(condition, X, Y): 3-way broadcast.

std::vector<Tensor> where_compute(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& c = required_input(node, inputs, 0);
  const Tensor& x = required_input(node, inputs, 1);
  const Tensor& y = required_input(node, inputs, 2);
  if (c.dtype() != DType::kBool)
    throw_unsupported(node, fmt::format("condition must be bool, got {}", dtype_name(c.dtype())));
  require_same_dtype(node, x, y);
  Shape out_shape = broadcast_shapes(node, broadcast_shapes(node, c.shape(), x.shape()), y.shape());
  return {dispatch_all(node, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    Tensor out(dtype_of<T>(), out_shape);
    const bool* pc = c.data<bool>();
    const T* px = x.data<T>();
    const T* py = y.data<T>();
    T* po = out.data<T>();
    broadcast_loop<3>(out_shape, {&c.shape(), &x.shape(), &y.shape()},
                      [&](int64_t i, const std::array<int64_t, 3>& off) {
                        po[i] = pc[off[0]] ? px[off[1]] : py[off[2]];
                      });
    return out;
  })};
}

void check_where(const Node& node, const Graph& graph) {
  check_input_dtypes(node, graph, {DType::kBool}, {0});
  check_input_dtypes(node, graph, kAllTypes, {1, 2});
}

// ---------------------------------------------------------------------------
// PRelu(X, slope): y = x < 0 ? slope * x : x, slope unidirectionally
// broadcast to X (the output has X's shape).

std::vector<Tensor> prelu_compute(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = required_input(node, inputs, 0);
  const Tensor& slope = required_input(node, inputs, 1);
  require_same_dtype(node, x, slope);
  if (broadcast_shapes(node, x.shape(), slope.shape()) != x.shape())
    throw_runtime(node, fmt::format("slope of shape {} does not broadcast to X of shape {}",
                                    shape_to_string(slope.shape()), shape_to_string(x.shape())));
  return {dispatch_numeric(node, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    return map2<T, T, T>(node, x, slope, [](T v, T s) -> T { return v < 0 ? mul_op(s, v) : v; });
  })};
}

void check_prelu(const Node& node, const Graph& graph) { check_input_dtypes(node, graph, kNumericTypes); }

}  // namespace

HETSCHED_REFERENCE_KERNEL("Add", check_arith, arith_compute<Arith::kAdd>);
HETSCHED_REFERENCE_KERNEL("Sub", check_arith, arith_compute<Arith::kSub>);
HETSCHED_REFERENCE_KERNEL("Mul", check_arith, arith_compute<Arith::kMul>);
HETSCHED_REFERENCE_KERNEL("Div", check_arith, arith_compute<Arith::kDiv>);
HETSCHED_REFERENCE_KERNEL("Pow", check_pow, pow_compute);
HETSCHED_REFERENCE_KERNEL("Mod", check_mod, mod_compute);
HETSCHED_REFERENCE_KERNEL("BitShift", check_bit_shift, bit_shift_compute);
HETSCHED_REFERENCE_KERNEL("Min", check_variadic<Variadic::kMin>, variadic_compute<Variadic::kMin>);
HETSCHED_REFERENCE_KERNEL("Max", check_variadic<Variadic::kMax>, variadic_compute<Variadic::kMax>);
HETSCHED_REFERENCE_KERNEL("Sum", check_variadic<Variadic::kSum>, variadic_compute<Variadic::kSum>);
HETSCHED_REFERENCE_KERNEL("Mean", check_variadic<Variadic::kMean>, variadic_compute<Variadic::kMean>);
HETSCHED_REFERENCE_KERNEL("Equal", check_compare<Compare::kEqual>, compare_compute<Compare::kEqual>);
HETSCHED_REFERENCE_KERNEL("Greater", check_compare<Compare::kGreater>, compare_compute<Compare::kGreater>);
HETSCHED_REFERENCE_KERNEL("Less", check_compare<Compare::kLess>, compare_compute<Compare::kLess>);
HETSCHED_REFERENCE_KERNEL("GreaterOrEqual", check_compare<Compare::kGreaterOrEqual>,
                          compare_compute<Compare::kGreaterOrEqual>);
HETSCHED_REFERENCE_KERNEL("LessOrEqual", check_compare<Compare::kLessOrEqual>,
                          compare_compute<Compare::kLessOrEqual>);
HETSCHED_REFERENCE_KERNEL("And", check_logic, logic_compute<Logic::kAnd>);
HETSCHED_REFERENCE_KERNEL("Or", check_logic, logic_compute<Logic::kOr>);
HETSCHED_REFERENCE_KERNEL("Xor", check_logic, logic_compute<Logic::kXor>);
HETSCHED_REFERENCE_KERNEL("Where", check_where, where_compute);
HETSCHED_REFERENCE_KERNEL("PRelu", check_prelu, prelu_compute);

}  // namespace hetsched::kernels
