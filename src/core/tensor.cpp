#include "hetsched/tensor.h"

#include <cstdlib>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "core/allocation.h"
#include "core/half.h"

namespace hetsched {

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kUndefined: return 0;
    case DType::kFloat32: return 4;
    case DType::kFloat64: return 8;
    case DType::kFloat16: return 2;
    case DType::kInt8: return 1;
    case DType::kUInt8: return 1;
    case DType::kInt16: return 2;
    case DType::kInt32: return 4;
    case DType::kInt64: return 8;
    case DType::kBool: return 1;
    case DType::kBFloat16: return 2;
    case DType::kUInt16: return 2;
    case DType::kUInt32: return 4;
    case DType::kUInt64: return 8;
  }
  return 0;
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kUndefined: return "undefined";
    case DType::kFloat32: return "float32";
    case DType::kFloat64: return "float64";
    case DType::kFloat16: return "float16";
    case DType::kInt8: return "int8";
    case DType::kUInt8: return "uint8";
    case DType::kInt16: return "int16";
    case DType::kInt32: return "int32";
    case DType::kInt64: return "int64";
    case DType::kBool: return "bool";
    case DType::kBFloat16: return "bfloat16";
    case DType::kUInt16: return "uint16";
    case DType::kUInt32: return "uint32";
    case DType::kUInt64: return "uint64";
  }
  return "unknown";
}

std::string shape_to_string(const Shape& shape) {
  if (shape.empty()) return "scalar";
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += "x";
    s += shape[i] < 0 ? "?" : std::to_string(shape[i]);
  }
  return s;
}

int64_t shape_numel(const Shape& shape) {
  // A graph's declared shapes may claim any size: the product must not
  // overflow (undefined behaviour) on the way to a refusal. The product of
  // the non-zero dims must fit even where a zero dim makes the count 0:
  // kernels multiply any subset of a tensor's dims (strides, outer and inner
  // extents), and an empty [0, 2^62, 4] would overflow them.
  int64_t n = 1;
  bool empty = false;
  for (int64_t d : shape) {
    if (d == 0) {
      empty = true;
      continue;
    }
    if (__builtin_mul_overflow(n, d, &n))
      throw Error(ErrorCode::kResource,
                  "tensor shape " + shape_to_string(shape) + " is too large: its element count overflows");
  }
  return empty ? 0 : n;
}

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  for (int64_t d : shape_)
    if (d < 0) throw Error(ErrorCode::kRuntime, "tensor shape " + shape_to_string(shape_) + " has a negative dim");
  numel_ = shape_numel(shape_);
  size_t elem = dtype_size(dtype_);
  if (elem > 0 && static_cast<uint64_t>(numel_) > std::numeric_limits<size_t>::max() / elem)
    throw Error(ErrorCode::kResource, fmt::format("tensor shape {} of {} is too large: its size in bytes overflows",
                                                  shape_to_string(shape_), dtype_name(dtype_)));
  storage_ = allocate_aligned(nbytes(), [this] {
    return fmt::format("a {} tensor of shape {}", dtype_name(dtype_), shape_to_string(shape_));
  });
}

Tensor Tensor::wrap(DType dtype, Shape shape, void* data) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.numel_ = shape_numel(t.shape_);
  t.storage_ = std::shared_ptr<std::byte>(static_cast<std::byte*>(data), [](std::byte*) {});
  return t;
}

void Tensor::check_type(DType wanted) const {
  if (wanted != dtype_)
    throw Error(ErrorCode::kRuntime, fmt::format("tensor of dtype {} accessed as {}", dtype_name(dtype_),
                                                 dtype_name(wanted)));
}

namespace {
template <typename Out>
std::vector<Out> convert_all(const Tensor& t) {
  std::vector<Out> out(static_cast<size_t>(t.numel()));
  auto copy = [&](auto* src) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<Out>(src[i]);
  };
  switch (t.dtype()) {
    case DType::kFloat32: copy(t.data<float>()); break;
    case DType::kFloat64: copy(t.data<double>()); break;
    case DType::kInt8: copy(t.data<int8_t>()); break;
    case DType::kUInt8: copy(t.data<uint8_t>()); break;
    case DType::kInt16: copy(t.data<int16_t>()); break;
    case DType::kInt32: copy(t.data<int32_t>()); break;
    case DType::kInt64: copy(t.data<int64_t>()); break;
    case DType::kUInt16: copy(t.data<uint16_t>()); break;
    case DType::kUInt32: copy(t.data<uint32_t>()); break;
    case DType::kUInt64: copy(t.data<uint64_t>()); break;
    case DType::kBool: copy(t.data<bool>()); break;
    case DType::kFloat16:
      for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<Out>(to_float(t.data<Float16>()[i]));
      break;
    case DType::kBFloat16:
      for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<Out>(to_float(t.data<BFloat16>()[i]));
      break;
    default:
      throw Error(ErrorCode::kRuntime, std::string("cannot convert a tensor of dtype ") + dtype_name(t.dtype()));
  }
  return out;
}
}  // namespace

std::vector<int64_t> Tensor::to_int64_vector() const { return convert_all<int64_t>(*this); }
std::vector<double> Tensor::to_double_vector() const { return convert_all<double>(*this); }

Tensor Tensor::reshaped(Shape shape) const {
  if (shape_numel(shape) != numel_)
    throw Error(ErrorCode::kRuntime, "cannot reshape " + shape_to_string(shape_) + " to " + shape_to_string(shape));
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::clone() const {
  if (!defined()) return {};
  Tensor t(dtype_, shape_);
  std::memcpy(t.raw(), raw(), nbytes());
  return t;
}

std::string Tensor::description() const {
  return std::string(dtype_name(dtype_)) + " " + shape_to_string(shape_);
}

}  // namespace hetsched
