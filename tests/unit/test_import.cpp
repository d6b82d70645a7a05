// ONNX import: good models load, bad ones fail with one clear line.
#include <unistd.h>

#include <cstring>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "hetsched/session.h"
#include "onnx_model_util.h"

namespace hetsched {
namespace {

using ::testing::HasSubstr;
using namespace hetsched::testing;

class ImportTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = temp_dir(::testing::UnitTest::GetInstance()->current_test_info()->name()); }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string save(const onnx::ModelProto& m, const std::string& name = "model.onnx") {
    auto path = dir_ / name;
    write_model(m, path);
    return path.string();
  }

  // Loads and returns the error; fails the test when loading succeeds.
  Error load_error(const std::string& path, const LoadOptions& opts = {}) {
    try {
      load_model(path, opts);
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "error must be one line: " << e.what();
      return e;
    }
    ADD_FAILURE() << "loading " << path << " succeeded";
    return Error(ErrorCode::kRuntime, "");
  }

  std::filesystem::path dir_;
};

TEST_F(ImportTest, LoadsAndRunsSmallModel) {
  Session s = Session::load(save(relu_add_model()));
  ASSERT_EQ(s.graph().inputs.size(), 1u);
  Tensor x = Tensor::from_vector<float>({2, 3}, {-1, 2, -3, 4, -5, 6});
  TensorMap out = s.run({{"x", x}});
  ASSERT_EQ(out.count("y"), 1u);
  const float* y = out["y"].data<float>();
  std::vector<float> expected = {1, 4, 3, 5, 2, 9};
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(y[i], expected[i]);
}

TEST_F(ImportTest, MissingFile) {
  Error e = load_error((dir_ / "nope.onnx").string());
  EXPECT_EQ(e.code(), ErrorCode::kIo);
  EXPECT_THAT(e.what(), HasSubstr("nope.onnx: no such file"));
}

TEST_F(ImportTest, EmptyFile) {
  std::ofstream((dir_ / "empty.onnx").string()).close();
  Error e = load_error((dir_ / "empty.onnx").string());
  EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
  EXPECT_THAT(e.what(), HasSubstr("empty"));
}

TEST_F(ImportTest, RandomBytes) {
  std::ofstream out((dir_ / "junk.onnx").string(), std::ios::binary);
  for (int i = 0; i < 1000; ++i) out.put(static_cast<char>((i * 7919 + 13) % 251));
  out.close();
  Error e = load_error((dir_ / "junk.onnx").string());
  EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
  EXPECT_THAT(e.what(), HasSubstr("junk.onnx"));
}

TEST_F(ImportTest, Truncated) {
  std::string bytes;
  relu_add_model().SerializeToString(&bytes);
  std::ofstream out((dir_ / "cut.onnx").string(), std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size() / 2));
  out.close();
  Error e = load_error((dir_ / "cut.onnx").string());
  EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
  EXPECT_THAT(e.what(), HasSubstr("cut.onnx"));
}

TEST_F(ImportTest, UnknownOpNamesNodeOpAndOpset) {
  auto m = relu_add_model();
  m.mutable_graph()->mutable_node(0)->set_op_type("FancyOp");
  Error e = load_error(save(m));
  EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  EXPECT_THAT(e.what(), HasSubstr("'relu'"));
  EXPECT_THAT(e.what(), HasSubstr("FancyOp"));
  EXPECT_THAT(e.what(), HasSubstr("opset 17"));
}

TEST_F(ImportTest, UnsupportedOpset) {
  auto m = relu_add_model();
  m.mutable_opset_import(0)->set_version(5);
  Error e = load_error(save(m));
  EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  EXPECT_THAT(e.what(), HasSubstr("opset 5"));
}

TEST_F(ImportTest, MissingInitializer) {
  auto m = relu_add_model();
  m.mutable_graph()->clear_initializer();
  Error e = load_error(save(m));
  EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
  EXPECT_THAT(e.what(), HasSubstr("'bias'"));
  EXPECT_THAT(e.what(), HasSubstr("add"));
}

TEST_F(ImportTest, GraphOutputNothingMakes) {
  auto m = relu_add_model();
  m.mutable_graph()->mutable_output(0)->set_name("nowhere");
  Error e = load_error(save(m));
  EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
  EXPECT_THAT(e.what(), HasSubstr("graph output 'nowhere' is not a graph input, an initializer or any node's output"));
}

TEST_F(ImportTest, Cycle) {
  auto m = relu_add_model();
  // relu reads the add's output: relu -> add -> relu.
  m.mutable_graph()->mutable_node(0)->set_input(0, "y2");
  m.mutable_graph()->mutable_node(1)->set_output(0, "y2");
  *m.mutable_graph()->add_node() = make_node("Identity", {"y2"}, {"y"}, "id");
  Error e = load_error(save(m));
  EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
  EXPECT_THAT(e.what(), HasSubstr("cycle"));
}

TEST_F(ImportTest, UnsortedButAcyclicLoads) {
  auto m = relu_add_model();
  m.mutable_graph()->mutable_node()->SwapElements(0, 1);
  EXPECT_NO_THROW(load_model(save(m)));
}

TEST_F(ImportTest, ShapeMismatch) {
  auto m = relu_add_model();
  m.mutable_graph()->mutable_initializer(0)->CopyFrom(float_tensor("bias", {4}, {1, 2, 3, 4}));
  Error e = load_error(save(m));
  EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
  EXPECT_THAT(e.what(), HasSubstr("shape inference"));
}

TEST_F(ImportTest, NegativeDeclaredDimNamesTheValueAndDimButMinusOneIsUnknown) {
  auto m = relu_add_model();
  auto* dims = m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  dims->mutable_dim(1)->set_dim_value(-3);
  Error e = load_error(save(m));
  EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
  EXPECT_THAT(e.what(), HasSubstr("graph input 'x': dim 1 is -3, expected a size >= 0"));

  dims->mutable_dim(1)->set_dim_value(3);
  dims->mutable_dim(0)->set_dim_value(-1);  // some exporters' "unknown"
  Graph g = load_model(save(m, "minus_one.onnx"));
  EXPECT_EQ(g.values[g.inputs[0]].shape, (Shape{-1, 3}));
}

TEST_F(ImportTest, AttributeTypeMismatch) {
  auto m = relu_add_model();
  auto* n = m.mutable_graph()->mutable_node(0);
  n->set_op_type("LeakyRelu");
  auto* a = n->add_attribute();
  a->set_name("alpha");
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s("big");
  Error e = load_error(save(m));
  EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
  EXPECT_THAT(e.what(), HasSubstr("alpha"));
}

onnx::ModelProto external_bias_model(const std::string& location, int64_t offset) {
  auto m = relu_add_model();
  auto* t = m.mutable_graph()->mutable_initializer(0);
  t->clear_float_data();
  t->set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);
  auto* kv = t->add_external_data();
  kv->set_key("location");
  kv->set_value(location);
  kv = t->add_external_data();
  kv->set_key("offset");
  kv->set_value(std::to_string(offset));
  kv = t->add_external_data();
  kv->set_key("length");
  kv->set_value("12");
  return m;
}

TEST_F(ImportTest, ExternalDataWithOffset) {
  std::vector<float> data = {99, 10, 20, 30};
  std::ofstream out((dir_ / "weights.bin").string(), std::ios::binary);
  out.write(reinterpret_cast<const char*>(data.data()), 16);
  out.close();
  Graph g = load_model(save(external_bias_model("weights.bin", 4)), {.optimize = false});
  const Tensor& bias = *g.values[g.find_value("bias")].initializer;
  EXPECT_EQ(bias.to_double_vector(), std::vector<double>({10, 20, 30}));
}

TEST_F(ImportTest, ExternalDataMissing) {
  Error e = load_error(save(external_bias_model("absent.bin", 0)));
  EXPECT_EQ(e.code(), ErrorCode::kIo);
  EXPECT_THAT(e.what(), HasSubstr("absent.bin"));
}

TEST_F(ImportTest, ExternalDataEscapingFolder) {
  Error e = load_error(save(external_bias_model("../../etc/passwd", 0)));
  EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
  EXPECT_THAT(e.what(), HasSubstr("leaves the model's folder"));
  Error abs = load_error(save(external_bias_model("/etc/passwd", 0)));
  EXPECT_THAT(abs.what(), HasSubstr("absolute"));
}

TEST_F(ImportTest, ExternalDataTooShort) {
  std::ofstream((dir_ / "short.bin").string(), std::ios::binary).write("abcd", 4);
  Error e = load_error(save(external_bias_model("short.bin", 0)));
  EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
  EXPECT_THAT(e.what(), HasSubstr("short.bin"));
}

// ONNX's checker refuses graph outputs without a shape or a type; ONNX
// Runtime loads them, and so do we: shape inference gives both.
TEST_F(ImportTest, OutputsDeclaredWithoutShapeOrTypeGetThemFromInference) {
  for (bool with_type : {true, false}) {
    auto m = relu_add_model();
    onnx::ValueInfoProto& y = *m.mutable_graph()->mutable_output(0);
    if (with_type) y.mutable_type()->mutable_tensor_type()->clear_shape();
    else y.clear_type();
    Graph g = load_model(save(m));
    const Value& out = g.values[g.outputs[0]];
    EXPECT_EQ(out.dtype, DType::kFloat32);
    EXPECT_EQ(out.shape, Shape({2, 3}));
  }
}

TEST_F(ImportTest, FreeDimsFromShapeOverride) {
  auto m = relu_add_model();
  *m.mutable_graph()->mutable_input(0) = tensor_info("x", onnx::TensorProto_DataType_FLOAT, {-1, 3});
  *m.mutable_graph()->mutable_output(0) = tensor_info("y", onnx::TensorProto_DataType_FLOAT, {-1, 3});
  std::string path = save(m);
  Graph free_graph = load_model(path);
  EXPECT_EQ(free_graph.values[free_graph.inputs[0]].shape, Shape({-1, 3}));
  EXPECT_EQ(free_graph.values[free_graph.inputs[0]].dim_params[0], "N");
  LoadOptions opts;
  opts.input_shapes["x"] = {5, 3};
  Graph fixed = load_model(path, opts);
  EXPECT_EQ(fixed.values[fixed.inputs[0]].shape, Shape({5, 3}));
  EXPECT_EQ(fixed.values[fixed.outputs[0]].shape, Shape({5, 3}));

  opts.input_shapes = {{"x", {5, 4}}};
  Error e = load_error(path, opts);
  EXPECT_EQ(e.code(), ErrorCode::kUsage);
  EXPECT_THAT(e.what(), HasSubstr("dim 1 is fixed to 3"));
  opts.input_shapes = {{"nope", {5, 3}}};
  EXPECT_EQ(load_error(path, opts).code(), ErrorCode::kUsage);
}

TEST_F(ImportTest, ParseShapeOverride) {
  auto [name, shape] = parse_shape_override("input=1x3x224x224");
  EXPECT_EQ(name, "input");
  EXPECT_EQ(shape, Shape({1, 3, 224, 224}));
  EXPECT_THROW(parse_shape_override("input"), Error);
  EXPECT_THROW(parse_shape_override("input=1xx3"), Error);
  EXPECT_THROW(parse_shape_override("=1x3"), Error);
  EXPECT_THROW(parse_shape_override("a=1x-3"), Error);
}

TEST_F(ImportTest, WrongInputShapeOrDtype) {
  Session s = Session::load(save(relu_add_model()));
  try {
    s.run({{"x", Tensor(DType::kFloat32, {3, 2})}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidInput);
    EXPECT_THAT(e.what(), HasSubstr("input 'x': expected float32 2x3, got float32 3x2"));
  }
  try {
    s.run({{"x", Tensor(DType::kInt64, {2, 3})}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("got int64 2x3"));
  }
  EXPECT_THROW(s.run({}), Error);
  EXPECT_THROW(s.run({{"x", Tensor(DType::kFloat32, {2, 3})}, {"z", Tensor(DType::kFloat32, {1})}}), Error);
}

TEST_F(ImportTest, CostAnnotations) {
  Graph g = load_model(save(relu_add_model()));
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].cost.flops, 6);
  EXPECT_EQ(g.nodes[0].cost.bytes_read, 24);
  EXPECT_EQ(g.nodes[1].cost.bytes_read, 24 + 12);
  EXPECT_EQ(g.nodes[1].cost.bytes_written, 24);
}

}  // namespace
}  // namespace hetsched
