// Load-time optimisations change the graph, never the outputs.
#include <cmath>
#include <fstream>
#include <map>

#include <gtest/gtest.h>

#include "graph/onnx_export.h"
#include "hetsched/session.h"
#include "onnx_model_util.h"

namespace hetsched {
namespace {

using namespace hetsched::testing;

std::vector<float> ramp(size_t n, float scale, float offset) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = offset + scale * static_cast<float>((i * 37) % 17) / 17.0f;
  return v;
}

void add_attr_ints(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& values) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
}

// x[1,2,5,5] -> Conv -> BN -> Relu -> Identity -> Reshape(shape computed
// from Shape(x)...) -> Dropout -> y
onnx::ModelProto conv_bn_model() {
  onnx::ModelProto m = make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto_DataType_FLOAT, {1, 2, 5, 5});
  *g->add_output() = tensor_info("y", onnx::TensorProto_DataType_FLOAT, {1, 75});
  *g->add_initializer() = float_tensor("w", {3, 2, 3, 3}, ramp(54, 1.0f, -0.5f));
  *g->add_initializer() = float_tensor("b", {3}, {0.1f, -0.2f, 0.3f});
  *g->add_initializer() = float_tensor("scale", {3}, {1.5f, 0.5f, 2.0f});
  *g->add_initializer() = float_tensor("beta", {3}, {0.0f, 0.1f, -0.1f});
  *g->add_initializer() = float_tensor("mean", {3}, {0.2f, -0.3f, 0.0f});
  *g->add_initializer() = float_tensor("var", {3}, {1.0f, 0.25f, 4.0f});
  auto* conv = g->add_node();
  *conv = make_node("Conv", {"x", "w", "b"}, {"c"}, "conv");
  add_attr_ints(conv, "pads", {1, 1, 1, 1});
  *g->add_node() = make_node("BatchNormalization", {"c", "scale", "beta", "mean", "var"}, {"bn"}, "bn");
  *g->add_node() = make_node("Relu", {"bn"}, {"r"}, "relu");
  *g->add_node() = make_node("Identity", {"r"}, {"i"}, "identity");
  // Shape(x)[0] concatenated with -1 -> [1, -1]
  onnx::TensorProto zero;
  zero.set_name("zero");
  zero.set_data_type(onnx::TensorProto_DataType_INT64);
  zero.add_int64_data(0);
  *g->add_initializer() = zero;
  onnx::TensorProto minus_one;
  minus_one.set_name("minus_one");
  minus_one.set_data_type(onnx::TensorProto_DataType_INT64);
  minus_one.add_dims(1);
  minus_one.add_int64_data(-1);
  *g->add_initializer() = minus_one;
  onnx::TensorProto axes0 = minus_one;
  axes0.set_name("axes0");
  axes0.set_int64_data(0, 0);
  *g->add_initializer() = axes0;
  *g->add_node() = make_node("Shape", {"x"}, {"shape"}, "shape");
  *g->add_node() = make_node("Gather", {"shape", "zero"}, {"batch"}, "gather");
  *g->add_node() = make_node("Unsqueeze", {"batch", "axes0"}, {"batch1"}, "unsqueeze");
  auto* concat = g->add_node();
  *concat = make_node("Concat", {"batch1", "minus_one"}, {"new_shape"}, "concat");
  auto* axis = concat->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(0);
  *g->add_node() = make_node("Reshape", {"i", "new_shape"}, {"flat"}, "reshape");
  *g->add_node() = make_node("Dropout", {"flat"}, {"y"}, "dropout");
  return m;
}

class OptimizeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = temp_dir("optimize");
    path_ = (dir_ / "conv_bn.onnx").string();
    write_model(conv_bn_model(), path_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
  std::string path_;
};

TEST_F(OptimizeTest, FoldsBatchNormIdentityAndShapeArithmetic) {
  Graph plain = load_model(path_, {.optimize = false});
  Graph optimized = load_model(path_);
  EXPECT_EQ(plain.nodes.size(), 10u);
  // Left: Conv (with BN folded in), Relu, Reshape (shape now constant).
  std::vector<std::string> ops;
  for (const Node& n : optimized.nodes) ops.push_back(n.op_type);
  EXPECT_EQ(ops, std::vector<std::string>({"Conv", "Relu", "Reshape"}));
  // The graph output keeps its name.
  EXPECT_EQ(optimized.values[optimized.outputs[0]].name, "y");
}

TEST_F(OptimizeTest, SameOutputsAsUnoptimised) {
  Session plain(load_model(path_, {.optimize = false}));
  Session optimized = Session::load(path_);
  TensorMap inputs = plain.random_inputs(7);
  Tensor a = plain.run(inputs).at("y");
  Tensor b = optimized.run(inputs).at("y");
  ASSERT_EQ(a.shape(), Shape({1, 75}));
  ASSERT_EQ(b.shape(), a.shape());
  double max_diff = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    max_diff = std::max(max_diff, static_cast<double>(std::fabs(a.data<float>()[i] - b.data<float>()[i])));
  EXPECT_LT(max_diff, 1e-5);
  // Nonzero output: the comparison is not trivially between zeros.
  double sum = 0;
  for (int64_t i = 0; i < a.numel(); ++i) sum += std::fabs(a.data<float>()[i]);
  EXPECT_GT(sum, 1.0);
}

}  // namespace
}  // namespace hetsched

namespace hetsched {
namespace {

using namespace hetsched::testing;

onnx::TensorProto int64_tensor(const std::string& name, const std::vector<int64_t>& dims,
                               const std::vector<int64_t>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto_DataType_INT64);
  for (int64_t d : dims) t.add_dims(d);
  for (int64_t v : values) t.add_int64_data(v);
  return t;
}

// x[2,6] -> Slice(x, 0, Shape(x)[1] / 2, axis 1): the slice's end is
// computed, so load-time inference cannot know y's shape; once the shape
// arithmetic is folded, it can.
TEST(RefineShapes, ComputedSliceBecomesStatic) {
  onnx::ModelProto m = make_model(13);
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto_DataType_FLOAT, {2, 6});
  *g->add_output() = tensor_info("y", onnx::TensorProto_DataType_FLOAT, {});
  g->mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim();
  g->mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim();
  *g->add_initializer() = int64_tensor("one", {}, {1});
  *g->add_initializer() = int64_tensor("two", {}, {2});
  *g->add_initializer() = int64_tensor("zero1", {1}, {0});
  *g->add_initializer() = int64_tensor("axes", {1}, {1});
  *g->add_node() = make_node("Shape", {"x"}, {"s"}, "shape");
  *g->add_node() = make_node("Gather", {"s", "one"}, {"n"}, "gather");
  *g->add_node() = make_node("Div", {"n", "two"}, {"half"}, "div");
  *g->add_node() = make_node("Unsqueeze", {"half", "zero1"}, {"end"}, "unsqueeze");
  *g->add_node() = make_node("Slice", {"x", "zero1", "end", "axes"}, {"y"}, "slice");
  auto dir = temp_dir("refine");
  write_model(m, dir / "m.onnx");
  Graph plain = load_model((dir / "m.onnx").string(), {.optimize = false});
  EXPECT_FALSE(plain.values[plain.outputs[0]].shape_is_static());
  Graph g2 = load_model((dir / "m.onnx").string());
  EXPECT_EQ(g2.values[g2.outputs[0]].shape, Shape({2, 3}));
  Session s(g2, SessionOptions{"cpu:0", false});
  EXPECT_TRUE(s.summary().note.empty()) << s.summary().note;
  Tensor x = Tensor::from_vector<float>({2, 6}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  EXPECT_EQ(s.run({{"x", x}}).at("y").to_double_vector(), std::vector<double>({0, 1, 2, 6, 7, 8}));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace hetsched

namespace hetsched {
namespace {

using namespace hetsched::testing;

// x[1,2,6,6] -> Pad(zeros, 1 on each spatial side) -> AveragePool 3x3 (no
// pads of its own: the explicit zeros are averaged in) and the same for a
// Conv. Both Pads fold into their consumer; outputs stay the same.
TEST(FoldPads, IntoAveragePoolAndConv) {
  onnx::ModelProto m = make_model(13);
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto_DataType_FLOAT, {1, 2, 6, 6});
  *g->add_output() = tensor_info("pooled", onnx::TensorProto_DataType_FLOAT, {1, 2, 6, 6});
  *g->add_output() = tensor_info("conv", onnx::TensorProto_DataType_FLOAT, {1, 3, 6, 6});
  onnx::TensorProto pads;
  pads.set_name("pads");
  pads.set_data_type(onnx::TensorProto_DataType_INT64);
  pads.add_dims(8);
  for (int64_t v : {0, 0, 1, 1, 0, 0, 1, 1}) pads.add_int64_data(v);
  *g->add_initializer() = pads;
  std::vector<float> w(3 * 2 * 3 * 3);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.1f * static_cast<float>(i % 7) - 0.3f;
  *g->add_initializer() = float_tensor("w", {3, 2, 3, 3}, w);
  *g->add_node() = make_node("Pad", {"x", "pads"}, {"p1"}, "pad_pool");
  auto* pool = g->add_node();
  *pool = make_node("AveragePool", {"p1"}, {"pooled"}, "pool");
  auto* k = pool->add_attribute();
  k->set_name("kernel_shape");
  k->set_type(onnx::AttributeProto::INTS);
  k->add_ints(3);
  k->add_ints(3);
  *g->add_node() = make_node("Pad", {"x", "pads"}, {"p2"}, "pad_conv");
  *g->add_node() = make_node("Conv", {"p2", "w"}, {"conv"}, "conv");
  auto dir = temp_dir("fold_pads");
  write_model(m, dir / "m.onnx");
  Graph plain = load_model((dir / "m.onnx").string(), {.optimize = false});
  Graph folded = load_model((dir / "m.onnx").string());
  std::filesystem::remove_all(dir);
  std::vector<std::string> ops;
  for (const Node& n : folded.nodes) ops.push_back(n.op_type);
  EXPECT_EQ(ops, std::vector<std::string>({"AveragePool", "Conv"}));
  TensorMap inputs = Session(plain, SessionOptions{"cpu:0", true}).random_inputs(3);
  TensorMap want = run_reference(plain, inputs);
  for (bool reference : {true, false}) {
    TensorMap got = Session(folded, SessionOptions{"cpu:0", reference}).run(inputs);
    for (const char* name : {"pooled", "conv"}) {
      auto a = got.at(name).to_double_vector(), b = want.at(name).to_double_vector();
      ASSERT_EQ(a.size(), b.size());
      for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5) << name << " " << i;
    }
  }
}

// x -> Dropout(x, ratio 0.5, training_mode = Constant node false) -> Relu: how
// PyTorch exports a Dropout (Swin's attention). It loads, is bypassed like an
// inference Dropout, and a Constant true is still refused.
TEST(RemoveIdentities, DropoutWithAConstantFalseTrainingModeNode) {
  auto dir = temp_dir("dropout_training_mode");
  for (bool training : {false, true}) {
    onnx::ModelProto m = make_model(13);
    auto* g = m.mutable_graph();
    *g->add_input() = tensor_info("x", onnx::TensorProto_DataType_FLOAT, {2, 3});
    *g->add_output() = tensor_info("y", onnx::TensorProto_DataType_FLOAT, {2, 3});
    *g->add_initializer() = float_tensor("ratio", {}, {0.5f});
    onnx::NodeProto mode = make_node("Constant", {}, {"mode"}, "mode");
    auto* value = mode.add_attribute();
    value->set_name("value");
    value->set_type(onnx::AttributeProto::TENSOR);
    value->mutable_t()->set_data_type(onnx::TensorProto_DataType_BOOL);
    value->mutable_t()->add_int32_data(training ? 1 : 0);
    *g->add_node() = mode;
    *g->add_node() = make_node("Dropout", {"x", "ratio", "mode"}, {"d"}, "dropout");
    *g->add_node() = make_node("Relu", {"d"}, {"y"}, "relu");
    write_model(m, dir / "m.onnx");
    if (training) {
      EXPECT_THROW(load_model((dir / "m.onnx").string()), Error);
      continue;
    }
    Graph graph = load_model((dir / "m.onnx").string());
    ASSERT_EQ(graph.nodes.size(), 1u);
    EXPECT_EQ(graph.nodes[0].op_type, "Relu");
    Tensor x = Tensor::from_vector<float>({2, 3}, {-1, 2, -3, 4, -5, 6});
    EXPECT_EQ(Session(graph, SessionOptions("cpu:0")).run({{"x", x}}).at("y").to_double_vector(),
              std::vector<double>({0, 2, 0, 4, 0, 6}));
  }
  std::filesystem::remove_all(dir);
}

// MaxViT's attention: q [2, 3, 4] and k [2, 5, 4] -> Einsum "b i d, b j d ->
// b i j" (Q K^T) -> Einsum with v [2, 5, 4], "bij,bjd->bid" (A V). Both
// become MatMul (the first after a Transpose of k), run on the CPU backend,
// and give the reference Einsum's outputs; an Einsum that is no matrix
// product stays.
TEST(EinsumAsMatMul, AttentionProductsBecomeMatMul) {
  onnx::ModelProto m = make_model(13);
  auto* g = m.mutable_graph();
  for (auto [name, dims] : {std::pair<const char*, std::vector<int64_t>>{"q", {2, 3, 4}}, {"k", {2, 5, 4}},
                            {"v", {2, 5, 4}}})
    *g->add_input() = tensor_info(name, onnx::TensorProto_DataType_FLOAT, dims);
  *g->add_output() = tensor_info("y", onnx::TensorProto_DataType_FLOAT, {2, 3, 4});
  *g->add_output() = tensor_info("total", onnx::TensorProto_DataType_FLOAT, {2});
  auto einsum = [&](const std::string& equation, std::vector<std::string> in, const std::string& out) {
    onnx::NodeProto n = make_node("Einsum", in, {out}, out);
    auto* a = n.add_attribute();
    a->set_name("equation");
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(equation);
    *g->add_node() = n;
  };
  einsum("b i d, b j d -> b i j", {"q", "k"}, "scores");
  einsum("bij,bjd->bid", {"scores", "v"}, "y");
  einsum("bij->b", {"scores"}, "total");  // no matrix product
  auto dir = temp_dir("einsum_as_matmul");
  write_model(m, dir / "m.onnx");
  Graph plain = load_model((dir / "m.onnx").string(), {.optimize = false});
  Graph optimized = load_model((dir / "m.onnx").string());
  std::filesystem::remove_all(dir);
  std::map<std::string, int> ops;
  for (const Node& n : optimized.nodes) ++ops[n.op_type];
  EXPECT_EQ(ops, (std::map<std::string, int>{{"MatMul", 2}, {"Transpose", 1}, {"Einsum", 1}}));
  Session fast(optimized, SessionOptions("cpu:0"));
  EXPECT_EQ(fast.summary().n_fallbacks, 1);  // the sum's Einsum
  TensorMap inputs = fast.random_inputs(5);
  TensorMap want = run_reference(plain, inputs), got = fast.run(inputs);
  for (const char* name : {"y", "total"}) {
    auto a = got.at(name).to_double_vector(), b = want.at(name).to_double_vector();
    ASSERT_EQ(a.size(), b.size()) << name;
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5) << name << " " << i;
  }
}

// x[4, 8] -> MatMul(w) -> + b -> GELU written out (PyTorch's export) -> y;
// x -> GELU with x * 0.5 first and x * (1 / sqrt(2)) -> z; and two near
// misses: a GELU whose Erf output is also a graph output, and one dividing
// by 2.
TEST(FuseGelu, ErfGeluBecomesOneGeluOnOneDnnAndIsWrittenBackForOldOpsets) {
  onnx::ModelProto m = make_model(13);
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto_DataType_FLOAT, {4, 8});
  for (const char* out : {"y", "z", "near_erf", "near", "half_way"})
    *g->add_output() = tensor_info(out, onnx::TensorProto_DataType_FLOAT, {4, 8});
  *g->add_initializer() = float_tensor("w", {8, 8}, ramp(64, 0.5f, -0.25f));
  *g->add_initializer() = float_tensor("b", {8}, ramp(8, 0.2f, -0.1f));
  *g->add_initializer() = float_tensor("sqrt2", {}, {1.41421353816986083984375f});
  *g->add_initializer() = float_tensor("inv_sqrt2", {}, {0.707106769084930419921875f});
  *g->add_initializer() = float_tensor("two", {}, {2.0f});
  *g->add_initializer() = float_tensor("one", {}, {1.0f});
  *g->add_initializer() = float_tensor("half", {}, {0.5f});
  *g->add_node() = make_node("MatMul", {"x", "w"}, {"xw"}, "matmul");
  *g->add_node() = make_node("Add", {"xw", "b"}, {"h"}, "bias");
  // PyTorch's form, after the MatMul: oneDNN's matmul + bias + gelu_erf.
  *g->add_node() = make_node("Div", {"h", "sqrt2"}, {"a1"}, "a_div");
  *g->add_node() = make_node("Erf", {"a1"}, {"a2"}, "a_erf");
  *g->add_node() = make_node("Add", {"a2", "one"}, {"a3"}, "a_add");
  *g->add_node() = make_node("Mul", {"h", "a3"}, {"a4"}, "a_mul");
  *g->add_node() = make_node("Mul", {"a4", "half"}, {"y"}, "a_half");
  // x * 0.5 first, and the scale as a product.
  *g->add_node() = make_node("Mul", {"inv_sqrt2", "x"}, {"b1"}, "b_scale");
  *g->add_node() = make_node("Erf", {"b1"}, {"b2"}, "b_erf");
  *g->add_node() = make_node("Add", {"one", "b2"}, {"b3"}, "b_add");
  *g->add_node() = make_node("Mul", {"x", "half"}, {"b4"}, "b_half");
  *g->add_node() = make_node("Mul", {"b4", "b3"}, {"z"}, "b_mul");
  // The Erf's output is read outside: left as it is.
  *g->add_node() = make_node("Div", {"x", "sqrt2"}, {"c1"}, "c_div");
  *g->add_node() = make_node("Erf", {"c1"}, {"near_erf"}, "c_erf");
  *g->add_node() = make_node("Add", {"near_erf", "one"}, {"c3"}, "c_add");
  *g->add_node() = make_node("Mul", {"x", "c3"}, {"c4"}, "c_mul");
  *g->add_node() = make_node("Mul", {"c4", "half"}, {"near"}, "c_half");
  // x / 2: not a GELU.
  *g->add_node() = make_node("Div", {"x", "two"}, {"d1"}, "d_div");
  *g->add_node() = make_node("Erf", {"d1"}, {"d2"}, "d_erf");
  *g->add_node() = make_node("Add", {"d2", "one"}, {"d3"}, "d_add");
  *g->add_node() = make_node("Mul", {"x", "d3"}, {"d4"}, "d_mul");
  *g->add_node() = make_node("Mul", {"d4", "half"}, {"half_way"}, "d_half");
  auto dir = temp_dir("fuse_gelu");
  write_model(m, dir / "m.onnx");
  Graph plain = load_model((dir / "m.onnx").string(), {.optimize = false});
  Graph optimized = load_model((dir / "m.onnx").string());
  std::map<std::string, int> ops;
  for (const Node& n : optimized.nodes) ++ops[n.op_type];
  EXPECT_EQ(ops["Gelu"], 2);
  EXPECT_EQ(ops["Erf"], 2);  // the near misses'
  Session fast(optimized, SessionOptions("cpu:0"));
  for (const std::string& f : fast.summary().fallbacks) EXPECT_EQ(f.find("Gelu"), std::string::npos) << f;
  TensorMap inputs = fast.random_inputs(9);
  TensorMap want = run_reference(plain, inputs), got = fast.run(inputs);
  for (const char* name : {"y", "z", "near_erf", "near", "half_way"}) {
    auto a = got.at(name).to_double_vector(), b = want.at(name).to_double_vector();
    ASSERT_EQ(a.size(), b.size()) << name;
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5) << name << " " << i;
  }

  // Written for opset 13 (no Gelu): the five ops again, loadable, same outputs.
  std::ofstream out(dir / "written.onnx", std::ios::binary);
  ASSERT_TRUE(graph_to_model(optimized).SerializeToOstream(&out));
  out.close();
  Graph reread = load_model((dir / "written.onnx").string(), {.optimize = false});
  std::filesystem::remove_all(dir);
  for (const Node& n : reread.nodes) EXPECT_NE(n.op_type, "Gelu");
  TensorMap again = run_reference(reread, inputs);
  for (const char* name : {"y", "z"}) {
    auto a = again.at(name).to_double_vector(), b = want.at(name).to_double_vector();
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-6) << name << " " << i;
  }
}

}  // namespace
}  // namespace hetsched
