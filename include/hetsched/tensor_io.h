// Reading and writing tensors as files: NumPy .npy and ONNX TensorProto .pb.
#pragma once

#include <string>

#include "hetsched/tensor.h"

namespace hetsched {

// .npy (format 1.x/2.x, little-endian, C order; dtypes f4 f8 f2 i1 i2 i4 i8
// u1 b1). Errors name the file and what was expected.
Tensor read_npy(const std::string& path);
void write_npy(const std::string& path, const Tensor& tensor);

// A serialized onnx.TensorProto, as in the ONNX test data sets. `name`
// receives the tensor's name when not null. With `expected` bfloat16, a
// uint16 tensor is read as the bfloat16 bits it holds: ONNX's test data
// (before 1.13) store bfloat16 so, numpy having no bfloat16.
Tensor read_tensor_pb(const std::string& path, std::string* name = nullptr, DType expected = DType::kUndefined);
void write_tensor_pb(const std::string& path, const Tensor& tensor, const std::string& name);

// By extension: .npy or .pb.
Tensor read_tensor_file(const std::string& path);

}  // namespace hetsched
