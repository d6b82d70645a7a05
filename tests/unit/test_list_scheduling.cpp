// HEFT and PEFT: the papers' worked examples, schedule validity, and the
// "heft" / "peft" schedulers on zoo models.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hetsched/cost_model.h"
#include "hetsched/error.h"
#include "hetsched/scheduler.h"
#include "hetsched/session.h"
#include "sched/list_scheduling.h"
#include "task_schedule_test_util.h"
#include "sim/simulator.h"

namespace hetsched {
namespace {

using testing::expect_valid_schedule;

constexpr double kInf = std::numeric_limits<double>::infinity();
const std::string kDesktopGpu = std::string(HETSCHED_SOURCE_DIR) + "/platforms/desktop-gpu.json";

struct PaperEdge {
  int from, to;  // 1-based, as in the papers
  double comm;
};

TaskGraph paper_graph(const std::vector<std::vector<double>>& cost, const std::vector<PaperEdge>& edges) {
  TaskGraph g;
  g.n_tasks = static_cast<int>(cost.size());
  g.n_procs = static_cast<int>(cost[0].size());
  g.cost = cost;
  g.succ.resize(g.n_tasks);
  for (const PaperEdge& e : edges) g.succ[e.from - 1].emplace_back(e.to - 1, e.comm);
  return g;
}

// Topcuoglu, Hariri & Wu 2002, Fig. 2.
TaskGraph heft_paper_example() {
  return paper_graph({{14, 16, 9},
                      {13, 19, 18},
                      {11, 13, 19},
                      {13, 8, 17},
                      {12, 13, 10},
                      {13, 16, 9},
                      {7, 15, 11},
                      {5, 11, 14},
                      {18, 12, 20},
                      {21, 7, 16}},
                     {{1, 2, 18}, {1, 3, 12}, {1, 4, 9}, {1, 5, 11}, {1, 6, 14}, {2, 8, 19}, {2, 9, 16}, {3, 7, 23},
                      {4, 8, 27}, {4, 9, 23}, {5, 9, 13}, {6, 8, 15}, {7, 10, 17}, {8, 10, 11}, {9, 10, 13}});
}

// Arabnejad & Barbosa 2014, Fig. 3.
TaskGraph peft_paper_example() {
  return paper_graph({{22, 21, 36},
                      {22, 18, 18},
                      {32, 27, 43},
                      {7, 10, 4},
                      {29, 27, 35},
                      {26, 17, 24},
                      {14, 25, 30},
                      {29, 23, 36},
                      {15, 21, 8},
                      {13, 16, 33}},
                     {{1, 2, 17}, {1, 3, 31}, {1, 4, 29}, {1, 5, 13}, {1, 6, 7}, {2, 8, 3}, {2, 9, 30}, {3, 7, 16},
                      {4, 8, 11}, {4, 9, 7}, {5, 9, 57}, {6, 8, 5}, {7, 10, 9}, {8, 10, 42}, {9, 10, 7}});
}


TEST(ListScheduling, HeftPaperExampleGivesMakespan80) {
  TaskGraph g = heft_paper_example();
  TaskSchedule s = heft(g);
  expect_valid_schedule(g, s, /*order_by_start=*/false);
  EXPECT_DOUBLE_EQ(s.makespan, 80);
  // Table/Fig. 4 of the paper: rank_u and the resulting order.
  const std::vector<double> rank_u = {108.0, 77.0, 80.0, 80.0, 69.0, 63.0 + 1.0 / 3, 42.0 + 2.0 / 3,
                                      35.0 + 2.0 / 3, 44.0 + 1.0 / 3, 14.0 + 2.0 / 3};
  for (int t = 0; t < g.n_tasks; ++t) EXPECT_NEAR(s.rank[t], rank_u[t], 1e-9) << "task " << t + 1;
  EXPECT_EQ(s.order, (std::vector<int>{0, 2, 3, 1, 4, 5, 8, 6, 7, 9}));
  // The paper's Gantt chart: task 10 on P2 from 73 to 80; task 1 on P3 from 0 to 9.
  EXPECT_EQ(s.proc[0], 2);
  EXPECT_DOUBLE_EQ(s.finish[0], 9);
  EXPECT_EQ(s.proc[9], 1);
  EXPECT_DOUBLE_EQ(s.start[9], 73);
  EXPECT_TRUE(s.lookahead.empty());
}

TEST(ListScheduling, PeftPaperExampleGivesMakespan122) {
  TaskGraph g = peft_paper_example();
  TaskSchedule s = peft(g);
  expect_valid_schedule(g, s, /*order_by_start=*/false);
  EXPECT_DOUBLE_EQ(s.makespan, 122);
  // rank_oct of the paper's Table 2, rounded as printed there.
  const std::vector<double> rank_oct = {73, 41, 37, 44, 31, 42, 17, 21, 16, 0};
  for (int t = 0; t < g.n_tasks; ++t) EXPECT_EQ(std::round(s.rank[t]), rank_oct[t]) << "task " << t + 1;
  // Exit task: OCT is 0 everywhere.
  for (double oct : s.lookahead[9]) EXPECT_EQ(oct, 0);
}

TEST(ListScheduling, HeftOnPeftPaperExampleGivesMakespan133) {
  // The PEFT paper compares against HEFT on its own example: 133.
  TaskGraph g = peft_paper_example();
  TaskSchedule s = heft(g);
  expect_valid_schedule(g, s, /*order_by_start=*/false);
  EXPECT_DOUBLE_EQ(s.makespan, 133);
}

TEST(ListScheduling, PeftOnHeftPaperExampleGivesMakespan85) {
  TaskGraph g = heft_paper_example();
  TaskSchedule s = peft(g);
  expect_valid_schedule(g, s, /*order_by_start=*/false);
  // Checked by hand: OCT(t7, .) = (21, 7, 16) since OCT(t10, .) = 0, so
  // OCT(t7, P1) = min(0 + 21, 7 + 17, 16 + 17); rank_oct order 1, 4, 2, 5,
  // 3, 6, 7, 9, 8, 10. t8 ties at EFT + OCT = 85 on P1 and P2 and takes P1;
  // t10 then starts on P2 at 78 (t8's data: 67 + 11) and ends at 85.
  EXPECT_EQ(s.lookahead[6], (std::vector<double>{21, 7, 16}));
  EXPECT_EQ(s.lookahead[0], (std::vector<double>{48, 38, 53}));
  EXPECT_EQ(s.order, (std::vector<int>{0, 3, 1, 4, 2, 5, 6, 8, 7, 9}));
  EXPECT_EQ(s.proc[7], 0);
  EXPECT_EQ(s.proc[9], 1);
  EXPECT_DOUBLE_EQ(s.start[9], 78);
  EXPECT_DOUBLE_EQ(s.makespan, 85);
}

TEST(ListScheduling, InsertionFillsAnIdleGap) {
  // The fast processor P0 gets a (0..2) and then b, which must wait for c
  // on P1 (finishing at 10, then 10 of communication): P0 idles from 2 to 20.
  // d, independent and ranked last, fits in that gap instead of going after b.
  TaskGraph g;
  g.n_tasks = 4;
  g.n_procs = 2;
  //            a     b     c     d
  g.cost = {{2, 50}, {2, 50}, {kInf, 10}, {3, 40}};
  g.succ = {{{1, 0.0}}, {}, {{1, 10.0}}, {}};
  TaskSchedule s = heft(g);
  expect_valid_schedule(g, s, /*order_by_start=*/false);
  EXPECT_EQ(s.proc[1], 0);
  EXPECT_DOUBLE_EQ(s.start[1], 20);  // c finishes at 10 on P1, + 10 of communication
  EXPECT_EQ(s.proc[3], 0);
  EXPECT_EQ(s.order.back(), 3);
  EXPECT_DOUBLE_EQ(s.start[3], 2);  // in the gap between a and b, not after b
  EXPECT_DOUBLE_EQ(s.makespan, 22);
}

TEST(ListScheduling, ReceiverPaysCommunicationOnItsOwnProcessor) {
  // a on P0 (0..2); b reads a and runs on P1 for 5 plus a's 3 of
  // communication on P1 itself, so P1 is busy 2..10; c, independent, only
  // on P1 and ranked last, does not fit in 0..2 and follows b.
  TaskGraph g;
  g.n_tasks = 3;
  g.n_procs = 2;
  g.cost = {{2, kInf}, {kInf, 5}, {kInf, 4}};
  g.succ = {{{1, 3.0}}, {}, {}};
  g.receiver_pays_communication = true;
  TaskSchedule s = heft(g);
  expect_valid_schedule(g, s, /*order_by_start=*/false);
  EXPECT_DOUBLE_EQ(s.start[1], 2);    // as soon as a finishes, not at 2 + 3
  EXPECT_DOUBLE_EQ(s.finish[1], 10);  // 3 of communication + 5 on P1
  EXPECT_DOUBLE_EQ(s.start[2], 10);   // 0..4 would overlap b's 2..10
  EXPECT_DOUBLE_EQ(s.makespan, 14);
  g.receiver_pays_communication = false;
  TaskSchedule delayed = heft(g);
  expect_valid_schedule(g, delayed, /*order_by_start=*/false);
  EXPECT_DOUBLE_EQ(delayed.start[1], 5);  // the papers' model: data arrive at 2 + 3
  EXPECT_DOUBLE_EQ(delayed.finish[1], 10);
}

TEST(ListScheduling, TaskWithOneCapableProcessorGoesThere) {
  TaskGraph g;
  g.n_tasks = 2;
  g.n_procs = 2;
  g.cost = {{1, 100}, {kInf, 100}};
  g.succ = {{{1, 5.0}}, {}};
  for (const TaskSchedule& s : {heft(g), peft(g)}) {
    expect_valid_schedule(g, s, /*order_by_start=*/false);
    EXPECT_EQ(s.proc[1], 1);
    EXPECT_TRUE(std::isinf(s.eft[1][0]));
  }
}

TEST(ListScheduling, RejectsMalformedGraphs) {
  TaskGraph cycle;
  cycle.n_tasks = 2;
  cycle.n_procs = 1;
  cycle.cost = {{1}, {1}};
  cycle.succ = {{{1, 0.0}}, {{0, 0.0}}};
  try {
    heft(cycle);
    FAIL() << "a cycle was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUsage);
    EXPECT_NE(std::string(e.what()).find("cycle"), std::string::npos) << e.what();
  }
  TaskGraph nowhere;
  nowhere.n_tasks = 1;
  nowhere.n_procs = 2;
  nowhere.cost = {{kInf, kInf}};
  nowhere.succ = {{}};
  try {
    peft(nowhere);
    FAIL() << "a task no processor runs was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  }
  TaskGraph bad_edge = heft_paper_example();
  bad_edge.succ[0].emplace_back(10, 1.0);
  EXPECT_THROW(heft(bad_edge), Error);
}

// Zoo models on a GPU + CPU platform with the roofline model.
class ListSchedulerPlans : public ::testing::TestWithParam<std::string> {};

TEST_P(ListSchedulerPlans, GoogleNetPlanIsValidAndBeatsTheBestSingleDevice) {
  Graph graph = load_model("zoo:googlenet");
  Platform platform = make_platform("", kDesktopGpu);
  ASSERT_EQ(platform.devices.size(), 2u);
  auto cost = make_combined_cost_model(platform, nullptr);
  Plan plan = make_scheduler(GetParam())->schedule(graph, platform, *cost, {});
  EXPECT_EQ(plan.scheduler, GetParam());
  ASSERT_NO_THROW(validate_plan(plan, graph, platform));
  ASSERT_EQ(plan.placement.size(), graph.nodes.size());
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    EXPECT_GE(plan.placement[n].device, 0) << graph.nodes[n].label();
    EXPECT_EQ(plan.placement[n].reason.rfind(GetParam() + ": ", 0), 0u) << plan.placement[n].reason;
  }
  // Compared by the simulator, which charges both plans for the same copies
  // (the sequential scheduler's own prediction leaves out the input's copy
  // to the GPU, which the list schedulers count).
  Plan sequential = make_scheduler("sequential")->schedule(graph, platform, *cost, {});
  double simulated_ms = simulate(plan, graph, platform, *cost).makespan_us / 1000.0;
  double sequential_ms = simulate(sequential, graph, platform, *cost).makespan_us / 1000.0;
  std::printf("%s on googlenet: predicted %.3f ms, simulated %.3f ms; sequential (%s) simulated %.3f ms\n",
              GetParam().c_str(), plan.predicted_ms, simulated_ms,
              sequential.devices[sequential.lanes[0].device].c_str(), sequential_ms);
  EXPECT_LE(simulated_ms, sequential_ms * (1 + 1e-9));
  EXPECT_GT(plan.predicted_ms, 0);
  // Its own model counts every copy but the outputs' way back to host.
  EXPECT_NEAR(plan.predicted_ms, simulated_ms, 0.03 * simulated_ms);
}

TEST_P(ListSchedulerPlans, FallsBackToOneDeviceWhenTheListScheduleIsLonger) {
  Graph graph = load_model("zoo:squeezenet1_0");
  Platform platform = make_platform("", kDesktopGpu);
  auto cost = make_roofline_cost_model(platform);
  UnitTaskGraph problem = build_unit_task_graph(graph, platform, *cost, GetParam());
  // A deliberately bad schedule: everything on the CPU, one unit after
  // another with a gap between each, is longer than the GPU alone.
  TaskSchedule bad = GetParam() == "heft" ? heft(problem.tasks) : peft(problem.tasks);
  double t = 0;
  for (int task : bad.order) {
    bad.proc[task] = 0;
    bad.start[task] = t;
    t += problem.tasks.cost[task][0] + 1000;
    bad.finish[task] = t;
  }
  bad.makespan = t;
  Plan plan = plan_from_task_schedule(graph, platform, problem, bad, GetParam());
  ASSERT_NO_THROW(validate_plan(plan, graph, platform));
  ASSERT_EQ(plan.lanes.size(), 1u);
  EXPECT_EQ(plan.devices[plan.lanes[0].device], "emu:gpu");
  double gpu_alone_us = 0;
  for (const auto& row : problem.tasks.cost) gpu_alone_us += row[1];
  EXPECT_DOUBLE_EQ(plan.predicted_ms, gpu_alone_us / 1000.0);
  EXPECT_NE(plan.placement[0].reason.find("alone beats"), std::string::npos) << plan.placement[0].reason;
}

TEST_P(ListSchedulerPlans, ReasonNamesTheOtherDevice) {
  Graph graph = load_model("zoo:squeezenet1_0");
  Platform platform = make_platform("", kDesktopGpu);
  auto cost = make_roofline_cost_model(platform);
  Plan plan = make_scheduler(GetParam())->schedule(graph, platform, *cost, {});
  const Placement& first = plan.placement[0];
  std::string chosen = plan.devices[first.device];
  std::string other = chosen == "emu:gpu" ? "emu:cpu" : "emu:gpu";
  EXPECT_NE(first.reason.find(" on " + chosen), std::string::npos) << first.reason;
  EXPECT_NE(first.reason.find("(" + other + " "), std::string::npos) << first.reason;
  EXPECT_NE(first.reason.find(" ms"), std::string::npos) << first.reason;
}

TEST_P(ListSchedulerPlans, UnknownParameterIsAUsageError) {
  Graph graph = load_model("zoo:squeezenet1_0");
  Platform platform = make_platform("", kDesktopGpu);
  auto cost = make_roofline_cost_model(platform);
  ScheduleOptions options;
  options.params["device"] = "emu:gpu";
  try {
    make_scheduler(GetParam())->schedule(graph, platform, *cost, options);
    FAIL() << "an unknown parameter was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUsage);
    EXPECT_NE(std::string(e.what()).find("device"), std::string::npos) << e.what();
  }
}

TEST_P(ListSchedulerPlans, PlansBertQuickly) {
  Graph graph = load_model("zoo:bert");
  Platform platform = make_platform("", kDesktopGpu);
  auto cost = make_roofline_cost_model(platform);
  auto begin = std::chrono::steady_clock::now();
  Plan plan = make_scheduler(GetParam())->schedule(graph, platform, *cost, {});
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  std::printf("%s on bert (%zu nodes): planned in %.3f s\n", GetParam().c_str(), graph.nodes.size(), seconds);
  EXPECT_NO_THROW(validate_plan(plan, graph, platform));
  EXPECT_LT(seconds, 5.0);
}

INSTANTIATE_TEST_SUITE_P(ListScheduling, ListSchedulerPlans, ::testing::Values("heft", "peft"));

TEST(ListScheduling, SchedulersAreRegistered) {
  auto names = scheduler_names();
  EXPECT_EQ(names.count("heft"), 1u);
  EXPECT_EQ(names.count("peft"), 1u);
}

}  // namespace
}  // namespace hetsched
