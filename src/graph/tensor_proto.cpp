#include "graph/tensor_proto.h"

#include <cstring>
#include <fstream>
#include <limits>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace hetsched {

namespace fs = std::filesystem;
using onnx::TensorProto_DataType;

DType dtype_from_onnx(int32_t onnx_type) {
  switch (onnx_type) {
    case onnx::TensorProto_DataType_FLOAT: return DType::kFloat32;
    case onnx::TensorProto_DataType_DOUBLE: return DType::kFloat64;
    case onnx::TensorProto_DataType_FLOAT16: return DType::kFloat16;
    case onnx::TensorProto_DataType_INT8: return DType::kInt8;
    case onnx::TensorProto_DataType_UINT8: return DType::kUInt8;
    case onnx::TensorProto_DataType_INT16: return DType::kInt16;
    case onnx::TensorProto_DataType_INT32: return DType::kInt32;
    case onnx::TensorProto_DataType_INT64: return DType::kInt64;
    case onnx::TensorProto_DataType_BOOL: return DType::kBool;
    case onnx::TensorProto_DataType_BFLOAT16: return DType::kBFloat16;
    case onnx::TensorProto_DataType_UINT16: return DType::kUInt16;
    case onnx::TensorProto_DataType_UINT32: return DType::kUInt32;
    case onnx::TensorProto_DataType_UINT64: return DType::kUInt64;
    default: return DType::kUndefined;
  }
}

int32_t dtype_to_onnx(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return onnx::TensorProto_DataType_FLOAT;
    case DType::kFloat64: return onnx::TensorProto_DataType_DOUBLE;
    case DType::kFloat16: return onnx::TensorProto_DataType_FLOAT16;
    case DType::kInt8: return onnx::TensorProto_DataType_INT8;
    case DType::kUInt8: return onnx::TensorProto_DataType_UINT8;
    case DType::kInt16: return onnx::TensorProto_DataType_INT16;
    case DType::kInt32: return onnx::TensorProto_DataType_INT32;
    case DType::kInt64: return onnx::TensorProto_DataType_INT64;
    case DType::kBool: return onnx::TensorProto_DataType_BOOL;
    case DType::kBFloat16: return onnx::TensorProto_DataType_BFLOAT16;
    case DType::kUInt16: return onnx::TensorProto_DataType_UINT16;
    case DType::kUInt32: return onnx::TensorProto_DataType_UINT32;
    case DType::kUInt64: return onnx::TensorProto_DataType_UINT64;
    case DType::kUndefined: break;
  }
  return onnx::TensorProto_DataType_UNDEFINED;
}

std::string onnx_dtype_name(int32_t onnx_type) {
  if (onnx::TensorProto_DataType_IsValid(onnx_type)) {
    std::string n = onnx::TensorProto_DataType_Name(static_cast<TensorProto_DataType>(onnx_type));
    for (char& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return n;
  }
  return "type#" + std::to_string(onnx_type);
}

namespace {

std::string read_external(const onnx::TensorProto& proto, const fs::path& model_dir, const std::string& context,
                          size_t expected_bytes) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : proto.external_data()) {
    try {
      if (kv.key() == "location") location = kv.value();
      else if (kv.key() == "offset") offset = std::stoll(kv.value());
      else if (kv.key() == "length") length = std::stoll(kv.value());
    } catch (const std::exception&) {
      throw Error(ErrorCode::kInvalidModel,
                  fmt::format("{}: external data field '{}' is not a number: '{}'", context, kv.key(), kv.value()));
    }
  }
  if (location.empty())
    throw Error(ErrorCode::kInvalidModel, context + ": external data has no 'location'");
  if (offset < 0 || length < -1)
    throw Error(ErrorCode::kInvalidModel, context + ": external data offset/length is negative");
  fs::path rel(location);
  if (rel.is_absolute())
    throw Error(ErrorCode::kInvalidModel,
                fmt::format("{}: external data location '{}' is absolute; it must be relative to the model's folder",
                            context, location));
  fs::path base = fs::weakly_canonical(model_dir.empty() ? fs::current_path() : model_dir);
  fs::path full = fs::weakly_canonical(base / rel);
  auto [base_end, full_it] = std::mismatch(base.begin(), base.end(), full.begin(), full.end());
  if (base_end != base.end())
    throw Error(ErrorCode::kInvalidModel,
                fmt::format("{}: external data location '{}' leaves the model's folder", context, location));
  // A folder opens like a file but its size means nothing (and a device or
  // a FIFO may never end): only regular files hold external data.
  std::error_code ec;
  if (fs::exists(full, ec) && !fs::is_regular_file(full, ec))
    throw Error(ErrorCode::kInvalidModel,
                fmt::format("{}: external data location '{}' is not a regular file", context, location));
  std::ifstream in(full, std::ios::binary);
  if (!in)
    throw Error(ErrorCode::kIo, fmt::format("{}: external data file '{}' cannot be opened", context, location));
  in.seekg(0, std::ios::end);
  int64_t file_size = static_cast<int64_t>(in.tellg());
  int64_t want = length >= 0 ? length : static_cast<int64_t>(expected_bytes);
  if (length >= 0 && static_cast<size_t>(length) != expected_bytes)
    throw Error(ErrorCode::kInvalidModel, fmt::format("{}: external data length {} does not match the {} bytes its "
                                                      "shape and dtype need",
                                                      context, length, expected_bytes));
  if (file_size < 0 || want < 0 || offset > file_size || want > file_size - offset)
    throw Error(ErrorCode::kInvalidModel,
                fmt::format("{}: external data '{}' holds {} bytes, but offset {} + length {} are needed", context,
                            location, file_size, offset, want));
  std::string data(static_cast<size_t>(want), '\0');
  in.seekg(offset);
  in.read(data.data(), want);
  if (!in) throw Error(ErrorCode::kIo, fmt::format("{}: cannot read external data '{}'", context, location));
  return data;
}

// The tensor's element count and size in bytes; kInvalidModel naming
// `context` for a negative dim or a size that does not fit in memory's
// address space. Checked before anything is allocated: dims may claim any
// size, the data's own size is what bounds it.
std::pair<int64_t, size_t> checked_size(const google::protobuf::RepeatedField<int64_t>& dims, DType dtype,
                                        const std::string& context) {
  int64_t numel = 1;
  for (int64_t d : dims) {
    if (d < 0) throw Error(ErrorCode::kInvalidModel, fmt::format("{}: negative dim {}", context, d));
    if (d != 0 && numel > std::numeric_limits<int64_t>::max() / d)
      throw Error(ErrorCode::kInvalidModel, fmt::format("{}: shape {} is too large", context, fmt::join(dims, "x")));
    numel *= d;
  }
  size_t elem = dtype_size(dtype);
  if (elem != 0 && static_cast<uint64_t>(numel) > std::numeric_limits<size_t>::max() / 2 / elem)
    throw Error(ErrorCode::kInvalidModel, fmt::format("{}: shape {} is too large", context, fmt::join(dims, "x")));
  return {numel, static_cast<size_t>(numel) * elem};
}

// How many values the typed field for `dtype` holds, and its name.
std::pair<int64_t, const char*> typed_field(const onnx::TensorProto& proto, DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return {proto.float_data_size(), "float_data"};
    case DType::kFloat64: return {proto.double_data_size(), "double_data"};
    case DType::kInt64: return {proto.int64_data_size(), "int64_data"};
    case DType::kUInt32:
    case DType::kUInt64: return {proto.uint64_data_size(), "uint64_data"};
    default: return {proto.int32_data_size(), "int32_data"};
  }
}

struct DataSize {
  DType dtype;
  int64_t numel;
  size_t bytes;
};

// The checks of tensor_from_proto that need no allocation: a supported
// dtype, dims that fit, and data held inline (raw_data or the typed field)
// of exactly the size they need.
DataSize checked_data_size(const onnx::TensorProto& proto, const std::string& context) {
  DType dtype = dtype_from_onnx(proto.data_type());
  if (dtype == DType::kUndefined)
    throw Error(ErrorCode::kUnsupported,
                fmt::format("{}: dtype {} is not supported", context, onnx_dtype_name(proto.data_type())));
  if (proto.has_segment())
    throw Error(ErrorCode::kUnsupported, context + ": segmented tensors are not supported");
  auto [numel, bytes] = checked_size(proto.dims(), dtype, context);
  if (proto.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) return {dtype, numel, bytes};
  Shape shape(proto.dims().begin(), proto.dims().end());
  if (proto.has_raw_data()) {
    if (proto.raw_data().size() != bytes)
      throw Error(ErrorCode::kInvalidModel, fmt::format("{}: raw_data holds {} bytes, shape {} of {} needs {}",
                                                        context, proto.raw_data().size(), shape_to_string(shape),
                                                        dtype_name(dtype), bytes));
    return {dtype, numel, bytes};
  }
  auto [count, field_name] = typed_field(proto, dtype);
  if (count != numel)
    throw Error(ErrorCode::kInvalidModel, fmt::format("{}: {} holds {} values, shape {} needs {}", context, field_name,
                                                      count, shape_to_string(shape), numel));
  return {dtype, numel, bytes};
}

template <typename T, typename Field>
void copy_typed(Tensor& t, const Field& field) {
  T* out = static_cast<T*>(t.raw());
  for (int i = 0; i < field.size(); ++i) out[i] = static_cast<T>(field.Get(i));
}

}  // namespace

void check_tensor_data(const onnx::TensorProto& proto, const std::string& context) {
  checked_data_size(proto, context);
}

Tensor tensor_from_proto(const onnx::TensorProto& proto, const fs::path& model_dir, const std::string& context) {
  auto [dtype, numel, bytes] = checked_data_size(proto, context);
  Shape shape(proto.dims().begin(), proto.dims().end());
  if (proto.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) {
    std::string data = read_external(proto, model_dir, context, bytes);
    Tensor t(dtype, shape);
    std::memcpy(t.raw(), data.data(), bytes);
    return t;
  }
  Tensor t(dtype, shape);
  if (proto.has_raw_data()) {
    std::memcpy(t.raw(), proto.raw_data().data(), bytes);
    return t;
  }
  switch (dtype) {
    case DType::kFloat32: copy_typed<float>(t, proto.float_data()); break;
    case DType::kFloat64: copy_typed<double>(t, proto.double_data()); break;
    case DType::kInt64: copy_typed<int64_t>(t, proto.int64_data()); break;
    case DType::kInt32: copy_typed<int32_t>(t, proto.int32_data()); break;
    case DType::kInt16: copy_typed<int16_t>(t, proto.int32_data()); break;
    case DType::kInt8: copy_typed<int8_t>(t, proto.int32_data()); break;
    case DType::kUInt8: copy_typed<uint8_t>(t, proto.int32_data()); break;
    case DType::kBool: copy_typed<bool>(t, proto.int32_data()); break;
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kUInt16: copy_typed<uint16_t>(t, proto.int32_data()); break;
    case DType::kUInt32: copy_typed<uint32_t>(t, proto.uint64_data()); break;
    case DType::kUInt64: copy_typed<uint64_t>(t, proto.uint64_data()); break;
    case DType::kUndefined: break;
  }
  return t;
}

void inline_external_data(onnx::TensorProto& proto, const fs::path& model_dir, const std::string& context) {
  if (proto.data_location() != onnx::TensorProto_DataLocation_EXTERNAL) return;
  DType dtype = dtype_from_onnx(proto.data_type());
  if (dtype == DType::kUndefined)
    throw Error(ErrorCode::kUnsupported,
                fmt::format("{}: dtype {} is not supported", context, onnx_dtype_name(proto.data_type())));
  std::string data = read_external(proto, model_dir, context, checked_size(proto.dims(), dtype, context).second);
  proto.set_raw_data(std::move(data));
  proto.clear_external_data();
  proto.set_data_location(onnx::TensorProto_DataLocation_DEFAULT);
}

onnx::TensorProto tensor_to_proto(const Tensor& tensor, const std::string& name) {
  onnx::TensorProto proto;
  proto.set_name(name);
  proto.set_data_type(dtype_to_onnx(tensor.dtype()));
  for (int64_t d : tensor.shape()) proto.add_dims(d);
  proto.set_raw_data(std::string(static_cast<const char*>(tensor.raw()), tensor.nbytes()));
  return proto;
}

}  // namespace hetsched
