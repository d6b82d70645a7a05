// The CPU backend's oneDNN lowerings of Gemm, MatMul, the binary ops, Pow,
// ConvTranspose, Transpose, the reductions and Resize/Upsample: each tiny
// model runs on cpu:0 and on the reference kernels with the same random
// inputs, and must agree to a relative error of 1e-4 — with the node really
// on oneDNN (the expected number of fallbacks, usually 0).
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <random>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "backends/cpu/program.h"
#include "hetsched/session.h"
#include "onnx_model_util.h"

namespace hetsched {
namespace {

using namespace hetsched::testing;
constexpr int32_t kF32 = onnx::TensorProto_DataType_FLOAT;

// A small ONNX model under construction.
struct Model {
  onnx::ModelProto m;
  explicit Model(int64_t opset = 17) : m(make_model(opset)) {}
  onnx::GraphProto* g() { return m.mutable_graph(); }
  void input(const std::string& name, const std::vector<int64_t>& dims) {
    *g()->add_input() = tensor_info(name, kF32, dims);
  }
  void output(const std::string& name, const std::vector<int64_t>& dims) {
    *g()->add_output() = tensor_info(name, kF32, dims);
  }
  // A constant of deterministic pseudo-random values in [-1, 1).
  void weight(const std::string& name, const std::vector<int64_t>& dims, uint32_t seed = 1) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    int64_t n = std::accumulate(dims.begin(), dims.end(), int64_t{1}, std::multiplies<>());
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = u(rng);
    *g()->add_initializer() = float_tensor(name, dims, v);
  }
  void floats(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& v) {
    *g()->add_initializer() = float_tensor(name, dims, v);
  }
  void ints(const std::string& name, const std::vector<int64_t>& dims, const std::vector<int64_t>& v) {
    onnx::TensorProto t;
    t.set_name(name);
    t.set_data_type(onnx::TensorProto_DataType_INT64);
    for (int64_t d : dims) t.add_dims(d);
    for (int64_t x : v) t.add_int64_data(x);
    *g()->add_initializer() = t;
  }
  onnx::NodeProto* node(const std::string& op, const std::vector<std::string>& ins,
                        const std::vector<std::string>& outs) {
    auto* n = g()->add_node();
    *n = make_node(op, ins, outs, op + "_" + std::to_string(g()->node_size()));
    return n;
  }
  // x [n, c_in, h, w] -> 3x3 Conv (pads 1) -> [n, c_out, h, w]: a value
  // that reaches the next node in a blocked layout.
  void conv(const std::string& x, const std::string& y, int64_t c_in, int64_t c_out, uint32_t seed = 7) {
    weight(y + "_w", {c_out, c_in, 3, 3}, seed);
    weight(y + "_b", {c_out}, seed + 1);
    auto* n = node("Conv", {x, y + "_w", y + "_b"}, {y});
    ints_attr(n, "pads", {1, 1, 1, 1});
  }

  static void int_attr(onnx::NodeProto* n, const std::string& name, int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void float_attr(onnx::NodeProto* n, const std::string& name, float v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }
  static void ints_attr(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  static void floats_attr(onnx::NodeProto* n, const std::string& name, const std::vector<float>& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOATS);
    for (float x : v) a->add_floats(x);
  }
  static void string_attr(onnx::NodeProto* n, const std::string& name, const std::string& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v);
  }
};

// Runs `model` on cpu:0 and on the reference kernels with the same random
// inputs; every output must agree to 1e-4 relative to its largest reference
// magnitude; and `expected_fallbacks` nodes must have run on reference kernels
// (-1: any number). Returns the CPU session's summary.
ExecutionSummary check(Model& model, int expected_fallbacks = 0, uint64_t seed = 3) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string tag = fmt::format("cpu_mb_{}_{}", info->test_suite_name(), info->name());
  for (char& ch : tag)
    if (ch == '/') ch = '_';
  auto dir = temp_dir(tag);
  auto path = (dir / "model.onnx").string();
  write_model(model.m, path);
  Session cpu = Session::load(path, {}, SessionOptions{"cpu:0", false});
  Session ref = Session::load(path, {}, SessionOptions{"cpu:0", true});
  TensorMap inputs = ref.random_inputs(seed);
  TensorMap got = cpu.run(inputs), want = ref.run(inputs);
  EXPECT_EQ(got.size(), want.size());
  for (const auto& [name, w] : want) {
    EXPECT_EQ(got.count(name), 1u) << name;
    if (got.count(name) != 1) continue;
    const Tensor& c = got.at(name);
    EXPECT_EQ(c.shape(), w.shape()) << name;
    EXPECT_EQ(c.dtype(), DType::kFloat32) << name;
    if (c.shape() != w.shape() || c.dtype() != DType::kFloat32) continue;
    double max_diff = 0, max_ref = 0;
    for (int64_t i = 0; i < w.numel(); ++i) {
      double a = c.data<float>()[i], b = w.data<float>()[i];
      if (std::isnan(a) && std::isnan(b)) continue;
      max_diff = std::max(max_diff, std::isnan(a) || std::isnan(b) ? INFINITY : std::fabs(a - b));
      max_ref = std::max(max_ref, std::fabs(b));
    }
    EXPECT_LE(max_diff, 1e-4 * std::max(max_ref, 1e-30))
        << name << ": max |diff| " << max_diff << ", max |ref| " << max_ref;
  }
  const ExecutionSummary& s = cpu.summary();
  std::string why;
  for (const auto& f : s.fallbacks) why += "\n  " + f;
  if (expected_fallbacks >= 0) {
    EXPECT_EQ(s.n_fallbacks, expected_fallbacks) << "fallbacks:" << why;
  }
  if (!std::getenv("HETSCHED_KEEP_TEST_MODELS")) std::filesystem::remove_all(dir);
  return s;
}

// Reorders on cpu:0 of `x` [n, c_in, h, w] -> 3x3 Conv(s) -> graph outputs:
// what getting the input into, and the outputs out of, the Conv's layout
// costs. An op that keeps the blocked layout flowing adds none.
int conv_baseline_reorders(const std::vector<int64_t>& x, int64_t c_out, int n_convs) {
  Model m(13);
  m.input("x", x);
  for (int i = 0; i < n_convs; ++i) {
    std::string c = fmt::format("c{}", i);
    m.conv("x", c, x[1], c_out, 7 + 2 * i);
    m.output(c, {x[0], c_out, x[2], x[3]});
  }
  auto dir = temp_dir("cpu_mb_baseline");
  auto path = (dir / "model.onnx").string();
  write_model(m.m, path);
  int n = Session::load(path, {}, SessionOptions{"cpu:0", false}).summary().n_reorders;
  std::filesystem::remove_all(dir);
  return n;
}

// ---------------------------------------------------------------- Gemm

struct GemmCase {
  bool trans_a, trans_b;
  float alpha, beta;
  std::vector<int64_t> c_dims;  // empty: no C
  bool c_input = false;         // C a graph input instead of a constant
  bool b_input = false;         // B a graph input instead of a constant
  int fallbacks = 0;
};

class CpuGemm : public ::testing::TestWithParam<GemmCase> {};

TEST_P(CpuGemm, MatchesReference) {
  const GemmCase& p = GetParam();
  const int64_t M = 5, K = 24, N = 7;
  Model m(13);
  m.input("a", p.trans_a ? std::vector<int64_t>{K, M} : std::vector<int64_t>{M, K});
  std::vector<int64_t> b_dims = p.trans_b ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N};
  if (p.b_input) m.input("b", b_dims);
  else m.weight("b", b_dims);
  std::vector<std::string> ins = {"a", "b"};
  if (!p.c_dims.empty()) {
    if (p.c_input) m.input("c", p.c_dims);
    else m.weight("c", p.c_dims, 2);
    ins.push_back("c");
  }
  auto* n = m.node("Gemm", ins, {"y"});
  Model::int_attr(n, "transA", p.trans_a);
  Model::int_attr(n, "transB", p.trans_b);
  Model::float_attr(n, "alpha", p.alpha);
  Model::float_attr(n, "beta", p.beta);
  m.output("y", {M, N});
  check(m, p.fallbacks);
}

INSTANTIATE_TEST_SUITE_P(
    Variants, CpuGemm,
    ::testing::Values(GemmCase{false, true, 1.0f, 1.0f, {7}},                 // the classifier head
                      GemmCase{false, false, 1.0f, 1.0f, {}},                 // no C
                      GemmCase{true, false, 1.0f, 1.0f, {1, 7}},              // transA
                      GemmCase{true, true, 0.5f, 2.0f, {5, 1}},               // alpha, beta, [M, 1]
                      GemmCase{false, true, 1.0f, 0.25f, {5, 7}},             // full C scaled
                      GemmCase{false, false, 1.5f, 1.0f, {}},                 // alpha only
                      GemmCase{false, true, 1.0f, 1.0f, {}, false, true},     // B non-constant, transposed
                      GemmCase{true, false, 2.0f, 1.0f, {5, 7}, true, true},  // C non-constant
                      GemmCase{false, false, 1.0f, 3.0f, {7}, true, false, 1}));  // non-constant C, beta != 1

TEST(CpuGemmFusion, ReluFused) {
  Model m(13);
  m.input("a", {3, 16});
  m.weight("b", {10, 16});
  m.weight("c", {10}, 2);
  auto* n = m.node("Gemm", {"a", "b", "c"}, {"g"});
  Model::int_attr(n, "transB", 1);
  m.node("Relu", {"g"}, {"y"});
  m.output("y", {3, 10});
  ExecutionSummary s = check(m);
  EXPECT_EQ(s.n_fused_nodes, 1);
}

// ---------------------------------------------------------------- MatMul

struct MatMulCase {
  std::vector<int64_t> a, b, y;
  bool b_constant;
};

class CpuMatMul : public ::testing::TestWithParam<MatMulCase> {};

TEST_P(CpuMatMul, MatchesReference) {
  const MatMulCase& p = GetParam();
  Model m(13);
  m.input("a", p.a);
  if (p.b_constant) m.weight("b", p.b);
  else m.input("b", p.b);
  m.node("MatMul", {"a", "b"}, {"y"});
  m.output("y", p.y);
  check(m);
}

INSTANTIATE_TEST_SUITE_P(
    Variants, CpuMatMul,
    ::testing::Values(MatMulCase{{6, 20}, {20, 9}, {6, 9}, true},
                      MatMulCase{{3, 5, 20}, {20, 9}, {3, 5, 9}, true},            // batch folded into M
                      MatMulCase{{2, 3, 5, 8}, {2, 3, 8, 6}, {2, 3, 5, 6}, false},  // attention-like
                      MatMulCase{{1, 5, 8}, {4, 8, 6}, {4, 5, 6}, false},           // A broadcast
                      MatMulCase{{2, 1, 5, 8}, {3, 8, 6}, {2, 3, 5, 6}, true},      // both broadcast
                      MatMulCase{{4, 5, 8}, {1, 8, 6}, {4, 5, 6}, false},           // B's batch of 1
                      MatMulCase{{8}, {8, 6}, {6}, true},                           // vector A
                      MatMulCase{{3, 5, 8}, {8}, {3, 5}, false},                    // vector B
                      MatMulCase{{8}, {8}, {}, false}));                            // dot product

TEST(CpuMatMulFusion, BiasAndActivation) {
  Model m(13);
  m.input("x", {2, 4, 16});
  m.weight("w", {16, 12});
  m.weight("bias", {12}, 2);
  m.node("MatMul", {"x", "w"}, {"mm"});
  m.node("Add", {"bias", "mm"}, {"biased"});  // the bias first
  m.node("Tanh", {"biased"}, {"y"});
  m.output("y", {2, 4, 12});
  ExecutionSummary s = check(m);
  EXPECT_EQ(s.n_fused_nodes, 2);
  EXPECT_EQ(s.n_steps, 1);
}

// The profiler's and schedulers' view of the same rule.
TEST(CpuMatMulFusion, FusionGroupMatchesTheLowering) {
  Model m(13);
  m.input("x", {2, 4, 16});
  m.weight("w", {16, 12});
  m.weight("bias", {12}, 2);
  m.weight("w2", {12, 8}, 3);
  m.node("MatMul", {"x", "w"}, {"mm"});
  m.node("Add", {"mm", "bias"}, {"biased"});
  m.node("Relu", {"biased"}, {"r"});
  m.ints("shape", {2}, {8, 12});
  m.node("Reshape", {"r", "shape"}, {"flat"});
  m.node("Gemm", {"flat", "w2"}, {"g"});
  m.node("Sigmoid", {"g"}, {"y"});
  m.output("y", {8, 8});
  auto dir = temp_dir("cpu_mb_fusion_group");
  auto path = (dir / "model.onnx").string();
  write_model(m.m, path);
  Session s = Session::load(path, {}, SessionOptions{"cpu:0", true});
  const Graph& g = s.graph();
  auto ops = [&](NodeId head) {
    std::vector<std::string> v;
    for (NodeId n : cpu::fusion_group(g, head)) v.push_back(g.nodes[n].op_type);
    return v;
  };
  NodeId matmul = kNoNode, gemm = kNoNode, add = kNoNode;
  for (NodeId n = 0; n < static_cast<NodeId>(g.nodes.size()); ++n) {
    if (g.nodes[n].op_type == "MatMul") matmul = n;
    if (g.nodes[n].op_type == "Gemm") gemm = n;
    if (g.nodes[n].op_type == "Add") add = n;
  }
  ASSERT_NE(matmul, kNoNode);
  ASSERT_NE(gemm, kNoNode);
  EXPECT_EQ(ops(matmul), (std::vector<std::string>{"MatMul", "Add", "Relu"}));
  EXPECT_EQ(ops(gemm), (std::vector<std::string>{"Gemm", "Sigmoid"}));
  EXPECT_EQ(ops(add), (std::vector<std::string>{"Add"}));
  std::filesystem::remove_all(dir);
  ExecutionSummary summary = check(m);
  EXPECT_EQ(summary.n_fused_nodes, 3);
}

TEST(CpuMatMulFusion, BiasOnBatchedProduct) {
  Model m(13);
  m.input("x", {2, 3, 4, 8});
  m.input("w", {2, 3, 8, 5});
  m.weight("bias", {1, 5}, 2);
  m.node("MatMul", {"x", "w"}, {"mm"});
  m.node("Add", {"mm", "bias"}, {"y"});
  m.output("y", {2, 3, 4, 5});
  ExecutionSummary s = check(m);
  EXPECT_EQ(s.n_fused_nodes, 1);
}

TEST(CpuMatMulFusion, NoFusionWhenTheProductIsReadTwice) {
  Model m(13);
  m.input("x", {4, 8});
  m.weight("w", {8, 6});
  m.weight("bias", {6}, 2);
  m.node("MatMul", {"x", "w"}, {"mm"});
  m.node("Add", {"mm", "bias"}, {"y"});
  m.node("Mul", {"mm", "mm"}, {"z"});
  m.output("y", {4, 6});
  m.output("z", {4, 6});
  ExecutionSummary s = check(m);
  EXPECT_EQ(s.n_fused_nodes, 0);
}

TEST(CpuMatMulFusion, FullSizeAddIsNotABias) {
  Model m(13);
  m.input("x", {4, 8});
  m.weight("w", {8, 6});
  m.weight("c", {4, 6}, 2);
  m.node("MatMul", {"x", "w"}, {"mm"});
  m.node("Add", {"mm", "c"}, {"y"});
  m.output("y", {4, 6});
  ExecutionSummary s = check(m);
  EXPECT_EQ(s.n_fused_nodes, 0);
}

TEST(CpuMatMul, BlockedInputFromConv) {
  Model m(13);
  m.input("x", {1, 3, 6, 6});
  m.conv("x", "c", 3, 16);
  m.weight("w", {6, 5});
  m.node("MatMul", {"c", "w"}, {"y"});
  m.output("y", {1, 16, 6, 5});
  check(m);
}

// ---------------------------------------------------------------- binary

struct BinaryCase {
  std::string op;
  std::vector<int64_t> a, b, y;
  bool b_constant = false;
  int fallbacks = 0;
};

class CpuBinary : public ::testing::TestWithParam<BinaryCase> {};

TEST_P(CpuBinary, MatchesReference) {
  const BinaryCase& p = GetParam();
  Model m(13);
  m.input("a", p.a);
  if (p.b_constant) m.weight("b", p.b, 5);
  else m.input("b", p.b);
  m.node(p.op, {"a", "b"}, {"y"});
  m.output("y", p.y);
  check(m, p.fallbacks);
}

INSTANTIATE_TEST_SUITE_P(
    Variants, CpuBinary,
    ::testing::Values(BinaryCase{"Add", {2, 3, 4, 5}, {2, 3, 4, 5}, {2, 3, 4, 5}},
                      BinaryCase{"Sub", {2, 3, 4, 5}, {5}, {2, 3, 4, 5}},
                      BinaryCase{"Sub", {3, 1, 5}, {2, 3, 4, 5}, {2, 3, 4, 5}},  // -(b - a)
                      BinaryCase{"Mul", {4, 1}, {2, 3, 4, 5}, {2, 3, 4, 5}, true},  // swapped
                      BinaryCase{"Div", {2, 3, 4, 5}, {}, {2, 3, 4, 5}, true},      // by a scalar
                      BinaryCase{"Div", {2, 3, 4, 5}, {3, 1, 1}, {2, 3, 4, 5}},
                      BinaryCase{"Max", {6, 7}, {6, 7}, {6, 7}},
                      BinaryCase{"Min", {6, 7}, {1, 7}, {6, 7}, true},
                      BinaryCase{"Add", {}, {}, {}},                                // scalars
                      BinaryCase{"Div", {5}, {2, 3, 4, 5}, {2, 3, 4, 5}, false, 1},  // broadcast dividend
                      BinaryCase{"Add", {3, 1}, {1, 4}, {3, 4}, false, 1}));        // both expand

TEST(CpuBinary, SameShapeBlockedInputs) {
  Model m(13);
  m.input("x", {1, 3, 8, 8});
  m.conv("x", "c1", 3, 16, 7);
  m.conv("x", "c2", 3, 16, 9);
  m.node("Mul", {"c1", "c2"}, {"p"});
  m.node("Sub", {"p", "c1"}, {"y"});
  m.output("y", {1, 16, 8, 8});
  ExecutionSummary s = check(m);
  // The input into the Convs' layout, the output out of it.
  EXPECT_LE(s.n_reorders, conv_baseline_reorders({1, 3, 8, 8}, 16, 1));
}

TEST(CpuBinary, ChannelBroadcastOnBlockedInput) {
  Model m(13);
  m.input("x", {2, 3, 8, 8});
  m.input("s", {2, 24, 1, 1});
  m.conv("x", "c", 3, 24);
  m.weight("k", {24, 1, 1}, 4);
  m.node("Mul", {"c", "s"}, {"p"});       // an SE-block's scale
  m.node("Add", {"k", "p"}, {"q"});       // broadcast first, swapped
  m.node("Sub", {"k", "q"}, {"y"});       // broadcast first: -(q - k)
  m.output("y", {2, 24, 8, 8});
  check(m);
}

TEST(CpuBinary, ConstantFirstTakesTheOtherInputsLayout) {
  Model m(13);
  m.input("x", {1, 3, 8, 8});
  m.conv("x", "c", 3, 16);
  m.weight("k", {1, 16, 8, 8}, 4);
  m.node("Div", {"k", "c"}, {"y"});
  m.output("y", {1, 16, 8, 8});
  check(m);
}

// A bias first, of lower rank, beside an input that differs from it only in
// leading 1s: a transformer's bias Add at batch 1 and sequence length 1.
TEST(CpuBinary, LowerRankConstantFirstBesideLeadingOnes) {
  Model m(13);
  m.input("x", {1, 1, 8});
  m.weight("k", {8}, 4);
  m.node("Add", {"k", "x"}, {"y"});
  m.output("y", {1, 1, 8});
  check(m);
}

TEST(CpuBinary, MaxOfThreeFallsBack) {
  Model m(13);
  m.input("a", {4, 5});
  m.input("b", {4, 5});
  m.input("c", {4, 5});
  m.node("Max", {"a", "b", "c"}, {"y"});
  m.output("y", {4, 5});
  check(m, 1);
}

struct PowCase {
  float exponent;
  bool int_exponent;
};

class CpuPow : public ::testing::TestWithParam<PowCase> {};

TEST_P(CpuPow, ConstantScalarExponent) {
  Model m(13);
  m.input("x", {3, 4, 5});
  if (GetParam().int_exponent) m.ints("e", {}, {static_cast<int64_t>(GetParam().exponent)});
  else m.floats("e", {}, {GetParam().exponent});
  m.node("Pow", {"x", "e"}, {"y"});
  m.output("y", {3, 4, 5});
  check(m);
}

INSTANTIATE_TEST_SUITE_P(Exponents, CpuPow,
                         ::testing::Values(PowCase{2.0f, false}, PowCase{3.0f, false}, PowCase{3.0f, true},
                                           PowCase{-1.0f, false}, PowCase{0.5f, false}, PowCase{1.7f, false}));

TEST(CpuPow, TensorExponentFallsBack) {
  Model m(13);
  m.input("x", {3, 4});
  m.input("e", {3, 4});
  m.node("Pow", {"x", "e"}, {"y"});
  m.output("y", {3, 4});
  check(m, 1);
}

// ---------------------------------------------------------------- ConvTranspose

struct DeconvCase {
  std::vector<int64_t> x, w;
  int64_t group;
  std::vector<int64_t> strides, pads, output_padding, dilations, output_shape;
  std::string auto_pad;
  bool bias;
  std::vector<int64_t> y;
};

class CpuConvTranspose : public ::testing::TestWithParam<DeconvCase> {};

TEST_P(CpuConvTranspose, MatchesReference) {
  const DeconvCase& p = GetParam();
  Model m(13);
  m.input("x", p.x);
  m.weight("w", p.w);
  std::vector<std::string> ins = {"x", "w"};
  if (p.bias) {
    m.weight("bias", {p.w[1] * p.group}, 2);
    ins.push_back("bias");
  }
  auto* n = m.node("ConvTranspose", ins, {"y"});
  if (p.group != 1) Model::int_attr(n, "group", p.group);
  if (!p.strides.empty()) Model::ints_attr(n, "strides", p.strides);
  if (!p.pads.empty()) Model::ints_attr(n, "pads", p.pads);
  if (!p.output_padding.empty()) Model::ints_attr(n, "output_padding", p.output_padding);
  if (!p.dilations.empty()) Model::ints_attr(n, "dilations", p.dilations);
  if (!p.output_shape.empty()) Model::ints_attr(n, "output_shape", p.output_shape);
  if (!p.auto_pad.empty()) Model::string_attr(n, "auto_pad", p.auto_pad);
  m.output("y", p.y);
  check(m);
}

INSTANTIATE_TEST_SUITE_P(
    Variants, CpuConvTranspose,
    ::testing::Values(
        DeconvCase{{1, 4, 5, 5}, {4, 3, 3, 3}, 1, {}, {}, {}, {}, {}, "", true, {1, 3, 7, 7}},
        DeconvCase{{2, 4, 5, 5}, {4, 3, 3, 3}, 1, {2, 2}, {1, 1, 1, 1}, {1, 1}, {}, {}, "", true, {2, 3, 10, 10}},
        DeconvCase{{1, 4, 5, 6}, {4, 3, 3, 3}, 1, {2, 2}, {0, 0, 0, 0}, {1, 1}, {}, {}, "", false, {1, 3, 12, 14}},
        DeconvCase{{1, 6, 5, 5}, {6, 2, 3, 3}, 3, {2, 1}, {1, 0, 0, 1}, {}, {}, {}, "", true, {1, 6, 10, 6}},
        DeconvCase{{1, 4, 5, 5}, {4, 2, 3, 3}, 1, {1, 1}, {}, {}, {2, 2}, {}, "", true, {1, 2, 9, 9}},
        DeconvCase{{1, 4, 5, 5}, {4, 2, 4, 4}, 1, {2, 2}, {}, {}, {}, {}, "SAME_UPPER", true, {1, 2, 10, 10}},
        DeconvCase{{1, 4, 5, 5}, {4, 2, 3, 3}, 1, {2, 2}, {}, {}, {}, {}, "SAME_LOWER", false, {1, 2, 10, 10}},
        DeconvCase{{1, 4, 5, 5}, {4, 2, 3, 3}, 1, {2, 2}, {}, {}, {}, {10, 10}, "", true, {1, 2, 10, 10}},
        DeconvCase{{1, 32, 6, 6}, {32, 24, 3, 3}, 2, {2, 2}, {1, 1, 1, 1}, {1, 1}, {}, {}, "", true, {1, 48, 12, 12}},
        // depthwise
        DeconvCase{{1, 64, 4, 4}, {64, 1, 4, 4}, 64, {2, 2}, {1, 1, 1, 1}, {}, {}, {}, "", true, {1, 64, 8, 8}},
        DeconvCase{{1, 4, 7}, {4, 5, 3}, 1, {3}, {1, 2}, {}, {}, {}, "", true, {1, 5, 18}},           // 1-D
        DeconvCase{{1, 4, 3, 4, 3}, {4, 2, 2, 2, 2}, 2, {2, 2, 2}, {}, {}, {}, {}, "", true, {1, 4, 6, 8, 6}}));  // 3-D

// W a graph input: reordered into the primitive's layout at each run.
TEST(CpuConvTranspose, NonConstantWeights) {
  for (int64_t group : {1, 2}) {
    Model m(13);
    m.input("x", {1, 4, 5, 5});
    m.input("w", {4, 3, 3, 3});
    auto* n = m.node("ConvTranspose", {"x", "w"}, {"y"});
    Model::ints_attr(n, "strides", {2, 2});
    Model::int_attr(n, "group", group);
    m.output("y", {1, 3 * group, 11, 11});
    check(m, 0);
  }
}

// A grouped layout with blocked channels: W non-constant may not be describable.
TEST(CpuConvTranspose, NonConstantGroupedBlockedWeights) {
  Model m(13);
  m.input("x", {1, 32, 6, 6});
  m.input("w", {32, 24, 3, 3});
  auto* n = m.node("ConvTranspose", {"x", "w"}, {"y"});
  Model::int_attr(n, "group", 2);
  m.output("y", {1, 48, 8, 8});
  ExecutionSummary s = check(m, -1);
  EXPECT_LE(s.n_fallbacks, 1);
}

TEST(CpuConvTranspose, BlockedInputFromConv) {
  Model m(13);
  m.input("x", {1, 3, 6, 6});
  m.conv("x", "c", 3, 16);
  m.weight("w", {16, 8, 2, 2});
  auto* n = m.node("ConvTranspose", {"c", "w"}, {"y"});
  Model::ints_attr(n, "strides", {2, 2});
  m.output("y", {1, 8, 12, 12});
  check(m);
}

// A ConvTranspose to 8 channels tends to produce a padded blocked layout
// (8 of 16 channels): every op downstream must read it right.
TEST(CpuConvTranspose, PaddedBlockedOutputFlowsOn) {
  Model m(13);
  m.input("x", {2, 4, 5, 5});
  m.input("s", {2, 8, 1, 1});
  m.weight("w", {4, 8, 2, 2});
  m.weight("k", {8, 1, 1}, 3);
  auto* n = m.node("ConvTranspose", {"x", "w"}, {"d"});
  Model::ints_attr(n, "strides", {2, 2});
  m.node("Mul", {"d", "s"}, {"p"});
  m.node("Add", {"p", "d"}, {"q"});
  m.node("Sub", {"k", "q"}, {"r"});
  auto* t = m.node("Transpose", {"r"}, {"t"});
  Model::ints_attr(t, "perm", {0, 3, 1, 2});
  auto* mean = m.node("ReduceMean", {"q"}, {"mean"});
  Model::ints_attr(mean, "axes", {2, 3});
  auto* up = m.node("Resize", {"q", "", "scales"}, {"up"});
  m.floats("scales", {4}, {1, 1, 2, 2});
  Model::string_attr(up, "mode", "nearest");
  Model::string_attr(up, "coordinate_transformation_mode", "asymmetric");
  Model::string_attr(up, "nearest_mode", "floor");
  m.output("t", {2, 10, 8, 10});
  m.output("mean", {2, 8, 1, 1});
  m.output("up", {2, 8, 20, 20});
  check(m);
}

// ---------------------------------------------------------------- Transpose

struct TransposeCase {
  std::vector<int64_t> x, perm, y;
};

class CpuTranspose : public ::testing::TestWithParam<TransposeCase> {};

TEST_P(CpuTranspose, MatchesReference) {
  const TransposeCase& p = GetParam();
  Model m(13);
  m.input("x", p.x);
  auto* n = m.node("Transpose", {"x"}, {"y"});
  if (!p.perm.empty()) Model::ints_attr(n, "perm", p.perm);
  m.output("y", p.y);
  check(m);
}

INSTANTIATE_TEST_SUITE_P(Variants, CpuTranspose,
                         ::testing::Values(TransposeCase{{2, 3, 4, 5}, {0, 2, 3, 1}, {2, 4, 5, 3}},
                                           TransposeCase{{2, 3, 4}, {}, {4, 3, 2}},  // default: reversed
                                           TransposeCase{{2, 16, 3, 8}, {0, 2, 1, 3}, {2, 3, 16, 8}},
                                           TransposeCase{{7, 9}, {1, 0}, {9, 7}},
                                           TransposeCase{{1, 5, 1, 6}, {2, 1, 0, 3}, {1, 5, 1, 6}}));  // a view

TEST(CpuTranspose, BlockedInputFromConv) {
  Model m(13);
  m.input("x", {2, 3, 5, 5});
  m.conv("x", "c", 3, 16);
  auto* n = m.node("Transpose", {"c"}, {"y"});
  Model::ints_attr(n, "perm", {0, 2, 3, 1});
  m.output("y", {2, 5, 5, 16});
  ExecutionSummary s = check(m);
  // Straight from the Conv's layout into the plain output.
  EXPECT_LE(s.n_reorders, std::max(0, conv_baseline_reorders({2, 3, 5, 5}, 16, 1) - 1));
}

TEST(CpuTranspose, SizeOneMovesAreViews) {
  Model m(13);
  m.input("x", {3, 1, 4});
  m.node("Transpose", {"x"}, {"t"});  // [4, 1, 3]: moves bytes
  auto* n = m.node("Transpose", {"x"}, {"v"});
  Model::ints_attr(n, "perm", {1, 0, 2});  // [1, 3, 4]: same bytes
  m.node("Mul", {"v", "v"}, {"y"});
  m.output("t", {4, 1, 3});
  m.output("y", {1, 3, 4});
  ExecutionSummary s = check(m);
  EXPECT_EQ(s.n_steps, 2);  // the Transpose 't' and the Mul
}

// ---------------------------------------------------------------- reductions

struct ReduceCase {
  std::string op;
  int64_t opset;
  std::vector<int64_t> x;
  std::vector<int64_t> axes;  // empty: none given
  bool axes_as_input;
  int64_t keepdims;
  std::vector<int64_t> y;
  int fallbacks = 0;
  int64_t noop = 0;
};

class CpuReduce : public ::testing::TestWithParam<ReduceCase> {};

TEST_P(CpuReduce, MatchesReference) {
  const ReduceCase& p = GetParam();
  Model m(p.opset);
  m.input("x", p.x);
  std::vector<std::string> ins = {"x"};
  if (p.axes_as_input && !p.axes.empty()) {
    m.ints("axes", {static_cast<int64_t>(p.axes.size())}, p.axes);
    ins.push_back("axes");
  }
  auto* n = m.node(p.op, ins, {"y"});
  if (!p.axes_as_input && !p.axes.empty()) Model::ints_attr(n, "axes", p.axes);
  Model::int_attr(n, "keepdims", p.keepdims);
  if (p.noop) Model::int_attr(n, "noop_with_empty_axes", p.noop);
  m.output("y", p.y);
  check(m, p.fallbacks);
}

INSTANTIATE_TEST_SUITE_P(
    Variants, CpuReduce,
    ::testing::Values(ReduceCase{"ReduceMean", 13, {2, 3, 4, 5}, {2, 3}, false, 1, {2, 3, 1, 1}},
                      ReduceCase{"ReduceMean", 13, {4, 16, 32}, {-1}, false, 1, {4, 16, 1}},  // LayerNorm-like
                      ReduceCase{"ReduceMean", 13, {6, 5, 7}, {0}, false, 0, {5, 7}},        // outermost
                      ReduceCase{"ReduceSum", 13, {2, 3, 4, 5}, {1}, true, 0, {2, 4, 5}},     // axes input, middle
                      ReduceCase{"ReduceSum", 11, {2, 1, 3, 4, 5}, {1, 2, 3}, false, 1, {2, 1, 1, 1, 5}},
                      ReduceCase{"ReduceSum", 13, {2, 3, 4}, {}, true, 0, {}},                // everything
                      ReduceCase{"ReduceMax", 13, {4, 8, 16}, {}, false, 0, {}},
                      ReduceCase{"ReduceMin", 13, {3, 300, 1}, {-2}, false, 1, {3, 1, 1}},
                      // oneDNN has only a slow reference loop for the norms.
                      ReduceCase{"ReduceL2", 13, {3, 2, 20, 20}, {2, 3}, false, 0, {3, 2}, 1},
                      // The reference kernel is faster, or oneDNN has no fast kernel.
                      ReduceCase{"ReduceMax", 13, {2, 3, 4, 5}, {-1}, false, 1, {2, 3, 4, 1}, 1},
                      ReduceCase{"ReduceSum", 11, {2, 3, 4, 5}, {0, 2}, false, 0, {3, 5}, 1},
                      ReduceCase{"ReduceProd", 13, {3, 4, 5}, {1}, false, 1, {3, 1, 5}, 1},
                      ReduceCase{"ReduceSum", 13, {2, 3}, {}, true, 1, {2, 3}, 1, 1}));  // noop: identity

TEST(CpuReduce, ProdOfValuesNearOne) {
  Model m(13);
  m.input("x", {2, 1, 300});
  m.floats("scale", {}, {0.01f});
  m.floats("one", {}, {1.0f});
  m.node("Mul", {"x", "scale"}, {"s"});
  m.node("Add", {"s", "one"}, {"t"});  // in [0.99, 1.01)
  auto* n = m.node("ReduceProd", {"t"}, {"y"});
  Model::ints_attr(n, "axes", {1, 2});
  Model::int_attr(n, "keepdims", 0);
  m.output("y", {2});
  check(m);
}

TEST(CpuReduce, BlockedInputFromConv) {
  Model m(13);
  m.input("x", {2, 3, 6, 6});
  m.conv("x", "c", 3, 24);
  auto* n = m.node("ReduceMean", {"c"}, {"r"});
  Model::ints_attr(n, "axes", {2, 3});
  m.node("Mul", {"r", "r"}, {"y"});
  m.ints("axis1", {1}, {1});
  auto* k = m.node("ReduceSum", {"c", "axis1"}, {"z"});
  Model::int_attr(k, "keepdims", 0);
  auto* mx = m.node("ReduceMax", {"c"}, {"w"});
  Model::ints_attr(mx, "axes", {2, 3});
  Model::int_attr(mx, "keepdims", 0);
  m.output("y", {2, 24, 1, 1});
  m.output("z", {2, 6, 6});
  m.output("w", {2, 24});
  check(m);
}

// ---------------------------------------------------------------- Resize / Upsample

struct ResizeCase {
  int64_t opset;
  std::string mode, transform, nearest_mode;
  std::vector<int64_t> x;
  std::vector<float> scales;   // Resize scales input (or Upsample's)
  std::vector<int64_t> sizes;  // Resize sizes input
  std::vector<int64_t> y;
  int fallbacks = 0;
};

class CpuResize : public ::testing::TestWithParam<ResizeCase> {};

TEST_P(CpuResize, MatchesReference) {
  const ResizeCase& p = GetParam();
  Model m(p.opset);
  m.input("x", p.x);
  std::vector<std::string> ins = {"x"};
  if (p.opset < 11) {
    m.floats("scales", {static_cast<int64_t>(p.scales.size())}, p.scales);
    ins.push_back("scales");
  } else {
    ins.push_back("");  // roi
    if (!p.sizes.empty()) {
      ins.push_back("");
      m.ints("sizes", {static_cast<int64_t>(p.sizes.size())}, p.sizes);
      ins.push_back("sizes");
    } else {
      m.floats("scales", {static_cast<int64_t>(p.scales.size())}, p.scales);
      ins.push_back("scales");
    }
  }
  auto* n = m.node("Resize", ins, {"y"});
  Model::string_attr(n, "mode", p.mode);
  if (!p.transform.empty()) Model::string_attr(n, "coordinate_transformation_mode", p.transform);
  if (!p.nearest_mode.empty()) Model::string_attr(n, "nearest_mode", p.nearest_mode);
  m.output("y", p.y);
  check(m, p.fallbacks);
}

INSTANTIATE_TEST_SUITE_P(
    Variants, CpuResize,
    ::testing::Values(
        ResizeCase{13, "nearest", "asymmetric", "floor", {1, 3, 4, 5}, {1, 1, 2, 2}, {}, {1, 3, 8, 10}},
        ResizeCase{13, "nearest", "asymmetric", "floor", {1, 3, 4, 5}, {1, 1, 3, 2}, {}, {1, 3, 12, 10}},
        ResizeCase{13, "nearest", "half_pixel", "round_prefer_floor", {1, 3, 4, 5}, {1, 1, 2, 2}, {}, {1, 3, 8, 10}},
        ResizeCase{13, "linear", "half_pixel", "", {1, 3, 4, 5}, {1, 1, 2, 2}, {}, {1, 3, 8, 10}},
        ResizeCase{13, "linear", "pytorch_half_pixel", "", {2, 3, 4, 5}, {}, {2, 3, 7, 9}, {2, 3, 7, 9}},
        ResizeCase{13, "linear", "half_pixel", "", {1, 2, 6}, {}, {1, 2, 4}, {1, 2, 4}},  // 1-D downsampling
        ResizeCase{13, "linear", "half_pixel", "", {1, 2, 3, 4, 4}, {1, 1, 2, 2, 2}, {}, {1, 2, 6, 8, 8}},  // 3-D
        ResizeCase{10, "nearest", "", "", {1, 3, 4, 5}, {1, 1, 2, 3}, {}, {1, 3, 8, 15}},  // Resize-10
        // oneDNN cannot do these exactly: fall back.
        ResizeCase{13, "linear", "align_corners", "", {1, 3, 4, 5}, {1, 1, 2, 2}, {}, {1, 3, 8, 10}, 1},
        ResizeCase{13, "linear", "asymmetric", "", {1, 3, 4, 5}, {1, 1, 2, 2}, {}, {1, 3, 8, 10}, 1},
        ResizeCase{13, "nearest", "asymmetric", "floor", {1, 3, 4, 5}, {1, 1, 1.5f, 1.5f}, {}, {1, 3, 6, 7}, 1},
        ResizeCase{13, "linear", "pytorch_half_pixel", "", {1, 3, 4, 5}, {}, {1, 3, 1, 9}, {1, 3, 1, 9}, 1},
        ResizeCase{13, "nearest", "asymmetric", "floor", {1, 3, 4, 5}, {1, 2, 2, 2}, {}, {1, 6, 8, 10}, 1}));

TEST(CpuResize, UpsampleOnBlockedInput) {
  Model m(9);
  m.input("x", {1, 3, 5, 5});
  m.conv("x", "c", 3, 16);
  m.floats("scales", {4}, {1, 1, 2, 2});
  auto* n = m.node("Upsample", {"c", "scales"}, {"y"});
  Model::string_attr(n, "mode", "nearest");
  m.output("y", {1, 16, 10, 10});
  ExecutionSummary s = check(m);
  EXPECT_LE(s.n_reorders, conv_baseline_reorders({1, 3, 5, 5}, 16, 1));
}

}  // namespace
}  // namespace hetsched
