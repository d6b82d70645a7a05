// The exact scheduler: optimal_schedule() against a brute-force optimum on
// small random DAGs and on the HEFT paper's example, its time limit, its
// starting schedules, and the "optimal" scheduler's plans.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "graph_test_util.h"
#include "kernel_test_util.h"
#include "plan_test_util.h"
#include "task_schedule_test_util.h"

#include "hetsched/cost_model.h"
#include "hetsched/error.h"
#include "hetsched/scheduler.h"
#include "hetsched/session.h"
#include "plan/plan_builder.h"
#include "runtime/executor.h"
#include "sched/list_scheduling.h"
#include "sched/optimal.h"
#include "sim/simulator.h"

namespace hetsched {
namespace {

using testing::expect_valid_schedule;

constexpr double kInf = std::numeric_limits<double>::infinity();
const std::string kDesktopGpu = std::string(HETSCHED_SOURCE_DIR) + "/platforms/desktop-gpu.json";

ErrorCode error_code_of(const std::function<void()>& action, std::string* message = nullptr) {
  try {
    action();
  } catch (const Error& error) {
    if (message) *message = error.what();
    return error.code();
  }
  ADD_FAILURE() << "no hetsched::Error thrown";
  return ErrorCode::kRuntime;
}

// Topcuoglu, Hariri & Wu 2002, Fig. 2 (tasks and processors 0-based here).
TaskGraph heft_paper_example() {
  TaskGraph g;
  g.n_tasks = 10;
  g.n_procs = 3;
  g.cost = {{14, 16, 9}, {13, 19, 18}, {11, 13, 19}, {13, 8, 17}, {12, 13, 10},
            {13, 16, 9}, {7, 15, 11},  {5, 11, 14},  {18, 12, 20}, {21, 7, 16}};
  g.succ.resize(10);
  const int edges[][3] = {{1, 2, 18}, {1, 3, 12}, {1, 4, 9},  {1, 5, 11},  {1, 6, 14},
                          {2, 8, 19}, {2, 9, 16}, {3, 7, 23}, {4, 8, 27},  {4, 9, 23},
                          {5, 9, 13}, {6, 8, 15}, {7, 10, 17}, {8, 10, 11}, {9, 10, 13}};
  for (const auto& e : edges) g.succ[e[0] - 1].emplace_back(e[1] - 1, e[2]);
  return g;
}


// The optimum by enumeration: every topological order with every processor
// for each task, each task in turn starting at max(its data ready, its
// processor free). Some optimal schedule is among these (take any optimal
// schedule's tasks by start: this generation starts none later). Branches
// already no shorter than the best found are cut.
double brute_force_makespan(const TaskGraph& g) {
  const int n = g.n_tasks;
  std::vector<std::vector<std::pair<int, double>>> pred(n);
  for (int t = 0; t < n; ++t)
    for (auto [s, comm] : g.succ[t]) pred[s].emplace_back(t, comm);
  std::vector<int> proc(n, -1), unplaced_preds(n, 0);
  for (int t = 0; t < n; ++t) unplaced_preds[t] = static_cast<int>(pred[t].size());
  std::vector<double> finish(n, 0), processor_free(g.n_procs, 0);
  double best = kInf;
  std::function<void(int, double)> place = [&](int placed, double makespan) {
    if (makespan >= best) return;
    if (placed == n) {
      best = makespan;
      return;
    }
    for (int t = 0; t < n; ++t) {
      if (proc[t] >= 0 || unplaced_preds[t] > 0) continue;
      for (auto [s, comm] : g.succ[t]) --unplaced_preds[s];
      for (int p = 0; p < g.n_procs; ++p) {
        if (!std::isfinite(g.cost[t][p])) continue;
        double ready = 0, duration = g.cost[t][p];
        for (auto [m, comm] : pred[t]) {
          double crossing = proc[m] == p ? 0 : comm;
          if (g.receiver_pays_communication) duration += crossing;
          ready = std::max(ready, finish[m] + (g.receiver_pays_communication ? 0 : crossing));
        }
        double saved_free = processor_free[p];
        proc[t] = p;
        finish[t] = std::max(ready, saved_free) + duration;
        processor_free[p] = finish[t];
        place(placed + 1, std::max(makespan, finish[t]));
        processor_free[p] = saved_free;
        proc[t] = -1;
      }
      for (auto [s, comm] : g.succ[t]) ++unplaced_preds[s];
    }
  };
  place(0, 0);
  return best;
}

// A random DAG: edges i -> j (i < j) with probability `density`, integer
// costs 1..20 (a few +inf, never all of a task's), communication 0..15.
TaskGraph random_dag(std::mt19937& rng, int n_tasks, int n_procs, double density, bool receiver_pays) {
  std::uniform_int_distribution<int> cost(1, 20), comm(0, 15);
  std::uniform_real_distribution<double> unit(0, 1);
  TaskGraph g;
  g.n_tasks = n_tasks;
  g.n_procs = n_procs;
  g.receiver_pays_communication = receiver_pays;
  g.cost.assign(n_tasks, std::vector<double>(n_procs));
  g.succ.assign(n_tasks, {});
  for (int t = 0; t < n_tasks; ++t) {
    for (int p = 0; p < n_procs; ++p) g.cost[t][p] = unit(rng) < 0.1 ? kInf : cost(rng);
    if (std::none_of(g.cost[t].begin(), g.cost[t].end(), [](double c) { return std::isfinite(c); }))
      g.cost[t][t % n_procs] = cost(rng);
    for (int s = t + 1; s < n_tasks; ++s)
      if (unit(rng) < density) g.succ[t].emplace_back(s, comm(rng));
  }
  return g;
}

TEST(Optimal, HeftPaperExampleBeatsHeftsEighty) {
  TaskGraph g = heft_paper_example();
  OptimalResult r = optimal_schedule(g, {});
  expect_valid_schedule(g, r.schedule, /*order_by_start=*/true);
  std::printf("HEFT paper example: optimal makespan %g (HEFT 80), proved %d, %.3f s\n", r.schedule.makespan,
              r.proved_optimal, r.seconds);
  EXPECT_TRUE(r.proved_optimal);
  EXPECT_DOUBLE_EQ(r.lower_bound, r.schedule.makespan);
  // The enumeration agrees: 73.
  EXPECT_EQ(brute_force_makespan(g), 73);
  EXPECT_NEAR(r.schedule.makespan, 73, 1e-6);
  EXPECT_TRUE(r.schedule.eft.empty());
}

TEST(Optimal, MatchesBruteForceOnRandomSmallDags) {
  std::mt19937 rng(2024);
  int instances = 0, beats_heft = 0;
  double slowest = 0;
  for (bool receiver_pays : {false, true})
    for (int n_tasks = 5; n_tasks <= 7; ++n_tasks)
      for (int n_procs = 2; n_procs <= 3; ++n_procs)
        for (int repeat = 0; repeat < 2; ++repeat) {
          TaskGraph g = random_dag(rng, n_tasks, n_procs, repeat == 0 ? 0.3 : 0.5, receiver_pays);
          std::string what = fmt::format("{} tasks, {} processors, receiver pays {}, repeat {}", n_tasks, n_procs,
                                         receiver_pays, repeat);
          OptimalResult r = optimal_schedule(g, {});
          expect_valid_schedule(g, r.schedule, /*order_by_start=*/true);
          double want = brute_force_makespan(g);
          EXPECT_TRUE(r.proved_optimal) << what;
          EXPECT_NEAR(r.schedule.makespan, want, 1e-6 * want) << what;
          EXPECT_NEAR(r.lower_bound, r.schedule.makespan, 1e-9) << what;
          double heft_makespan = heft(g).makespan;
          EXPECT_LE(r.schedule.makespan, heft_makespan + 1e-9) << what;
          beats_heft += r.schedule.makespan < heft_makespan - 1e-9;
          slowest = std::max(slowest, r.seconds);
          ++instances;
        }
  std::printf("%d random DAGs: optimum shorter than HEFT's on %d; slowest solve %.3f s\n", instances, beats_heft,
              slowest);
  // The DAGs are varied enough that HEFT misses the optimum on some.
  EXPECT_GT(beats_heft, 0);
}

// A fork task, `copies` identical chains of `length` tasks from it, a join
// task after them, and one more task: the chains are interchangeable, which
// the search exploits, except (with `decoy`) the last, whose tail also
// feeds that last task, a long one: that chain had better go first.
TaskGraph twin_branches(std::mt19937& rng, int copies, int length, int n_procs, bool receiver_pays, bool decoy) {
  std::uniform_int_distribution<int> cost(1, 20), comm(0, 15);
  auto cost_row = [&] {
    std::vector<double> row(n_procs);
    for (double& c : row) c = cost(rng);
    return row;
  };
  TaskGraph g;
  g.n_procs = n_procs;
  g.receiver_pays_communication = receiver_pays;
  g.n_tasks = 3 + copies * length;
  g.cost.push_back(cost_row());  // 0: fork
  std::vector<std::vector<double>> chain_costs;
  std::vector<double> chain_comms;
  for (int k = 0; k <= length; ++k) chain_comms.push_back(comm(rng));  // into, along and out of a chain
  for (int k = 0; k < length; ++k) chain_costs.push_back(cost_row());
  for (int c = 0; c < copies; ++c)
    for (int k = 0; k < length; ++k) g.cost.push_back(chain_costs[k]);
  g.cost.push_back(cost_row());  // join
  g.cost.push_back(cost_row());  // the last task
  if (decoy)
    for (double& c : g.cost.back()) c += 30;
  const int join = 1 + copies * length;
  g.succ.assign(g.n_tasks, {});
  for (int c = 0; c < copies; ++c) {
    int head = 1 + c * length;
    g.succ[0].emplace_back(head, chain_comms[0]);
    for (int k = 0; k + 1 < length; ++k) g.succ[head + k].emplace_back(head + k + 1, chain_comms[k + 1]);
    g.succ[head + length - 1].emplace_back(join, chain_comms[length]);
  }
  if (decoy) g.succ[join - 1].emplace_back(join + 1, chain_comms[length]);
  return g;
}

TEST(Optimal, MatchesBruteForceWithInterchangeableBranches) {
  std::mt19937 rng(99);
  for (bool receiver_pays : {false, true})
    for (auto [copies, length, n_procs, decoy] : std::vector<std::tuple<int, int, int, bool>>{
             {3, 1, 3, false}, {2, 2, 3, false}, {3, 2, 2, false}, {3, 1, 3, true}, {3, 2, 2, true}}) {
      TaskGraph g = twin_branches(rng, copies, length, n_procs, receiver_pays, decoy);
      std::string what = fmt::format("{} chains of {}, {} processors, receiver pays {}, decoy {}", copies, length,
                                     n_procs, receiver_pays, decoy);
      OptimalResult r = optimal_schedule(g, {});
      expect_valid_schedule(g, r.schedule, /*order_by_start=*/true);
      EXPECT_TRUE(r.proved_optimal) << what;
      EXPECT_NEAR(r.schedule.makespan, brute_force_makespan(g), 1e-6) << what;
    }
}

TEST(Optimal, TimeLimitHoldsOnALargerDagAndTheResultIsNoWorseThanHeft) {
  std::mt19937 rng(7);
  TaskGraph g = random_dag(rng, 60, 3, 0.08, true);
  OptimalOptions options;
  options.time_limit_s = 1;
  OptimalResult r = optimal_schedule(g, options);
  expect_valid_schedule(g, r.schedule, /*order_by_start=*/true);
  double heft_makespan = heft(g).makespan;
  std::printf("60 tasks, 1 s limit: %.3f s, makespan %g (HEFT %g), lower bound %g, proved %d\n", r.seconds,
              r.schedule.makespan, heft_makespan, r.lower_bound, r.proved_optimal);
  // CBC looks at the clock between nodes: an LP solve on a busy machine may
  // run a little past the limit, but not the many seconds a proof would take.
  EXPECT_LE(r.seconds, 2.0);
  EXPECT_LE(r.schedule.makespan, heft_makespan + 1e-9);
  EXPECT_LE(r.lower_bound, r.schedule.makespan);
  EXPECT_GT(r.lower_bound, 0);
  if (r.proved_optimal) {
    EXPECT_DOUBLE_EQ(r.lower_bound, r.schedule.makespan);
  }
}

TEST(Optimal, StartsFromTheIncumbent) {
  // A DAG too large to improve on in 50 ms, where PEFT beats HEFT: given
  // PEFT's schedule, the result is at least as good; without it, HEFT's
  // would be the best starting point.
  std::mt19937 rng(3);
  TaskGraph g;
  TaskSchedule incumbent;
  for (int attempt = 0; attempt < 20; ++attempt) {
    g = random_dag(rng, 60, 3, 0.08, false);
    incumbent = peft(g);
    if (incumbent.makespan < heft(g).makespan) break;
  }
  ASSERT_LT(incumbent.makespan, heft(g).makespan);
  // Only the processors and the order of starts count: scramble the times.
  TaskSchedule scrambled = incumbent;
  for (int t = 0; t < g.n_tasks; ++t) {
    scrambled.start[t] = 3 * incumbent.start[t] + 1;
    scrambled.finish[t] = scrambled.start[t];
  }
  OptimalOptions options;
  options.time_limit_s = 0.05;
  options.incumbent = &scrambled;
  OptimalResult r = optimal_schedule(g, options);
  expect_valid_schedule(g, r.schedule, /*order_by_start=*/true);
  std::printf("incumbent (PEFT) %g, HEFT %g: after 0.05 s %g\n", incumbent.makespan, heft(g).makespan,
              r.schedule.makespan);
  EXPECT_LE(r.schedule.makespan, incumbent.makespan + 1e-9);
}

TEST(Optimal, RejectsMalformedInput) {
  TaskGraph cycle;
  cycle.n_tasks = 2;
  cycle.n_procs = 1;
  cycle.cost = {{1}, {1}};
  cycle.succ = {{{1, 0.0}}, {{0, 0.0}}};
  std::string message;
  EXPECT_EQ(error_code_of([&] { optimal_schedule(cycle, {}); }, &message), ErrorCode::kUsage);
  EXPECT_NE(message.find("cycle"), std::string::npos) << message;

  TaskGraph nowhere;
  nowhere.n_tasks = 1;
  nowhere.n_procs = 2;
  nowhere.cost = {{kInf, kInf}};
  nowhere.succ = {{}};
  EXPECT_EQ(error_code_of([&] { optimal_schedule(nowhere, {}); }), ErrorCode::kUnsupported);

  TaskGraph g = heft_paper_example();
  OptimalOptions no_time;
  no_time.time_limit_s = 0;
  EXPECT_EQ(error_code_of([&] { optimal_schedule(g, no_time); }, &message), ErrorCode::kUsage);
  EXPECT_NE(message.find("time_limit"), std::string::npos) << message;

  TaskSchedule short_incumbent;
  short_incumbent.proc = {0, 1};
  short_incumbent.start = {0, 1};
  OptimalOptions with_incumbent;
  with_incumbent.incumbent = &short_incumbent;
  EXPECT_EQ(error_code_of([&] { optimal_schedule(g, with_incumbent); }, &message), ErrorCode::kUsage);
  EXPECT_NE(message.find("incumbent"), std::string::npos) << message;

  TaskSchedule impossible = heft(g);
  g.cost[4][impossible.proc[4]] = kInf;
  with_incumbent.incumbent = &impossible;
  EXPECT_EQ(error_code_of([&] { optimal_schedule(g, with_incumbent); }, &message), ErrorCode::kUsage);
  EXPECT_NE(message.find("task 4"), std::string::npos) << message;
}

TEST(Optimal, EmptyGraphAndOneProcessor) {
  TaskGraph empty;
  empty.n_procs = 2;
  OptimalResult r = optimal_schedule(empty, {});
  expect_valid_schedule(empty, r.schedule, /*order_by_start=*/true);
  EXPECT_TRUE(r.proved_optimal);
  EXPECT_EQ(r.schedule.makespan, 0);
  // One processor: the sum of the costs, whatever the order.
  TaskGraph g = heft_paper_example();
  g.n_procs = 1;
  double sum = 0;
  for (auto& row : g.cost) {
    row.resize(1);
    sum += row[0];
  }
  r = optimal_schedule(g, {});
  expect_valid_schedule(g, r.schedule, /*order_by_start=*/true);
  EXPECT_TRUE(r.proved_optimal);
  EXPECT_DOUBLE_EQ(r.schedule.makespan, sum);
}

// ------------------------------------------------------ the "optimal" scheduler

ValueId add_value(Graph& g, const std::string& name, int64_t width) {
  return testing::add_float_value(g, name, {1, width});
}

// x -> MatMul 'head' -> `branches` chains of two MatMuls -> Sum 'join' -> y:
// heavy enough for the GPU to be worth a copy, and more branches than the
// GPU can take alone.
Graph fork_join_matmuls(int64_t width, int branches) {
  Graph g;
  g.name = "fork_join_matmuls";
  g.source = "test:fork_join_matmuls";
  ValueId x = add_value(g, "x", width);
  auto add_matmul = [&](const std::string& name, ValueId in) {
    Value weight;
    weight.name = name + "_w";
    weight.dtype = DType::kFloat32;
    weight.has_shape = true;
    weight.shape = {width, width};
    weight.initializer = Tensor(DType::kFloat32, {width, width});
    ValueId w = g.add_value(std::move(weight));
    ValueId out = add_value(g, name, width);
    testing::add_op(g, "MatMul", name, {in, w}, {out});
    return out;
  };
  ValueId head = add_matmul("head", x);
  std::vector<ValueId> ends;
  for (int b = 0; b < branches; ++b)
    ends.push_back(add_matmul(fmt::format("b{}_1", b), add_matmul(fmt::format("b{}_0", b), head)));
  ValueId y = add_value(g, "y", width);
  testing::add_op(g, "Sum", "join", ends, {y});
  g.inputs = {x};
  g.outputs = {y};
  g.finalize();
  g.annotate_costs();
  return g;
}

TEST(OptimalScheduler, SmallGraphPlanIsValidAndNoSlowerThanHeft) {
  Graph graph = fork_join_matmuls(1024, 4);
  Platform platform = make_platform("", kDesktopGpu);
  auto cost = make_roofline_cost_model(platform);
  Plan plan = make_scheduler("optimal")->schedule(graph, platform, *cost, {});
  ASSERT_NO_THROW(validate_plan(plan, graph, platform));
  EXPECT_EQ(plan.scheduler, "optimal");
  for (size_t n = 0; n < graph.nodes.size(); ++n)
    EXPECT_EQ(plan.placement[n].reason.rfind("optimal: ", 0), 0u) << plan.placement[n].reason;
  ASSERT_FALSE(plan.notes.empty());
  EXPECT_EQ(plan.notes.back().rfind("optimal: proved optimal", 0), 0u) << plan.notes.back();
  Plan heft_plan = make_scheduler("heft")->schedule(graph, platform, *cost, {});
  double optimal_ms = simulate(plan, graph, platform, *cost).makespan_us / 1000;
  double heft_ms = simulate(heft_plan, graph, platform, *cost).makespan_us / 1000;
  std::printf("fork-join of 4 x 2 MatMuls: optimal predicted %.4f ms, simulated %.4f ms; heft predicted %.4f ms, "
              "simulated %.4f ms\n",
              plan.predicted_ms, optimal_ms, heft_plan.predicted_ms, heft_ms);
  EXPECT_LE(plan.predicted_ms, heft_plan.predicted_ms * (1 + 1e-9));
  EXPECT_LE(optimal_ms, heft_ms * (1 + 1e-9));
}

TEST(OptimalScheduler, RefusesMoreUnitsThanMaxTasksAndBadParameters) {
  Graph graph = fork_join_matmuls(16, 2);
  Platform platform = make_platform("", kDesktopGpu);
  auto cost = make_roofline_cost_model(platform);
  auto scheduler = make_scheduler("optimal");
  const int n_units = static_cast<int>(fusion_units(graph).size());
  ScheduleOptions options;
  options.params["max_tasks"] = std::to_string(n_units - 1);
  std::string message;
  EXPECT_EQ(error_code_of([&] { scheduler->schedule(graph, platform, *cost, options); }, &message),
            ErrorCode::kUnsupported);
  EXPECT_NE(message.find(fmt::format("{} launch units", n_units)), std::string::npos) << message;
  EXPECT_NE(message.find("max_tasks"), std::string::npos) << message;
  EXPECT_NE(message.find("another scheduler"), std::string::npos) << message;
  options.params["max_tasks"] = std::to_string(n_units);
  EXPECT_NO_THROW(validate_plan(scheduler->schedule(graph, platform, *cost, options), graph, platform));

  for (auto [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"time_limit", "0"}, {"time_limit", "soon"}, {"max_tasks", "2.5"}, {"max_tasks", "0"}, {"device", "gpu"}}) {
    ScheduleOptions bad;
    bad.params[key] = value;
    EXPECT_EQ(error_code_of([&] { scheduler->schedule(graph, platform, *cost, bad); }, &message), ErrorCode::kUsage)
        << key << "=" << value;
    EXPECT_NE(message.find(key), std::string::npos) << message;
  }
}

// Plans on zoo models over the emulated desktop platform give the
// sequential plan's outputs when run.
TEST(OptimalScheduler, ZooPlansGiveTheSequentialOutputs) {
  Platform platform = make_platform("", kDesktopGpu);
  std::shared_ptr<const CostModel> cost = make_roofline_cost_model(platform);
  for (const std::string name : {"squeezenet1_0", "bert"}) {
    LoadOptions load;
    if (name == "bert") load.zoo_params = {{"layers", "1"}, {"seq", "32"}};
    Graph graph = load_model("zoo:" + name, load);
    ScheduleOptions options;
    options.params = {{"max_tasks", "1000"}, {"time_limit", "0.25"}};
    Plan plan = make_scheduler("optimal")->schedule(graph, platform, *cost, options);
    ASSERT_NO_THROW(validate_plan(plan, graph, platform));
    std::printf("%s: %zu launch units; %s\n", name.c_str(), fusion_units(graph).size(), plan.notes.back().c_str());
    testing::expect_plan_matches_sequential(graph, plan, platform, cost, name, 3);
  }
}

TEST(OptimalScheduler, IsRegistered) { EXPECT_EQ(scheduler_names().count("optimal"), 1u); }

}  // namespace
}  // namespace hetsched
