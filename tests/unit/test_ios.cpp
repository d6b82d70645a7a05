// The "ios" scheduler: the dynamic program over endings against an
// exhaustive search, the r/s/stream limits, operator merge, the split at cut
// units, the greedy fallback, plans on zoo models (validated, run against the
// sequential plan's outputs, predicted against the simulator) and parameters.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "graph_test_util.h"
#include "kernel_test_util.h"
#include "plan_test_util.h"

#include "hetsched/cost_model.h"
#include "hetsched/device.h"
#include "hetsched/error.h"
#include "hetsched/scheduler.h"
#include "hetsched/session.h"
#include "plan/plan_builder.h"
#include "runtime/executor.h"
#include "sched/ios.h"
#include "sim/simulator.h"

namespace hetsched {
namespace {

const std::string kDesktopGpu = std::string(HETSCHED_SOURCE_DIR) + "/platforms/desktop-gpu.json";
const std::string kPhoneSoc = std::string(HETSCHED_SOURCE_DIR) + "/platforms/phone-soc.json";

// desktop-gpu with its GPU in host memory and `streams` streams: no copies
// around the launches, so a plan's simulated time is its launches' alone.
Platform gpu_platform(int streams = 4) {
  Platform platform = make_platform("", kDesktopGpu);
  PlatformDevice& gpu = platform.devices[platform.find_device("emu:gpu")];
  gpu.memory_space = kHostMemory;
  gpu.n_streams = streams;
  return platform;
}

std::string first_cpu() { return "cpu:" + std::to_string(describe_machine().usable_cores.at(0)); }

int gpu_of(const Platform& platform) { return platform.find_device("emu:gpu"); }

struct UnaryCost {
  double flops, bytes;
};

// A unary node with the given cost (its shapes are nominal).
void add_unary(Graph& g, const std::string& op, const std::string& name, ValueId in, ValueId out) {
  testing::add_op(g, op, name, {in}, {out});
}

void set_costs(Graph& g, const std::map<std::string, UnaryCost>& costs) {
  for (const auto& [name, cost] : costs) {
    NodeCost& c = g.nodes[g.find_node(name)].cost;
    c.flops = cost.flops;
    c.bytes_read = cost.bytes;
    c.bytes_written = 0;
  }
}

ValueId value(Graph& g, const std::string& name) { return testing::add_float_value(g, name, {1, 64}); }

// x -> a -> {b1 -> b2, c1, d1, e1} -> j (Sum) -> {f, g} -> h (Add) -> y,
// with compute-heavy, memory-heavy, balanced and tiny units, so that which
// units share a stage matters: a, j and h are cut units.
Graph diamonds() {
  Graph g;
  g.name = "diamonds";
  g.source = "test:diamonds";
  ValueId x = value(g, "x"), a = value(g, "a_out"), b1 = value(g, "b1_out"), b2 = value(g, "b2_out"),
          c1 = value(g, "c1_out"), d1 = value(g, "d1_out"), e1 = value(g, "e1_out"), j = value(g, "j_out"),
          f = value(g, "f_out"), gg = value(g, "g_out"), y = value(g, "y");
  add_unary(g, "Relu", "a", x, a);
  add_unary(g, "Sigmoid", "b1", a, b1);
  add_unary(g, "Tanh", "b2", b1, b2);
  add_unary(g, "Exp", "c1", a, c1);
  add_unary(g, "Neg", "d1", a, d1);
  add_unary(g, "Abs", "e1", a, e1);
  testing::add_op(g, "Sum", "j", {b2, c1, d1, e1}, {j});
  add_unary(g, "Sigmoid", "f", j, f);
  add_unary(g, "Tanh", "g", j, gg);
  testing::add_op(g, "Add", "h", {f, gg}, {y});
  g.inputs = {x};
  g.outputs = {y};
  g.finalize();
  // On desktop-gpu's GPU (15 TFLOP/s, 400 GB/s, 8 us per launch): 1.5e7
  // FLOP take 1 us, 4e5 bytes take 1 us.
  set_costs(g, {{"a", {1e5, 1e6}},
                {"b1", {9e7, 4e5}},
                {"b2", {5e5, 1.2e6}},
                {"c1", {1e6, 4.8e6}},
                {"d1", {6e7, 1.6e6}},
                {"e1", {1.5e7, 2e5}},
                {"j", {1e5, 3e6}},
                {"f", {4.5e8, 1e6}},
                {"g", {1e5, 1.2e7}},
                {"h", {1e5, 2e6}}});
  return g;
}

// x -> Relu 'fork' -> `branches` chains of `length` cheap unary ops -> Sum 'join'.
Graph fork_join(int branches, int length) {
  Graph g;
  g.name = "fork_join";
  g.source = "test:fork_join";
  ValueId x = value(g, "x"), forked = value(g, "forked"), y = value(g, "y");
  add_unary(g, "Relu", "fork", x, forked);
  std::vector<ValueId> ends;
  const char* ops[] = {"Sigmoid", "Tanh", "Exp"};
  for (int b = 0; b < branches; ++b) {
    ValueId in = forked;
    for (int k = 0; k < length; ++k) {
      std::string name = fmt::format("b{}_{}", b, k);
      ValueId out = value(g, name + "_out");
      add_unary(g, ops[(b + k) % 3], name, in, out);
      in = out;
    }
    ends.push_back(in);
  }
  testing::add_op(g, "Sum", "join", ends, {y});
  g.inputs = {x};
  g.outputs = {y};
  g.finalize();
  g.annotate_costs();
  return g;
}

// The optimum by exhaustion: from what has run, any non-empty set of the
// remaining units whose predecessors have run or are in the set may be the
// next stage (in its best allowed form); memoised on what has run, so every
// sequence of stages is covered.
double exhaustive_optimum(const ios::Problem& problem) {
  const int n = static_cast<int>(problem.units.size());
  const unsigned all = (1u << n) - 1;
  std::map<unsigned, double> memo;
  std::function<double(unsigned)> best_from = [&](unsigned done) -> double {
    if (done == all) return 0;
    if (auto it = memo.find(done); it != memo.end()) return it->second;
    unsigned remaining = all & ~done;
    double best = INFINITY;
    for (unsigned stage = remaining; stage != 0; stage = (stage - 1) & remaining) {
      std::vector<int> units;
      bool ready = true;
      for (int u = 0; u < n && ready; ++u) {
        if (!(stage >> u & 1)) continue;
        units.push_back(u);
        for (int p : problem.preds[u]) ready = ready && ((done | stage) >> p & 1);
      }
      if (!ready) continue;
      double us = ios::best_stage(problem, units).us;
      if (std::isfinite(us)) best = std::min(best, us + best_from(done | stage));
    }
    memo[done] = best;
    return best;
  };
  return best_from(0);
}

// Every unit in exactly one stage, after its predecessors' stages, the
// stages' latencies summing to the total, every stage within the limits.
void expect_consistent(const ios::Problem& problem, const ios::SearchResult& found) {
  std::vector<int> stage_of(problem.units.size(), -1);
  double sum = 0;
  for (size_t k = 0; k < found.stages.size(); ++k) {
    const ios::Stage& stage = found.stages[k];
    sum += stage.us;
    if (stage.kind == ios::StageKind::kConcurrent) {
      EXPECT_LE(static_cast<int>(stage.groups.size()), problem.max_groups) << "stage " << k;
      for (const auto& group : stage.groups) EXPECT_LE(static_cast<int>(group.size()), problem.options.r);
    } else {
      ASSERT_EQ(stage.groups.size(), 1u);
      EXPECT_LE(static_cast<int>(stage.groups[0].size()), problem.options.s);
    }
    for (const auto& group : stage.groups)
      for (int u : group) {
        EXPECT_EQ(stage_of[u], -1) << "unit " << u << " twice";
        stage_of[u] = static_cast<int>(k);
      }
  }
  for (size_t u = 0; u < problem.units.size(); ++u) {
    ASSERT_GE(stage_of[u], 0) << "unit " << u << " in no stage";
    for (int p : problem.preds[u]) EXPECT_LE(stage_of[p], stage_of[u]) << p << " -> " << u;
  }
  EXPECT_NEAR(sum, found.total_us, 1e-9 * found.total_us);
}

Plan schedule_ios(const Graph& graph, const Platform& platform, const CostModel& cost,
                  std::map<std::string, std::string> params = {}) {
  ScheduleOptions options;
  options.params = std::move(params);
  Plan plan = make_scheduler("ios")->schedule(graph, platform, cost, options);
  validate_plan(plan, graph, platform);
  return plan;
}

TEST(IosScheduler, DynamicProgramMatchesExhaustiveSearch) {
  Graph graph = diamonds();
  struct Limits {
    int r, s, streams;
  };
  std::set<double> optima;
  for (Limits limits : {Limits{3, 8, 4}, Limits{1, 8, 4}, Limits{2, 2, 4}, Limits{3, 8, 2}, Limits{3, 8, 1}}) {
    SCOPED_TRACE(fmt::format("r={} s={} streams={}", limits.r, limits.s, limits.streams));
    Platform platform = gpu_platform(limits.streams);
    auto cost = make_roofline_cost_model(platform);
    ios::Options options;
    options.r = limits.r;
    options.s = limits.s;
    ios::Problem problem = ios::make_problem(graph, platform, gpu_of(platform), *cost, options);
    ASSERT_EQ(problem.units.size(), 10u);
    EXPECT_EQ(ios::cut_units(problem), (std::vector<int>{0, 6, 9}));  // a, j, h
    ios::SearchResult found = ios::search(problem);
    double want = exhaustive_optimum(problem);
    EXPECT_NEAR(found.total_us, want, 1e-9 * want);
    EXPECT_EQ(found.n_blocks, 2);
    EXPECT_EQ(found.n_greedy_blocks, 0);
    expect_consistent(problem, found);
    optima.insert(std::round(found.total_us * 1e6));

    Plan plan = schedule_ios(graph, platform, *cost,
                             {{"r", std::to_string(limits.r)}, {"s", std::to_string(limits.s)}, {"device", "emu:gpu"}});
    EXPECT_NEAR(plan.predicted_ms, found.total_us / 1000.0, 1e-12);
  }
  // The limits bind: 102.6, 108.1, 114 (twice) and 181 us.
  EXPECT_EQ(optima.size(), 4u);
}

TEST(IosScheduler, StageLatencyIsTheSimulatorsForThatStage) {
  // Four groups on four streams — compute-bound, memory-bound, balanced and
  // tiny units, one group of two — built as a plan and simulated: the stage
  // takes exactly what the search's own fluid model says.
  Graph graph = diamonds();
  Platform platform = gpu_platform(4);
  auto cost = make_roofline_cost_model(platform);
  ios::Problem problem = ios::make_problem(graph, platform, gpu_of(platform), *cost, ios::Options{});
  auto unit = [&](const std::string& name) {
    NodeId id = graph.find_node(name);
    for (size_t u = 0; u < problem.units.size(); ++u)
      if (problem.units[u][0] == id) return static_cast<int>(u);
    return -1;
  };
  std::vector<std::vector<int>> groups = {{unit("b1"), unit("b2")}, {unit("c1")}, {unit("d1")}, {unit("e1")}};
  double predicted = ios::concurrent_us(problem, groups);

  // a, then the stage, then the rest on one stream.
  std::vector<LaunchAssignment> launches;
  int gpu = gpu_of(platform);
  launches.push_back({{graph.find_node("a")}, gpu, 0, "before"});
  for (size_t g = 0; g < groups.size(); ++g)
    for (int u : groups[g]) launches.push_back({problem.units[u], gpu, static_cast<int>(g), "stage"});
  for (const char* name : {"j", "f", "g", "h"}) launches.push_back({{graph.find_node(name)}, gpu, 0, "after"});
  Plan plan = build_plan(graph, platform, launches, "test");
  double rest = 0;
  for (const char* name : {"a", "j", "f", "g", "h"}) rest += problem.alone_us[unit(name)];
  double simulated = simulate(plan, graph, platform, *cost).makespan_us - rest;
  EXPECT_NEAR(predicted, simulated, 1e-9 * simulated);
  // Interference is in it: more than the longest group alone, less than all in turn.
  double longest = problem.alone_us[unit("b1")] + problem.alone_us[unit("b2")], sum = longest;
  for (const char* name : {"c1", "d1", "e1"}) sum += problem.alone_us[unit(name)];
  EXPECT_GT(predicted, longest * 1.01);
  EXPECT_LT(predicted, sum * 0.99);
}

TEST(IosScheduler, RespectsRAndSAndTheStreamCount) {
  Graph graph = fork_join(5, 2);  // a block of 10 units in 5 chains of 2
  auto widest = [](const ios::SearchResult& found, size_t* longest_group) {
    size_t groups = 0;
    *longest_group = 0;
    for (const ios::Stage& stage : found.stages) {
      groups = std::max(groups, stage.groups.size());
      for (const auto& group : stage.groups) *longest_group = std::max(*longest_group, group.size());
    }
    return groups;
  };
  Platform platform = gpu_platform(8);
  auto cost = make_roofline_cost_model(platform);
  size_t longest = 0;
  // Launch overhead dominates these tiny units: unconstrained, the whole
  // block runs as one stage of 5 chains of 2.
  ios::Problem free = ios::make_problem(graph, platform, gpu_of(platform), *cost, ios::Options{});
  ios::SearchResult unconstrained = ios::search(free);
  EXPECT_EQ(widest(unconstrained, &longest), 5u);
  EXPECT_EQ(longest, 2u);

  ios::Options tight;
  tight.r = 1;
  tight.s = 3;
  ios::Problem limited = ios::make_problem(graph, platform, gpu_of(platform), *cost, tight);
  ios::SearchResult found = ios::search(limited);
  EXPECT_EQ(widest(found, &longest), 3u);
  EXPECT_EQ(longest, 1u);
  expect_consistent(limited, found);
  EXPECT_GT(found.total_us, unconstrained.total_us);

  // Two streams cap the groups whatever s says; the plan uses streams 0 and 1.
  Platform two = gpu_platform(2);
  auto cost_two = make_roofline_cost_model(two);
  ios::Problem streams = ios::make_problem(graph, two, gpu_of(two), *cost_two, ios::Options{});
  EXPECT_EQ(streams.max_groups, 2);
  EXPECT_EQ(widest(ios::search(streams), &longest), 2u);
  Plan plan = schedule_ios(graph, two, *cost_two);
  std::set<int> used;
  for (const Lane& lane : plan.lanes) used.insert(lane.stream);
  EXPECT_EQ(used, (std::set<int>{0, 1}));
}

// x (1 x c_in x hw x hw) -> Conv 'a', Conv 'b' (c_out each, kernels ka and
// kb) -> Concat 'cat' -> y.
Graph two_convs(int64_t c_in, int64_t hw, int64_t c_out, int64_t ka, int64_t kb) {
  Graph g;
  g.name = "two_convs";
  g.source = "test:two_convs";
  ValueId x = testing::add_float_value(g, "x", {1, c_in, hw, hw});
  std::vector<ValueId> outs;
  for (auto [name, k] : {std::pair<std::string, int64_t>{"a", ka}, {"b", kb}}) {
    Value w;
    w.name = name + "_w";
    w.dtype = DType::kFloat32;
    w.has_shape = true;
    w.shape = {c_out, c_in, k, k};
    w.initializer = Tensor(DType::kFloat32, w.shape);
    ValueId wid = g.add_value(std::move(w));
    ValueId out = testing::add_float_value(g, name + "_out", {1, c_out, hw, hw});
    NodeId conv = testing::add_op(g, "Conv", name, {x, wid}, {out});
    Attribute kernel, pads;
    kernel.kind = pads.kind = Attribute::Kind::kInts;
    kernel.ints = {k, k};
    pads.ints = {k / 2, k / 2, k / 2, k / 2};
    g.nodes[conv].attributes["kernel_shape"] = kernel;
    g.nodes[conv].attributes["pads"] = pads;
    outs.push_back(out);
  }
  ValueId y = testing::add_float_value(g, "y", {1, 2 * c_out, hw, hw});
  NodeId cat = testing::add_op(g, "Concat", "cat", outs, {y});
  Attribute axis;
  axis.i = 1;
  g.nodes[cat].attributes["axis"] = axis;
  g.inputs = {x};
  g.outputs = {y};
  g.finalize();
  g.annotate_costs();
  return g;
}

bool launched_together(const Plan& plan, const Graph& graph, const std::string& a, const std::string& b) {
  for (const Lane& lane : plan.lanes)
    for (const PlanStep& step : lane.steps)
      if (step.kind == StepKind::kLaunch) {
        bool has_a = std::count(step.nodes.begin(), step.nodes.end(), graph.find_node(a)) > 0;
        bool has_b = std::count(step.nodes.begin(), step.nodes.end(), graph.find_node(b)) > 0;
        if (has_a || has_b) return has_a && has_b;
      }
  return false;
}

TEST(IosScheduler, MergesSameInputConvsWhenThatIsFaster) {
  Platform platform = gpu_platform(4);
  auto cost = make_roofline_cost_model(platform);
  int gpu = gpu_of(platform);
  // Memory-bound 1x1 convs over a large input: merged, the input is read once.
  Graph wide = two_convs(256, 112, 16, 1, 1);
  ios::Problem problem = ios::make_problem(wide, platform, gpu, *cost, ios::Options{});
  ASSERT_EQ(problem.units.size(), 3u);
  ASSERT_FALSE(problem.merge_key[0].empty());
  EXPECT_EQ(problem.merge_key[0], problem.merge_key[1]);
  double merged = ios::merged_us(problem, {0, 1}), side_by_side = ios::concurrent_us(problem, {{0}, {1}});
  EXPECT_LT(merged, side_by_side * 0.8);
  ios::Stage stage = ios::best_stage(problem, {0, 1});
  EXPECT_EQ(stage.kind, ios::StageKind::kMerge);
  EXPECT_DOUBLE_EQ(stage.separate_us, side_by_side);

  Plan plan = schedule_ios(wide, platform, *cost);
  EXPECT_TRUE(launched_together(plan, wide, "a", "b"));
  const std::string& reason = plan.placement[wide.find_node("a")].reason;
  EXPECT_NE(reason.find("ios: stage 1 of 2, 2 Conv units merged into one launch on stream 0"), std::string::npos)
      << reason;
  EXPECT_NEAR(plan.predicted_ms, (merged + problem.alone_us[2]) / 1000.0, 1e-12);

  // Compute-bound convs: on separate streams they overlap their launch
  // overheads, which one wide launch cannot; no merge.
  Graph deep = two_convs(512, 14, 512, 1, 1);
  ios::Problem compute = ios::make_problem(deep, platform, gpu, *cost, ios::Options{});
  EXPECT_GT(ios::merged_us(compute, {0, 1}), ios::concurrent_us(compute, {{0}, {1}}));
  Plan separate = schedule_ios(deep, platform, *cost);
  EXPECT_FALSE(launched_together(separate, deep, "a", "b"));
  EXPECT_NE(separate.placement[deep.find_node("b")].reason.find("group 2 of 2"), std::string::npos)
      << separate.placement[deep.find_node("b")].reason;
  // Nor on one stream: a merged launch still runs two kernels, and with
  // compute-bound convs reading the input once saves nothing.
  Platform one = gpu_platform(1);
  auto cost_one = make_roofline_cost_model(one);
  ios::Problem one_stream = ios::make_problem(deep, one, gpu_of(one), *cost_one, ios::Options{});
  EXPECT_NEAR(ios::merged_us(one_stream, {0, 1}), one_stream.alone_us[0] + one_stream.alone_us[1], 1e-9);
  EXPECT_FALSE(launched_together(schedule_ios(deep, one, *cost_one), deep, "a", "b"));

  // Different kernels never merge.
  Graph mixed = two_convs(256, 56, 16, 1, 3);
  ios::Problem unmergeable = ios::make_problem(mixed, platform, gpu, *cost, ios::Options{});
  EXPECT_NE(unmergeable.merge_key[0], unmergeable.merge_key[1]);
  EXPECT_FALSE(launched_together(schedule_ios(mixed, platform, *cost), mixed, "a", "b"));
}

TEST(IosScheduler, GreedyStagesWhenABlockHasTooManyEndings) {
  Graph graph = fork_join(5, 2);
  Platform platform = gpu_platform(4);
  auto cost = make_roofline_cost_model(platform);
  ios::Options few;
  few.max_states = 50;
  ios::Problem problem = ios::make_problem(graph, platform, gpu_of(platform), *cost, few);
  ios::SearchResult greedy = ios::search(problem);
  EXPECT_EQ(greedy.n_greedy_blocks, 1);
  expect_consistent(problem, greedy);
  ios::SearchResult exact = ios::search(ios::make_problem(graph, platform, gpu_of(platform), *cost, ios::Options{}));
  EXPECT_EQ(exact.n_greedy_blocks, 0);
  EXPECT_GE(greedy.total_us, exact.total_us * (1 - 1e-12));
  EXPECT_LT(greedy.total_us, greedy.one_stream_us);

  Plan plan = schedule_ios(graph, platform, *cost, {{"max_states", "50"}});
  bool noted = std::any_of(plan.notes.begin(), plan.notes.end(), [](const std::string& note) {
    return note.find("more than max_states=50 endings scheduled greedily") != std::string::npos;
  });
  EXPECT_TRUE(noted) << fmt::format("{}", fmt::join(plan.notes, "\n"));
  EXPECT_NE(plan.placement[graph.find_node("b0_0")].reason.find("(greedy)"), std::string::npos);
}

TEST(IosScheduler, AChainStaysOnOneStream) {
  Graph graph = fork_join(1, 4);  // every unit a cut unit: nothing can overlap
  Platform platform = gpu_platform(4);
  auto cost = make_roofline_cost_model(platform);
  Plan plan = schedule_ios(graph, platform, *cost);
  ASSERT_EQ(plan.lanes.size(), 1u);
  EXPECT_EQ(plan.lanes[0].stream, 0);
  ASSERT_FALSE(plan.notes.empty());
  EXPECT_NE(plan.notes[0].find("nothing faster than one stream"), std::string::npos) << plan.notes[0];
  double one_stream = 0;
  for (const auto& unit : fusion_units(graph)) one_stream += cost->launch(graph, unit, platform.devices[1]).us;
  EXPECT_NEAR(plan.predicted_ms, one_stream / 1000.0, 1e-12);
}

TEST(IosScheduler, GoogLeNetPlanIsPredictedCloseToItsSimulation) {
  Graph graph = load_model("zoo:googlenet");
  Platform platform = gpu_platform(4);
  auto cost = make_roofline_cost_model(platform);
  Plan plan = schedule_ios(graph, platform, *cost);
  ios::SearchResult found =
      ios::search(ios::make_problem(graph, platform, gpu_of(platform), *cost, ios::Options{}));
  EXPECT_EQ(found.n_greedy_blocks, 0);
  EXPECT_LT(found.total_us, found.one_stream_us * 0.95);
  // The plan synchronises on data only, so a group may start before the
  // previous stage has wholly finished; still, the simulated run is within
  // 1% of the sum of stage latencies (528.33 us simulated, 528.35 predicted).
  double simulated = simulate(plan, graph, platform, *cost).makespan_us;
  EXPECT_NEAR(simulated, plan.predicted_ms * 1000.0, 0.01 * simulated)
      << "simulated " << simulated << " us, predicted " << plan.predicted_ms * 1000.0 << " us";
  // Inception modules fill all four streams.
  bool fourth_stream = false;
  for (const Placement& placement : plan.placement)
    fourth_stream |= placement.reason.find("on stream 3") != std::string::npos;
  EXPECT_TRUE(fourth_stream);
}

TEST(IosScheduler, InceptionV3SplitsIntoBlocksAndPlansQuickly) {
  Graph graph = load_model("zoo:inception_v3");
  Platform platform = make_platform("", kDesktopGpu);
  auto cost = make_roofline_cost_model(platform);
  auto started = std::chrono::steady_clock::now();
  Plan plan = schedule_ios(graph, platform, *cost);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_LT(seconds, 20.0);  // IOS reports 48 s for its search on this network
  ios::Problem problem = ios::make_problem(graph, platform, gpu_of(platform), *cost, ios::Options{});
  ios::SearchResult found = ios::search(problem);
  // One block per inception module (11) and the stem's single units.
  EXPECT_EQ(found.n_blocks, 11);
  EXPECT_EQ(found.n_greedy_blocks, 0);
  EXPECT_LT(found.total_us, found.one_stream_us);
  expect_consistent(problem, found);
  EXPECT_NE(plan.notes[1].find("search: "), std::string::npos) << plan.notes[1];
}

TEST(IosScheduler, PlanOnAnEmulatedGpuGivesTheSequentialOutputs) {
  Graph graph = load_model("zoo:squeezenet1_0");
  Platform platform = make_platform(first_cpu() + ",emu:gpu", kDesktopGpu);
  platform.devices[0].peak_gflops = 50;  // the real core's peaks, for the roofline only
  platform.devices[0].bandwidth_gbps = 10;
  std::shared_ptr<const CostModel> cost = make_roofline_cost_model(platform);
  Plan plan = schedule_ios(graph, platform, *cost);
  std::set<int> streams;
  for (const Lane& lane : plan.lanes)
    if (plan.devices[lane.device] == "emu:gpu") streams.insert(lane.stream);
  EXPECT_GT(streams.size(), 1u);
  testing::expect_plan_matches_sequential(graph, plan, platform, cost, "ios");
}

TEST(IosScheduler, MergedLaunchesRunOnTheCpuBackend) {
  // One memory-bound CPU core group: one stream, so merges that read a
  // shared input once win, and the merged Conv launches run as oneDNN
  // primitives in one launch.
  Graph graph = load_model("zoo:googlenet");
  Platform platform = make_platform(first_cpu(), "");
  platform.devices[0].peak_gflops = 50;
  platform.devices[0].bandwidth_gbps = 10;
  platform.devices[0].launch_overhead_us = 5;
  auto cost = make_roofline_cost_model(platform);
  Plan plan = schedule_ios(graph, platform, *cost);
  int merged_launches = 0;
  for (const PlanStep& step : plan.lanes[0].steps)
    if (step.kind == StepKind::kLaunch &&
        std::count_if(step.nodes.begin(), step.nodes.end(),
                      [&](NodeId id) { return graph.nodes[id].op_type == "Conv"; }) >= 2)
      ++merged_launches;
  EXPECT_GE(merged_launches, 2);
  TensorMap inputs = random_inputs(graph, 9);
  std::vector<LaunchAssignment> sequential;
  for (auto& unit : fusion_units(graph)) sequential.push_back({unit, 0, 0, "sequential"});
  Executor reference(graph, build_plan(graph, platform, sequential, "sequential"), platform, nullptr);
  Executor executor(graph, plan, platform, nullptr);
  TensorMap want = reference.run(inputs), got = executor.run(inputs);
  for (const auto& [name, tensor] : want) EXPECT_LE(testing::relative_error(got.at(name), tensor), 1e-5) << name;
}

TEST(IosScheduler, ProfileUnitsAreTheMergeCandidates) {
  Graph graph = two_convs(256, 56, 16, 1, 1);
  auto units = make_scheduler("ios")->profile_units(graph, gpu_platform());
  ASSERT_EQ(units.size(), 1u);
  EXPECT_EQ(units[0], (std::vector<NodeId>{graph.find_node("a"), graph.find_node("b")}));
  EXPECT_TRUE(make_scheduler("ios")->profile_units(two_convs(256, 56, 16, 1, 3), gpu_platform()).empty());
}

TEST(IosScheduler, RejectsBadParameters) {
  Graph graph = diamonds();
  Platform platform = gpu_platform();
  auto cost = make_roofline_cost_model(platform);
  auto ios = make_scheduler("ios");
  auto usage_error = [&](std::map<std::string, std::string> params, const std::string& wanted) {
    ScheduleOptions options;
    options.params = params;
    try {
      ios->schedule(graph, platform, *cost, options);
      ADD_FAILURE() << "accepted " << params.begin()->first << "=" << params.begin()->second;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kUsage) << e.what();
      EXPECT_NE(std::string(e.what()).find(wanted), std::string::npos) << e.what();
    }
  };
  usage_error({{"r", "0"}}, "parameter r='0': expected an integer from 1");
  usage_error({{"s", "-2"}}, "parameter s='-2'");
  usage_error({{"s", "3x"}}, "parameter s='3x'");
  usage_error({{"r", ""}}, "parameter r=''");
  usage_error({{"max_states", "0"}}, "parameter max_states='0'");
  usage_error({{"streams", "2"}}, "unknown parameter 'streams'");
  usage_error({{"device", "emu:tpu"}}, "device='emu:tpu' is not a device");
  // A device that cannot run the whole graph.
  Platform phone = make_platform("", kPhoneSoc);
  auto phone_cost = make_roofline_cost_model(phone);
  ScheduleOptions on_npu;
  on_npu.params["device"] = "emu:npu";
  try {
    ios->schedule(graph, phone, *phone_cost, on_npu);
    ADD_FAILURE() << "the NPU was accepted for Sigmoid";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUsage);
    EXPECT_NE(std::string(e.what()).find("emu:npu does not run"), std::string::npos) << e.what();
  }
  // Good values are taken.
  ScheduleOptions good;
  good.params = {{"r", "2"}, {"s", "4"}, {"max_states", "1000"}, {"device", "emu:gpu"}};
  validate_plan(ios->schedule(graph, platform, *cost, good), graph, platform);
}

}  // namespace
}  // namespace hetsched
