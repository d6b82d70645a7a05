// The Open Inference Protocol's tensors (see serve/oip.h).
#include "serve/oip.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "hetsched/error.h"

namespace hetsched::serve {

namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::string& what) { throw RequestError(400, what); }

DType dtype_of_datatype(const std::string& datatype) {
  for (DType d : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kInt8, DType::kUInt8, DType::kInt16,
                  DType::kInt32, DType::kInt64, DType::kUInt16, DType::kUInt32, DType::kUInt64, DType::kBool})
    if (datatype == oip_datatype(d)) return d;
  return DType::kUndefined;
}

// The leaves of a nested or flat data array, in row-major order; stops
// (returns false) as soon as there are more than `limit`.
bool flatten(const json& data, std::vector<const json*>& leaves, size_t limit) {
  if (!data.is_array()) {
    if (leaves.size() >= limit) return false;
    leaves.push_back(&data);
    return true;
  }
  for (const json& item : data)
    if (!flatten(item, leaves, limit)) return false;
  return true;
}

template <typename T>
void fill_integers(Tensor& t, const std::vector<const json*>& leaves, const std::string& input) {
  T* out = t.data<T>();
  for (size_t i = 0; i < leaves.size(); ++i) {
    const json& v = *leaves[i];
    if (!v.is_number_integer())
      bad(fmt::format("input '{}': element {} is {}, expected an integer for {}", input, i, v.type_name(),
                      oip_datatype(t.dtype())));
    bool fits = v.is_number_unsigned()
                    ? v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max())
                    : v.get<int64_t>() >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
                          v.get<int64_t>() <= static_cast<int64_t>(std::numeric_limits<T>::max());
    if (!fits) bad(fmt::format("input '{}': element {} ({}) is out of range for {}", input, i, v.dump(),
                               oip_datatype(t.dtype())));
    out[i] = v.is_number_unsigned() ? static_cast<T>(v.get<uint64_t>()) : static_cast<T>(v.get<int64_t>());
  }
}

template <typename T>
void fill_floats(Tensor& t, const std::vector<const json*>& leaves, const std::string& input) {
  T* out = t.data<T>();
  for (size_t i = 0; i < leaves.size(); ++i) {
    const json& v = *leaves[i];
    if (!v.is_number())
      bad(fmt::format("input '{}': element {} is {}, expected a number", input, i, v.type_name()));
    out[i] = v.get<T>();
  }
}

void fill_from_json(Tensor& t, const std::vector<const json*>& leaves, const std::string& input) {
  switch (t.dtype()) {
    case DType::kFloat32: fill_floats<float>(t, leaves, input); break;
    case DType::kFloat64: fill_floats<double>(t, leaves, input); break;
    case DType::kInt8: fill_integers<int8_t>(t, leaves, input); break;
    case DType::kUInt8: fill_integers<uint8_t>(t, leaves, input); break;
    case DType::kInt16: fill_integers<int16_t>(t, leaves, input); break;
    case DType::kInt32: fill_integers<int32_t>(t, leaves, input); break;
    case DType::kInt64: fill_integers<int64_t>(t, leaves, input); break;
    case DType::kUInt16: fill_integers<uint16_t>(t, leaves, input); break;
    case DType::kUInt32: fill_integers<uint32_t>(t, leaves, input); break;
    case DType::kUInt64: fill_integers<uint64_t>(t, leaves, input); break;
    case DType::kBool:
      for (size_t i = 0; i < leaves.size(); ++i) {
        if (!leaves[i]->is_boolean())
          bad(fmt::format("input '{}': element {} is {}, expected true or false for BOOL", input, i,
                          leaves[i]->type_name()));
        t.data<bool>()[i] = leaves[i]->get<bool>();
      }
      break;
    default:
      bad(fmt::format("input '{}': {} data cannot be sent as JSON; use the binary tensor data extension", input,
                      oip_datatype(t.dtype())));
  }
}

template <typename T>
void append_values(json& data, const Tensor& t) {
  const T* p = t.data<T>();
  for (int64_t i = 0; i < t.numel(); ++i) data.push_back(p[i]);
}

json tensor_metadata(const Value& v) {
  json shape = json::array();
  for (int64_t d : v.shape) shape.push_back(d < 0 ? -1 : d);
  DType dtype = v.dtype == DType::kUndefined ? DType::kFloat32 : v.dtype;
  return {{"name", v.name}, {"datatype", oip_datatype(dtype)}, {"shape", shape}};
}

}  // namespace

const char* oip_datatype(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return "FP32";
    case DType::kFloat64: return "FP64";
    case DType::kFloat16: return "FP16";
    case DType::kInt8: return "INT8";
    case DType::kUInt8: return "UINT8";
    case DType::kInt16: return "INT16";
    case DType::kInt32: return "INT32";
    case DType::kInt64: return "INT64";
    case DType::kUInt16: return "UINT16";
    case DType::kUInt32: return "UINT32";
    case DType::kUInt64: return "UINT64";
    case DType::kBool: return "BOOL";
    default: return "UNDEFINED";
  }
}

int json_depth(std::string_view text) {
  int depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

InferRequest decode_infer_request(const json& header, std::string_view tail, const Graph& graph) {
  if (!header.is_object()) bad("the request body must be a JSON object");
  InferRequest request;
  if (header.contains("id")) {
    if (!header["id"].is_string()) bad("'id' must be a string");
    request.id = header["id"].get<std::string>();
  }
  if (!header.contains("inputs") || !header["inputs"].is_array()) bad("the request needs an 'inputs' list");
  size_t offset = 0;  // into tail
  for (size_t k = 0; k < header["inputs"].size(); ++k) {
    const json& in = header["inputs"][k];
    if (!in.is_object() || !in.contains("name") || !in["name"].is_string())
      bad(fmt::format("inputs[{}]: expected an object with a 'name'", k));
    std::string name = in["name"].get<std::string>();
    ValueId id = graph.find_value(name);
    if (id == kNoValue || !graph.is_graph_input(id)) bad(fmt::format("input '{}': the model has no such input", name));
    if (request.inputs.count(name)) bad(fmt::format("input '{}': given twice", name));
    const Value& v = graph.values[id];
    DType want = v.dtype == DType::kUndefined ? DType::kFloat32 : v.dtype;
    if (!in.contains("datatype") || !in["datatype"].is_string())
      bad(fmt::format("input '{}': needs a 'datatype' ({})", name, oip_datatype(want)));
    std::string datatype = in["datatype"].get<std::string>();
    if (dtype_of_datatype(datatype) != want)
      bad(fmt::format("input '{}': datatype {}, expected {}", name, datatype, oip_datatype(want)));
    if (!in.contains("shape") || !in["shape"].is_array())
      bad(fmt::format("input '{}': needs a 'shape' list", name));
    Shape shape;
    for (const json& d : in["shape"]) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0)
        bad(fmt::format("input '{}': shape {} must hold non-negative integers", name, in["shape"].dump()));
      shape.push_back(d.get<int64_t>());
    }
    bool shape_ok = !v.has_shape || v.shape.size() == shape.size();
    for (size_t d = 0; shape_ok && v.has_shape && d < shape.size(); ++d)
      if (v.shape[d] >= 0 && v.shape[d] != shape[d]) shape_ok = false;
    if (!shape_ok)
      bad(fmt::format("input '{}': shape {}, expected {}", name, in["shape"].dump(),
                      tensor_metadata(v)["shape"].dump()));
    int64_t numel = 0;
    try {
      numel = shape_numel(shape);
    } catch (const Error&) {
      bad(fmt::format("input '{}': shape {} has too many elements", name, in["shape"].dump()));
    }
    const json* parameters = in.contains("parameters") ? &in["parameters"] : nullptr;
    if (parameters && parameters->contains("binary_data_size")) {
      const json& size = (*parameters)["binary_data_size"];
      if (in.contains("data")) bad(fmt::format("input '{}': has both 'data' and binary_data_size", name));
      if (!size.is_number_unsigned() && !(size.is_number_integer() && size.get<int64_t>() >= 0))
        bad(fmt::format("input '{}': binary_data_size must be a byte count", name));
      uint64_t bytes = size.get<uint64_t>();
      uint64_t expected = static_cast<uint64_t>(numel) * dtype_size(want);
      if (bytes != expected)
        bad(fmt::format("input '{}': binary_data_size {} bytes, expected {} ({} {} elements of shape {})", name,
                        bytes, expected, numel, datatype, in["shape"].dump()));
      if (bytes > tail.size() - offset)
        bad(fmt::format("input '{}': binary_data_size {} bytes, but only {} bytes follow the JSON header", name,
                        bytes, tail.size() - offset));
      Tensor t(want, shape);
      if (bytes) std::memcpy(t.raw(), tail.data() + offset, bytes);
      offset += bytes;
      request.inputs.emplace(name, std::move(t));
      continue;
    }
    if (!in.contains("data")) bad(fmt::format("input '{}': needs 'data'", name));
    std::vector<const json*> leaves;
    bool within = flatten(in["data"], leaves, static_cast<size_t>(numel));
    if (!within || static_cast<int64_t>(leaves.size()) != numel)
      bad(fmt::format("input '{}': {} {} data values, expected {} for shape {}", name, within ? "" : "more than",
                      within ? leaves.size() : static_cast<size_t>(numel), numel, in["shape"].dump()));
    Tensor t(want, shape);
    fill_from_json(t, leaves, name);
    request.inputs.emplace(name, std::move(t));
  }
  if (offset != tail.size())
    bad(fmt::format("{} bytes follow the JSON header, but the inputs' binary_data_size add up to {}", tail.size(),
                    offset));
  for (ValueId id : graph.inputs)
    if (!request.inputs.count(graph.values[id].name))
      bad(fmt::format("input '{}': missing ({})", graph.values[id].name,
                      tensor_metadata(graph.values[id]).dump()));

  bool all_binary = false;
  if (header.contains("parameters") && header["parameters"].is_object() &&
      header["parameters"].contains("binary_data_output"))
    all_binary = header["parameters"]["binary_data_output"] == true;
  if (header.contains("outputs")) {
    if (!header["outputs"].is_array()) bad("'outputs' must be a list");
    for (const json& out : header["outputs"]) {
      if (!out.is_object() || !out.contains("name") || !out["name"].is_string())
        bad("outputs: each needs a 'name'");
      std::string name = out["name"].get<std::string>();
      bool known = std::any_of(graph.outputs.begin(), graph.outputs.end(),
                               [&](ValueId id) { return graph.values[id].name == name; });
      if (!known) bad(fmt::format("output '{}': the model has no such output", name));
      bool binary = all_binary;
      if (out.contains("parameters") && out["parameters"].is_object() && out["parameters"].contains("binary_data"))
        binary = out["parameters"]["binary_data"] == true;
      request.outputs.push_back(name);
      request.binary.push_back(binary);
    }
  }
  if (request.outputs.empty())
    for (ValueId id : graph.outputs) {
      request.outputs.push_back(graph.values[id].name);
      request.binary.push_back(all_binary);
    }
  return request;
}

InferResponse encode_infer_response(const std::string& model_name, const InferRequest& request,
                                    const TensorMap& outputs) {
  json header = {{"model_name", model_name}, {"model_version", "1"}};
  if (!request.id.empty()) header["id"] = request.id;
  InferResponse response;
  json list = json::array();
  for (size_t k = 0; k < request.outputs.size(); ++k) {
    const Tensor& t = outputs.at(request.outputs[k]);
    json out = {{"name", request.outputs[k]}, {"datatype", oip_datatype(t.dtype())}, {"shape", t.shape()}};
    if (request.binary[k] || t.dtype() == DType::kFloat16) {
      out["parameters"] = {{"binary_data_size", t.nbytes()}};
      response.tail.append(static_cast<const char*>(t.raw()), t.nbytes());
    } else {
      json data = json::array();
      switch (t.dtype()) {
        case DType::kFloat32: append_values<float>(data, t); break;
        case DType::kFloat64: append_values<double>(data, t); break;
        case DType::kInt8: append_values<int8_t>(data, t); break;
        case DType::kUInt8: append_values<uint8_t>(data, t); break;
        case DType::kInt16: append_values<int16_t>(data, t); break;
        case DType::kInt32: append_values<int32_t>(data, t); break;
        case DType::kInt64: append_values<int64_t>(data, t); break;
        case DType::kUInt16: append_values<uint16_t>(data, t); break;
        case DType::kUInt32: append_values<uint32_t>(data, t); break;
        case DType::kUInt64: append_values<uint64_t>(data, t); break;
        case DType::kBool: append_values<bool>(data, t); break;
        default:
          throw Error(ErrorCode::kUnsupported,
                      fmt::format("output '{}': cannot encode {}", request.outputs[k], dtype_name(t.dtype())));
      }
      out["data"] = std::move(data);
    }
    list.push_back(std::move(out));
  }
  header["outputs"] = std::move(list);
  response.header = header.dump();
  return response;
}

json model_config(const std::string& model_name, const Graph& graph, int max_batch, double max_delay_ms) {
  auto tensors = [&](const std::vector<ValueId>& ids) {
    json out = json::array();
    for (ValueId id : ids) {
      const Value& v = graph.values[id];
      json dims = json::array();
      for (size_t d = max_batch > 0 ? 1 : 0; d < v.shape.size(); ++d) dims.push_back(v.shape[d] < 0 ? -1 : v.shape[d]);
      DType dtype = v.dtype == DType::kUndefined ? DType::kFloat32 : v.dtype;
      out.push_back({{"name", v.name}, {"data_type", std::string("TYPE_") + oip_datatype(dtype)}, {"dims", dims}});
    }
    return out;
  };
  json config = {{"name", model_name},
                 {"platform", "onnx_onnxv1"},
                 {"backend", "hetsched"},
                 {"max_batch_size", max_batch},
                 {"input", tensors(graph.inputs)},
                 {"output", tensors(graph.outputs)}};
  if (max_batch > 0)
    config["dynamic_batching"] = {{"max_queue_delay_microseconds", static_cast<int64_t>(max_delay_ms * 1000)}};
  return config;
}

json model_metadata(const std::string& model_name, const Graph& graph) {
  json inputs = json::array(), outputs = json::array();
  for (ValueId id : graph.inputs) inputs.push_back(tensor_metadata(graph.values[id]));
  for (ValueId id : graph.outputs) outputs.push_back(tensor_metadata(graph.values[id]));
  return {
      {"name", model_name}, {"versions", {"1"}}, {"platform", "onnx_onnxv1"}, {"inputs", inputs}, {"outputs", outputs}};
}

}  // namespace hetsched::serve
