// The CUDA backend (src/backends/cuda/) against the reference kernels: the
// cross-device harness for GPU kernels.
//
// Each case builds a small graph of the zoo's shapes and random inputs, runs
// it with the reference kernels, then prepares the GPU op (with the nodes
// gpu_fusion_group fuses) and runs it on the GPU with the same inputs; the
// outputs must agree to 1e-4 relative (FP32 math). Whole zoo models run group
// by group on the GPU against run_reference().
//
// What needs no GPU runs everywhere in a CUDA build: every zoo model's nodes
// have a GPU kernel, fusion groups, status messages, and the errors the
// runtime layer throws on a machine without a GPU. What needs one skips with
// "no CUDA GPU: ..." (the probe's reason). In a build without the CUDA
// backend the suite is one skipped test saying so.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#ifdef HETSCHED_WITH_CUDA

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "backends/cuda/check.h"
#include "backends/cuda/gpu_op.h"
#include "backends/cuda/graph_capture.h"
#include "backends/cuda/kernels/device_kernels.h"
#include "backends/cuda/runtime.h"
#include "hetsched/session.h"
#include "hetsched/zoo.h"
#include "kernel_test_util.h"
#include "platform/gpu_probe.h"

namespace hetsched {
namespace {

using namespace hetsched::testing;
using ::testing::HasSubstr;
using ::testing::Not;

bool have_gpu() { return !probe_gpus().gpus.empty(); }

#define SKIP_WITHOUT_GPU() \
  if (!have_gpu()) GTEST_SKIP() << probe_gpus().why_none

// One context for the whole binary: creating cuBLAS and cuDNN handles costs
// hundreds of milliseconds.
// Never destroyed: tearing library handles down from a static destructor,
// after the CUDA runtime may have begun its own exit, can crash the binary.
cuda::CudaContext& context() {
  static cuda::CudaContext* ctx = new cuda::CudaContext(0, 3);
  return *ctx;
}

// Deterministic values uniform in [lo, hi).
std::vector<float> uniform(size_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::vector<float> v(n);
  uint64_t s = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  for (auto& x : v) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    x = lo + (hi - lo) * static_cast<float>((s >> 40) & 0xFFFFFF) / static_cast<float>(1 << 24);
  }
  return v;
}

Tensor random(Shape shape, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  return f32(shape, uniform(static_cast<size_t>(shape_numel(shape)), seed, lo, hi));
}

// A graph built node by node, each node's outputs computed right away by its
// reference kernel (so every value has its static shape and its expected
// contents).
class TestGraph {
 public:
  // A graph input, or with `constant` an initializer (weights).
  void input(const std::string& name, const Tensor& t, bool constant = false) {
    Value v;
    v.name = name;
    v.dtype = t.dtype();
    v.has_shape = true;
    v.shape = t.shape();
    if (constant) v.initializer = t;
    ValueId id = graph_.add_value(v);
    if (!constant) graph_.inputs.push_back(id);
    values_[name] = t;
  }

  void node(const std::string& op, const std::vector<std::string>& ins, const std::vector<std::string>& outs,
            std::map<std::string, Attribute> attrs = {}, int64_t opset = 17) {
    Node n;
    n.name = fmt::format("{}_{}", op, graph_.nodes.size());
    n.op_type = op;
    n.opset = opset;
    n.attributes = std::move(attrs);
    std::vector<const Tensor*> tensors;
    for (const std::string& in : ins) {
      n.inputs.push_back(in.empty() ? kNoValue : graph_.find_value(in));
      tensors.push_back(in.empty() ? nullptr : &values_.at(in));
    }
    std::vector<Tensor> results = kernels::find_reference_kernel(op)->compute(n, tensors);
    for (size_t i = 0; i < outs.size(); ++i) {
      if (outs[i].empty()) {
        n.outputs.push_back(kNoValue);
        continue;
      }
      Value v;
      v.name = outs[i];
      v.dtype = results[i].dtype();
      v.has_shape = true;
      v.shape = results[i].shape();
      n.outputs.push_back(graph_.add_value(v));
      values_[outs[i]] = results[i];
    }
    graph_.add_node(n);
  }

  // Marks the graph outputs and settles producers and consumers.
  const Graph& finish(const std::vector<std::string>& outputs) {
    for (const std::string& o : outputs) graph_.outputs.push_back(graph_.find_value(o));
    graph_.finalize();
    return graph_;
  }

  const Graph& graph() const { return graph_; }
  const Tensor& value(const std::string& name) const { return values_.at(name); }

 private:
  Graph graph_;
  std::map<std::string, Tensor> values_;
};

// Prepares the fusion group of the graph's first node on the GPU, checks it
// holds `expect_nodes` nodes, runs it and compares its outputs with the
// reference kernels'. Returns what ran (GpuOp::what).
std::string expect_gpu_matches(const TestGraph& t, size_t expect_nodes = 1, double tolerance = 1e-4) {
  const Graph& g = t.graph();
  std::vector<NodeId> group = cuda::gpu_fusion_group(g, 0);
  EXPECT_EQ(group.size(), expect_nodes) << g.nodes[0].label();
  std::unique_ptr<cuda::GpuOp> op = cuda::prepare_gpu_op(context(), g, group);
  std::vector<Tensor> inputs;
  for (ValueId v : op->inputs()) inputs.push_back(t.value(g.values[v].name));
  std::vector<Tensor> outputs = cuda::run_gpu_op(context(), g, *op, inputs);
  EXPECT_EQ(outputs.size(), op->outputs().size());
  for (size_t i = 0; i < outputs.size() && i < op->outputs().size(); ++i) {
    const Tensor& want = t.value(g.values[op->outputs()[i]].name);
    EXPECT_EQ(outputs[i].shape(), want.shape());
    EXPECT_EQ(outputs[i].dtype(), want.dtype());
    if (outputs[i].shape() != want.shape() || outputs[i].dtype() != want.dtype()) continue;
    if (want.dtype() == DType::kFloat32) {
      EXPECT_LE(relative_error(outputs[i], want), tolerance) << op->what() << " for " << g.nodes[0].label();
    } else {
      EXPECT_EQ(outputs[i].to_int64_vector(), want.to_int64_vector()) << op->what();
    }
  }
  return op->what();
}

// ---------------------------------------------------------------- without a GPU

TEST(CudaBackend, EveryZooModelNodeHasAGpuKernel) {
  for (const char* model : {"squeezenet1_0", "resnet18", "resnet50", "googlenet", "inception_v3", "mobilenet_v2",
                            "nasnet", "randwire", "bert"}) {
    LoadOptions opts;
    if (std::string(model) == "bert") opts.zoo_params = {{"layers", "2"}, {"seq", "16"}};
    Graph graph = load_model(std::string("zoo:") + model, opts);
    for (const Node& node : graph.nodes)
      EXPECT_EQ(cuda::gpu_declines(graph, node), "") << model << ": " << node.label();
  }
}

TEST(CudaBackend, FusionGroupsFollowTheZooPatterns) {
  // ResNet-18's second conv of every basic block takes the residual Add and
  // the ReLU; BERT's projections take their bias Add.
  Graph resnet = load_model("zoo:resnet18");
  int conv_add_relu = 0;
  std::set<NodeId> absorbed;
  for (NodeId n = 0; n < static_cast<NodeId>(resnet.nodes.size()); ++n) {
    // Nothing fuses when the next node may not join (another launch).
    EXPECT_EQ(cuda::gpu_fusion_group(resnet, n, [](NodeId) { return false; }).size(), 1u);
    if (absorbed.count(n)) continue;  // as an executor walks the graph
    std::vector<NodeId> group = cuda::gpu_fusion_group(resnet, n);
    for (size_t i = 1; i < group.size(); ++i) {
      EXPECT_TRUE(absorbed.insert(group[i]).second) << "absorbed twice";
      // Whatever the group reads must be made before its first node.
      for (ValueId v : resnet.nodes[group[i]].inputs) {
        NodeId producer = resnet.values[v].producer;
        EXPECT_TRUE(producer == kNoNode || producer <= group[i - 1]) << resnet.nodes[group[i]].label();
      }
    }
    if (group.size() == 3) {
      EXPECT_EQ(resnet.nodes[group[0]].op_type, "Conv");
      EXPECT_EQ(resnet.nodes[group[1]].op_type, "Add");
      EXPECT_EQ(resnet.nodes[group[2]].op_type, "Relu");
      ++conv_add_relu;
    }
  }
  EXPECT_EQ(conv_add_relu, 8);
  for (NodeId n : absorbed) EXPECT_NE(resnet.nodes[n].op_type, "Conv");

  LoadOptions opts;
  opts.zoo_params = {{"layers", "1"}, {"seq", "16"}};
  Graph bert = load_model("zoo:bert", opts);
  int matmul_bias = 0;
  for (NodeId n = 0; n < static_cast<NodeId>(bert.nodes.size()); ++n) {
    std::vector<NodeId> group = cuda::gpu_fusion_group(bert, n);
    if (bert.nodes[n].op_type == "MatMul" && group.size() == 2 && bert.nodes[group[1]].op_type == "Add") ++matmul_bias;
  }
  EXPECT_EQ(matmul_bias, 6);  // Q, K, V, output projection, two FFN layers

  // The epilogue's bias runs over B's columns: with a 1-D B the output's last
  // dim is A's rows, and a bias over it stays an Add of its own.
  for (bool b_matrix : {true, false}) {
    TestGraph t;
    t.input("a", random({4, 3}, 1));
    t.input("b", b_matrix ? random({3, 4}, 2) : random({3}, 2), true);
    t.input("bias", random({4}, 3), true);
    t.node("MatMul", {"a", "b"}, {"y"});
    t.node("Add", {"y", "bias"}, {"z"});
    const Graph& g = t.finish({"z"});
    EXPECT_EQ(cuda::gpu_fusion_group(g, 0).size(), b_matrix ? 2u : 1u) << "B of rank " << (b_matrix ? 2 : 1);
  }
}

TEST(CudaBackend, ALaunchFusesOnlyWhatItHasMadeBeforeTheGroup) {
  // Conv b makes the residual r, then conv a takes the Add and the ReLU
  // (r is made before it in the graph's order). A launch may run a and b
  // the other way round; then a's group would read r before b makes it.
  TestGraph t;
  t.input("x", random({1, 8, 6, 6}, 1));
  t.input("wa", random({8, 8, 3, 3}, 2, -0.1f, 0.1f), true);
  t.input("wb", random({8, 8, 1, 1}, 3, -0.1f, 0.1f), true);
  t.node("Conv", {"x", "wb"}, {"r"});
  t.node("Conv", {"x", "wa"}, {"c"}, {{"pads", attr_ints({1, 1, 1, 1})}});
  t.node("Add", {"c", "r"}, {"s"});
  t.node("Relu", {"s"}, {"y"});
  const Graph& g = t.finish({"y"});
  using Groups = std::vector<std::vector<NodeId>>;
  EXPECT_EQ(cuda::gpu_launch_groups(g, {0, 1, 2, 3}), (Groups{{0}, {1, 2, 3}}));
  EXPECT_EQ(cuda::gpu_launch_groups(g, {1, 0, 2, 3}), (Groups{{1}, {0}, {2}, {3}}));
  // Only the launch's own nodes join: the ReLU in another launch stays out.
  EXPECT_EQ(cuda::gpu_launch_groups(g, {0, 1, 2}), (Groups{{0}, {1, 2}}));
  EXPECT_EQ(cuda::gpu_launch_groups(g, {1}), (Groups{{1}}));
}

TEST(CudaBackend, DeclinesWhatItDoesNotRun) {
  TestGraph t;
  t.input("x", i64({2, 3}, {1, 2, 3, 4, 5, 6}));
  t.input("y", i64({2, 3}, {1, 1, 1, 1, 1, 1}));
  t.node("Add", {"x", "y"}, {"z"});
  const Graph& g = t.finish({"z"});
  EXPECT_EQ(cuda::gpu_declines(g, g.nodes[0]), "not float32");
  Node other = g.nodes[0];
  other.op_type = "NonZero";
  EXPECT_EQ(cuda::gpu_declines(g, other), "no CUDA kernel for NonZero");

  // An empty tensor would be a launch of no blocks, a product with a leading
  // dimension 0: the reference kernels run it.
  TestGraph e;
  e.input("a", f32({0, 3}, {}));
  e.input("w", random({3, 2}, 1), true);
  e.node("MatMul", {"a", "w"}, {"y"});
  e.node("Relu", {"y"}, {"r"});
  const Graph& empty = e.finish({"r"});
  EXPECT_EQ(cuda::gpu_declines(empty, empty.nodes[0]), "value 'a' is empty");
  EXPECT_EQ(cuda::gpu_declines(empty, empty.nodes[1]), "value 'y' is empty");

  // A non-zero pad value for float16 data, which the reference kernel
  // refuses too (a zero one it runs).
  Graph half;
  for (const char* name : {"h", "p"}) {
    Value v;
    v.name = name;
    v.dtype = DType::kFloat16;
    v.has_shape = true;
    v.shape = std::string(name) == "h" ? Shape{2, 2} : Shape{4, 4};
    half.add_value(v);
  }
  half.inputs.push_back(0);
  Node pad;
  pad.name = "pad";
  pad.op_type = "Pad";
  pad.opset = 2;
  pad.inputs = {0};
  pad.outputs = {1};
  pad.attributes = {{"pads", attr_ints({1, 1, 1, 1})}, {"value", attr_float(1.0f)}};
  EXPECT_EQ(cuda::gpu_declines(half, pad), "a non-zero pad value for float16");
  pad.attributes["value"] = attr_float(0.0f);
  EXPECT_EQ(cuda::gpu_declines(half, pad), "");
  // ReduceMean: torchvision's MNASNet and ShuffleNet pool with it, and
  // exported Transformer layers normalise with it.
  EXPECT_THAT(cuda::gpu_op_types(), ::testing::IsSupersetOf({"Conv", "MatMul", "Gemm", "MaxPool", "Softmax",
                                                              "LayerNormalization", "Concat", "Transpose",
                                                              "ReduceMean", "ReduceSum", "ReduceMax"}));
  TestGraph r;
  r.input("x", random({2, 3}, 7));
  r.input("axes", i64({1}, {1}));  // a graph input: known only at run time
  r.node("ReduceSum", {"x", "axes"}, {"s"}, {}, 13);
  const Graph& reduce = r.finish({"s"});
  EXPECT_EQ(cuda::gpu_declines(reduce, reduce.nodes[0]), "axes computed at run time");
}

TEST(CudaBackend, StatusMessagesNameTheCall) {
  try {
    HETSCHED_CUDA_CHECK(CUDNN_STATUS_BAD_PARAM);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kRuntime);
    EXPECT_THAT(e.what(), HasSubstr("CUDNN_STATUS_BAD_PARAM failed: CUDNN_STATUS_BAD_PARAM"));
    EXPECT_THAT(e.what(), HasSubstr("test_cuda_kernels.cpp"));
  }
  try {
    cuda::check_status(CUBLAS_STATUS_INVALID_VALUE, "cublasSgemm(handle, ...)", __FILE__, __LINE__);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("cublasSgemm(handle, ...) failed: CUBLAS_STATUS_INVALID_VALUE"));
  }
  try {
    cuda::check_status(cudaErrorInvalidValue, "cudaMemcpy(dst, src, n)", __FILE__, __LINE__);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("cudaMemcpy(dst, src, n) failed: cudaErrorInvalidValue (invalid argument)"));
    EXPECT_THAT(e.what(), Not(HasSubstr("sticky")));
  }
}

TEST(CudaBackend, AStickyErrorSaysTheProcessMustBeRestarted) {
  // An illegal address in a kernel loses the process's CUDA context: the
  // message must not let the user retry in the same process.
  EXPECT_TRUE(cuda::is_sticky_error(cudaErrorIllegalAddress));
  EXPECT_TRUE(cuda::is_sticky_error(cudaErrorLaunchFailure));
  EXPECT_TRUE(cuda::is_sticky_error(cudaErrorMisalignedAddress));
  EXPECT_FALSE(cuda::is_sticky_error(cudaErrorMemoryAllocation));
  EXPECT_FALSE(cuda::is_sticky_error(cudaErrorInvalidValue));
  EXPECT_FALSE(cuda::is_sticky_error(cudaErrorNoDevice));
  try {
    cuda::check_status(cudaErrorIllegalAddress, "cudaStreamSynchronize(stream)", __FILE__, __LINE__);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kRuntime);
    EXPECT_THAT(e.what(), HasSubstr("cudaStreamSynchronize(stream) failed: cudaErrorIllegalAddress"));
    EXPECT_THAT(e.what(), HasSubstr("cudaErrorIllegalAddress is sticky: this process's CUDA context is lost"));
    EXPECT_THAT(e.what(), HasSubstr("restart the process"));
  }
}

TEST(CudaBackend, WithoutAGpuTheRuntimeSaysWhichCallFailed) {
  if (have_gpu()) GTEST_SKIP() << "a GPU is present: this checks the errors on a machine without one";
  EXPECT_THAT(probe_gpus().why_none, HasSubstr("no CUDA GPU: cudaGetDeviceCount returned"));
  try {
    cuda::DeviceBuffer buffer(1024);
    ADD_FAILURE() << "cudaMalloc succeeded without a GPU";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kRuntime);
    EXPECT_THAT(e.what(), HasSubstr("cudaMalloc(&ptr_, bytes) failed: cuda"));
  }
  try {
    cuda::CudaContext ctx(0, 2);
    ADD_FAILURE() << "a context without a GPU";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kRuntime);
    EXPECT_THAT(e.what(), HasSubstr("cudaGetDeviceCount(&count) failed"));
  }
}

// ---------------------------------------------------------------- runtime (GPU)

TEST(CudaRuntime, ArenaPlacesAlignedRangesAndRefusesOverflow) {
  SKIP_WITHOUT_GPU();
  context().make_current();
  cuda::DeviceArena arena(4096);
  EXPECT_EQ(arena.capacity(), 4096u);
  char* a = static_cast<char*>(arena.allocate(10));
  char* b = static_cast<char*>(arena.allocate(300));
  EXPECT_EQ(b - a, 256);
  EXPECT_EQ(arena.used(), 256u + 512u);
  EXPECT_THROW(arena.allocate(4096), Error);
  EXPECT_EQ(arena.at(512, 256), a + 512);
  EXPECT_THROW(arena.at(100, 4), Error);   // unaligned
  EXPECT_THROW(arena.at(3840, 512), Error);  // past the end
  arena.reset();
  EXPECT_EQ(arena.allocate(1), a);
  EXPECT_EQ(arena.peak(), 256u + 512u);
}

TEST(CudaRuntime, PinnedCopiesRoundTripOnEveryStream) {
  SKIP_WITHOUT_GPU();
  cuda::CudaContext& ctx = context();
  const size_t n = 1 << 16;
  cuda::PinnedBuffer host(n * sizeof(float)), back(n * sizeof(float));
  float* h = static_cast<float*>(host.get());
  for (size_t i = 0; i < n; ++i) h[i] = static_cast<float>(i) * 0.5f;
  for (int s = 0; s < ctx.n_streams(); ++s) {
    cuda::DeviceBuffer device(n * sizeof(float));
    std::memset(back.get(), 0, back.bytes());
    ctx.copy_to_device(device.get(), host.get(), host.bytes(), s);
    ctx.copy_to_host(back.get(), device.get(), host.bytes(), s);
    ctx.synchronize(s);
    EXPECT_EQ(std::memcmp(back.get(), host.get(), host.bytes()), 0) << "stream " << s;
  }
}

TEST(CudaRuntime, EventsOrderTwoStreams) {
  SKIP_WITHOUT_GPU();
  cuda::CudaContext& ctx = context();
  const int64_t n = 1 << 20;
  Tensor x = random({n}, 7);
  cuda::DeviceBuffer a = ctx.upload(x), b(n * sizeof(float)), c(n * sizeof(float));
  cuda::Event done;
  // Stream 1 writes b; stream 2 reads it only after the event.
  cuda::kern::unary(cuda::kern::Unary::kNeg, static_cast<float*>(a.get()), static_cast<float*>(b.get()), n, 0, 0,
                    ctx.stream(1).stream);
  done.record(ctx.stream(1).stream);
  done.wait_on(ctx.stream(2).stream);
  cuda::kern::unary(cuda::kern::Unary::kAbs, static_cast<float*>(b.get()), static_cast<float*>(c.get()), n, 0, 0,
                    ctx.stream(2).stream);
  ctx.synchronize();
  Tensor got = ctx.download(c.get(), DType::kFloat32, {n});
  for (int64_t i = 0; i < n; i += 997) EXPECT_EQ(got.data<float>()[i], std::fabs(x.data<float>()[i]));
}

// ---------------------------------------------------------------- CUDA Graphs (GPU)

TEST(CudaGraph, ForkedStreamsCaptureAsParallelBranchesAndReplayOnNewData) {
  SKIP_WITHOUT_GPU();
  cuda::CudaContext& ctx = context();
  const int64_t n = 4096;
  cuda::DeviceBuffer a(n * sizeof(float)), b(n * sizeof(float)), c(n * sizeof(float)), d(n * sizeof(float));
  auto* pa = static_cast<float*>(a.get());
  auto* pb = static_cast<float*>(b.get());
  auto* pc = static_cast<float*>(c.get());
  auto* pd = static_cast<float*>(d.get());
  cuda::Event b_done, c_done;
  cuda::kern::Strided dense = {};
  dense.rank = 1;
  dense.dims[0] = n;
  dense.strides[0] = 1;
  // d = -a + exp(a): two branches on streams 1 and 2, joined on stream 0.
  cuda::CudaGraph graph = cuda::capture_graph(ctx, [&] {
    cuda::kern::unary(cuda::kern::Unary::kNeg, pa, pb, n, 0, 0, ctx.stream(1).stream);
    b_done.record(ctx.stream(1).stream);
    cuda::kern::unary(cuda::kern::Unary::kExp, pa, pc, n, 0, 0, ctx.stream(2).stream);
    c_done.record(ctx.stream(2).stream);
    b_done.wait_on(ctx.stream(0).stream);
    c_done.wait_on(ctx.stream(0).stream);
    cuda::kern::binary(cuda::kern::Binary::kAdd, pb, dense, pc, dense, pd, n, true, ctx.stream(0).stream);
  });
  EXPECT_EQ(graph.n_kernels(), 3u);
  EXPECT_EQ(graph.n_roots(), 2u) << "the two branches must not depend on each other";
  for (uint64_t seed : {1, 2}) {
    Tensor x = random({n}, seed);
    cuda::upload_bytes(pa, x.raw(), x.nbytes());
    graph.replay(ctx);
    ctx.synchronize(0);
    Tensor got = ctx.download(pd, DType::kFloat32, {n});
    for (int64_t i = 0; i < n; ++i) {
      float v = x.data<float>()[i];
      ASSERT_NEAR(got.data<float>()[i], -v + std::exp(v), 1e-5f) << "replay with seed " << seed << " at " << i;
    }
  }
}

TEST(CudaGraph, AThrowingCaptureLeavesTheStreamsUsable) {
  SKIP_WITHOUT_GPU();
  cuda::CudaContext& ctx = context();
  const int64_t n = 256;
  cuda::DeviceBuffer a(n * sizeof(float)), b(n * sizeof(float));
  auto* pa = static_cast<float*>(a.get());
  auto* pb = static_cast<float*>(b.get());
  // The failure comes after work was enqueued on a forked stream.
  EXPECT_THROW(cuda::capture_graph(ctx,
                                   [&] {
                                     cuda::kern::unary(cuda::kern::Unary::kNeg, pa, pb, n, 0, 0, ctx.stream(1).stream);
                                     throw Error(ErrorCode::kRuntime, "enqueue failed");
                                   }),
               Error);
  for (int s = 0; s < ctx.n_streams(); ++s) {
    cudaStreamCaptureStatus status;
    ASSERT_EQ(cudaStreamIsCapturing(ctx.stream(s).stream, &status), cudaSuccess);
    EXPECT_EQ(status, cudaStreamCaptureStatusNone) << "stream " << s;
  }
  // And they run work again.
  Tensor x = random({n}, 3);
  cuda::upload_bytes(pa, x.raw(), x.nbytes());
  cuda::kern::unary(cuda::kern::Unary::kNeg, pa, pb, n, 0, 0, ctx.stream(1).stream);
  ctx.synchronize();
  Tensor got = ctx.download(pb, DType::kFloat32, {n});
  EXPECT_EQ(got.data<float>()[5], -x.data<float>()[5]);
}

// ---------------------------------------------------------------- kernels (GPU)

TEST(CudaKernels, ConvWithBiasAndRelu) {
  SKIP_WITHOUT_GPU();
  TestGraph t;
  t.input("x", random({1, 64, 28, 28}, 1));
  t.input("w", random({64, 64, 3, 3}, 2, -0.05f, 0.05f), true);
  t.input("b", random({64}, 3), true);
  t.node("Conv", {"x", "w", "b"}, {"c"}, {{"pads", attr_ints({1, 1, 1, 1})}});
  t.node("Relu", {"c"}, {"y"});
  t.finish({"y"});
  // cuDNN runs the fused call for this plain geometry: the unfused path
  // would give the same numbers in four launches.
  EXPECT_EQ(expect_gpu_matches(t, 2), "cuDNN fused convolution + bias + ReLU");
}

TEST(CudaKernels, ConvWithResidualAddAndRelu) {
  SKIP_WITHOUT_GPU();
  TestGraph t;
  t.input("x", random({1, 32, 14, 14}, 4));
  t.input("r", random({1, 32, 14, 14}, 5));
  t.input("w", random({32, 32, 3, 3}, 6, -0.1f, 0.1f), true);
  t.node("Conv", {"x", "w"}, {"c"}, {{"pads", attr_ints({1, 1, 1, 1})}});
  t.node("Add", {"r", "c"}, {"s"});
  t.node("Relu", {"s"}, {"y"});
  t.finish({"y"});
  EXPECT_EQ(expect_gpu_matches(t, 3), "cuDNN fused convolution + residual Add + ReLU");
}

TEST(CudaKernels, ConvWithResidualAddNoRelu) {
  SKIP_WITHOUT_GPU();
  TestGraph t;
  t.input("x", random({1, 16, 10, 10}, 7));
  t.input("r", random({1, 24, 10, 10}, 8));
  t.input("w", random({24, 16, 1, 1}, 9), true);
  t.input("b", random({24}, 10), true);
  t.node("Conv", {"x", "w", "b"}, {"c"});
  t.node("Add", {"c", "r"}, {"y"});
  t.finish({"y"});
  expect_gpu_matches(t, 2);
}

struct ConvCase {
  std::string name;
  Shape x, w;
  std::map<std::string, Attribute> attrs;
};

TEST(CudaKernels, ConvGeometriesOfTheZoo) {
  SKIP_WITHOUT_GPU();
  const std::vector<ConvCase> cases = {
      {"stem 7x7/2", {1, 3, 64, 64}, {16, 3, 7, 7}, {{"strides", attr_ints({2, 2})}, {"pads", attr_ints({3, 3, 3, 3})}}},
      {"depthwise", {1, 32, 28, 28}, {32, 1, 3, 3}, {{"group", attr_int(32)}, {"pads", attr_ints({1, 1, 1, 1})}}},
      {"grouped", {1, 16, 12, 12}, {32, 4, 3, 3}, {{"group", attr_int(4)}}},
      {"1x7", {1, 16, 17, 17}, {24, 16, 1, 7}, {{"pads", attr_ints({0, 3, 0, 3})}}},
      {"7x1", {1, 16, 17, 17}, {24, 16, 7, 1}, {{"pads", attr_ints({3, 0, 3, 0})}}},
      {"SAME 5x5/2 (asymmetric)", {1, 16, 20, 20}, {16, 16, 5, 5},
       {{"strides", attr_ints({2, 2})}, {"auto_pad", attr_string("SAME_UPPER")}}},
      {"asymmetric pads", {1, 8, 11, 11}, {8, 8, 3, 3}, {{"pads", attr_ints({0, 0, 1, 1})}, {"strides", attr_ints({2, 2})}}},
      {"dilated", {1, 8, 16, 16}, {8, 8, 3, 3}, {{"dilations", attr_ints({2, 2})}, {"pads", attr_ints({2, 2, 2, 2})}}},
      {"1-D", {1, 8, 40}, {12, 8, 5}, {{"pads", attr_ints({2, 2})}}},
      {"3-D", {1, 4, 6, 8, 8}, {8, 4, 3, 3, 3}, {{"pads", attr_ints({1, 1, 1, 1, 1, 1})}}},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].name);
    TestGraph t;
    t.input("x", random(cases[i].x, 20 + i));
    t.input("w", random(cases[i].w, 40 + i, -0.2f, 0.2f), true);
    t.input("b", random({cases[i].w[0]}, 60 + i), true);
    t.node("Conv", {"x", "w", "b"}, {"y"}, cases[i].attrs);
    t.finish({"y"});
    expect_gpu_matches(t);
  }
}

TEST(CudaKernels, StandaloneBatchNormalization) {
  SKIP_WITHOUT_GPU();
  for (Shape x : {Shape{1, 24, 11, 11}, Shape{2, 5}}) {
    TestGraph t;  // NASNet's BatchNormalization after a Concat
    int64_t c = x[1];
    t.input("x", random(x, 13, -2, 2));
    t.input("scale", random({c}, 14, 0.5f, 1.5f), true);
    t.input("bias", random({c}, 15), true);
    t.input("mean", random({c}, 16), true);
    t.input("var", random({c}, 17, 0.5f, 2.0f), true);
    t.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"y"}, {{"epsilon", attr_float(1e-3f)}});
    t.finish({"y"});
    expect_gpu_matches(t);
  }
}

TEST(CudaKernels, ConvWithRunTimeWeights) {
  SKIP_WITHOUT_GPU();
  TestGraph t;
  t.input("x", random({1, 8, 9, 9}, 11));
  t.input("w", random({8, 8, 3, 3}, 12));
  t.node("Conv", {"x", "w"}, {"y"});
  t.finish({"y"});
  expect_gpu_matches(t);
}

struct PoolCase {
  std::string name, op;
  Shape x;
  std::map<std::string, Attribute> attrs;
  std::string expect;  // substring of what ran
};

TEST(CudaKernels, PoolingOfTheZoo) {
  SKIP_WITHOUT_GPU();
  const std::vector<PoolCase> cases = {
      {"resnet max 3x3/2 pad 1", "MaxPool", {1, 16, 56, 56},
       {{"kernel_shape", attr_ints({3, 3})}, {"strides", attr_ints({2, 2})}, {"pads", attr_ints({1, 1, 1, 1})}},
       "cuDNN"},
      {"googlenet ceil_mode", "MaxPool", {1, 16, 56, 56},
       {{"kernel_shape", attr_ints({3, 3})}, {"strides", attr_ints({2, 2})}, {"ceil_mode", attr_int(1)}}, "own"},
      {"nasnet asymmetric", "MaxPool", {1, 8, 42, 42},
       {{"kernel_shape", attr_ints({3, 3})}, {"strides", attr_ints({2, 2})}, {"pads", attr_ints({0, 0, 1, 1})}},
       "own"},
      {"inception avg exclude pad", "AveragePool", {1, 16, 17, 17},
       {{"kernel_shape", attr_ints({3, 3})}, {"pads", attr_ints({1, 1, 1, 1})}}, "cuDNN"},
      {"avg include pad", "AveragePool", {1, 16, 17, 17},
       {{"kernel_shape", attr_ints({3, 3})}, {"pads", attr_ints({1, 1, 1, 1})}, {"count_include_pad", attr_int(1)}},
       "cuDNN"},
      {"avg include pad, ceil", "AveragePool", {1, 4, 10, 10},
       {{"kernel_shape", attr_ints({3, 3})}, {"strides", attr_ints({2, 2})}, {"pads", attr_ints({1, 1, 1, 1})},
        {"count_include_pad", attr_int(1)}, {"ceil_mode", attr_int(1)}},
       "own"},
      {"nasnet avg 1x1/2", "AveragePool", {1, 16, 42, 42},
       {{"kernel_shape", attr_ints({1, 1})}, {"strides", attr_ints({2, 2})}}, "cuDNN"},
      {"dilated max", "MaxPool", {1, 4, 12, 12}, {{"kernel_shape", attr_ints({2, 2})}, {"dilations", attr_ints({2, 2})}},
       "own"},
      {"1-D max", "MaxPool", {1, 4, 30}, {{"kernel_shape", attr_ints({3})}, {"strides", attr_ints({2})}}, "cuDNN"},
      {"global avg", "GlobalAveragePool", {1, 64, 7, 7}, {}, "cuDNN"},
      {"global max", "GlobalMaxPool", {1, 64, 7, 7}, {}, "cuDNN"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].name);
    TestGraph t;
    t.input("x", random(cases[i].x, 80 + i));
    t.node(cases[i].op, {"x"}, {"y"}, cases[i].attrs);
    t.finish({"y"});
    EXPECT_THAT(expect_gpu_matches(t), HasSubstr(cases[i].expect));
  }
}

TEST(CudaKernels, GemmClassifierWithBiasAndRelu) {
  SKIP_WITHOUT_GPU();
  for (bool relu : {false, true}) {
    TestGraph t;
    t.input("x", random({1, 512}, 30));
    t.input("w", random({1000, 512}, 31, -0.05f, 0.05f), true);
    t.input("b", random({1000}, 32), true);
    t.node("Gemm", {"x", "w", "b"}, {"g"}, {{"transB", attr_int(1)}});
    if (relu) t.node("Relu", {"g"}, {"y"});
    t.finish({relu ? "y" : "g"});
    expect_gpu_matches(t, relu ? 2 : 1);
  }
}

TEST(CudaKernels, GemmAttributeForms) {
  SKIP_WITHOUT_GPU();
  struct Case {
    Shape a, b, c;
    std::map<std::string, Attribute> attrs;
  };
  const std::vector<Case> cases = {
      {{7, 5}, {5, 9}, {}, {}},
      {{5, 7}, {9, 5}, {7, 9}, {{"transA", attr_int(1)}, {"transB", attr_int(1)}, {"alpha", attr_float(0.5f)},
                               {"beta", attr_float(2.0f)}}},
      {{7, 5}, {5, 9}, {7, 1}, {{"beta", attr_float(1.0f)}}},
      {{7, 5}, {5, 9}, {9}, {{"alpha", attr_float(-1.5f)}}},
      {{7, 5}, {5, 9}, {}, {{"beta", attr_float(0.0f)}}},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(i);
    TestGraph t;
    t.input("a", random(cases[i].a, 100 + i));
    t.input("b", random(cases[i].b, 110 + i), true);
    std::vector<std::string> ins = {"a", "b"};
    if (!cases[i].c.empty()) {
      t.input("c", random(cases[i].c, 120 + i), true);
      ins.push_back("c");
    }
    t.node("Gemm", ins, {"y"}, cases[i].attrs);
    t.finish({"y"});
    expect_gpu_matches(t);
  }
}

TEST(CudaKernels, MatMulBertProjectionWithBiasAndRelu) {
  SKIP_WITHOUT_GPU();
  TestGraph t;
  t.input("x", random({1, 16, 64}, 33));
  t.input("w", random({64, 256}, 34, -0.1f, 0.1f), true);
  t.input("b", random({256}, 35), true);
  t.node("MatMul", {"x", "w"}, {"m"});
  t.node("Add", {"m", "b"}, {"a"});
  t.node("Relu", {"a"}, {"y"});
  t.finish({"y"});
  expect_gpu_matches(t, 3);
}

TEST(CudaKernels, MatMulBatchForms) {
  SKIP_WITHOUT_GPU();
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{1, 4, 16, 8}, {1, 4, 8, 16}},  // BERT's attention: equal batches, strided batched
      {{3, 16, 8}, {8, 5}},            // folded into one product
      {{8, 5}, {3, 5, 6}},             // A unbatched: strided batched with stride 0
      {{2, 1, 3, 4}, {1, 3, 4, 5}},    // broadcast on both sides: one product per batch entry
      {{8}, {8, 3}},                   // 1-D A
      {{2, 4, 8}, {8}},                // 1-D B
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(i);
    TestGraph t;
    t.input("a", random(cases[i].first, 130 + i));
    t.input("b", random(cases[i].second, 140 + i));
    t.node("MatMul", {"a", "b"}, {"y"});
    t.finish({"y"});
    expect_gpu_matches(t);
  }
}

TEST(CudaKernels, UnaryOps) {
  SKIP_WITHOUT_GPU();
  struct Case {
    std::string op;
    std::map<std::string, Attribute> attrs;
    float lo = -3, hi = 3;
  };
  const std::vector<Case> cases = {
      {"Relu", {}},        {"LeakyRelu", {{"alpha", attr_float(0.2f)}}},
      {"Sigmoid", {}},     {"Tanh", {}},
      {"Exp", {}},         {"Log", {}, 0.1f, 5.0f},
      {"Sqrt", {}, 0.0f, 9.0f}, {"Abs", {}},
      {"Neg", {}},         {"Erf", {}},
      {"Gelu", {}},        {"Gelu", {{"approximate", attr_string("tanh")}}},
      {"HardSigmoid", {}}, {"HardSwish", {}},
      {"Reciprocal", {}, 0.5f, 4.0f}, {"Floor", {}},
      {"Ceil", {}},        {"Elu", {{"alpha", attr_float(0.7f)}}},
      {"Softplus", {}},    {"Sin", {}},
      {"Cos", {}},         {"Clip", {{"min", attr_float(-0.5f)}, {"max", attr_float(1.5f)}}},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].op);
    TestGraph t;
    t.input("x", random({2, 3, 17}, 150 + i, cases[i].lo, cases[i].hi));
    // Clip's bounds as attributes need opset 6; Gelu exists from opset 20.
    int64_t opset = cases[i].op == "Clip" ? 6 : cases[i].op == "Gelu" ? 20 : 17;
    t.node(cases[i].op, {"x"}, {"y"}, cases[i].attrs, opset);
    t.finish({"y"});
    expect_gpu_matches(t);
  }
  // Clip with bound inputs (opset 11+): MobileNetV2's ReLU6.
  TestGraph t;
  t.input("x", random({1, 32, 7, 7}, 170, -2, 8));
  t.input("lo", f32({}, {0.0f}), true);
  t.input("hi", f32({}, {6.0f}), true);
  t.node("Clip", {"x", "lo", "hi"}, {"y"});
  t.finish({"y"});
  expect_gpu_matches(t);
}

// NaN stays NaN through Clip and a missing attribute bound is the largest
// float, as in the reference kernel (fminf / fmaxf would turn NaN into a bound).
TEST(CudaKernels, ClipKeepsNaNAndTheReferencesBounds) {
  SKIP_WITHOUT_GPU();
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (int64_t opset : {6, 13}) {
    SCOPED_TRACE(opset);
    TestGraph t;
    t.input("x", f32({5}, {nan, -inf, inf, -2.0f, 0.5f}));
    if (opset == 6) {
      t.node("Clip", {"x"}, {"y"}, {{"max", attr_float(1.0f)}}, opset);
    } else {
      t.input("hi", f32({}, {1.0f}), true);
      t.node("Clip", {"x", "", "hi"}, {"y"}, {}, opset);
    }
    const Graph& g = t.finish({"y"});
    std::unique_ptr<cuda::GpuOp> op = cuda::prepare_gpu_op(context(), g, {0});
    std::vector<Tensor> got = cuda::run_gpu_op(context(), g, *op, {t.value("x")});
    const Tensor& want = t.value("y");
    ASSERT_EQ(got.at(0).numel(), 5);
    EXPECT_TRUE(std::isnan(got[0].data<float>()[0]));
    for (int i = 1; i < 5; ++i) EXPECT_EQ(got[0].data<float>()[i], want.data<float>()[i]) << "element " << i;
  }
}

// Every Reduce* op the GPU runs, over trailing, leading, inner and all axes,
// with and without keepdims, short reductions (a thread per output) and
// long ones (a block per output); Max and Min keep a NaN.
TEST(CudaKernels, Reductions) {
  SKIP_WITHOUT_GPU();
  struct Case {
    Shape shape;
    std::vector<int64_t> axes;  // empty: all
    int64_t keepdims;
  };
  const std::vector<Case> cases = {{{2, 3, 4, 5}, {2, 3}, 1}, {{2, 3, 4, 5}, {1}, 0},      {{1, 16, 64}, {-1}, 1},
                                   {{2, 3, 4, 5}, {0, 2}, 0}, {{1, 64, 32, 32}, {2, 3}, 1}, {{3, 70}, {}, 1},
                                   {{4, 300}, {1}, 0}};
  int seed = 300;
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceSumSquare", "ReduceL1", "ReduceL2"})
    for (const Case& c : cases) {
      SCOPED_TRACE(fmt::format("{} of {} over {} axes, keepdims {}", op, shape_to_string(c.shape), c.axes.size(),
                               c.keepdims));
      TestGraph t;
      Tensor x = random(c.shape, ++seed);
      bool max_or_min = std::string(op) == "ReduceMax" || std::string(op) == "ReduceMin";
      if (max_or_min) x.data<float>()[1] = std::numeric_limits<float>::quiet_NaN();
      t.input("x", x);
      std::map<std::string, Attribute> attrs = {{"keepdims", attr_int(c.keepdims)}};
      if (std::string(op) == "ReduceSum") {  // axes as an input from opset 13
        if (!c.axes.empty()) t.input("axes", i64({static_cast<int64_t>(c.axes.size())}, c.axes), true);
        t.node(op, c.axes.empty() ? std::vector<std::string>{"x"} : std::vector<std::string>{"x", "axes"}, {"y"}, attrs,
               13);
      } else {
        if (!c.axes.empty()) attrs["axes"] = attr_ints(c.axes);
        t.node(op, {"x"}, {"y"}, attrs, 13);
      }
      t.finish({"y"});
      EXPECT_THAT(expect_gpu_matches(t), HasSubstr("CUDA reduction"));
    }
}

TEST(CudaKernels, BinaryOpsWithBroadcasting) {
  SKIP_WITHOUT_GPU();
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{2, 3, 5}, {2, 3, 5}}, {{1, 16, 8, 8}, {16, 1, 1}}, {{2, 3, 4}, {}}, {{4, 1}, {1, 5}}, {{}, {3, 2}}};
  int seed = 200;
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min"})
    for (const auto& [a, b] : shapes) {
      SCOPED_TRACE(fmt::format("{} {} {}", op, shape_to_string(a), shape_to_string(b)));
      TestGraph t;
      bool positive = std::string(op) == "Pow" || std::string(op) == "Div";
      t.input("a", random(a, ++seed, positive ? 0.5f : -2.0f, 2.0f));
      ++seed;
      t.input("b", random(b, seed, positive ? 0.5f : -2.0f, 2.0f), seed % 4 == 0);
      t.node(op, {"a", "b"}, {"y"});
      t.finish({"y"});
      expect_gpu_matches(t);
    }
}

TEST(CudaKernels, SoftmaxAxes) {
  SKIP_WITHOUT_GPU();
  struct Case {
    std::string op;
    int64_t axis, opset;
  };
  for (const Case& c : std::vector<Case>{{"Softmax", -1, 13}, {"Softmax", 1, 13}, {"Softmax", 1, 11},
                                         {"LogSoftmax", -1, 13}, {"LogSoftmax", 2, 13}}) {
    SCOPED_TRACE(fmt::format("{} axis {} opset {}", c.op, c.axis, c.opset));
    TestGraph t;
    t.input("x", random({1, 12, 16, 16}, 300, -4, 4));
    t.node(c.op, {"x"}, {"y"}, {{"axis", attr_int(c.axis)}}, c.opset);
    t.finish({"y"});
    expect_gpu_matches(t);
  }
  // A row longer than a block.
  TestGraph t;
  t.input("x", random({3, 5000}, 301, -4, 4));
  t.node("Softmax", {"x"}, {"y"});
  t.finish({"y"});
  expect_gpu_matches(t);
}

TEST(CudaKernels, LayerNormalization) {
  SKIP_WITHOUT_GPU();
  for (int variant = 0; variant < 3; ++variant) {
    SCOPED_TRACE(variant);
    TestGraph t;
    t.input("x", random({1, 16, 768}, 310 + variant, -3, 5));
    bool axis_minus_2 = variant == 2;
    Shape param = axis_minus_2 ? Shape{16, 768} : Shape{768};
    t.input("scale", random(param, 320 + variant, 0.5f, 1.5f), true);
    std::vector<std::string> ins = {"x", "scale"};
    if (variant != 1) {
      t.input("bias", random(param, 330 + variant), true);
      ins.push_back("bias");
    }
    t.node("LayerNormalization", ins, {"y"},
           {{"axis", attr_int(axis_minus_2 ? -2 : -1)}, {"epsilon", attr_float(1e-12f)}});
    t.finish({"y"});
    expect_gpu_matches(t);
  }
}

TEST(CudaKernels, ConcatAxesAndDtypes) {
  SKIP_WITHOUT_GPU();
  {
    TestGraph t;  // Inception's channel concat of four branches
    t.input("a", random({1, 64, 7, 7}, 340));
    t.input("b", random({1, 96, 7, 7}, 341));
    t.input("c", random({1, 32, 7, 7}, 342));
    t.input("d", random({1, 32, 7, 7}, 343), true);
    t.node("Concat", {"a", "b", "c", "d"}, {"y"}, {{"axis", attr_int(1)}});
    t.finish({"y"});
    expect_gpu_matches(t);
  }
  {
    TestGraph t;
    t.input("a", i64({2, 3}, {1, 2, 3, 4, 5, 6}));
    t.input("b", i64({1, 3}, {7, 8, 9}));
    t.node("Concat", {"a", "b"}, {"y"}, {{"axis", attr_int(0)}});
    t.finish({"y"});
    expect_gpu_matches(t);
  }
  {
    TestGraph t;
    t.input("a", random({2, 3, 4}, 344));
    t.input("b", random({2, 3, 1}, 345));
    t.node("Concat", {"a", "b"}, {"y"}, {{"axis", attr_int(-1)}});
    t.finish({"y"});
    expect_gpu_matches(t);
  }
}

TEST(CudaKernels, ShapeOps) {
  SKIP_WITHOUT_GPU();
  struct Case {
    std::string name, op;
    Shape x;
    std::vector<std::pair<std::string, Tensor>> constants;
    std::map<std::string, Attribute> attrs;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {"reshape", "Reshape", {1, 16, 768}, {{"shape", i64({4}, {1, 16, 12, 64})}}, {}, "view"},
      {"flatten", "Flatten", {1, 512, 1, 1}, {}, {}, "view"},
      {"bert transpose", "Transpose", {1, 16, 12, 64}, {}, {{"perm", attr_ints({0, 2, 1, 3})}}, "strided"},
      {"bert key transpose", "Transpose", {1, 16, 12, 64}, {}, {{"perm", attr_ints({0, 2, 3, 1})}}, "strided"},
      {"nasnet slice", "Slice", {1, 8, 22, 22},
       {{"starts", i64({2}, {1, 1})}, {"ends", i64({2}, {1000, 1000})}, {"axes", i64({2}, {2, 3})}}, {}, "strided"},
      {"negative step slice", "Slice", {4, 10},
       {{"starts", i64({1}, {-2})}, {"ends", i64({1}, {0})}, {"axes", i64({1}, {1})}, {"steps", i64({1}, {-3})}}, {},
       "strided"},
      {"nasnet pad", "Pad", {1, 8, 21, 21}, {{"pads", i64({8}, {0, 0, 0, 0, 0, 0, 1, 1})}}, {}, "index"},
      {"reflect pad", "Pad", {2, 5, 5}, {{"pads", i64({6}, {0, 2, 3, 0, 4, 1})}}, {{"mode", attr_string("reflect")}},
       "index"},
      {"edge pad", "Pad", {2, 5, 5}, {{"pads", i64({6}, {0, 1, 0, 0, 2, 3})}}, {{"mode", attr_string("edge")}},
       "index"},
      {"constant pad value", "Pad", {3, 4},
       {{"pads", i64({4}, {1, 0, 2, -1})}, {"constant_value", f32({}, {2.5f})}}, {}, "index"},
      {"expand", "Expand", {3, 1}, {{"shape", i64({3}, {2, 3, 4})}}, {}, "strided"},
      {"tile", "Tile", {2, 3}, {{"repeats", i64({2}, {2, 3})}}, {}, "index"},
      {"depth to space", "DepthToSpace", {1, 8, 3, 3}, {}, {{"blocksize", attr_int(2)}}, "index"},
      {"position gather", "Gather", {512, 64}, {{"indices", i64({1, 16}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
                                                                          13, 14, 15})}},
       {}, "strided"},
      {"gather axis 1", "Gather", {3, 7, 2}, {{"indices", i64({3}, {6, -1, 0})}}, {{"axis", attr_int(1)}}, "index"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].name);
    TestGraph t;
    t.input("x", random(cases[i].x, 400 + i));
    std::vector<std::string> ins = {"x"};
    for (const auto& [name, tensor] : cases[i].constants) {
      t.input(name, tensor, true);
      ins.push_back(name);
    }
    t.node(cases[i].op, ins, {"y"}, cases[i].attrs);
    t.finish({"y"});
    EXPECT_THAT(expect_gpu_matches(t), HasSubstr(cases[i].expect));
  }
}

TEST(CudaKernels, GatherWithRunTimeIndices) {
  SKIP_WITHOUT_GPU();
  for (DType index_type : {DType::kInt64, DType::kInt32}) {
    TestGraph t;  // BERT's token embedding
    t.input("table", random({1000, 64}, 450), true);
    std::vector<int64_t> ids = {5, 999, 0, 17, -1, 42, 42, 7};
    t.input("ids", index_type == DType::kInt64
                       ? i64({1, 8}, ids)
                       : i32({1, 8}, std::vector<int32_t>(ids.begin(), ids.end())));
    t.node("Gather", {"table", "ids"}, {"y"});
    t.finish({"y"});
    EXPECT_THAT(expect_gpu_matches(t), HasSubstr("gather"));
  }
}

// ---------------------------------------------------------------- whole models (GPU)

// Runs `graph` on the GPU one fusion group after another (stream 0, values
// passed through the host) and compares its outputs with run_reference().
void expect_model_matches(const std::string& model, std::map<std::string, std::string> params = {}) {
  LoadOptions opts;
  opts.zoo_params = std::move(params);
  Graph graph = load_model("zoo:" + model, opts);
  TensorMap inputs = random_inputs(graph, 42);
  TensorMap want = run_reference(graph, inputs);
  std::map<ValueId, Tensor> values;
  for (ValueId v : graph.inputs) values[v] = inputs.at(graph.values[v].name);
  std::vector<NodeId> all_nodes(graph.nodes.size());
  std::iota(all_nodes.begin(), all_nodes.end(), 0);
  for (const std::vector<NodeId>& group : cuda::gpu_launch_groups(graph, all_nodes)) {
    std::unique_ptr<cuda::GpuOp> op = cuda::prepare_gpu_op(context(), graph, group);
    std::vector<Tensor> in;
    for (ValueId v : op->inputs()) in.push_back(values.at(v));
    std::vector<Tensor> out = cuda::run_gpu_op(context(), graph, *op, in);
    for (size_t i = 0; i < out.size(); ++i) values[op->outputs()[i]] = out[i];
  }
  for (ValueId v : graph.outputs) {
    const std::string& name = graph.values[v].name;
    EXPECT_LE(relative_error(values.at(v), want.at(name)), 1e-4) << model << ": " << name;
  }
}

// Runs `graph` as one CUDA Graph: every fusion group prepared, each value in
// its own device buffer, group i enqueued on stream i % streams (so a
// multi-stream run spreads branches and chains alike over the streams), an
// event after each group and a wait wherever a group reads a value made on
// another stream; captured once, replayed twice on new inputs.
void expect_captured_model_matches(const std::string& model, int streams,
                                   std::map<std::string, std::string> params = {}) {
  SCOPED_TRACE(fmt::format("{} on {} stream(s)", model, streams));
  LoadOptions opts;
  opts.zoo_params = std::move(params);
  Graph graph = load_model("zoo:" + model, opts);
  cuda::CudaContext& ctx = context();
  ASSERT_LE(streams, ctx.n_streams());
  std::vector<std::unique_ptr<cuda::GpuOp>> ops;
  std::vector<bool> done(graph.nodes.size(), false);
  for (NodeId n = 0; n < static_cast<NodeId>(graph.nodes.size()); ++n) {
    if (done[n]) continue;
    std::vector<NodeId> group = cuda::gpu_fusion_group(graph, n);
    for (NodeId m : group) done[m] = true;
    ops.push_back(cuda::prepare_gpu_op(ctx, graph, group));
  }
  std::map<ValueId, cuda::DeviceBuffer> memory;
  auto buffer = [&](ValueId v) -> void* {
    auto it = memory.find(v);
    if (it == memory.end()) {
      size_t bytes = static_cast<size_t>(shape_numel(graph.values[v].shape)) * dtype_size(graph.values[v].dtype);
      it = memory.emplace(v, cuda::DeviceBuffer(std::max<size_t>(bytes, 1))).first;
    }
    return it->second.get();
  };
  size_t workspace = 0;
  std::map<ValueId, size_t> made_by;  // value -> op index
  for (size_t i = 0; i < ops.size(); ++i) {
    workspace = std::max(workspace, ops[i]->workspace_bytes());
    for (ValueId v : ops[i]->outputs()) made_by[v] = i;
    for (ValueId v : ops[i]->inputs()) buffer(v);
    for (ValueId v : ops[i]->outputs()) buffer(v);
  }
  ctx.reserve_workspace(workspace);
  std::vector<cuda::Event> events(ops.size());
  auto enqueue_all = [&] {
    for (size_t i = 0; i < ops.size(); ++i) {
      const cuda::GpuStream& s = ctx.stream(static_cast<int>(i % static_cast<size_t>(streams)));
      std::vector<const void*> in;
      std::vector<void*> out;
      for (ValueId v : ops[i]->inputs()) {
        in.push_back(buffer(v));
        auto producer = made_by.find(v);
        if (producer != made_by.end() && producer->second % static_cast<size_t>(streams) != i % static_cast<size_t>(streams))
          events[producer->second].wait_on(s.stream);
      }
      for (ValueId v : ops[i]->outputs()) out.push_back(buffer(v));
      ops[i]->enqueue(s, in.data(), out.data());
      events[i].record(s.stream);
    }
  };
  // Once for real first, as the executor does: no library's first-call
  // setup inside the capture.
  enqueue_all();
  ctx.synchronize();
  cuda::CudaGraph captured = cuda::capture_graph(ctx, enqueue_all);
  for (uint64_t seed : {42, 43}) {
    TensorMap inputs = random_inputs(graph, seed);
    TensorMap want = run_reference(graph, inputs);
    for (ValueId v : graph.inputs) {
      const Tensor& t = inputs.at(graph.values[v].name);
      cuda::upload_bytes(buffer(v), t.raw(), t.nbytes());
    }
    captured.replay(ctx);
    ctx.synchronize(0);
    for (ValueId v : graph.outputs) {
      Tensor got = ctx.download(buffer(v), graph.values[v].dtype, graph.values[v].shape);
      EXPECT_LE(relative_error(got, want.at(graph.values[v].name)), 1e-4) << "seed " << seed;
    }
  }
}

TEST(CudaModels, CapturedInOneCudaGraphOnOneAndSeveralStreams) {
  SKIP_WITHOUT_GPU();
  expect_captured_model_matches("googlenet", 1);
  expect_captured_model_matches("googlenet", 3);
  expect_captured_model_matches("bert", 3, {{"layers", "2"}, {"seq", "16"}});
}

// Every zoo model, each a test of its own (one that throws hides no other).
struct ZooCase {
  std::string model;
  zoo::ZooParams params;
};

const std::vector<ZooCase>& zoo_cases() {
  static const std::vector<ZooCase> cases = {
      {"resnet18", {}},      {"resnet50", {}}, {"googlenet", {}}, {"inception_v3", {}},
      {"mobilenet_v2", {}},  {"squeezenet1_0", {}}, {"nasnet", {}},    {"randwire", {}},
      {"bert", {{"layers", "2"}, {"seq", "16"}}}};
  return cases;
}

void PrintTo(const ZooCase& c, std::ostream* os) { *os << c.model; }

class CudaZooModel : public ::testing::TestWithParam<ZooCase> {};

TEST_P(CudaZooModel, MatchesTheReferenceGroupByGroup) {
  SKIP_WITHOUT_GPU();
  expect_model_matches(GetParam().model, GetParam().params);
}

INSTANTIATE_TEST_SUITE_P(CudaModels, CudaZooModel, ::testing::ValuesIn(zoo_cases()),
                         [](const ::testing::TestParamInfo<ZooCase>& info) { return info.param.model; });

TEST(CudaModels, EveryZooModelIsChecked) {
  std::set<std::string> checked, zoo_names;
  for (const ZooCase& c : zoo_cases()) checked.insert(c.model);
  for (const zoo::ZooModelInfo& m : zoo::zoo_models()) zoo_names.insert(m.name);
  EXPECT_EQ(checked, zoo_names);
}

}  // namespace
}  // namespace hetsched

#else  // HETSCHED_WITH_CUDA

TEST(CudaBackend, NotBuilt) {
  GTEST_SKIP() << "this build has no CUDA backend (configure with -DHETSCHED_WITH_CUDA=ON where the CUDA toolkit "
                  "and cuDNN are installed)";
}

#endif  // HETSCHED_WITH_CUDA
