// float16 and bfloat16 models: computed in float32 (graph/half_as_float.h),
// explicit casts still rounding, inputs and outputs keeping their types.
#include <algorithm>
#include <cmath>
#include <random>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/half.h"
#include "graph/half_as_float.h"
#include "hetsched/session.h"
#include "onnx_model_util.h"

namespace hetsched {
namespace {

using ::testing::HasSubstr;
using namespace hetsched::testing;

onnx::TensorProto half_tensor(const std::string& name, int32_t elem_type, const std::vector<float>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(elem_type);
  t.add_dims(static_cast<int64_t>(values.size()));
  for (float v : values)
    t.add_int32_data(elem_type == onnx::TensorProto_DataType_FLOAT16 ? float16_of(v).bits : bfloat16_of(v).bits);
  return t;
}

class HalfFloatTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = temp_dir(::testing::UnitTest::GetInstance()->current_test_info()->name()); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string save(const onnx::ModelProto& m) {
    auto path = dir_ / "model.onnx";
    write_model(m, path);
    return path.string();
  }
  std::filesystem::path dir_;
};

TEST(HalfConversions, RoundToNearestEvenAndKeepSpecials) {
  EXPECT_EQ(float16_of(1.0f).bits, 0x3C00);
  EXPECT_EQ(float16_of(1.0f + 1.0f / 2048).bits, 0x3C00);  // a tie: to even
  EXPECT_EQ(float16_of(1.0f + 3.0f / 2048).bits, 0x3C02);  // a tie: to even, upwards
  EXPECT_EQ(float16_of(65520.0f).bits, 0x7C00);             // past the largest: infinity
  EXPECT_EQ(to_float(Float16{0x0001}), 1.0f / (1 << 24));  // the smallest subnormal
  EXPECT_EQ(bfloat16_of(1.0f + 1.0f / 256).bits, 0x3F80);  // a tie: to even
  EXPECT_EQ(bfloat16_of(1.0f + 3.0f / 256).bits, 0x3F82);
  EXPECT_EQ(bfloat16_of(1.0f + 1.0f / 128 + 1.0f / 1024).bits, 0x3F81);  // nearest, not truncated
  EXPECT_TRUE(std::isnan(to_float(bfloat16_of(std::nanf("")))));
  EXPECT_EQ(to_float(BFloat16{0x4049}), 3.140625f);
}

// The array conversions (F16C where the CPU has it) agree with the scalar
// ones on every float16, and on the float32 values halfway between two.
TEST(HalfConversions, ArraysConvertAsTheScalarFunctions) {
  std::vector<Float16> all(65536);
  for (size_t i = 0; i < all.size(); ++i) all[i].bits = static_cast<uint16_t>(i);
  std::vector<float> wide(all.size());
  float16_to_float(all.data(), wide.data(), static_cast<int64_t>(all.size()));
  std::vector<float> ties;
  for (size_t i = 0; i < all.size(); ++i) {
    float f = to_float(all[i]);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(wide[i])) << i;
      continue;
    }
    EXPECT_EQ(wide[i], f) << i;
    if (i + 1 < all.size() && (i & 0x7C00) != 0x7C00) ties.push_back((f + to_float(all[i + 1])) / 2);
  }
  wide.insert(wide.end(), ties.begin(), ties.end());
  std::vector<Float16> narrow(wide.size());
  float_to_float16(wide.data(), narrow.data(), static_cast<int64_t>(wide.size()));
  for (size_t i = 0; i < wide.size(); ++i)
    if (!std::isnan(wide[i])) EXPECT_EQ(narrow[i].bits, float16_of(wide[i]).bits) << wide[i];
}

// x[3] float16 -> Add(float16 weights) -> Relu -> y[3] float16: the Add and
// the Relu run in float32 on the CPU backend, between two Casts.
TEST_F(HalfFloatTest, AHalfModelRunsInFloat32BetweenCastsAtItsInputsAndOutputs) {
  for (int32_t type : {onnx::TensorProto_DataType_FLOAT16, onnx::TensorProto_DataType_BFLOAT16}) {
    onnx::ModelProto m = make_model(13);
    auto* g = m.mutable_graph();
    *g->add_input() = tensor_info("x", type, {3});
    *g->add_output() = tensor_info("y", type, {3});
    *g->add_initializer() = half_tensor("w", type, {0.5f, -4.0f, 1.25f});
    *g->add_node() = make_node("Add", {"x", "w"}, {"s"}, "add");
    *g->add_node() = make_node("Relu", {"s"}, {"y"}, "relu");
    SessionOptions options;
    options.devices = "cpu:0";
    Session session = Session::load(save(m), {}, options);
    const Graph& graph = session.graph();
    DType half = type == onnx::TensorProto_DataType_FLOAT16 ? DType::kFloat16 : DType::kBFloat16;
    EXPECT_EQ(graph.values[graph.inputs[0]].dtype, half);
    EXPECT_EQ(graph.values[graph.outputs[0]].dtype, half);
    int n_casts = 0;
    for (const Node& node : graph.nodes) {
      if (node.op_type == "Cast") ++n_casts;
      for (ValueId v : node.inputs)
        if (node.op_type != "Cast") EXPECT_EQ(graph.values[v].dtype, DType::kFloat32) << node.label();
    }
    EXPECT_EQ(n_casts, 2);
    EXPECT_EQ(session.summary().n_fallbacks, 2) << "only the two Casts on the reference kernels";
    Tensor x(half, {3});
    std::vector<float> xs = {1.0f, 2.0f, -3.0f};
    for (int i = 0; i < 3; ++i) {
      if (half == DType::kFloat16) x.data<Float16>()[i] = float16_of(xs[i]);
      else x.data<BFloat16>()[i] = bfloat16_of(xs[i]);
    }
    Tensor y = session.run({{"x", x}}).at("y");
    ASSERT_EQ(y.dtype(), half);
    EXPECT_EQ(y.to_double_vector(), (std::vector<double>{1.5, 0.0, 0.0}));
  }
}

// x float32 -> Cast(float16) -> Add(float16 2^-11) -> Cast(float32) -> y:
// the model rounds x to float16 where it says so (1 + 2^-12 becomes 1), and
// the Add, done in float32, adds 2^-11 exactly.
TEST_F(HalfFloatTest, AnExplicitCastToFloat16StillRounds) {
  onnx::ModelProto m = make_model(13);
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto_DataType_FLOAT, {2});
  *g->add_output() = tensor_info("y", onnx::TensorProto_DataType_FLOAT, {2});
  *g->add_initializer() = half_tensor("eps", onnx::TensorProto_DataType_FLOAT16, {1.0f / 2048, 1.0f / 2048});
  auto cast = [](const std::string& in, const std::string& out, int64_t to) {
    onnx::NodeProto n = make_node("Cast", {in}, {out}, out + "_cast");
    auto* a = n.add_attribute();
    a->set_name("to");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(to);
    return n;
  };
  *g->add_node() = cast("x", "h", onnx::TensorProto_DataType_FLOAT16);
  *g->add_node() = make_node("Add", {"h", "eps"}, {"s"}, "add");
  *g->add_node() = cast("s", "y", onnx::TensorProto_DataType_FLOAT);
  for (bool reference : {false, true}) {
    SessionOptions options;
    options.reference = reference;
    Session session = Session::load(save(m), {}, options);
    Tensor y = session.run({{"x", Tensor::from_vector<float>({2}, {1.0f + 1.0f / 4096, 3.0f})}}).at("y");
    EXPECT_EQ(y.to_double_vector(), (std::vector<double>{1.0 + 1.0 / 2048, 3.0 + 1.0 / 2048})) << reference;
  }
}

// x float32 -> Cast(float16) -> h, a graph output that an Add also reads:
// the Add reads the rounded value as float32, h stays float16.
TEST_F(HalfFloatTest, ACastToFloat16ThatIsAnOutputAndReadOnStillRounds) {
  onnx::ModelProto m = make_model(13);
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto_DataType_FLOAT, {2});
  *g->add_output() = tensor_info("h", onnx::TensorProto_DataType_FLOAT16, {2});
  *g->add_output() = tensor_info("s", onnx::TensorProto_DataType_FLOAT16, {2});
  onnx::NodeProto cast = make_node("Cast", {"x"}, {"h"}, "cast");
  auto* to = cast.add_attribute();
  to->set_name("to");
  to->set_type(onnx::AttributeProto::INT);
  to->set_i(onnx::TensorProto_DataType_FLOAT16);
  *g->add_node() = cast;
  *g->add_node() = make_node("Add", {"h", "h"}, {"s"}, "add");
  Session session = Session::load(save(m), {}, SessionOptions("cpu:0"));
  TensorMap out = session.run({{"x", Tensor::from_vector<float>({2}, {1.0f + 1.0f / 4096, 3.0f})}});
  ASSERT_EQ(out.at("h").dtype(), DType::kFloat16);
  ASSERT_EQ(out.at("s").dtype(), DType::kFloat16);
  EXPECT_EQ(out.at("h").to_double_vector(), (std::vector<double>{1.0, 3.0}));
  EXPECT_EQ(out.at("s").to_double_vector(), (std::vector<double>{2.0, 6.0}));
}

TEST_F(HalfFloatTest, AHalfValueInsideASubgraphIsRefusedNamingTheNode) {
  Graph body;
  Value v;
  v.name = "inner";
  v.dtype = DType::kFloat16;
  body.add_value(v);
  Graph graph;
  Node node;
  node.name = "cond";
  node.op_type = "If";
  Attribute a;
  a.kind = Attribute::Kind::kGraph;
  a.graph = std::make_shared<const Graph>(body);
  node.attributes["then_branch"] = a;
  graph.add_node(node);
  try {
    compute_half_as_float(graph);
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_THAT(e.what(), HasSubstr("If 'cond'"));
    EXPECT_THAT(e.what(), HasSubstr("then_branch"));
  }
}

}  // namespace
}  // namespace hetsched

namespace hetsched {
namespace {

std::vector<float> random_values(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// x[1, 16, 12, 12] -> Conv(W[32, 16, 3, 3], pad 1) -> y.
onnx::ModelProto conv_model() {
  onnx::ModelProto m = make_model(13);
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto_DataType_FLOAT, {1, 16, 12, 12});
  *g->add_output() = tensor_info("y", onnx::TensorProto_DataType_FLOAT, {1, 32, 12, 12});
  *g->add_initializer() = float_tensor("W", {32, 16, 3, 3}, random_values(32 * 16 * 9, 7));
  auto* conv = g->add_node();
  *conv = make_node("Conv", {"x", "W"}, {"y"}, "conv");
  auto* pads = conv->add_attribute();
  pads->set_name("pads");
  pads->set_type(onnx::AttributeProto::INTS);
  for (int i = 0; i < 4; ++i) pads->add_ints(1);
  return m;
}

// x[6, 64] -> MatMul(W[64, 32]) -> MatMul(x2[32, 16], B computed) -> Gemm(transB W2[8, 16]) -> y[6, 8].
onnx::ModelProto matmul_gemm_model() {
  onnx::ModelProto m = make_model(13);
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto_DataType_FLOAT, {6, 64});
  *g->add_input() = tensor_info("x2", onnx::TensorProto_DataType_FLOAT, {32, 16});
  *g->add_output() = tensor_info("y", onnx::TensorProto_DataType_FLOAT, {6, 8});
  *g->add_initializer() = float_tensor("W", {64, 32}, random_values(64 * 32, 8));
  *g->add_initializer() = float_tensor("W2", {8, 16}, random_values(8 * 16, 9));
  *g->add_node() = make_node("MatMul", {"x", "W"}, {"h"}, "matmul_weights");
  *g->add_node() = make_node("MatMul", {"h", "x2"}, {"h2"}, "matmul_activations");
  auto* gemm = g->add_node();
  *gemm = make_node("Gemm", {"h2", "W2"}, {"y"}, "gemm");
  auto* trans = gemm->add_attribute();
  trans->set_name("transB");
  trans->set_type(onnx::AttributeProto::INT);
  trans->set_i(1);
  return m;
}

TEST_F(HalfFloatTest, PrecisionBfloat16ComputesConvolutionsAndMatrixProductsInBfloat16WhereTheCpuHasIt) {
  for (const onnx::ModelProto& model : {conv_model(), matmul_gemm_model()}) {
    std::string path = save(model);
    Graph graph = load_model(path);
    SessionOptions bf16_options("cpu:0");
    bf16_options.precision = "bfloat16";
    Session f32(graph, SessionOptions("cpu:0"));
    Session bf16(graph, bf16_options);
    TensorMap inputs;
    for (ValueId id : graph.inputs) {
      const Value& v = graph.values[id];
      std::vector<float> values = random_values(static_cast<size_t>(shape_numel(v.shape)), 1);
      inputs[v.name] = Tensor::from_vector<float>(v.shape, values);
    }
    std::vector<double> a = f32.run(inputs).at("y").to_double_vector();
    std::vector<double> b = bf16.run(inputs).at("y").to_double_vector();
    double max_diff = 0, max_a = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      max_diff = std::max(max_diff, std::fabs(a[i] - b[i]));
      max_a = std::max(max_a, std::fabs(a[i]));
    }
    const auto& warnings = bf16.summary().warnings;
    bool kept_float32 = std::any_of(warnings.begin(), warnings.end(), [](const std::string& w) {
      return w.find("no bfloat16 instructions") != std::string::npos;
    });
    if (kept_float32) {
      EXPECT_EQ(a, b);
      GTEST_SKIP() << "this CPU has no bfloat16 instructions: " << warnings.front();
    }
    EXPECT_EQ(bf16.summary().n_fallbacks, 0);
    EXPECT_EQ(bf16.platform().devices[0].precision, "bfloat16");
    EXPECT_NE(bf16.platform().signature(), f32.platform().signature()) << "profiles of the two must not mix";
    EXPECT_GT(max_diff, 0.0) << "inputs and weights rounded to bfloat16 change the sums";
    EXPECT_LT(max_diff, 0.03 * max_a) << "but only by bfloat16's precision";
  }
}

TEST(PrecisionOption, AnUnknownPrecisionIsAUsageError) {
  SessionOptions options("cpu:0");
  options.precision = "float16";
  try {
    Session session(load_model("zoo:squeezenet1_0"), options);
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUsage);
    EXPECT_THAT(e.what(), HasSubstr("precision 'float16': expected float32 or bfloat16"));
  }
}

}  // namespace
}  // namespace hetsched
