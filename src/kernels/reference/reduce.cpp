// Reference kernels for the reductions:
//   ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1,
//   ReduceL2, ReduceSumSquare, ReduceLogSum, ReduceLogSumExp, ArgMax, ArgMin.
//
// Reduce* axes: the `axes` attribute (ReduceSum before opset 13, the others
// before 18) or the optional int64 input 1 (from then on); whichever the node
// has. No axes (or an empty axes input) reduces everything, unless
// noop_with_empty_axes=1, which makes the op the identity. Duplicate or
// out-of-range axes are invalid.
//
// Float inputs accumulate in double. Integer inputs: Sum/Prod/SumSquare/L1
// wrap modulo 2^bits, Mean truncates toward zero; L2/LogSum/LogSumExp are
// refused for integers (their rounding is not specified). Reducing an empty
// set gives the identity of the reduction (0, 1, -inf/lowest for Max,
// +inf/max for Min, -inf for the logs, NaN for a float Mean).
// Max/Min/ArgMax/ArgMin treat NaN like numpy: it propagates / wins.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include <fmt/format.h>

#include "kernels/reference/common.h"

namespace hetsched::kernels {
namespace {

// All offsets sum(idx[d] * strides[d]) over the row-major enumeration of dims.
std::vector<int64_t> enumerate_offsets(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides) {
  std::vector<int64_t> offsets{0};
  for (size_t d = 0; d < dims.size(); ++d) {
    std::vector<int64_t> next;
    next.reserve(offsets.size() * static_cast<size_t>(dims[d]));
    for (int64_t base : offsets)
      for (int64_t i = 0; i < dims[d]; ++i) next.push_back(base + i * strides[d]);
    offsets = std::move(next);
  }
  return offsets;
}

struct ReducePlan {
  Shape out_shape;
  std::vector<int64_t> outer;  // input offset of each output element's first element
  std::vector<int64_t> inner;  // offsets (relative) of the elements reduced into one output
};

ReducePlan plan_reduce(const Shape& in, const std::vector<bool>& reduced, bool keepdims) {
  ReducePlan plan;
  std::vector<int64_t> strides = strides_of(in);
  std::vector<int64_t> kept_dims, kept_strides, red_dims, red_strides;
  for (size_t d = 0; d < in.size(); ++d) {
    if (reduced[d]) {
      red_dims.push_back(in[d]);
      red_strides.push_back(strides[d]);
      if (keepdims) plan.out_shape.push_back(1);
    } else {
      kept_dims.push_back(in[d]);
      kept_strides.push_back(strides[d]);
      plan.out_shape.push_back(in[d]);
    }
  }
  plan.outer = enumerate_offsets(kept_dims, kept_strides);
  plan.inner = enumerate_offsets(red_dims, red_strides);
  return plan;
}

enum class Reduce { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kSumSquare, kLogSum, kLogSumExp };

constexpr bool float_only(Reduce op) {
  return op == Reduce::kL2 || op == Reduce::kLogSum || op == Reduce::kLogSumExp;
}

// One output element: reduce x[base + inner[k]] over k.
template <Reduce kOp, typename T>
T reduce_one(const Node& node, const T* x, const std::vector<int64_t>& inner) {
  const size_t n = inner.size();
  if constexpr (kOp == Reduce::kMax || kOp == Reduce::kMin) {
    T acc;
    if constexpr (std::is_floating_point_v<T>)
      acc = kOp == Reduce::kMax ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
    else
      acc = kOp == Reduce::kMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
    for (int64_t off : inner) {
      T v = x[off];
      if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(v)) return v;
      }
      if (kOp == Reduce::kMax ? v > acc : v < acc) acc = v;
    }
    return acc;
  } else if constexpr (std::is_floating_point_v<T>) {
    double acc = kOp == Reduce::kProd ? 1.0 : 0.0;
    if constexpr (kOp == Reduce::kLogSumExp) {
      double m = -std::numeric_limits<double>::infinity();
      for (int64_t off : inner) m = std::max(m, static_cast<double>(x[off]));
      if (!std::isfinite(m)) {  // all -inf, some +inf, or empty: the direct formula is exact
        for (int64_t off : inner) acc += std::exp(static_cast<double>(x[off]));
        return static_cast<T>(std::log(acc));
      }
      for (int64_t off : inner) acc += std::exp(static_cast<double>(x[off]) - m);
      return static_cast<T>(m + std::log(acc));
    }
    for (int64_t off : inner) {
      double v = static_cast<double>(x[off]);
      if constexpr (kOp == Reduce::kProd) acc *= v;
      else if constexpr (kOp == Reduce::kL1) acc += std::fabs(v);
      else if constexpr (kOp == Reduce::kL2 || kOp == Reduce::kSumSquare) acc += v * v;
      else acc += v;  // Sum, Mean, LogSum
    }
    if constexpr (kOp == Reduce::kMean) acc /= static_cast<double>(n);  // n == 0 -> NaN
    if constexpr (kOp == Reduce::kL2) acc = std::sqrt(acc);
    if constexpr (kOp == Reduce::kLogSum) acc = std::log(acc);
    return static_cast<T>(acc);
  } else if constexpr (float_only(kOp)) {
    throw_unsupported(node, "integer inputs are not supported");
  } else {
    // Integers: wrap-around arithmetic in uint64, exact modulo 2^64 and so
    // modulo 2^bits of T after the final conversion.
    uint64_t acc = kOp == Reduce::kProd ? 1 : 0;
    for (int64_t off : inner) {
      T v = x[off];
      // Sign-extended for signed T.
      const uint64_t u = static_cast<uint64_t>(static_cast<std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>(v));
      if constexpr (kOp == Reduce::kProd) acc *= u;
      else if constexpr (kOp == Reduce::kSumSquare) acc += u * u;
      else if constexpr (kOp == Reduce::kL1 && std::is_signed_v<T>) acc += (v < 0) ? uint64_t(0) - u : u;
      else acc += u;  // Sum, Mean, unsigned L1
    }
    if constexpr (kOp == Reduce::kMean) {
      if (n == 0) throw_runtime(node, "integer mean of an empty set");
      return static_cast<T>(static_cast<int64_t>(acc) / static_cast<int64_t>(n));
    }
    return static_cast<T>(acc);
  }
}

// The axes from the attribute or from input 1; empty when neither is given.
std::vector<int64_t> reduce_axes(const Node& node, const std::vector<const Tensor*>& inputs) {
  if (node.has_attr("axes")) return node.attr_ints("axes");
  if (inputs.size() > 1 && inputs[1] != nullptr) {
    if (inputs[1]->dtype() != DType::kInt64)
      throw_runtime(node, fmt::format("axes input must be int64, got {}", dtype_name(inputs[1]->dtype())));
    return inputs[1]->to_int64_vector();
  }
  return {};
}

// Marks the reduced dims; throws on duplicate or out-of-range axes.
std::vector<bool> reduced_dims(const Node& node, const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<bool> reduced(static_cast<size_t>(rank), axes.empty());
  if (axes.empty()) return reduced;
  for (int64_t a : axes) {
    if (a < -rank || a >= rank)
      throw_invalid(node, fmt::format("axis {} is out of range for rank {}", a, rank));
    size_t d = static_cast<size_t>(a < 0 ? a + rank : a);
    if (reduced[d]) throw_invalid(node, fmt::format("axis {} is given twice", a));
    reduced[d] = true;
  }
  return reduced;
}

template <Reduce kOp>
std::vector<Tensor> reduce_compute(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = required_input(node, inputs, 0);
  std::vector<int64_t> axes = reduce_axes(node, inputs);
  if (axes.empty() && node.attr_int("noop_with_empty_axes", 0) != 0) return {x.clone()};
  const bool keepdims = node.attr_int("keepdims", 1) != 0;
  ReducePlan plan = plan_reduce(x.shape(), reduced_dims(node, axes, x.rank()), keepdims);
  auto run = [&](auto tag) {
    using T = decltype(tag);
    Tensor out(x.dtype(), plan.out_shape);
    const T* px = x.data<T>();
    T* po = out.data<T>();
    for (size_t i = 0; i < plan.outer.size(); ++i) po[i] = reduce_one<kOp, T>(node, px + plan.outer[i], plan.inner);
    return out;
  };
  if constexpr (float_only(kOp)) return {dispatch_float(node, x.dtype(), run)};
  else return {dispatch_numeric(node, x.dtype(), run)};
}

template <Reduce kOp>
void check_reduce(const Node& node, const Graph& graph) {
  check_input_dtypes(node, graph, float_only(kOp) ? kFloatTypes : kNumericTypes, {0});
  check_input_dtypes(node, graph, {DType::kInt64}, {1});
  if (node.has_attr("axes")) {
    if (node.input(1) != kNoValue) throw_invalid(node, "axes given both as attribute and as input");
    std::vector<int64_t> axes = node.attr_ints("axes");
    std::sort(axes.begin(), axes.end());
    if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
      throw_invalid(node, "axes has duplicate entries");
  }
}

// --- ArgMax / ArgMin: int64 index along `axis`; select_last_index picks the
// last of equal extremes.

template <bool kMax>
std::vector<Tensor> arg_compute(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = required_input(node, inputs, 0);
  const bool keepdims = node.attr_int("keepdims", 1) != 0;
  const bool last = node.attr_int("select_last_index", 0) != 0;
  if (x.rank() == 0) {
    normalize_axis(node, node.attr_int("axis", 0), 0);
    return {Tensor::scalar<int64_t>(0)};
  }
  const int64_t axis = normalize_axis(node, node.attr_int("axis", 0), x.rank());
  const int64_t n = x.dim(axis);
  if (n == 0) throw_runtime(node, fmt::format("cannot take the arg-extreme of an empty axis {}", axis));
  Shape out_shape;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (d < axis) outer *= x.dim(d);
    if (d > axis) inner *= x.dim(d);
    if (d != axis) out_shape.push_back(x.dim(d));
    else if (keepdims) out_shape.push_back(1);
  }
  Tensor out(DType::kInt64, out_shape);
  int64_t* po = out.data<int64_t>();
  dispatch_numeric(node, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const T* p = px + o * n * inner + i;
        int64_t best = 0;
        T bv = p[0];
        for (int64_t k = 1; k < n; ++k) {
          T v = p[k * inner];
          bool better;
          if constexpr (std::is_floating_point_v<T>) {
            if (std::isnan(bv)) better = last && std::isnan(v);
            else if (std::isnan(v)) better = true;
            else better = kMax ? (last ? v >= bv : v > bv) : (last ? v <= bv : v < bv);
          } else {
            better = kMax ? (last ? v >= bv : v > bv) : (last ? v <= bv : v < bv);
          }
          if (better) {
            best = k;
            bv = v;
          }
        }
        po[o * inner + i] = best;
      }
    }
    return 0;
  });
  return {out};
}

void check_arg(const Node& node, const Graph& graph) { check_input_dtypes(node, graph, kNumericTypes); }

}  // namespace

HETSCHED_REFERENCE_KERNEL("ReduceSum", check_reduce<Reduce::kSum>, reduce_compute<Reduce::kSum>);
HETSCHED_REFERENCE_KERNEL("ReduceMean", check_reduce<Reduce::kMean>, reduce_compute<Reduce::kMean>);
HETSCHED_REFERENCE_KERNEL("ReduceMax", check_reduce<Reduce::kMax>, reduce_compute<Reduce::kMax>);
HETSCHED_REFERENCE_KERNEL("ReduceMin", check_reduce<Reduce::kMin>, reduce_compute<Reduce::kMin>);
HETSCHED_REFERENCE_KERNEL("ReduceProd", check_reduce<Reduce::kProd>, reduce_compute<Reduce::kProd>);
HETSCHED_REFERENCE_KERNEL("ReduceL1", check_reduce<Reduce::kL1>, reduce_compute<Reduce::kL1>);
HETSCHED_REFERENCE_KERNEL("ReduceL2", check_reduce<Reduce::kL2>, reduce_compute<Reduce::kL2>);
HETSCHED_REFERENCE_KERNEL("ReduceSumSquare", check_reduce<Reduce::kSumSquare>, reduce_compute<Reduce::kSumSquare>);
HETSCHED_REFERENCE_KERNEL("ReduceLogSum", check_reduce<Reduce::kLogSum>, reduce_compute<Reduce::kLogSum>);
HETSCHED_REFERENCE_KERNEL("ReduceLogSumExp", check_reduce<Reduce::kLogSumExp>,
                          reduce_compute<Reduce::kLogSumExp>);
HETSCHED_REFERENCE_KERNEL("ArgMax", check_arg, arg_compute<true>);
HETSCHED_REFERENCE_KERNEL("ArgMin", check_arg, arg_compute<false>);

}  // namespace hetsched::kernels
