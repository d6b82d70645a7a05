// Reference kernels for Cast (target dtype from the `to` attribute) and
// CastLike (target dtype = the second input's dtype).
//
// Supported dtypes, in any combination: float32, float64, float16, bfloat16,
// int8, int16, int32, int64, uint8, bool. Strings, uint16/32/64 and the
// float8 types are refused at load. Conversions:
//   to bool:          x != 0 (NaN -> true)
//   float -> integer: truncation toward zero; NaN -> 0 and out-of-range values
//                     saturate (the spec leaves both undefined)
//   int   -> integer: wrap modulo 2^bits (two's complement)
//   -> float:         round to nearest even
// float16 and bfloat16 go through float32 (core/half.h): read exactly, or
// rounded from a float32 (a float64 or int64 is rounded to float32 first).
// The opset-19 `saturate` attribute concerns float8 only and is ignored.
// The conversion of one element is cast_value (common.h), which Pad's
// constant shares.
#include <cstdint>
#include <optional>

#include <fmt/format.h>

#include "core/half.h"
#include "kernels/reference/common.h"

namespace hetsched::kernels {
namespace {

// ONNX TensorProto.DataType -> DType, for the dtypes this kernel converts.
std::optional<DType> dtype_from_onnx(int64_t code) {
  switch (code) {
    case 1: return DType::kFloat32;
    case 2: return DType::kUInt8;
    case 3: return DType::kInt8;
    case 5: return DType::kInt16;
    case 6: return DType::kInt32;
    case 7: return DType::kInt64;
    case 9: return DType::kBool;
    case 10: return DType::kFloat16;
    case 11: return DType::kFloat64;
    case 16: return DType::kBFloat16;
    default: return std::nullopt;
  }
}

std::string onnx_type_name(int64_t code) {
  switch (code) {
    case 4: return "uint16";
    case 8: return "string";
    case 12: return "uint32";
    case 13: return "uint64";
    case 14: return "complex64";
    case 15: return "complex128";
    case 17: case 18: case 19: case 20: return "float8";
    default: return "type " + std::to_string(code);
  }
}

constexpr std::initializer_list<DType> kCastTypes = {DType::kFloat32, DType::kFloat64, DType::kFloat16,
                                                     DType::kBFloat16, DType::kInt8,    DType::kUInt8,
                                                     DType::kInt16,   DType::kInt32,    DType::kInt64,
                                                     DType::kBool};

bool supported(DType d) {
  for (DType a : kCastTypes)
    if (a == d) return true;
  return false;
}

Tensor narrow(const Tensor& x, DType to) {
  Tensor out(to, x.shape());
  const float* px = x.data<float>();
  if (to == DType::kFloat16) {
    float_to_float16(px, out.data<Float16>(), x.numel());
  } else {
    BFloat16* po = out.data<BFloat16>();
    for (int64_t i = 0; i < x.numel(); ++i) po[i] = bfloat16_of(px[i]);
  }
  return out;
}

Tensor cast_to(const Node& node, const Tensor& x, DType to) {
  if (x.dtype() == to) return x.clone();
  if (x.dtype() == DType::kFloat16 || x.dtype() == DType::kBFloat16) {
    Tensor wide = widened_to_float32(x);
    return to == DType::kFloat32 ? wide : cast_to(node, wide, to);
  }
  if (to == DType::kFloat16 || to == DType::kBFloat16) {
    if (x.dtype() == DType::kFloat32) return narrow(x, to);
    return narrow(cast_to(node, x, DType::kFloat32), to);
  }
  return dispatch_all(node, x.dtype(), [&](auto src_tag) {
    using T = decltype(src_tag);
    return dispatch_all(node, to, [&](auto dst_tag) {
      using U = decltype(dst_tag);
      Tensor out(to, x.shape());
      const T* px = x.data<T>();
      U* po = out.data<U>();
      for (int64_t i = 0; i < x.numel(); ++i) po[i] = cast_value<U, T>(px[i]);
      return out;
    });
  });
}

DType cast_target(const Node& node) {
  if (!node.has_attr("to")) throw_invalid(node, "missing required attribute 'to'");
  int64_t code = node.attr_int("to", 0);
  std::optional<DType> to = dtype_from_onnx(code);
  if (!to) throw_unsupported(node, "cast to " + onnx_type_name(code) + " is not supported");
  return *to;
}

std::vector<Tensor> cast_compute(const Node& node, const std::vector<const Tensor*>& inputs) {
  return {cast_to(node, required_input(node, inputs, 0), cast_target(node))};
}

void check_cast(const Node& node, const Graph& graph) {
  cast_target(node);
  check_input_dtypes(node, graph, kCastTypes);
}

std::vector<Tensor> cast_like_compute(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& target = required_input(node, inputs, 1);
  if (!supported(target.dtype()))
    throw_unsupported(node, fmt::format("cast to {} is not supported", dtype_name(target.dtype())));
  return {cast_to(node, required_input(node, inputs, 0), target.dtype())};
}

void check_cast_like(const Node& node, const Graph& graph) { check_input_dtypes(node, graph, kCastTypes); }

}  // namespace

HETSCHED_REFERENCE_KERNEL("Cast", check_cast, cast_compute);
HETSCHED_REFERENCE_KERNEL("CastLike", check_cast_like, cast_like_compute);

}  // namespace hetsched::kernels
