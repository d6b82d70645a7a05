// The load-time fusion of QDQ chains (graph/quantized_fusion.cpp): what it
// fuses runs as one QLinearConv with the float chain's results (to one
// quantization step), and what it must not fuse stays as written.
#include <cmath>
#include <random>

#include <fmt/format.h>

#include <gtest/gtest.h>

#include "backends/cpu/program.h"
#include "graph/onnx_export.h"
#include "hetsched/quantize.h"
#include "hetsched/session.h"
#include "onnx_model_util.h"

namespace hetsched {
namespace {

using namespace hetsched::testing;

onnx::TensorProto int8_tensor(const std::string& name, const std::vector<int64_t>& dims, const std::vector<int>& v) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto_DataType_INT8);
  for (int64_t d : dims) t.add_dims(d);
  for (int x : v) t.add_int32_data(x);
  return t;
}

struct Chain {
  bool relu = false;
  int y_zero_point = -128;  // int8 output
  int w_zero_point = 0;
};

// x[1, 4, 6, 6] float -> QuantizeLinear (int8) -> DequantizeLinear (no zero
// point: int8 0) -> Conv(DequantizeLinear(w int8 [8, 4, 3, 3]), bias) [-> Relu]
// -> QuantizeLinear (int8) -> DequantizeLinear -> y.
onnx::ModelProto qdq_conv(const Chain& c) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> q(-127, 127);
  std::vector<int> w(8 * 4 * 9);
  for (int& v : w) v = q(rng);
  onnx::ModelProto m = make_model(13);
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto_DataType_FLOAT, {1, 4, 6, 6});
  *g->add_output() = tensor_info("y", onnx::TensorProto_DataType_FLOAT, {1, 8, 4, 4});
  *g->add_initializer() = float_tensor("x_scale", {}, {1.0f / 64});
  *g->add_initializer() = int8_tensor("x_zp", {}, {0});
  *g->add_initializer() = int8_tensor("w", {8, 4, 3, 3}, w);
  *g->add_initializer() = float_tensor("w_scale", {}, {1.0f / 256});
  *g->add_initializer() = int8_tensor("w_zp", {}, {c.w_zero_point});
  *g->add_initializer() = float_tensor("b", {8}, {0.1f, -0.2f, 0.3f, -0.4f, 0.5f, -0.6f, 0.7f, -0.8f});
  *g->add_initializer() = float_tensor("y_scale", {}, {1.0f / 16});
  *g->add_initializer() = int8_tensor("y_zp", {}, {c.y_zero_point});
  *g->add_node() = make_node("QuantizeLinear", {"x", "x_scale", "x_zp"}, {"xq"}, "quantize_x");
  *g->add_node() = make_node("DequantizeLinear", {"xq", "x_scale"}, {"xd"}, "dequantize_x");
  *g->add_node() = make_node("DequantizeLinear", {"w", "w_scale", "w_zp"}, {"wd"}, "dequantize_w");
  *g->add_node() = make_node("Conv", {"xd", "wd", "b"}, {"c"}, "conv");
  std::string before_q = "c";
  if (c.relu) {
    *g->add_node() = make_node("Relu", {"c"}, {"r"}, "relu");
    before_q = "r";
  }
  *g->add_node() = make_node("QuantizeLinear", {before_q, "y_scale", "y_zp"}, {"yq"}, "quantize_y");
  *g->add_node() = make_node("DequantizeLinear", {"yq", "y_scale", "y_zp"}, {"y"}, "dequantize_y");
  return m;
}

class QuantizedFusionTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = temp_dir(::testing::UnitTest::GetInstance()->current_test_info()->name()); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  Graph load(const onnx::ModelProto& m, bool optimize = true) {
    write_model(m, dir_ / "model.onnx");
    LoadOptions options;
    options.optimize = optimize;
    return load_model((dir_ / "model.onnx").string(), options);
  }
  static int count(const Graph& g, const std::string& op) {
    int n = 0;
    for (const Node& node : g.nodes) n += node.op_type == op;
    return n;
  }
  std::filesystem::path dir_;
};

TEST_F(QuantizedFusionTest, AnInt8ChainBecomesOneQLinearConvOnTheCpuWithTheFloatChainsResults) {
  for (bool relu : {false, true}) {
    Chain chain;
    chain.relu = relu;  // y's zero point -128, the lowest int8: the saturation clamps as the Relu would
    Graph fused = load(qdq_conv(chain));
    EXPECT_EQ(count(fused, "QLinearConv"), 1) << relu;
    EXPECT_EQ(count(fused, "Conv"), 0);
    EXPECT_EQ(count(fused, "Relu"), 0);
    Session cpu(fused, SessionOptions("cpu:0"));
    EXPECT_EQ(cpu.summary().n_fallbacks, 0) << cpu.summary().fallbacks.front();
    // The float chain, unfused, on the reference kernels.
    TensorMap inputs = cpu.random_inputs(5);
    Tensor want = run_reference(load(qdq_conv(chain), false), inputs).at("y");
    Tensor got = cpu.run(inputs).at("y");
    std::vector<double> a = got.to_double_vector(), b = want.to_double_vector();
    int n_steps_apart = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_LE(std::fabs(a[i] - b[i]), 1.0 / 16 + 1e-6) << i;  // at most one step of y
      n_steps_apart += a[i] != b[i];
    }
    EXPECT_LE(n_steps_apart, static_cast<int>(a.size()) / 20) << "rounding ties (the bias rounded to int32) only";
  }
}

TEST_F(QuantizedFusionTest, WhatWouldChangeTheResultsIsNotFused) {
  Chain relu_above_lowest;
  relu_above_lowest.relu = true;
  relu_above_lowest.y_zero_point = 0;  // a Relu clamps at 0, which int8 codes -128..-1 can hold
  Chain asymmetric_weights;
  asymmetric_weights.w_zero_point = 3;  // oneDNN's int8 weights have no zero point
  for (const Chain& chain : {relu_above_lowest, asymmetric_weights}) {
    Graph g = load(qdq_conv(chain));
    EXPECT_EQ(count(g, "QLinearConv"), 0);
    EXPECT_EQ(count(g, "Conv"), 1);
    Tensor want = run_reference(load(qdq_conv(chain), false), Session(g).random_inputs(5)).at("y");
    Tensor got = Session(g, SessionOptions("cpu:0")).run(Session(g).random_inputs(5)).at("y");
    std::vector<double> a = got.to_double_vector(), b = want.to_double_vector();
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1.0 / 16 + 1e-6) << i;
  }
}

// x[2, 5, 16] -> MatMul(w [16, 8] constant) -> y, and a MatMul of two
// activations (x by its own transpose) that dynamic quantization leaves.
onnx::ModelProto float_matmuls() {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 0.5f);
  std::vector<float> w(16 * 8);
  for (float& v : w) v = normal(rng);
  onnx::ModelProto m = make_model(13);
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto_DataType_FLOAT, {2, 5, 16});
  *g->add_output() = tensor_info("y", onnx::TensorProto_DataType_FLOAT, {2, 5, 8});
  *g->add_output() = tensor_info("gram", onnx::TensorProto_DataType_FLOAT, {2, 5, 5});
  *g->add_initializer() = float_tensor("w", {16, 8}, w);
  *g->add_node() = make_node("MatMul", {"x", "w"}, {"y"}, "project");
  *g->add_node() = make_node("Transpose", {"x"}, {"xt"}, "transpose");
  g->mutable_node(1)->add_attribute()->CopyFrom([] {
    onnx::AttributeProto a;
    a.set_name("perm");
    a.set_type(onnx::AttributeProto_AttributeType_INTS);
    for (int64_t p : {0, 2, 1}) a.add_ints(p);
    return a;
  }());
  *g->add_node() = make_node("MatMul", {"x", "xt"}, {"gram"}, "gram");
  return m;
}

TEST_F(QuantizedFusionTest, ADynamicallyQuantizedMatMulRunsAsOneInt8MatmulWithTheReferenceResults) {
  write_model(float_matmuls(), dir_ / "float.onnx");
  for (bool per_channel : {false, true}) {
    QuantizeOptions options;
    options.dynamic = true;
    options.per_channel = per_channel;
    std::string out = (dir_ / "dynamic.onnx").string();
    QuantizeReport report = quantize_model((dir_ / "float.onnx").string(), out, options);
    EXPECT_EQ(report.n_quantized_matmuls, 1);
    ASSERT_EQ(report.skipped.size(), 1u);
    EXPECT_NE(report.skipped[0].find("'gram': B computed at run time"), std::string::npos) << report.skipped[0];
    Graph quantized = load_model(out);
    EXPECT_EQ(count(quantized, "DynamicQuantizeLinear"), 1);
    EXPECT_EQ(count(quantized, "MatMulInteger"), 1);
    EXPECT_EQ(count(quantized, "MatMul"), 1);  // the gram matrix's

    Session cpu(quantized, SessionOptions("cpu:0"));
    for (const std::string& fallback : cpu.summary().fallbacks) {
      EXPECT_EQ(fallback.find("MatMulInteger"), std::string::npos) << fallback;
      EXPECT_EQ(fallback.find("Cast"), std::string::npos) << fallback;
    }
    TensorMap inputs = cpu.random_inputs(3);
    // The integer product is exact on both; the same Cast and Mul follow.
    Tensor got = cpu.run(inputs).at("y");
    Tensor want = run_reference(quantized, inputs).at("y");
    EXPECT_EQ(got.to_double_vector(), want.to_double_vector()) << "per_channel " << per_channel;
    // Close to the float model: within a few quantization steps.
    Tensor exact = run_reference(load(float_matmuls()), inputs).at("y");
    std::vector<double> q = got.to_double_vector(), f = exact.to_double_vector();
    double largest = 0, worst = 0;
    for (size_t i = 0; i < f.size(); ++i) {
      largest = std::max(largest, std::fabs(f[i]));
      worst = std::max(worst, std::fabs(q[i] - f[i]));
    }
    EXPECT_LT(worst, 0.02 * largest) << "per_channel " << per_channel;
  }
}

// x [2, 5, 16] -> MatMul(w [16, 8]) -> Add(bias [8]) -> Relu -> y: a
// PyTorch Linear + ReLU.
onnx::ModelProto float_linear_relu() {
  std::mt19937 rng(8);
  std::normal_distribution<float> normal(0.0f, 0.5f);
  std::vector<float> w(16 * 8), b(8);
  for (float& v : w) v = normal(rng);
  for (float& v : b) v = normal(rng);
  onnx::ModelProto m = make_model(13);
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto_DataType_FLOAT, {2, 5, 16});
  *g->add_output() = tensor_info("y", onnx::TensorProto_DataType_FLOAT, {2, 5, 8});
  *g->add_initializer() = float_tensor("w", {16, 8}, w);
  *g->add_initializer() = float_tensor("b", {8}, b);
  *g->add_node() = make_node("MatMul", {"x", "w"}, {"p"}, "project");
  *g->add_node() = make_node("Add", {"p", "b"}, {"biased"}, "bias");
  *g->add_node() = make_node("Relu", {"biased"}, {"y"}, "relu");
  return m;
}

// Static quantization writes a MatMul in the QDQ format (DequantizeLinear
// on its input and on B); at load it becomes MatMulInteger -> Cast -> Mul by
// the scales, which the CPU runs as one int8 matmul with output scales.
TEST_F(QuantizedFusionTest, AStaticallyQuantizedMatMulRunsAsOneInt8MatmulWithOutputScales) {
  write_model(float_matmuls(), dir_ / "float.onnx");
  for (bool per_channel : {false, true}) {
    SCOPED_TRACE(per_channel ? "per column" : "per tensor");
    QuantizeOptions options;
    options.per_channel = per_channel;
    options.devices = "cpu:0";
    std::string out = (dir_ / "static.onnx").string();
    QuantizeReport report = quantize_model((dir_ / "float.onnx").string(), out, options);
    EXPECT_EQ(report.n_quantized_matmuls, 1);
    EXPECT_EQ(report.n_quantized_convs, 0);
    ASSERT_EQ(report.skipped.size(), 1u);
    EXPECT_NE(report.skipped[0].find("'gram': B computed at run time"), std::string::npos) << report.skipped[0];
    Graph quantized = load_model(out);
    EXPECT_EQ(count(quantized, "MatMulInteger"), 1);
    EXPECT_EQ(count(quantized, "MatMul"), 1);  // the gram matrix's, on the dequantized input
    NodeId integer = kNoNode;
    for (const Node& n : quantized.nodes)
      if (n.op_type == "MatMulInteger") integer = static_cast<NodeId>(&n - quantized.nodes.data());
    std::vector<NodeId> group = cpu::fusion_group(quantized, integer);
    ASSERT_EQ(group.size(), 3u);
    EXPECT_EQ(quantized.nodes[group[1]].op_type, "Cast");
    EXPECT_EQ(quantized.nodes[group[2]].op_type, "Mul");
    EXPECT_EQ(quantized.values[quantized.nodes[group[2]].outputs[0]].name, "y");

    Session cpu(quantized, SessionOptions("cpu:0"));
    EXPECT_TRUE(cpu.summary().fallbacks.empty()) << cpu.summary().fallbacks.front();
    TensorMap inputs = cpu.random_inputs(4);
    std::vector<double> got = cpu.run(inputs).at("y").to_double_vector();
    std::vector<double> want = run_reference(quantized, inputs).at("y").to_double_vector();
    std::vector<double> exact = run_reference(load(float_matmuls()), inputs).at("y").to_double_vector();
    double largest = 0, off_reference = 0, off_float = 0;
    for (size_t i = 0; i < exact.size(); ++i) {
      largest = std::max(largest, std::fabs(exact[i]));
      off_reference = std::max(off_reference, std::fabs(got[i] - want[i]));
      off_float = std::max(off_float, std::fabs(got[i] - exact[i]));
    }
    EXPECT_LT(off_reference, 1e-6 * largest) << "float(product) * scale, as the Cast and Mul compute it";
    EXPECT_LT(off_float, 0.02 * largest);
  }
}

// After the scales, a Linear's bias Add and its Relu join the int8 matmul
// (a binary and an eltwise post-op), with the unfused chain's results.
TEST_F(QuantizedFusionTest, AQuantizedLinearTakesItsBiasAndReluIntoTheInt8Matmul) {
  write_model(float_linear_relu(), dir_ / "float.onnx");
  QuantizeOptions options;
  options.devices = "cpu:0";
  std::string out = (dir_ / "static.onnx").string();
  EXPECT_EQ(quantize_model((dir_ / "float.onnx").string(), out, options).n_quantized_matmuls, 1);
  Graph quantized = load_model(out);
  std::vector<std::string> ops;
  for (const Node& n : quantized.nodes)
    if (n.op_type == "MatMulInteger")
      for (NodeId id : cpu::fusion_group(quantized, static_cast<NodeId>(&n - quantized.nodes.data())))
        ops.push_back(quantized.nodes[id].op_type);
  EXPECT_EQ(ops, (std::vector<std::string>{"MatMulInteger", "Cast", "Mul", "Add", "Relu"}));
  Session cpu(quantized, SessionOptions("cpu:0"));
  EXPECT_TRUE(cpu.summary().fallbacks.empty()) << cpu.summary().fallbacks.front();
  TensorMap inputs = cpu.random_inputs(5);
  std::vector<double> got = cpu.run(inputs).at("y").to_double_vector();
  std::vector<double> want = run_reference(quantized, inputs).at("y").to_double_vector();
  double largest = 0, off = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    largest = std::max(largest, std::fabs(want[i]));
    off = std::max(off, std::fabs(got[i] - want[i]));
  }
  EXPECT_GT(largest, 0.0);
  EXPECT_LT(off, 1e-6 * largest);
}

// a, b float [1, 16, 6, 6] -> QuantizeLinear -> DequantizeLinear each (a in
// uint8, b in int8) -> Add -> QuantizeLinear (`c_type`) -> DequantizeLinear -> y:
// the residual Add of a QDQ model. With `blocked`, a and b first go through
// a Conv each, so the 8-bit values reach the Add in the Convs' layout.
onnx::ModelProto qdq_add(int32_t c_type, bool blocked, float c_scale = 1.0f / 40) {
  onnx::ModelProto m = make_model(13);
  auto* g = m.mutable_graph();
  for (const char* x : {"a", "b"}) *g->add_input() = tensor_info(x, onnx::TensorProto_DataType_FLOAT, {1, 16, 6, 6});
  *g->add_output() = tensor_info("y", onnx::TensorProto_DataType_FLOAT, {1, 16, 6, 6});
  auto zero_point = [&](const std::string& name, int32_t type, int v) {
    onnx::TensorProto t;
    t.set_name(name);
    t.set_data_type(type);
    t.add_int32_data(v);
    *g->add_initializer() = t;
  };
  *g->add_initializer() = float_tensor("a_scale", {}, {1.0f / 50});
  zero_point("a_zp", onnx::TensorProto_DataType_UINT8, 100);
  *g->add_initializer() = float_tensor("b_scale", {}, {1.0f / 70});
  zero_point("b_zp", onnx::TensorProto_DataType_INT8, -3);
  *g->add_initializer() = float_tensor("c_scale", {}, {c_scale});
  zero_point("c_zp", c_type, c_type == onnx::TensorProto_DataType_UINT8 ? 120 : 5);
  std::string a = "a", b = "b";
  if (blocked) {
    std::vector<float> w(16 * 16, 0.0f);
    for (int i = 0; i < 16; ++i) w[i * 16 + i] = 1.0f;  // 1x1, identity
    *g->add_initializer() = float_tensor("w", {16, 16, 1, 1}, w);
    *g->add_node() = make_node("Conv", {"a", "w"}, {"ca"}, "conv_a");
    *g->add_node() = make_node("Conv", {"b", "w"}, {"cb"}, "conv_b");
    a = "ca";
    b = "cb";
  }
  *g->add_node() = make_node("QuantizeLinear", {a, "a_scale", "a_zp"}, {"aq"}, "quantize_a");
  *g->add_node() = make_node("DequantizeLinear", {"aq", "a_scale", "a_zp"}, {"ad"}, "dequantize_a");
  *g->add_node() = make_node("QuantizeLinear", {b, "b_scale", "b_zp"}, {"bq"}, "quantize_b");
  *g->add_node() = make_node("DequantizeLinear", {"bq", "b_scale", "b_zp"}, {"bd"}, "dequantize_b");
  *g->add_node() = make_node("Add", {"ad", "bd"}, {"sum"}, "add");
  *g->add_node() = make_node("QuantizeLinear", {"sum", "c_scale", "c_zp"}, {"cq"}, "quantize_c");
  *g->add_node() = make_node("DequantizeLinear", {"cq", "c_scale", "c_zp"}, {"y"}, "dequantize_c");
  return m;
}

// The residual Add of a QDQ model becomes one QLinearAdd that computes, on
// the CPU backend and on the reference kernels, exactly what the unfused
// chain does (its values stay 8-bit); it writes back as the four ops.
TEST_F(QuantizedFusionTest, AResidualAddBetweenQuantizedValuesRunsAsOneQLinearAddWithTheChainsBytes) {
  for (int32_t c_type : {onnx::TensorProto_DataType_UINT8, onnx::TensorProto_DataType_INT8})
    for (bool blocked : {false, true}) {
      SCOPED_TRACE(fmt::format("C type {}, {}", c_type, blocked ? "after Convs" : "plain"));
      Graph fused = load(qdq_add(c_type, blocked));
      EXPECT_EQ(count(fused, "QLinearAdd"), 1);
      EXPECT_EQ(count(fused, "Add"), 0);
      Session cpu(fused, SessionOptions("cpu"));
      EXPECT_EQ(cpu.summary().n_fallbacks, 0);
      if (blocked) {
        EXPECT_LE(cpu.summary().n_reorders, 4);  // the inputs in, y out
      }
      Graph chain = load(qdq_add(c_type, blocked), /*optimize=*/false);
      for (uint64_t seed : {1u, 2u, 3u}) {
        TensorMap inputs = cpu.random_inputs(seed);
        for (auto& [name, t] : inputs)  // [-3, 3): some values saturate
          for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] *= 3.0f;
        std::vector<double> want = run_reference(chain, inputs).at("y").to_double_vector();
        EXPECT_EQ(cpu.run(inputs).at("y").to_double_vector(), want);
        EXPECT_EQ(run_reference(fused, inputs).at("y").to_double_vector(), want);
      }
      // Written out, the QLinearAdd is the four ops again, which compute the same.
      Graph again = load(graph_to_model(fused), /*optimize=*/false);
      EXPECT_EQ(count(again, "QLinearAdd"), 0);
      EXPECT_EQ(count(again, "Add"), 1);
      TensorMap inputs = cpu.random_inputs(4);
      EXPECT_EQ(run_reference(again, inputs).at("y").to_double_vector(),
                run_reference(chain, inputs).at("y").to_double_vector());
    }
  // C's scale 0: a sum of 0 is 0 / 0, which the reference kernels quantize
  // to the zero point; the CPU backend leaves the node to them.
  onnx::ModelProto zero_scale = qdq_add(onnx::TensorProto_DataType_UINT8, false, 0.0f);
  *zero_scale.mutable_graph()->add_output() = tensor_info("cq", onnx::TensorProto_DataType_UINT8, {1, 16, 6, 6});
  Graph fused = load(zero_scale);
  EXPECT_EQ(count(fused, "QLinearAdd"), 1);
  Session cpu(fused, SessionOptions("cpu"));
  const std::vector<std::string>& fallbacks = cpu.summary().fallbacks;
  EXPECT_TRUE(std::any_of(fallbacks.begin(), fallbacks.end(),
                          [](const std::string& f) { return f.find("QLinearAdd") != std::string::npos; }));
  TensorMap zeros = cpu.random_inputs(1);
  for (auto& [name, t] : zeros) std::fill(t.data<float>(), t.data<float>() + t.numel(), 0.0f);
  std::vector<double> want = run_reference(load(zero_scale, false), zeros).at("cq").to_double_vector();
  EXPECT_EQ(want, std::vector<double>(want.size(), 120.0));  // the zero point
  EXPECT_EQ(cpu.run(zeros).at("cq").to_double_vector(), want);
}

// A Relu between the residual Add and its QuantizeLinear (PyTorch's
// BasicBlock, quantized) joins the QLinearAdd where the output's zero point
// clamps at 0 as the Relu does; elsewhere the chain stays float32, listed
// with the reason (Graph::float_chains, `run -v`).
TEST_F(QuantizedFusionTest, AResidualAddWithAReluBecomesOneQLinearAddWhereTheZeroPointClamps) {
  for (int zero_point : {0, 120}) {
    SCOPED_TRACE(fmt::format("C's zero point {}", zero_point));
    onnx::ModelProto m = qdq_add(onnx::TensorProto_DataType_UINT8, false);
    auto* g = m.mutable_graph();
    for (auto& init : *g->mutable_initializer())
      if (init.name() == "c_zp") init.set_int32_data(0, zero_point);
    for (auto& n : *g->mutable_node())
      if (n.name() == "quantize_c") n.set_input(0, "relu_sum");
    *g->add_node() = make_node("Relu", {"sum"}, {"relu_sum"}, "relu");
    Graph fused = load(m);
    Graph chain = load(m, /*optimize=*/false);
    TensorMap inputs = Session(chain, SessionOptions("cpu:0")).random_inputs(5);
    std::vector<double> want = run_reference(chain, inputs).at("y").to_double_vector();
    if (zero_point == 0) {
      EXPECT_EQ(count(fused, "QLinearAdd"), 1);
      EXPECT_EQ(count(fused, "Relu"), 0);
      EXPECT_TRUE(fused.float_chains.empty()) << fused.float_chains.front();
    } else {
      EXPECT_EQ(count(fused, "QLinearAdd"), 0);
      ASSERT_EQ(fused.float_chains.size(), 1u);
      EXPECT_EQ(fused.float_chains[0], "Add 'add': the output's zero point does not clamp what Relu 'relu' does");
    }
    Session cpu(fused, SessionOptions("cpu:0"));
    EXPECT_EQ(cpu.summary().float_chains, fused.float_chains);
    EXPECT_EQ(cpu.run(inputs).at("y").to_double_vector(), want);
  }
}

// DynamicQuantizeLinear on the CPU backend (host code on the device's
// threads, chunks of x merged): the reference kernel's bytes, on one core
// and on all of them, for sizes of one chunk and of several; zeros only give
// scale 0; a NaN is an error naming its element, as on the reference kernel.
TEST_F(QuantizedFusionTest, DynamicQuantizeLinearRunsOnTheCpuWithTheReferenceBytes) {
  for (int64_t n : {1000, 40000, 100003}) {
    onnx::ModelProto m = make_model(13);
    auto* g = m.mutable_graph();
    *g->add_input() = tensor_info("x", onnx::TensorProto_DataType_FLOAT, {n});
    *g->add_output() = tensor_info("y", onnx::TensorProto_DataType_UINT8, {n});
    *g->add_output() = tensor_info("scale", onnx::TensorProto_DataType_FLOAT, {});
    *g->add_output() = tensor_info("zero_point", onnx::TensorProto_DataType_UINT8, {});
    *g->add_node() = make_node("DynamicQuantizeLinear", {"x"}, {"y", "scale", "zero_point"}, "dql");
    Graph graph = load(m);
    std::mt19937 rng(static_cast<uint32_t>(n));
    std::normal_distribution<float> normal(0.5f, 3.0f);
    Tensor x(DType::kFloat32, {n});
    for (int64_t i = 0; i < n; ++i) x.data<float>()[i] = i % 97 == 0 ? 0.0f : normal(rng);
    Tensor zeros(DType::kFloat32, {n});
    for (const char* devices : {"cpu:0", "cpu"}) {
      SCOPED_TRACE(fmt::format("{} values on {}", n, devices));
      Session cpu(graph, SessionOptions(devices));
      EXPECT_EQ(cpu.summary().n_fallbacks, 0);
      for (const Tensor& input : {x, zeros}) {
        TensorMap got = cpu.run({{"x", input}}), want = run_reference(graph, {{"x", input}});
        for (const char* name : {"y", "scale", "zero_point"})
          EXPECT_EQ(got.at(name).to_double_vector(), want.at(name).to_double_vector()) << name;
      }
      EXPECT_EQ(cpu.run({{"x", zeros}}).at("scale").to_double_vector(), std::vector<double>{0.0});
      Tensor with_nan = x.clone();
      with_nan.data<float>()[n - 7] = NAN;
      try {
        cpu.run({{"x", with_nan}});
        ADD_FAILURE() << "a NaN was quantized";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(fmt::format("x holds NaN at element {}", n - 7)), std::string::npos)
            << e.what();
      }
    }
  }
}

}  // namespace
}  // namespace hetsched
