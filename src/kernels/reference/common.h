// Helpers shared by the reference kernels: error construction, axis and
// broadcast arithmetic, dtype checks and dispatch.
#pragma once

#include <cmath>
#include <initializer_list>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/kernel.h"

namespace hetsched::kernels {

// Error(kUnsupported, "<node label>: <what>").
[[noreturn]] void throw_unsupported(const Node& node, const std::string& what);
// Error(kInvalidModel, "<node label>: <what>").
[[noreturn]] void throw_invalid(const Node& node, const std::string& what);
// Error(kRuntime, "<node label>: <what>") — for bad actual inputs at run time.
[[noreturn]] void throw_runtime(const Node& node, const std::string& what);

// Maps a possibly negative axis into [0, rank); throws naming the node.
int64_t normalize_axis(const Node& node, int64_t axis, int64_t rank);
// a * b for output dims computed from data or attributes (Tile's repeats,
// a blocksize); throws kRuntime naming the node when it overflows int64.
int64_t size_product(const Node& node, int64_t a, int64_t b);
// A dim size computed in floating point (Resize's scales, OneHot's depth):
// `v` truncated, when it is finite, >= 0 and below 2^63; else throws
// kRuntime naming the node and `what` (a cast outside int64 is undefined).
int64_t size_from_double(const Node& node, double v, const char* what);
// Numpy-style broadcast of two shapes; throws naming the node when incompatible.
Shape broadcast_shapes(const Node& node, const Shape& a, const Shape& b);
// Row-major strides of `shape` (in elements).
std::vector<int64_t> strides_of(const Shape& shape);
// Strides to read a tensor of `shape` as if it were broadcast to `out_shape`
// (0 on broadcast dims); shape is right-aligned against out_shape.
std::vector<int64_t> broadcast_strides(const Shape& shape, const Shape& out_shape);

// Gathers a dense tensor of `out_shape` (element width `element_size` bytes)
// from `src`: the element at multi-index idx is read at element offset
// base + sum(idx[d] * strides[d]) of src. Strides may be negative or 0, so
// this serves transposes, slices, broadcasts and block rearrangements.
void strided_copy(const void* src, int64_t base, const std::vector<int64_t>& strides, const Shape& out_shape,
                  void* dst, size_t element_size);

// Load-time dtype check: each listed input (all inputs when `which` is empty)
// whose dtype is known must be one of `allowed`; else throws kUnsupported:
// "Relu 'r1': input 0 'x' has dtype float16; supported: float32".
void check_input_dtypes(const Node& node, const Graph& graph, std::initializer_list<DType> allowed,
                        std::vector<size_t> which = {});
// Same for outputs (e.g. Cast's `to`, ConstantOfShape's value).
void check_output_dtypes(const Node& node, const Graph& graph, std::initializer_list<DType> allowed);

// Requires inputs[index] to be present; returns it.
const Tensor& required_input(const Node& node, const std::vector<const Tensor*>& inputs, size_t index);
// Optional input as int64 values (from int32/int64 tensors); empty when absent.
std::vector<int64_t> optional_int64_input(const std::vector<const Tensor*>& inputs, size_t index);

// A float32 or float64 tensor (per `dtype`) of `shape` holding `values`,
// for kernels that compute in double; other dtypes throw kUnsupported
// naming the node.
Tensor float_tensor_of(const Node& node, DType dtype, Shape shape, const std::vector<double>& values);

// Calls fn(T{}) with T the C++ type of `dtype`, for the dtypes in the list;
// otherwise throws kUnsupported naming the node.
template <typename Fn>
auto dispatch_float(const Node& node, DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kFloat32: return fn(float{});
    case DType::kFloat64: return fn(double{});
    default: throw_unsupported(node, std::string("dtype ") + dtype_name(dtype) + " is not supported");
  }
}

template <typename Fn>
auto dispatch_numeric(const Node& node, DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kFloat32: return fn(float{});
    case DType::kFloat64: return fn(double{});
    case DType::kInt8: return fn(int8_t{});
    case DType::kUInt8: return fn(uint8_t{});
    case DType::kInt16: return fn(int16_t{});
    case DType::kInt32: return fn(int32_t{});
    case DType::kInt64: return fn(int64_t{});
    default: throw_unsupported(node, std::string("dtype ") + dtype_name(dtype) + " is not supported");
  }
}

// dispatch_numeric plus the unsigned 16-, 32- and 64-bit integers, for the
// ops written for them (element-wise arithmetic, Min/Max, comparisons,
// BitShift).
template <typename Fn>
auto dispatch_numeric_wide(const Node& node, DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kUInt16: return fn(uint16_t{});
    case DType::kUInt32: return fn(uint32_t{});
    case DType::kUInt64: return fn(uint64_t{});
    default: return dispatch_numeric(node, dtype, std::forward<Fn>(fn));
  }
}

template <typename Fn>
auto dispatch_all(const Node& node, DType dtype, Fn&& fn) {
  if (dtype == DType::kBool) return fn(bool{});
  return dispatch_numeric(node, dtype, std::forward<Fn>(fn));
}

// Cast's conversion of one element from T to U (see cast.cpp): to bool,
// x != 0; float to integer, truncation toward zero with NaN -> 0 and
// out-of-range values saturated (never a cast outside U, which is
// undefined); integer to integer, modular.
template <typename U, typename T>
U cast_value(T v) {
  if constexpr (std::is_same_v<U, bool>) {
    return v != T(0);
  } else if constexpr (std::is_floating_point_v<U>) {
    return static_cast<U>(v);
  } else if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(v)) return 0;
    double t = std::trunc(static_cast<double>(v));
    if (t <= static_cast<double>(std::numeric_limits<U>::lowest())) return std::numeric_limits<U>::lowest();
    if (t >= static_cast<double>(std::numeric_limits<U>::max())) return std::numeric_limits<U>::max();
    return static_cast<U>(t);
  } else {
    return static_cast<U>(v);
  }
}

constexpr std::initializer_list<DType> kFloatTypes = {DType::kFloat32, DType::kFloat64};
constexpr std::initializer_list<DType> kNumericTypes = {DType::kFloat32, DType::kFloat64, DType::kInt8,
                                                        DType::kUInt8,   DType::kInt16,   DType::kInt32,
                                                        DType::kInt64};
// kNumericTypes and the unsigned integers dispatch_numeric_wide adds.
constexpr std::initializer_list<DType> kWideNumericTypes = {
    DType::kFloat32, DType::kFloat64, DType::kInt8,   DType::kUInt8,  DType::kInt16,
    DType::kInt32,   DType::kInt64,   DType::kUInt16, DType::kUInt32, DType::kUInt64};
constexpr std::initializer_list<DType> kAllTypes = {DType::kFloat32, DType::kFloat64, DType::kInt8,
                                                    DType::kUInt8,   DType::kInt16,   DType::kInt32,
                                                    DType::kInt64,   DType::kBool};

}  // namespace hetsched::kernels
