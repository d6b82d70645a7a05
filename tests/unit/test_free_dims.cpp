// Free dims (graph/specialize.h, ShapeSpecializations in session.h): a model
// with a free batch and image size, its flatten written the way PyTorch
// exports x.view(x.size(0), -1) (Shape -> Gather -> Unsqueeze -> Concat ->
// Reshape), runs in one session at several input shapes, each on the oneDNN
// kernels a session made for that shape runs, with the reference kernels'
// outputs.
#include <cmath>
#include <random>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "backends/cpu/program.h"
#include "graph/specialize.h"
#include "hetsched/session.h"
#include "onnx_model_util.h"

namespace hetsched {
namespace {

using namespace hetsched::testing;
constexpr int32_t kF32 = onnx::TensorProto_DataType_FLOAT;

// dims: a size, or -1 for a free dim named by `names`.
onnx::ValueInfoProto free_info(const std::string& name, const std::vector<int64_t>& dims,
                               const std::vector<std::string>& names) {
  onnx::ValueInfoProto vi = tensor_info(name, kF32, dims);
  auto* shape = vi.mutable_type()->mutable_tensor_type()->mutable_shape();
  for (int d = 0; d < shape->dim_size(); ++d)
    if (dims[static_cast<size_t>(d)] < 0) shape->mutable_dim(d)->set_dim_param(names[static_cast<size_t>(d)]);
  return vi;
}

onnx::TensorProto random_floats(const std::string& name, const std::vector<int64_t>& dims, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = u(rng);
  return float_tensor(name, dims, v);
}

// x [N, 3, H, W] -> Conv 3x3 (8 channels, pads 1) -> Relu -> MaxPool 2x2 ->
// GlobalAveragePool -> flatten by Shape arithmetic -> Gemm -> y [N, 5]; with
// `second_input`, the Gemm's result plus z [N, 5], whose batch dim shares the
// name "N".
std::string write_free_model(const std::filesystem::path& dir, bool second_input = false) {
  onnx::ModelProto m = make_model(13);
  auto* g = m.mutable_graph();
  *g->add_input() = free_info("x", {-1, 3, -1, -1}, {"N", "", "H", "W"});
  *g->add_output() = free_info("y", {-1, 5}, {"N", ""});
  *g->add_initializer() = random_floats("w", {8, 3, 3, 3}, 1);
  *g->add_initializer() = random_floats("b", {8}, 2);
  *g->add_initializer() = random_floats("fc", {5, 8}, 3);
  *g->add_initializer() = random_floats("fc_b", {5}, 4);
  *g->add_initializer() = int64_tensor("zero", {0});
  *g->add_initializer() = int64_tensor("minus_one", {-1});
  auto ints = [](onnx::NodeProto node, const std::string& name, const std::vector<int64_t>& values) {
    auto* a = node.add_attribute();
    a->set_name(name);
    a->set_type(values.size() == 1 ? onnx::AttributeProto::INT : onnx::AttributeProto::INTS);
    if (values.size() == 1) a->set_i(values[0]);
    else for (int64_t v : values) a->add_ints(v);
    return node;
  };
  *g->add_node() = ints(make_node("Conv", {"x", "w", "b"}, {"c"}, "conv"), "pads", {1, 1, 1, 1});
  *g->add_node() = make_node("Relu", {"c"}, {"r"}, "relu");
  *g->add_node() = ints(make_node("MaxPool", {"r"}, {"p"}, "pool"), "kernel_shape", {2, 2});
  *g->add_node() = make_node("GlobalAveragePool", {"p"}, {"gap"}, "gap");
  *g->add_node() = make_node("Shape", {"gap"}, {"gap_shape"}, "shape");
  *g->add_node() = make_node("Gather", {"gap_shape", "zero"}, {"batch"}, "gather");
  *g->add_node() = ints(make_node("Concat", {"batch", "minus_one"}, {"flat_shape"}, "concat"), "axis", {0});
  *g->add_node() = make_node("Reshape", {"gap", "flat_shape"}, {"flat"}, "reshape");
  *g->add_node() = ints(make_node("Gemm", {"flat", "fc", "fc_b"}, {second_input ? "g" : "y"}, "gemm"), "transB", {1});
  if (second_input) {
    *g->add_input() = free_info("z", {-1, 5}, {"N", ""});
    *g->add_node() = make_node("Add", {"g", "z"}, {"y"}, "add");
  }
  std::string path = (dir / (second_input ? "free2.onnx" : "free.onnx")).string();
  write_model(m, path);
  return path;
}

TensorMap image(const Shape& shape, uint64_t seed) {
  Tensor t(DType::kFloat32, shape);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return {{"x", t}};
}

void expect_near(const TensorMap& got, const TensorMap& want) {
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [name, w] : want) {
    const Tensor& g = got.at(name);
    ASSERT_EQ(g.shape(), w.shape()) << name;
    for (int64_t i = 0; i < w.numel(); ++i)
      EXPECT_NEAR(g.data<float>()[i], w.data<float>()[i], 1e-4f * (1 + std::fabs(w.data<float>()[i])))
          << name << "[" << i << "]";
  }
}

class FreeDims : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = temp_dir("free_dims"); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(FreeDims, SpecializedGraphIsStaticWithTheShapeArithmeticFolded) {
  Graph free = load_model(write_free_model(dir_));
  ASSERT_TRUE(has_free_input_dims(free));
  EXPECT_NE(free.find_node("shape"), kNoNode);  // the flatten cannot fold without shapes
  Graph g = specialize_graph(free, {{2, 3, 10, 12}});
  EXPECT_FALSE(has_free_input_dims(g));
  for (const Value& v : g.values) EXPECT_TRUE(v.shape_is_static()) << v.name;
  for (const Node& n : g.nodes) EXPECT_NE(n.op_type, "Shape") << n.name;
  EXPECT_EQ(g.values[g.outputs[0]].shape, Shape({2, 5}));
  EXPECT_GT(g.total_flops(), 0);
  EXPECT_EQ(signature_text(g, {{2, 3, 10, 12}}), "x=2x3x10x12");
}

TEST_F(FreeDims, OneSessionRunsEachShapeOnTheKernelsOfASessionMadeForIt) {
  std::string model = write_free_model(dir_);
  Session free = Session::load(model, {}, SessionOptions("cpu:0"));
  ExecutionSummary before = free.summary();
  EXPECT_TRUE(before.shapes.free_dims);
  EXPECT_TRUE(before.shapes.kept.empty());
  EXPECT_EQ(free.plan(), nullptr);
  const Graph reference_graph = load_model(model);
  for (const Shape& shape : {Shape{2, 3, 10, 12}, Shape{1, 3, 7, 5}}) {
    TensorMap in = image(shape, 7);
    TensorMap got = free.run(in);
    expect_near(got, run_reference(reference_graph, in));
    ExecutionSummary s = free.summary();
    LoadOptions fixed_shapes;
    fixed_shapes.input_shapes["x"] = shape;
    Session fixed = Session::load(model, fixed_shapes, SessionOptions("cpu:0"));
    ExecutionSummary f = fixed.summary();
    EXPECT_EQ(s.n_fallbacks, 0) << s.note;
    EXPECT_EQ(s.n_fallbacks, f.n_fallbacks);
    EXPECT_EQ(s.n_steps, f.n_steps);
    EXPECT_EQ(s.n_fused_nodes, f.n_fused_nodes);
    EXPECT_EQ(s.arena_bytes, f.arena_bytes);
    ASSERT_NE(free.plan(), nullptr);
    EXPECT_EQ(free.plan_graph().values[free.plan_graph().inputs[0]].shape, shape);
  }
  free.run(image({2, 3, 10, 12}, 8));  // compiled already
  ExecutionSummary s = free.summary();
  EXPECT_EQ(s.shapes.n_compiles, 2);
  EXPECT_EQ(s.shapes.n_hits, 1);
  EXPECT_EQ(s.shapes.n_evictions, 0);
  EXPECT_EQ(s.shapes.kept, (std::vector<std::string>{"x=2x3x10x12", "x=1x3x7x5"}));
  EXPECT_GT(s.shapes.compile_ms, 0);
}

// A CPU program reorders weights into its primitives' layouts; the compile
// of a second shape shares the first's reorders (same weights, same
// layouts) instead of making its own, and they go with the session.
TEST_F(FreeDims, ASecondShapeSharesTheWeightsTheFirstReordered) {
  std::string model = write_free_model(dir_);
  size_t held_before = cpu::prepared_constants_held();
  {
    Session s = Session::load(model, {}, SessionOptions("cpu:0"));
    s.run(image({2, 3, 10, 12}, 1));
    size_t held = cpu::prepared_constants_held();
    EXPECT_GT(held, held_before) << "nothing reordered: the test shows nothing";
    TensorMap in = image({1, 3, 7, 5}, 2);
    expect_near(s.run(in), run_reference(load_model(model), in));
    EXPECT_EQ(cpu::prepared_constants_held(), held) << "the second shape reordered the weights again";
  }
  EXPECT_EQ(cpu::prepared_constants_held(), held_before) << "kept past the session";
}

TEST_F(FreeDims, TheLeastRecentlyRunShapesAreDroppedPastMaxShapes) {
  SessionOptions options("cpu:0");
  options.max_shapes = 2;
  Session s = Session::load(write_free_model(dir_), {}, options);
  for (int h : {6, 7, 6, 8, 7}) s.run(image({1, 3, h, h}, 1));
  // 6: compile; 7: compile; 6: hit; 8: compile, drops 7; 7: compile, drops 6.
  ExecutionSummary summary = s.summary();
  EXPECT_EQ(summary.shapes.n_compiles, 4);
  EXPECT_EQ(summary.shapes.n_hits, 1);
  EXPECT_EQ(summary.shapes.n_evictions, 2);
  EXPECT_EQ(summary.shapes.kept, (std::vector<std::string>{"x=1x3x7x7", "x=1x3x8x8"}));
  options.max_shapes = 0;
  EXPECT_THROW(Session::load(write_free_model(dir_), {}, options), Error);
}

TEST_F(FreeDims, DimsNamedAlikeMustBeGivenAlike) {
  Session s = Session::load(write_free_model(dir_, true), {}, SessionOptions("cpu:0"));
  TensorMap in = image({2, 3, 6, 6}, 1);
  in["z"] = Tensor(DType::kFloat32, {3, 5});
  try {
    s.run(in);
    FAIL() << "ran with batch 2 and 3";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidInput);
    EXPECT_NE(std::string(e.what()).find("input 'z': dim 0 ('N') is 3, but input 'x' gave 'N' = 2"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(s.summary().shapes.n_compiles, 0);
  in["z"] = Tensor(DType::kFloat32, {2, 5});
  TensorMap got = s.run(in);
  expect_near(got, run_reference(s.graph(), in));
}

TEST_F(FreeDims, AShapeTheModelCannotTakeFailsNamingTheShapes) {
  Session s = Session::load(write_free_model(dir_), {}, SessionOptions("cpu:0"));
  try {
    s.run(image({1, 3, 1, 1}, 1));  // a 2x2 pool over 1x1
    FAIL() << "ran a 2x2 pool over a 1x1 image";
  } catch (const Error& e) {
    std::string what = e.what();
    EXPECT_EQ(what.rfind("input shapes x=1x3x1x1: ", 0), 0u) << what;
    EXPECT_NE(what.find("MaxPool 'pool'"), std::string::npos) << what;
  }
  TensorMap in = image({1, 3, 4, 4}, 1);
  expect_near(s.run(in), run_reference(s.graph(), in));  // the session still serves
}

TEST_F(FreeDims, ConcurrentRunsOfNewShapesCompileEachOnce) {
  Session s = Session::load(write_free_model(dir_), {}, SessionOptions("cpu:0"));
  const Graph& g = s.graph();
  std::vector<Shape> shapes = {{1, 3, 6, 6}, {2, 3, 9, 5}, {3, 3, 4, 8}};
  std::vector<TensorMap> inputs, want;
  for (size_t i = 0; i < shapes.size(); ++i) {
    inputs.push_back(image(shapes[i], i));
    want.push_back(run_reference(g, inputs.back()));
  }
  std::vector<std::thread> threads;
  std::vector<TensorMap> got(12);
  for (size_t t = 0; t < got.size(); ++t)
    threads.emplace_back([&, t] { got[t] = s.run(inputs[t % shapes.size()]); });
  for (auto& t : threads) t.join();
  for (size_t t = 0; t < got.size(); ++t) expect_near(got[t], want[t % shapes.size()]);
  ExecutionSummary summary = s.summary();
  EXPECT_EQ(summary.shapes.n_compiles, 3);
  EXPECT_EQ(summary.shapes.n_hits, 9);
}

}  // namespace
}  // namespace hetsched
