// Small hand-built ONNX models for import and CLI tests.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace hetsched::testing {

inline onnx::ValueInfoProto tensor_info(const std::string& name, int32_t elem_type, const std::vector<int64_t>& dims) {
  onnx::ValueInfoProto vi;
  vi.set_name(name);
  auto* tt = vi.mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem_type);
  auto* shape = tt->mutable_shape();
  for (int64_t d : dims) {
    if (d < 0) shape->add_dim()->set_dim_param("N");
    else shape->add_dim()->set_dim_value(d);
  }
  return vi;
}

inline onnx::TensorProto float_tensor(const std::string& name, const std::vector<int64_t>& dims,
                                      const std::vector<float>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto_DataType_FLOAT);
  for (int64_t d : dims) t.add_dims(d);
  for (float v : values) t.add_float_data(v);
  return t;
}

// A 1-D int64 constant (a shape, an axis list).
inline onnx::TensorProto int64_tensor(const std::string& name, const std::vector<int64_t>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto_DataType_INT64);
  t.add_dims(static_cast<int64_t>(values.size()));
  for (int64_t v : values) t.add_int64_data(v);
  return t;
}

inline onnx::NodeProto make_node(const std::string& op, const std::vector<std::string>& inputs,
                                 const std::vector<std::string>& outputs, const std::string& name = "") {
  onnx::NodeProto n;
  n.set_op_type(op);
  n.set_name(name.empty() ? op + "_node" : name);
  for (const auto& i : inputs) n.add_input(i);
  for (const auto& o : outputs) n.add_output(o);
  return n;
}

inline onnx::ModelProto make_model(int64_t opset = 17) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("hetsched-tests");
  auto* imp = m.add_opset_import();
  imp->set_domain("");
  imp->set_version(opset);
  m.mutable_graph()->set_name("test");
  return m;
}

// x[2,3] -> Relu -> Add(bias) -> y[2,3]
inline onnx::ModelProto relu_add_model() {
  onnx::ModelProto m = make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto_DataType_FLOAT, {2, 3});
  *g->add_output() = tensor_info("y", onnx::TensorProto_DataType_FLOAT, {2, 3});
  *g->add_initializer() = float_tensor("bias", {3}, {1, 2, 3});
  *g->add_node() = make_node("Relu", {"x"}, {"r"}, "relu");
  *g->add_node() = make_node("Add", {"r", "bias"}, {"y"}, "add");
  return m;
}

inline void write_model(const onnx::ModelProto& m, const std::filesystem::path& path) {
  std::ofstream out(path, std::ios::binary);
  m.SerializeToOstream(&out);
}

// A fresh empty folder under the system temp dir.
inline std::filesystem::path temp_dir(const std::string& tag) {
  auto dir = std::filesystem::temp_directory_path() /
             ("hetsched_test_" + tag + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace hetsched::testing
