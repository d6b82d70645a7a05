#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "graph/tensor_proto.h"
#include "hetsched/tensor_io.h"

namespace hetsched {

Tensor read_tensor_pb(const std::string& path, std::string* name, DType expected) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kIo, fmt::format("{}: cannot open for reading", path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  onnx::TensorProto proto;
  if (!proto.ParseFromString(buffer.str()))
    throw Error(ErrorCode::kInvalidInput, fmt::format("{}: not a serialized onnx.TensorProto", path));
  if (name) *name = proto.name();
  if (expected == DType::kBFloat16 && proto.data_type() == onnx::TensorProto_DataType_UINT16)
    proto.set_data_type(onnx::TensorProto_DataType_BFLOAT16);
  std::filesystem::path p(path);
  Tensor t = tensor_from_proto(proto, p.parent_path(), path);
  return t;
}

void write_tensor_pb(const std::string& path, const Tensor& tensor, const std::string& name) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw Error(ErrorCode::kIo, fmt::format("{}: cannot open for writing", path));
  if (!tensor_to_proto(tensor, name).SerializeToOstream(&out))
    throw Error(ErrorCode::kIo, fmt::format("{}: write failed", path));
}

Tensor read_tensor_file(const std::string& path) {
  auto ext = std::filesystem::path(path).extension().string();
  if (ext == ".npy") return read_npy(path);
  if (ext == ".pb") return read_tensor_pb(path);
  throw Error(ErrorCode::kUsage, fmt::format("{}: unknown tensor file type '{}' (expected .npy or .pb)", path, ext));
}

}  // namespace hetsched
