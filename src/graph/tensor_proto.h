// Conversion between ONNX TensorProto and hetsched::Tensor (internal: the only
// place besides the importer and the zoo that sees protobuf types).
#pragma once

#include <filesystem>
#include <string>

#include <onnx/onnx_pb.h>

#include "hetsched/tensor.h"

namespace hetsched {

// DType of an ONNX TensorProto_DataType; kUndefined for types the engine does
// not hold (string, complex, bfloat16, uint16/32/64).
DType dtype_from_onnx(int32_t onnx_type);
int32_t dtype_to_onnx(DType dtype);
// "string", "bfloat16"... for messages.
std::string onnx_dtype_name(int32_t onnx_type);

// Reads a TensorProto's data: raw_data, the typed fields, or external data
// (`location` relative to `model_dir`; a path leaving that folder, a missing
// file or a short read is an error). `context` names the tensor in errors,
// e.g. "model.onnx: initializer 'conv1.weight'".
Tensor tensor_from_proto(const onnx::TensorProto& proto, const std::filesystem::path& model_dir,
                         const std::string& context);
// The checks of tensor_from_proto that read nothing: a supported dtype, dims
// that fit, and inline data (raw_data or the typed field) of the size they
// need. ONNX's checker and shape inference read initializers and Constant
// values without checking their size, so the importer runs this first.
void check_tensor_data(const onnx::TensorProto& proto, const std::string& context);
// Replaces a tensor's external data by its bytes (raw_data), with the same
// checks as tensor_from_proto; does nothing for a tensor held inline.
void inline_external_data(onnx::TensorProto& proto, const std::filesystem::path& model_dir,
                          const std::string& context);

onnx::TensorProto tensor_to_proto(const Tensor& tensor, const std::string& name);

}  // namespace hetsched
