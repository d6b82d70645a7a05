// The executor's GPU lanes (runtime/gpu_device.h, docs/cuda.md "Executor
// integration").
//
// Everywhere: the placement of a GPU's values in its arena, nodes a GPU
// kernel declines kept off the GPU (apply_pins) and refused by
// validate_plan, --cuda-graph on refused for a plan not on one GPU, the
// flag's parsing, and, without a GPU, the error an executor for a `cuda:0`
// plan gives. With a GPU: zoo models on cuda:0 (1 and 4 streams, CUDA Graph
// on and off) and on cpu:0 + cuda:0 with a split plan, against the
// reference kernels and the sequential CPU plan; without one those skip
// with the probe's reason.
#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli_test_util.h"
#include "graph_test_util.h"
#include "hetsched/device.h"
#include "hetsched/error.h"
#include "hetsched/platform.h"
#include "hetsched/session.h"
#include "kernel_test_util.h"
#include "onnx_model_util.h"
#include "plan/plan_builder.h"
#include "profile/profile_db.h"
#include "profile/profiler.h"
#include "platform/gpu_probe.h"
#include "runtime/executor.h"
#include "runtime/gpu_device.h"

namespace hetsched {
namespace {

using namespace hetsched::testing;
using ::testing::HasSubstr;
using ::testing::Not;

#define SKIP_WITHOUT_GPU() \
  if (probe_gpus().gpus.empty()) GTEST_SKIP() << probe_gpus().why_none

// ---------------------------------------------------------------- memory layout (no GPU)

struct Range {
  int64_t begin, end;
  bool overlaps(const Range& o) const { return begin < o.end && o.begin < end; }
};

Range range_of(const GpuMemoryLayout& layout, const Graph& g, ValueId v) {
  int64_t bytes = shape_numel(g.values[v].shape) * static_cast<int64_t>(dtype_size(g.values[v].dtype));
  return {layout.offset[v], layout.offset[v] + bytes};
}

// x -> relu0 -> y0 -> ... -> y6; lane 0 runs relu0..relu3, lane 1 relu4 and
// relu5; x arrives by a copy and y5 leaves by one; y6 is not on the GPU.
TEST(GpuMemory, LanesNeverShareAndALaneReusesDeadValues) {
  Graph g = relu_chain(7, 64);  // 256 bytes a value
  auto v = [&](const std::string& name) { return g.find_value(name); };
  ValueId x = v("x"), y0 = v("y0"), y1 = v("y1"), y2 = v("y2"), y3 = v("y3"), y4 = v("y4"), y5 = v("y5");
  std::vector<std::vector<std::vector<ValueId>>> lanes = {
      {{x}, {x, y0}, {y0, y1}, {y1, y2}, {y2, y3}},
      {{y3, y4}, {y4, y5}, {y5}},
  };
  GpuMemoryLayout layout = plan_gpu_memory(g, lanes, {x, y5}, {}, 256);

  EXPECT_EQ(layout.offset[v("y6")], -1) << "not touched by the GPU";
  for (ValueId a : {x, y0, y1, y2, y3, y4, y5}) {
    ASSERT_GE(layout.offset[a], 0) << g.values[a].name;
    EXPECT_EQ(layout.offset[a] % 256, 0) << g.values[a].name;
    EXPECT_LE(range_of(layout, g, a).end, static_cast<int64_t>(layout.bytes)) << g.values[a].name;
  }
  // Copied values and y3 (both lanes) for the whole run, each its own.
  for (ValueId a : {x, y3, y5}) {
    EXPECT_LT(layout.offset[a], static_cast<int64_t>(layout.whole_run_bytes)) << g.values[a].name;
    for (ValueId b : {x, y0, y1, y2, y3, y4, y5}) {
      if (a == b) continue;
      EXPECT_FALSE(range_of(layout, g, a).overlaps(range_of(layout, g, b)))
          << g.values[a].name << " and " << g.values[b].name;
    }
  }
  // Lane 0's values never meet lane 1's: the streams run at once.
  for (ValueId a : {y0, y1, y2})
    EXPECT_FALSE(range_of(layout, g, a).overlaps(range_of(layout, g, y4))) << g.values[a].name;
  // Within lane 0, y0 (steps 1-2) and y2 (steps 3-4) are never alive
  // together: one buffer; y1 (steps 2-3) meets both.
  EXPECT_EQ(layout.offset[y0], layout.offset[y2]);
  EXPECT_FALSE(range_of(layout, g, y1).overlaps(range_of(layout, g, y0)));
  EXPECT_EQ(layout.bytes, layout.whole_run_bytes + 3 * 256) << "lane 0: two buffers, lane 1: one";
}

TEST(GpuMemory, AViewSharesItsInputsMemoryAndLifetime) {
  Graph g = relu_chain(4, 64);
  auto v = [&](const std::string& name) { return g.find_value(name); };
  ValueId y0 = v("y0"), y1 = v("y1"), y2 = v("y2"), y3 = v("y3");
  std::vector<std::vector<std::vector<ValueId>>> lanes = {{{y0}, {y0, y1}, {y1, y2}, {y2, y3}}};
  std::vector<ValueId> alias(g.values.size(), kNoValue);
  alias[y1] = y0;  // as a Reshape's output would be
  GpuMemoryLayout layout = plan_gpu_memory(g, lanes, {}, alias, 256);
  EXPECT_EQ(layout.offset[y1], layout.offset[y0]);
  // y0's memory is alive until y1's last reader (step 2), where y2 is made.
  EXPECT_FALSE(range_of(layout, g, y2).overlaps(range_of(layout, g, y0)));

  alias[y0] = y1;
  EXPECT_THROW(plan_gpu_memory(g, lanes, {}, alias, 256), Error) << "a cycle of aliases";
}

// ---------------------------------------------------------------- declined nodes (no GPU)

// A cuda:0 device as make_platform describes one, for machines without a
// GPU: its own memory space, linked to the host both ways.
Platform platform_with_cuda_device(bool with_cpu) {
  Platform p = with_cpu ? make_platform("cpu:0", "") : Platform{};
  PlatformDevice gpu;
  gpu.name = "cuda:0";
  gpu.kind = DeviceKind::kCuda;
  gpu.model_kind = "gpu";
  gpu.memory_space = "cuda:0";
  gpu.n_streams = 2;
  gpu.peak_gflops = 10000;
  gpu.bandwidth_gbps = 1000;
  p.devices.push_back(gpu);
  p.links.push_back(Link{kHostMemory, "cuda:0", 10, 25, "default"});
  p.links.push_back(Link{"cuda:0", kHostMemory, 10, 25, "default"});
  return p;
}

// z = x + y in int64: an op the GPU has a kernel for, in a dtype it declines.
Graph int64_add() {
  Graph g;
  auto int_value = [&](const std::string& name) {
    Value v;
    v.name = name;
    v.dtype = DType::kInt64;
    v.has_shape = true;
    v.shape = {2, 3};
    return g.add_value(std::move(v));
  };
  ValueId x = int_value("x"), y = int_value("y"), z = int_value("z");
  g.inputs = {x, y};
  add_op(g, "Add", "add", {x, y}, {z});
  g.outputs = {z};
  g.finalize();
  g.annotate_costs();
  return g;
}

std::string no_backend_or(const std::string& why) {
  (void)why;
#ifdef HETSCHED_WITH_CUDA
  return why;
#else
  return "this build has no CUDA backend";
#endif
}

TEST(CudaExecutor, ANodeTheGpuDeclinesIsRefusedByThePlanValidator) {
  Graph g = int64_add();
  Platform p = platform_with_cuda_device(false);
  Plan plan = build_plan(g, p, {{{0}, 0, 0, "test"}}, "test");
  try {
    validate_plan(plan, g, p);
    ADD_FAILURE() << "a plan running an int64 Add on cuda:0 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidFile);
    EXPECT_THAT(e.what(), HasSubstr("cuda:0 does not run Add 'add' (" + no_backend_or("not float32")));
  }
}

TEST(CudaExecutor, SchedulersKeepDeclinedNodesOffTheGpu) {
  Graph g = int64_add();
  Platform p = platform_with_cuda_device(true);
  apply_pins(p, g, {});
  const PlatformDevice& gpu = p.devices[1];
  EXPECT_FALSE(gpu.supports(g.nodes[0]));
  EXPECT_THAT(gpu.why_not(g.nodes[0]), HasSubstr("the GPU kernel declines it: " + no_backend_or("not float32")));
  EXPECT_TRUE(p.devices[0].supports(g.nodes[0]));
  EXPECT_TRUE(p.devices[0].declined.empty()) << "only GPUs decline";
  // The plan builder refuses to put it there.
  EXPECT_THROW(build_plan(g, p, {{{0}, 1, 0, "test"}}, "test"), Error);
#ifdef HETSCHED_WITH_CUDA
  Graph floats = relu_chain(2, 8);
  Platform q = platform_with_cuda_device(false);
  apply_pins(q, floats, {});
  EXPECT_TRUE(q.devices[0].declined.empty()) << "the GPU runs float32 Relu";
  EXPECT_TRUE(q.devices[0].supports(floats.nodes[0]));
#endif
}

// ---------------------------------------------------------------- --cuda-graph (no GPU)

TEST(CudaExecutor, CudaGraphOnNeedsEveryLaneOnOneGpu) {
  Graph g = relu_chain(3, 16);
  Platform cpu = make_platform("cpu:0", "");
  std::vector<LaunchAssignment> launches;
  for (auto& unit : fusion_units(g)) launches.push_back({unit, 0, 0, "test"});
  Plan plan = build_plan(g, cpu, launches, "test");
  try {
    Executor executor(g, plan, cpu, nullptr, CudaGraphMode::kOn);
    ADD_FAILURE() << "--cuda-graph on accepted for a CPU plan";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUsage);
    EXPECT_EQ(std::string(e.what()),
              "--cuda-graph on needs every lane of the plan on one GPU; this plan runs on cpu:0 (use --cuda-graph "
              "off)");
  }
  // Off and auto leave a CPU plan as it is.
  TensorMap inputs = random_inputs(g, 3);
  TensorMap want = Executor(g, plan, cpu, nullptr).run(inputs);
  expect_same_outputs(Executor(g, plan, cpu, nullptr, CudaGraphMode::kOff).run(inputs), want, "--cuda-graph off");
  EXPECT_EQ(Executor(g, plan, cpu, nullptr).summary().cuda_graph, "") << "no GPU in the plan: nothing to say";
#ifdef HETSCHED_WITH_CUDA
  // A split plan is refused before any GPU is touched: the same words here
  // as on a GPU machine.
  Platform mixed = platform_with_cuda_device(true);
  std::vector<LaunchAssignment> split = {{{0}, 1, 0, ""}, {{1}, 0, 0, ""}, {{2}, 1, 1, ""}};
  Plan split_plan = build_plan(g, mixed, split, "test");
  try {
    Executor executor(g, split_plan, mixed, nullptr, CudaGraphMode::kOn);
    ADD_FAILURE() << "--cuda-graph on accepted for a CPU + GPU plan";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUsage);
    EXPECT_THAT(e.what(), HasSubstr("this plan runs on cpu:0, cuda:0"));
  }
#endif
}

TEST(CudaExecutor, TheCliFlag) {
  std::filesystem::path dir = temp_dir("cuda_graph_flag");
  std::string model = (dir / "model.onnx").string();
  write_model(relu_add_model(), model);
  CliResult help = run_cli("run --help");
  EXPECT_THAT(help.output, HasSubstr("--cuda-graph")) << "bench/cuda.py looks for it";
  CliResult bad = run_cli("run " + model + " --cuda-graph maybe -n 1 -w 0");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_THAT(bad.output, HasSubstr("--cuda-graph"));
  CliResult on = run_cli("run " + model + " --devices cpu:0 --cuda-graph on -n 1 -w 0");
  EXPECT_EQ(on.exit_code, 2) << on.output;
  EXPECT_THAT(on.output, HasSubstr("--cuda-graph on needs every lane of the plan on one GPU; this plan runs on cpu:0"));
  CliResult off = run_cli("run " + model + " --devices cpu:0 --cuda-graph off -n 1 -w 0");
  EXPECT_EQ(off.exit_code, 0) << off.output;
  std::filesystem::remove_all(dir);
}

// ---------------------------------------------------------------- without a GPU

TEST(CudaExecutor, WithoutAGpuAPlanOnCuda0FailsSayingWhy) {
  if (!probe_gpus().gpus.empty()) GTEST_SKIP() << "a GPU is present: this checks the error on a machine without one";
  Graph g = relu_chain(2, 8);
  Platform p = platform_with_cuda_device(false);
  Plan plan = build_plan(g, p, {{{0}, 0, 0, ""}, {{1}, 0, 1, ""}}, "test");
  try {
    Executor executor(g, plan, p, nullptr);
    ADD_FAILURE() << "an executor for cuda:0 was built without a GPU";
  } catch (const Error& e) {
#ifdef HETSCHED_WITH_CUDA
    EXPECT_EQ(e.code(), ErrorCode::kRuntime) << e.what();
    EXPECT_THAT(e.what(), ::testing::StartsWith("cuda:0: "));
#else
    EXPECT_THAT(e.what(), HasSubstr("this build has no CUDA backend"));
#endif
  }
}

// A CPU device on every core beside a GPU is warned about (its pinned
// threads would compete with the ones driving the GPU); one core short is not.
TEST(CudaExecutor, ACpuDeviceOnEveryCoreBesideAGpuIsWarnedAbout) {
  Platform p = platform_with_cuda_device(true);  // cpu:0 and cuda:0
  EXPECT_EQ(cpu_beside_gpu_warning(p, {0, 1}), "") << "cpu:0 leaves core 1 free";
  EXPECT_EQ(cpu_beside_gpu_warning(p, {0}), "") << "one core: nothing to leave";
  p.devices[0].cores = {0, 1};
  p.devices[0].name = "cpu:0-1";
  EXPECT_EQ(cpu_beside_gpu_warning(p, {0, 1}),
            "cpu:0-1 takes every core beside cuda:0: the threads driving the GPU's streams will take cores from its "
            "kernels; leave one free (e.g. --devices cpu:1,cuda:0)");
  p.devices.pop_back();  // no GPU: no warning
  EXPECT_EQ(cpu_beside_gpu_warning(p, {0, 1}), "");
}

// The profiler runs a GPU alone on a platform of that GPU and the links
// between its memory and the host's (its inputs come in, its outputs go
// out): without them no plan could be built. Here it gets as far as the GPU.
TEST(CudaExecutor, WithoutAGpuTheProfilerFailsOnlyForWantOfIt) {
  if (!probe_gpus().gpus.empty()) GTEST_SKIP() << "a GPU is present: TheProfilerStoresTheGpusTimes runs instead";
  Graph g = relu_chain(2, 8);
  Platform p = platform_with_cuda_device(false);
  p.devices[0].signature = "cuda|a GPU of this test";  // what profiles are stored under
  std::filesystem::path dir = temp_dir("cuda_profile_no_gpu");
  ProfileDB db((dir / "p.db").string());
  try {
    profile_graph(g, p, db, ProfileOptions{});
    ADD_FAILURE() << "profiled cuda:0 without a GPU";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), ::testing::Not(HasSubstr("no link"))) << "the profiling platform lost the GPU's links";
    EXPECT_THAT(e.what(), HasSubstr("cuda:0")) << e.what();
  }
  std::filesystem::remove_all(dir);
}

// ---------------------------------------------------------------- on a GPU

Graph zoo_graph(const std::string& model, std::map<std::string, std::string> params = {}) {
  LoadOptions opts;
  opts.zoo_params = std::move(params);
  return load_model("zoo:" + model, opts);
}

// A platform of the devices in `spec`, with the GPU's declines applied.
Platform gpu_platform(const std::string& spec, const Graph& g) {
  Platform p = make_platform(spec, "");
  apply_pins(p, g, {});
  return p;
}

// Runs `plan` on `p` with `mode` twice (new inputs the second time: a
// replayed graph must read them) and compares with the reference kernels.
void expect_matches_reference(const Graph& g, const Plan& plan, const Platform& p, CudaGraphMode mode,
                              const std::string& what) {
  SCOPED_TRACE(what);
  Executor executor(g, plan, p, nullptr, mode);
  for (uint64_t seed : {42, 43}) {
    TensorMap inputs = random_inputs(g, seed);
    TensorMap want = run_reference(g, inputs);
    TensorMap got = executor.run(inputs);
    ASSERT_EQ(got.size(), want.size());
    for (const auto& [name, t] : want) {
      ASSERT_TRUE(got.count(name)) << name;
      EXPECT_EQ(got.at(name).shape(), t.shape()) << name;
      EXPECT_LE(relative_error(got.at(name), t), 1e-4) << name << ", seed " << seed;
    }
  }
}

// Every fusion unit on cuda:0, unit i on stream i % streams: chains and
// branches alike cross streams, with events between them.
Plan spread_over_streams(const Graph& g, const Platform& p, int streams) {
  std::vector<LaunchAssignment> launches;
  int i = 0;
  for (auto& unit : fusion_units(g)) launches.push_back({unit, 0, i++ % streams, ""});
  return build_plan(g, p, launches, "test");
}

TEST(CudaExecutor, ZooModelsOnCuda0OneAndFourStreamsGraphOnAndOff) {
  SKIP_WITHOUT_GPU();
  for (auto [model, params] : std::vector<std::pair<std::string, std::map<std::string, std::string>>>{
           {"resnet18", {}}, {"googlenet", {}}, {"bert", {{"layers", "2"}, {"seq", "16"}}}}) {
    Graph g = zoo_graph(model, params);
    for (int streams : {1, 4}) {
      Platform p = gpu_platform(fmt::format("cuda:0*{}", streams), g);
      Plan plan = spread_over_streams(g, p, streams);
      for (CudaGraphMode mode : {CudaGraphMode::kOff, CudaGraphMode::kOn})
        expect_matches_reference(g, plan, p, mode,
                                 fmt::format("{} on cuda:0*{}, graph {}", model, streams,
                                             mode == CudaGraphMode::kOn ? "on" : "off"));
    }
  }
}

// Runs of fusion units alternate between cpu:0 and cuda:0 (streams 0 and 1
// taking turns): values cross both ways, through copies and host-visible
// events, and the CPU lane waits on GPU lanes and the reverse.
TEST(CudaExecutor, SplitPlanOnCpuAndGpuMatchesTheSequentialCpuPlan) {
  SKIP_WITHOUT_GPU();
  for (auto [model, params] : std::vector<std::pair<std::string, std::map<std::string, std::string>>>{
           {"googlenet", {}}, {"bert", {{"layers", "2"}, {"seq", "16"}}}}) {
    SCOPED_TRACE(model);
    Graph g = zoo_graph(model, params);
    Platform p = gpu_platform("cpu:0,cuda:0*2", g);
    std::vector<LaunchAssignment> split, cpu_only;
    int i = 0, gpu_turn = 0;
    for (auto& unit : fusion_units(g)) {
      cpu_only.push_back({unit, 0, 0, ""});
      bool on_gpu = (i++ / 3) % 2 == 0 && std::all_of(unit.begin(), unit.end(), [&](NodeId n) {
                      return p.devices[1].supports(g.nodes[n]);
                    });
      split.push_back({unit, on_gpu ? 1 : 0, on_gpu ? gpu_turn++ % 2 : 0, ""});
    }
    Plan plan = build_plan(g, p, split, "test");
    ASSERT_GT(plan.n_copies(), 2) << "the split must cross between host and GPU";
    TensorMap inputs = random_inputs(g, 7);
    TensorMap want = Executor(g, build_plan(g, p, cpu_only, "test"), p, nullptr).run(inputs);
    Executor executor(g, plan, p, nullptr);  // auto: no graph for a split plan
    for (int run = 0; run < 2; ++run) {
      TensorMap got = executor.run(inputs);
      for (const auto& [name, t] : want) EXPECT_LE(relative_error(got.at(name), t), 1e-4) << name << ", run " << run;
    }
    expect_matches_reference(g, plan, p, CudaGraphMode::kOff, model + " split, against the reference");
  }
}

TEST(CudaExecutor, SessionAndCliRunOnCuda0) {
  SKIP_WITHOUT_GPU();
  Graph g = zoo_graph("googlenet");
  TensorMap inputs = random_inputs(g, 1);
  TensorMap want = run_reference(g, inputs);
  for (const char* devices : {"cuda:0*1", "cuda:0"}) {
    SessionOptions options(devices);
    Session session(zoo_graph("googlenet"), options);
    EXPECT_EQ(session.summary().device, "cuda:0");
    TensorMap got = session.run(inputs);
    for (const auto& [name, t] : want) EXPECT_LE(relative_error(got.at(name), t), 1e-4) << devices << " " << name;
  }
  for (const char* mode : {"on", "off"}) {
    CliResult r = run_cli(fmt::format("run zoo:googlenet --devices cuda:0*1 --cuda-graph {} -n 2 -w 1", mode));
    EXPECT_EQ(r.exit_code, 0) << r.output;
  }
}

// The main job on a GPU machine: the demo takes GPU 0 and every core but
// the first, profiles both, and runs and checks the fastest plan.
TEST(CudaExecutor, TheDemoTakesTheGpuAndEveryCoreButTheFirst) {
  SKIP_WITHOUT_GPU();
  std::vector<int> cores = describe_machine().usable_cores;
  std::filesystem::path dir = temp_dir("cuda_demo");
  CliResult r = run_cli(fmt::format("demo zoo:squeezenet1_0 --schedulers sequential,duet,auto -n 2 -w 1 --report '' "
                                    "--db {} 2>&1",
                                    (dir / "p.db").string()));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("\n  cuda:0 "));
  if (cores.size() >= 2) {
    EXPECT_THAT(r.output, HasSubstr(fmt::format("\n  cpu:{}", cores[1])));
  }
  EXPECT_THAT(r.output, Not(HasSubstr("DIFFER")));
  std::filesystem::remove_all(dir);
}

// x -> MatMul(x, x) -> Relu -> MatMul: two products of `n`^3 multiply-adds,
// far longer on any GPU than their enqueueing on the host.
Graph two_products(int64_t n) {
  Graph g;
  ValueId x = add_float_value(g, "x", {n, n});
  g.inputs.push_back(x);
  ValueId y = add_float_value(g, "y", {n, n}), r = add_float_value(g, "r", {n, n}), z = add_float_value(g, "z", {n, n});
  add_op(g, "MatMul", "mm0", {x, x}, {y});
  add_op(g, "Relu", "relu", {y}, {r});
  add_op(g, "MatMul", "mm1", {r, r}, {z});
  g.outputs.push_back(z);
  g.finalize();
  g.annotate_costs();
  return g;
}

// 2 * 4096^3 FLOPs in under 500 us would be 275 TFLOP/s: more than any
// GPU's FP32 (TF32 is off).
constexpr int64_t kBigProduct = 4096;
constexpr double kBigProductAtLeastUs = 500;

// The host only enqueues a GPU lane's steps; the timeline has the GPU's times.
TEST(CudaExecutor, ATimelineHasTheGpusTimesOfItsSteps) {
  SKIP_WITHOUT_GPU();
  Graph g = two_products(kBigProduct);
  Platform p = gpu_platform("cuda:0*1", g);
  Plan plan = build_plan(g, p, {{{0}, 0, 0, ""}, {{1}, 0, 0, ""}, {{2}, 0, 0, ""}}, "test");
  Executor executor(g, plan, p, nullptr, CudaGraphMode::kOff);
  TensorMap inputs = random_inputs(g, 5);
  executor.run(inputs);
  RunTimeline timeline;
  executor.run(inputs, &timeline);
  ASSERT_EQ(timeline.steps.size(), plan.lanes[0].steps.size());
  double previous_end = 0;
  int products = 0;
  for (const RunTimeline::StepTime& t : timeline.steps) {
    const PlanStep& step = plan.lanes[t.lane].steps[t.step];
    EXPECT_LE(t.start_us, t.end_us);
    EXPECT_GE(t.start_us, previous_end - 1) << "a stream runs its steps in order";
    EXPECT_LE(t.end_us, timeline.makespan_us + 50) << "the run ends when the GPU is done";
    previous_end = t.end_us;
    if (step.kind == StepKind::kLaunch && g.nodes[step.nodes[0]].op_type == "MatMul") {
      ++products;
      EXPECT_GE(t.end_us - t.start_us, kBigProductAtLeastUs) << "the GPU's time, not the enqueueing";
    }
  }
  EXPECT_EQ(products, 2);
}

// The profiler times a GPU's launches by the GPU's clock, step by step.
TEST(CudaExecutor, TheProfilerStoresTheGpusTimes) {
  SKIP_WITHOUT_GPU();
  Graph g = two_products(kBigProduct);
  Platform p = gpu_platform("cuda:0*1", g);
  std::filesystem::path dir = temp_dir("cuda_profile");
  ProfileDB db((dir / "p.db").string());
  ProfileOptions options;
  options.warmups = 1;
  options.repeats = 3;
  ProfileReport report = profile_graph(g, p, db, options);
  ASSERT_EQ(report.devices.size(), 1u);
  EXPECT_GT(report.devices[0].n_measured, 0);
  std::optional<ProfiledTime> product = db.find(p.devices[0].signature, op_signature(g, {0}));
  ASSERT_TRUE(product.has_value());
  EXPECT_GE(product->median_us, kBigProductAtLeastUs);
  std::optional<ProfiledTime> relu = db.find(p.devices[0].signature, op_signature(g, {1}));
  ASSERT_TRUE(relu.has_value());
  EXPECT_LT(relu->median_us, product->median_us) << "64 MiB through a Relu against a product of 4096^3";
  std::filesystem::remove_all(dir);
}

// A failing step on a GPU lane fails the run, naming it; the GPU's streams
// are drained and the next run succeeds.
TEST(CudaExecutor, AnInjectedFaultOnAGpuLaneLeavesTheExecutorUsable) {
  SKIP_WITHOUT_GPU();
  Graph g = zoo_graph("resnet18");
  Platform p = gpu_platform("cuda:0*2", g);
  Plan plan = spread_over_streams(g, p, 2);
  Executor executor(g, plan, p, nullptr);
  TensorMap inputs = random_inputs(g, 2);
  TensorMap want = executor.run(inputs);
  int launch = 0;
  while (plan.lanes[0].steps[launch].kind != StepKind::kLaunch) ++launch;
  executor.inject_fault_for_testing(Executor::FaultKind::kKernel, launch);
  try {
    executor.run(inputs);
    ADD_FAILURE() << "the injected fault did not fail the run";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("on cuda:0"));
    EXPECT_THAT(e.what(), HasSubstr("injected kernel fault"));
  }
  executor.inject_fault_for_testing(Executor::FaultKind::kKernel, -1);
  expect_same_outputs(executor.run(inputs), want, "after the fault");
}

// A capture that fails leaves a plan under --cuda-graph auto running step
// by step, saying so; under on it fails the run.
TEST(CudaExecutor, AFailedCaptureFallsBackToStepByStepUnderAuto) {
  SKIP_WITHOUT_GPU();
  Graph g = zoo_graph("googlenet");
  Platform p = gpu_platform("cuda:0*2", g);
  Plan plan = spread_over_streams(g, p, 2);
  int launch = 0;
  while (plan.lanes[0].steps[launch].kind != StepKind::kLaunch) ++launch;
  TensorMap inputs = random_inputs(g, 4);
  TensorMap want = run_reference(g, inputs);

  Executor automatic(g, plan, p, nullptr, CudaGraphMode::kAuto);
  EXPECT_EQ(automatic.summary().cuda_graph, "on");
  automatic.inject_fault_for_testing(Executor::FaultKind::kCapture, launch);
  for (int run = 0; run < 2; ++run) {
    TensorMap got = automatic.run(inputs);
    for (const auto& [name, t] : want) EXPECT_LE(relative_error(got.at(name), t), 1e-4) << name << ", run " << run;
  }
  EXPECT_THAT(automatic.summary().cuda_graph, HasSubstr("off: the capture failed"));
  EXPECT_THAT(automatic.summary().cuda_graph, HasSubstr("injected capture fault"));

  Executor on(g, plan, p, nullptr, CudaGraphMode::kOn);
  on.inject_fault_for_testing(Executor::FaultKind::kCapture, launch);
  EXPECT_THROW(on.run(inputs), Error);
  on.inject_fault_for_testing(Executor::FaultKind::kCapture, -1);
  TensorMap got = on.run(inputs);
  for (const auto& [name, t] : want) EXPECT_LE(relative_error(got.at(name), t), 1e-4) << name << ", captured";
  EXPECT_EQ(on.summary().cuda_graph, "on");
}

}  // namespace
}  // namespace hetsched
