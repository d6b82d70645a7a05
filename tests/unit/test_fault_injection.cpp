// Fault injection (docs/reliability.md): a kernel, a copy or an allocation
// failing at step k of a multi-device plan fails the run with that error,
// every lane's worker unwinds (the run comes back within a time bound, and
// no thread is left behind), and the next run on the same executor gives the
// clean run's outputs bit for bit. Under ASan, LeakSanitizer checks at exit
// that the failed runs leaked nothing.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "hetsched/cost_model.h"
#include "hetsched/device.h"
#include "hetsched/session.h"
#include "plan/plan_builder.h"
#include "runtime/executor.h"
#include "tensor_equality.h"

namespace hetsched {
namespace {

namespace fs = std::filesystem;
using testing::bitwise_equal;
using Fault = Executor::FaultKind;

const std::string kPlatforms = std::string(HETSCHED_SOURCE_DIR) + "/platforms";

std::string two_cpu_spec() {
  auto cores = describe_machine().usable_cores;
  if (cores.size() < 2) return "";
  return "cpu:" + std::to_string(cores[0]) + ",cpu:" + std::to_string(cores[1]);
}

int thread_count() {
  int n = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator("/proc/self/task")) ++n;
  return n;
}

// The thread count once it is down to `want`, or after a few seconds: a
// joined thread can stay listed in /proc for a moment while the kernel
// finishes its exit.
int settled_thread_count(int want) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  int n = thread_count();
  while (n > want && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    n = thread_count();
  }
  return n;
}

struct Outcome {
  bool threw = false;
  ErrorCode code = ErrorCode::kUsage;
  std::string message;
  TensorMap outputs;
};

// One run, which must come back within `limit`: a deadlocked run cannot be
// cancelled, so the only way to report one is to stop the process here.
Outcome run_bounded(Executor& executor, const TensorMap& inputs, std::chrono::seconds limit = std::chrono::seconds(120)) {
  auto future = std::async(std::launch::async, [&] {
    Outcome o;
    try {
      o.outputs = executor.run(inputs);
    } catch (const Error& e) {
      o.threw = true;
      o.code = e.code();
      o.message = e.what();
    }
    return o;
  });
  if (future.wait_for(limit) != std::future_status::ready) {
    std::fprintf(stderr, "FATAL: an executor run did not come back within %d s: a deadlock\n",
                 static_cast<int>(limit.count()));
    std::abort();
  }
  return future.get();
}

// Global indices of the first, (with `middle`) a middle and the last step of
// `kind` on each lane. A lane's first launch is what the other lane's first wait depends on
// in the alternating plans below: a fault there leaves a lane waiting on an
// event that is never recorded, which only the cancellation can end.
std::vector<int> steps_of_kind(const Plan& plan, StepKind kind, bool middle = true) {
  std::vector<int> picked;
  int first = 0;
  for (const Lane& lane : plan.lanes) {
    std::vector<int> on_lane;
    for (size_t s = 0; s < lane.steps.size(); ++s)
      if (lane.steps[s].kind == kind) on_lane.push_back(first + static_cast<int>(s));
    if (!on_lane.empty()) {
      for (int s : {on_lane.front(), middle ? on_lane[on_lane.size() / 2] : on_lane.front(), on_lane.back()})
        if (std::find(picked.begin(), picked.end(), s) == picked.end()) picked.push_back(s);
    }
    first += static_cast<int>(lane.steps.size());
  }
  return picked;
}

// (lane, step within the lane) of a global step index.
std::pair<int, int> locate(const Plan& plan, int step) {
  for (size_t l = 0; l < plan.lanes.size(); ++l) {
    int n = static_cast<int>(plan.lanes[l].steps.size());
    if (step < n) return {static_cast<int>(l), step};
    step -= n;
  }
  return {-1, -1};
}

// Fusion units alternating between device 0 and `other` (where it runs the
// unit): every hand-over between the lanes is a Record/Wait pair, and a Copy
// when the devices' memory spaces differ. `cheap_only`: the units `other`
// runs in a few milliseconds go there, and only those (an emulated device
// computes with the reference kernels, which take tens of milliseconds on
// large convolutions and max pooling).
Plan alternating_plan(const Graph& graph, const Platform& platform, int other, bool cheap_only = false) {
  std::vector<LaunchAssignment> launches;
  int i = 0;
  for (auto& unit : fusion_units(graph)) {
    bool runs = platform.devices[other].supports(graph.nodes[unit[0]]);
    double flops = 0;
    for (NodeId n : unit) {
      flops += graph.nodes[n].cost.flops;
      runs = runs && !(cheap_only && graph.nodes[n].op_type == "MaxPool");
    }
    bool to_other = runs && (cheap_only ? flops < 7e6 : i++ % 2 == 1);
    launches.push_back({unit, to_other ? other : 0, 0, "alternate"});
  }
  return build_plan(graph, platform, launches, "alternate");
}

class FaultInjection : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    db_path_ = (fs::temp_directory_path() / ("hetsched-fault-test-" + std::to_string(::getpid()) + ".db")).string();
  }
  static void TearDownTestSuite() {
    for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(db_path_ + suffix);
  }

  // Every step of `steps` failing in turn with `kind`, each failed run
  // followed by a clean one on the same executor.
  static void check_faults(Executor& executor, const Graph& graph, const TensorMap& inputs, Fault kind,
                           const std::vector<int>& steps) {
    const Plan& plan = executor.plan();
    Outcome clean = run_bounded(executor, inputs);
    ASSERT_FALSE(clean.threw) << clean.message;
    // The threads that stay (devices' workers, runtimes' pools): the fewest
    // seen over a moment, once the clean run's emulated lanes have exited.
    int threads = thread_count();
    for (int i = 0; i < 50; ++i, std::this_thread::sleep_for(std::chrono::milliseconds(2)))
      threads = std::min(threads, thread_count());
    for (int step : steps) {
      auto [lane, in_lane] = locate(plan, step);
      const PlanStep& target = plan.lanes[lane].steps[in_lane];
      std::string where = fmt::format("step {} (lane {} on {}, ", step, lane, plan.devices[plan.lanes[lane].device]);
      SCOPED_TRACE(where);
      executor.inject_fault_for_testing(kind, step);
      Outcome failed = run_bounded(executor, inputs);
      ASSERT_TRUE(failed.threw) << "the fault did not fail the run";
      EXPECT_EQ(failed.message.rfind(where, 0), 0u) << failed.message;
      switch (kind) {
        case Fault::kKernel:
          EXPECT_EQ(failed.code, ErrorCode::kRuntime);
          EXPECT_NE(failed.message.find("injected kernel fault"), std::string::npos) << failed.message;
          break;
        case Fault::kCopy:
          EXPECT_EQ(failed.code, ErrorCode::kRuntime);
          EXPECT_NE(failed.message.find(fmt::format("copy '{}'", graph.values[target.value].name)), std::string::npos)
              << failed.message;
          EXPECT_NE(failed.message.find("injected copy fault"), std::string::npos) << failed.message;
          break;
        case Fault::kAllocation: {
          EXPECT_EQ(failed.code, ErrorCode::kResource);
          const Value& out = graph.values[graph.nodes[target.nodes.back()].outputs[0]];
          size_t bytes = static_cast<size_t>(shape_numel(out.shape)) * dtype_size(out.dtype);
          EXPECT_NE(failed.message.find(fmt::format("output '{}': cannot allocate {} bytes", out.name, bytes)),
                    std::string::npos)
              << failed.message;
          EXPECT_NE(failed.message.find("injected allocation fault"), std::string::npos) << failed.message;
          break;
        }
      }
      // Every worker has unwound: run() joins them all before it throws, and
      // none is left over (the emulated lanes' threads end with the run).
      EXPECT_EQ(settled_thread_count(threads), threads);
      executor.inject_fault_for_testing(kind, -1);
      Outcome next = run_bounded(executor, inputs);
      ASSERT_FALSE(next.threw) << "the run after the fault failed: " << next.message;
      EXPECT_TRUE(bitwise_equal(next.outputs, clean.outputs)) << "the run after the fault gave other outputs";
    }
  }

  static std::string db_path_;
};
std::string FaultInjection::db_path_;

TEST_F(FaultInjection, KernelAndAllocationFaultsOnTwoCpuDevices) {
  std::string spec = two_cpu_spec();
  if (spec.empty()) GTEST_SKIP() << "needs 2 usable cores";
  Platform platform = make_platform(spec, "");
  Graph graph = load_model("zoo:squeezenet1_0");
  Plan plan = alternating_plan(graph, platform, 1);
  ASSERT_EQ(plan.lanes.size(), 2u);
  // One memory space: no Copy steps (the copy fault runs on the emulated
  // platform below).
  ASSERT_EQ(plan.n_copies(), 0);
  Executor executor(graph, plan, platform, nullptr);
  TensorMap inputs = random_inputs(graph, 3);
  std::vector<int> launches = steps_of_kind(plan, StepKind::kLaunch);
  ASSERT_GE(launches.size(), 6u);
  check_faults(executor, graph, inputs, Fault::kKernel, launches);
  check_faults(executor, graph, inputs, Fault::kAllocation, launches);
}

TEST_F(FaultInjection, KernelCopyAndAllocationFaultsWithAnEmulatedDevice) {
  // The DSA has its own memory: what crosses to it and back is copied.
  Platform platform = make_platform("cpu:0,emu:dsa", kPlatforms + "/cpu-dsa.json");
  auto cost = open_cost_model(platform, db_path_, nullptr);
  Graph graph = load_model("zoo:squeezenet1_0");
  Plan plan = alternating_plan(graph, platform, 1, true);
  ASSERT_EQ(plan.lanes.size(), 2u);
  Executor executor(graph, plan, platform, cost);
  ASSERT_TRUE(executor.summary().emulated);
  TensorMap inputs = random_inputs(graph, 4);
  // First and last of each lane only: each run waits for the emulated device.
  std::vector<int> launches = steps_of_kind(plan, StepKind::kLaunch, false);
  std::vector<int> copies = steps_of_kind(plan, StepKind::kCopy, false);
  ASSERT_EQ(launches.size(), 4u);
  ASSERT_GE(copies.size(), 2u);
  check_faults(executor, graph, inputs, Fault::kKernel, launches);
  check_faults(executor, graph, inputs, Fault::kCopy, copies);
  check_faults(executor, graph, inputs, Fault::kAllocation, launches);
}

TEST_F(FaultInjection, RefusesAStepOfTheWrongKindOrBeyondThePlan) {
  Platform platform = make_platform("cpu:0", "");
  Graph graph = load_model("zoo:squeezenet1_0");
  std::vector<LaunchAssignment> launches;
  for (auto& unit : fusion_units(graph)) launches.push_back({unit, 0, 0, "test"});
  Plan plan = build_plan(graph, platform, launches, "sequential");
  Executor executor(graph, plan, platform, nullptr);
  int n_steps = static_cast<int>(plan.lanes[0].steps.size());
  auto refused = [&](Fault kind, int step) {
    try {
      executor.inject_fault_for_testing(kind, step);
    } catch (const Error& e) {
      return e.code() == ErrorCode::kUsage;
    }
    return false;
  };
  EXPECT_TRUE(refused(Fault::kCopy, 0)) << "a copy fault on a launch";
  EXPECT_TRUE(refused(Fault::kKernel, n_steps));
  EXPECT_TRUE(refused(Fault::kAllocation, n_steps + 5));
  // Refusals leave no fault behind.
  TensorMap inputs = random_inputs(graph, 1);
  Outcome clean = run_bounded(executor, inputs);
  EXPECT_FALSE(clean.threw) << clean.message;
}

}  // namespace
}  // namespace hetsched
