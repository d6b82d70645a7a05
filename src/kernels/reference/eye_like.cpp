// EyeLike: a 2-D tensor shaped like the input with ones on the k-th diagonal;
// dtype from the `dtype` attribute (an ONNX TensorProto type), else the input's.
#include <cstring>

#include <fmt/format.h>

#include "kernels/reference/common.h"

namespace hetsched::kernels {
namespace {

// ONNX TensorProto.DataType -> DType; kUndefined when not supported.
DType dtype_from_onnx(int64_t t) {
  switch (t) {
    case 1: return DType::kFloat32;
    case 2: return DType::kUInt8;
    case 3: return DType::kInt8;
    case 5: return DType::kInt16;
    case 6: return DType::kInt32;
    case 7: return DType::kInt64;
    case 9: return DType::kBool;
    case 10: return DType::kFloat16;
    case 11: return DType::kFloat64;
    default: return DType::kUndefined;
  }
}

void check_eye_like(const Node& node, const Graph& graph) {
  if (node.input(0) == kNoValue) throw_invalid(node, "input 'input' is missing");
  if (node.has_attr("dtype") && dtype_from_onnx(node.attr_int("dtype", 0)) == DType::kUndefined)
    throw_unsupported(node, fmt::format("dtype {} is not supported", node.attr_int("dtype", 0)));
  const Value& x = graph.values[node.input(0)];
  if (x.has_shape && x.shape.size() != 2)
    throw_invalid(node, fmt::format("input must be 2-D, got {}", shape_to_string(x.shape)));
}

std::vector<Tensor> compute_eye_like(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = required_input(node, inputs, 0);
  if (x.rank() != 2) throw_runtime(node, fmt::format("input must be 2-D, got {}", shape_to_string(x.shape())));
  DType dtype = node.has_attr("dtype") ? dtype_from_onnx(node.attr_int("dtype", 0)) : x.dtype();
  if (dtype == DType::kUndefined)
    throw_unsupported(node, fmt::format("dtype {} is not supported", node.attr_int("dtype", 0)));
  std::vector<std::byte> one(dtype_size(dtype));
  if (dtype == DType::kFloat16) {
    uint16_t bits = 0x3C00;
    std::memcpy(one.data(), &bits, 2);
  } else {
    dispatch_all(node, dtype, [&](auto tag) {
      using T = decltype(tag);
      T v = static_cast<T>(1);
      std::memcpy(one.data(), &v, sizeof(T));
    });
  }
  int64_t rows = x.dim(0), cols = x.dim(1), k = node.attr_int("k", 0);
  Tensor out(dtype, x.shape());
  auto* dst = static_cast<std::byte*>(out.raw());
  for (int64_t i = 0; i < rows; ++i) {
    if (k >= cols - i || k < -i) continue;  // column i + k outside [0, cols)
    std::memcpy(dst + static_cast<size_t>(i * cols + i + k) * one.size(), one.data(), one.size());
  }
  return {out};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("EyeLike", check_eye_like, compute_eye_like);

}  // namespace hetsched::kernels
