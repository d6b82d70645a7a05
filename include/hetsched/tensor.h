// Tensor: a typed, shaped, reference-counted block of host memory.
//
// Contract: storage is 64-byte aligned and shared between copies of a Tensor
// (copying a Tensor is cheap and aliases the data). Use clone() for a deep
// copy. Data is dense and row-major (C order). A scalar has an empty shape and
// one element.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "hetsched/error.h"

namespace hetsched {

// The element types the engine knows. Kernels refuse at load the types they
// do not implement, so a model using them fails with a clear error.
enum class DType : uint8_t {
  kUndefined,
  kFloat32,
  kFloat64,
  kFloat16,
  kInt8,
  kUInt8,
  kInt16,
  kInt32,
  kInt64,
  kBool,
  kBFloat16,
  kUInt16,
  kUInt32,
  kUInt64,
};

// Storage of the two 16-bit float types: their bits, IEEE 754 binary16 and
// bfloat16 (the upper half of a float32). Conversions: core/half.h.
struct Float16 {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

using Shape = std::vector<int64_t>;

size_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);
// "1x3x224x224", or "scalar" for an empty shape; -1 dims print as "?".
std::string shape_to_string(const Shape& shape);
// The element count (1 for a scalar). Throws Error(kResource) when the
// product of the non-zero dims overflows int64, also for an empty shape
// ([0, 2^62, 4]): no tensor has one.
int64_t shape_numel(const Shape& shape);

template <typename T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>) return DType::kFloat32;
  else if constexpr (std::is_same_v<T, double>) return DType::kFloat64;
  else if constexpr (std::is_same_v<T, int8_t>) return DType::kInt8;
  else if constexpr (std::is_same_v<T, uint8_t>) return DType::kUInt8;
  else if constexpr (std::is_same_v<T, int16_t>) return DType::kInt16;
  else if constexpr (std::is_same_v<T, int32_t>) return DType::kInt32;
  else if constexpr (std::is_same_v<T, int64_t>) return DType::kInt64;
  else if constexpr (std::is_same_v<T, uint16_t>) return DType::kUInt16;
  else if constexpr (std::is_same_v<T, uint32_t>) return DType::kUInt32;
  else if constexpr (std::is_same_v<T, uint64_t>) return DType::kUInt64;
  else if constexpr (std::is_same_v<T, bool>) return DType::kBool;
  else if constexpr (std::is_same_v<T, Float16>) return DType::kFloat16;
  else if constexpr (std::is_same_v<T, BFloat16>) return DType::kBFloat16;
  else static_assert(!sizeof(T), "no DType for this C++ type");
}

class Tensor {
 public:
  Tensor() = default;
  // Allocates zero-initialised storage.
  Tensor(DType dtype, Shape shape);

  // A tensor over memory it does not own (no copy). The caller keeps `data`
  // alive, and at least nbytes() long, for as long as any copy of the result.
  static Tensor wrap(DType dtype, Shape shape, void* data);

  template <typename T>
  static Tensor from_vector(Shape shape, const std::vector<T>& values);
  template <typename T>
  static Tensor scalar(T value) { return from_vector<T>({}, {value}); }

  bool defined() const { return dtype_ != DType::kUndefined; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t dim(int64_t axis) const { return shape_.at(static_cast<size_t>(axis)); }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * dtype_size(dtype_); }

  void* raw() { return storage_.get(); }
  const void* raw() const { return storage_.get(); }

  // Typed access; throws if T does not match dtype().
  template <typename T>
  T* data() {
    check_type(dtype_of<T>());
    return static_cast<T*>(raw());
  }
  template <typename T>
  const T* data() const {
    check_type(dtype_of<T>());
    return static_cast<const T*>(raw());
  }
  // Values converted to int64 / double, whatever the integer or float dtype.
  std::vector<int64_t> to_int64_vector() const;
  std::vector<double> to_double_vector() const;

  // How many tensors share this one's storage (this one included).
  long storage_use_count() const { return storage_.use_count(); }

  // Same storage, new shape of the same element count.
  Tensor reshaped(Shape shape) const;
  Tensor clone() const;
  std::string description() const;  // "float32 1x3x224x224"

 private:
  void check_type(DType wanted) const;

  DType dtype_ = DType::kUndefined;
  Shape shape_;
  int64_t numel_ = 0;
  std::shared_ptr<std::byte> storage_;
};

template <typename T>
Tensor Tensor::from_vector(Shape shape, const std::vector<T>& values) {
  Tensor t(dtype_of<T>(), std::move(shape));
  if (static_cast<int64_t>(values.size()) != t.numel())
    throw Error(ErrorCode::kRuntime, "Tensor::from_vector: " + std::to_string(values.size()) +
                                         " values for shape " + shape_to_string(t.shape()));
  T* out = t.data<T>();
  for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return t;
}

}  // namespace hetsched
