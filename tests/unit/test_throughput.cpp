// Throughput mode (hetsched/throughput.h): flows of requests over devices,
// their prediction, their choice by measurement, and sessions serving
// requests from several threads at once. Emulated devices, whose steps are
// held to their modeled times, make which flow is faster known in advance.
#include <atomic>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_test_util.h"
#include "graph_test_util.h"
#include "plan_test_util.h"
#include "hetsched/choose.h"
#include "hetsched/device.h"
#include "hetsched/error.h"
#include "hetsched/session.h"
#include "hetsched/throughput.h"
#include "kernel_test_util.h"
#include "onnx_model_util.h"
#include "plan/plan_builder.h"
#include "runtime/request_pool.h"

namespace hetsched {
namespace {

// Two fast devices, two three times slower and one ten times slower; a
// request (three Relus over 256 KiB) is held to about 12 ms on a fast one:
// long enough that the threads of a busy machine (tests running beside
// this one) do not blur which flow serves more.
struct Fixture {
  Graph graph = testing::relu_chain(3, 1 << 15);
  std::shared_ptr<const Platform> platform;
  std::shared_ptr<const CostModel> cost;

  Fixture() {
    Platform p;
    p.name = "four";
    p.devices = {testing::emulated_device("fast", 0.0625), testing::emulated_device("fast2", 0.0625),
                 testing::emulated_device("slow", 0.0625 / 3), testing::emulated_device("slow2", 0.0625 / 3),
                 testing::emulated_device("crawl", 0.00625)};
    platform = std::make_shared<const Platform>(p);
    cost = make_roofline_cost_model(*platform);
  }

  RequestFlow flow(const std::vector<std::string>& devices) const {
    RequestFlow f;
    f.name = fmt::format("{}", fmt::join(devices, "+"));
    f.platform = platform;
    f.cost = cost;
    for (const std::string& device : devices)
      f.workers.push_back({device, std::make_shared<const Plan>(one_device_plan(
                                       graph, *platform, platform->find_device(device), "test", "test"))});
    return f;
  }

  // With `expected`, each worker starts from its predicted time alone.
  std::shared_ptr<RequestPool> pool(const RequestFlow& flow, bool expected = false) const {
    FlowPrediction p = predict_flow(graph, flow);
    std::vector<RequestPool::Worker> workers;
    for (size_t w = 0; w < flow.workers.size(); ++w)
      workers.push_back({flow.workers[w].device,
                         std::make_shared<Executor>(graph, *flow.workers[w].plan, *platform, cost), platform,
                         expected ? p.alone_ms[w] : 0});
    return std::make_shared<RequestPool>(std::move(workers));
  }
};

FlowChoiceOptions quick() {
  FlowChoiceOptions o;
  o.warmups = 1;
  o.rounds = 3;
  o.max_rounds = 6;
  o.window_ms = 30;
  return o;
}

TEST(PredictFlow, SideBySideServesTheSumOfItsWorkersRates) {
  Fixture f;
  FlowPrediction one = predict_flow(f.graph, f.flow({"emu:fast"}));
  FlowPrediction two = predict_flow(f.graph, f.flow({"emu:fast", "emu:fast2"}));
  FlowPrediction mixed = predict_flow(f.graph, f.flow({"emu:fast", "emu:slow"}));
  ASSERT_GT(one.per_s, 0);
  EXPECT_NEAR(two.per_s, 2 * one.per_s, 1e-6 * one.per_s);
  EXPECT_NEAR(mixed.per_s, one.per_s * 4 / 3, 0.02 * one.per_s);
  // Little's law: one request per worker in flight.
  EXPECT_NEAR(two.latency_ms, 2 * 1000 / two.per_s, 1e-9);
  // More requests than workers queue: same rate, longer latency.
  FlowPrediction queued = predict_flow(f.graph, f.flow({"emu:fast", "emu:fast2"}), 6);
  EXPECT_NEAR(queued.per_s, two.per_s, 1e-9);
  EXPECT_NEAR(queued.latency_ms, 3 * two.latency_ms, 1e-9);
  // Fewer: only the fastest workers are busy.
  EXPECT_NEAR(predict_flow(f.graph, f.flow({"emu:slow", "emu:fast"}), 1).per_s, one.per_s, 1e-9);
  ASSERT_EQ(mixed.alone_ms.size(), 2u);
  EXPECT_NEAR(mixed.alone_ms[1], 3 * mixed.alone_ms[0], 0.05 * mixed.alone_ms[1]);
}

TEST(RequestPool, ALoneCallerAlwaysGetsTheFirstWorker) {
  Fixture f;
  auto pool = f.pool(f.flow({"emu:fast", "emu:fast2"}));
  TensorMap inputs = random_inputs(f.graph, 1);
  for (int i = 0; i < 4; ++i) {
    size_t worker = 9;
    pool->run(inputs, nullptr, &worker);
    EXPECT_EQ(worker, 0u);
  }
  std::vector<WorkerLoad> loads = pool->loads();
  EXPECT_EQ(loads[0].n_requests, 4);
  EXPECT_EQ(loads[1].n_requests, 0);
  EXPECT_GT(loads[0].busy_s, 0);
}

TEST(RequestPool, ConcurrentCallersRunSideBySideWithTheSequentialOutputs) {
  Fixture f;
  auto pool = f.pool(f.flow({"emu:fast", "emu:fast2"}));
  std::vector<TensorMap> inputs, want;
  for (uint64_t s = 0; s < 8; ++s) {
    inputs.push_back(random_inputs(f.graph, s));
    want.push_back(run_reference(f.graph, inputs.back()));
  }
  std::atomic<int> max_busy{0}, busy{0};
  LoadResult r = run_closed_loop(16, 4, [&](int i) {
    int now = ++busy;
    for (int seen = max_busy; now > seen && !max_busy.compare_exchange_weak(seen, now);) {
    }
    TensorMap got = pool->run(inputs[static_cast<size_t>(i) % 8]);
    --busy;
    testing::expect_same_outputs(got, want[static_cast<size_t>(i) % 8], fmt::format("request {}", i));
  });
  EXPECT_EQ(r.n_requests, 16);
  std::vector<WorkerLoad> loads = pool->loads();
  EXPECT_EQ(loads[0].n_requests + loads[1].n_requests, 16);
  // Four callers on two workers of ~12 ms: both serve.
  EXPECT_GT(loads[1].n_requests, 0);
  EXPECT_GT(max_busy.load(), 1);
  EXPECT_GT(r.per_s, 0);
  EXPECT_LE(r.p50_ms, r.p99_ms);
}

TEST(RequestPool, AWaitingRequestTakesTheWorkerThatFinishesItFirst) {
  Fixture f;
  auto pool = f.pool(f.flow({"emu:fast", "emu:crawl"}), true);
  TensorMap inputs = random_inputs(f.graph, 1);
  // Two callers: the second waits about 12 ms for the fast worker rather
  // than run 120 ms on the crawling one, which serves nothing.
  run_closed_loop(30, 2, [&](int) { pool->run(inputs); });
  std::vector<WorkerLoad> loads = pool->loads();
  EXPECT_EQ(loads[0].n_requests, 30);
  EXPECT_EQ(loads[1].n_requests, 0);
  // Sixteen: with a dozen waiting, the fast worker would take longer than
  // 120 ms to reach the last ones, so the crawling one takes some.
  pool->reset_loads();
  run_closed_loop(64, 16, [&](int) { pool->run(inputs); });
  loads = pool->loads();
  EXPECT_EQ(loads[0].n_requests + loads[1].n_requests, 64);
  EXPECT_GT(loads[1].n_requests, 0);
  EXPECT_GT(loads[0].n_requests, 3 * loads[1].n_requests);
}

TEST(RunClosedLoop, RunsEachRequestOnceAndRethrowsTheFirstFailure) {
  std::vector<std::atomic<int>> seen(50);
  LoadResult r = run_closed_loop(50, 3, [&](int i) { ++seen[static_cast<size_t>(i)]; });
  EXPECT_EQ(r.n_requests, 50);
  EXPECT_EQ(r.in_flight, 3);
  for (auto& s : seen) EXPECT_EQ(s.load(), 1);
  EXPECT_THROW(run_closed_loop(50, 3,
                               [](int i) {
                                 if (i == 7) throw std::runtime_error("request 7 failed");
                               }),
               std::runtime_error);
  EXPECT_THROW(run_closed_loop(0, 1, [](int) {}), Error);
  EXPECT_THROW(run_closed_loop(5, 0, [](int) {}), Error);
  EXPECT_DOUBLE_EQ(percentile({4, 1, 3, 2}, 50), 2.5);
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4, 5}, 100), 5);
}

TEST(ChooseFlowByMeasurement, KeepsSideBySideWhenItServesMore) {
  Fixture f;
  std::vector<RequestFlow> flows{f.flow({"emu:fast"}), f.flow({"emu:fast", "emu:fast2"})};
  std::vector<TensorMap> inputs{random_inputs(f.graph, 1)};
  MeasuredFlowChoice choice = choose_flow_by_measurement(f.graph, flows, inputs, quick());
  EXPECT_EQ(choice.chosen, 1u) << choice.reason;
  EXPECT_LT(choice.ratio, 0.7) << choice.reason;
  EXPECT_GT(choice.per_s[1], 1.4 * choice.per_s[0]) << choice.reason;
  EXPECT_NE(choice.reason.find("keeping emu:fast+emu:fast2"), std::string::npos) << choice.reason;
  ASSERT_TRUE(choice.pool);
  EXPECT_EQ(choice.pool->workers().size(), 2u);
}

TEST(ChooseFlowByMeasurement, NeverKeepsAFlowServingLessThanTheFastestDeviceAlone) {
  Fixture f;
  // Two devices three times slower serve 2/3 of the fast one alone.
  std::vector<RequestFlow> flows{f.flow({"emu:slow", "emu:slow2"}), f.flow({"emu:fast"}), f.flow({"emu:slow"})};
  std::vector<TensorMap> inputs{random_inputs(f.graph, 1)};
  MeasuredFlowChoice choice = choose_flow_by_measurement(f.graph, flows, inputs, quick());
  EXPECT_EQ(choice.chosen, 1u) << choice.reason;
  EXPECT_NE(choice.reason.find("running emu:fast"), std::string::npos) << choice.reason;
  EXPECT_EQ(choice.pool->workers().size(), 1u);
  FlowChoiceOptions bad = quick();
  bad.rounds = 0;
  EXPECT_THROW(choose_flow_by_measurement(f.graph, flows, inputs, bad), Error);
  EXPECT_THROW(choose_flow_by_measurement(f.graph, {flows[0]}, inputs, quick()), Error);  // no device alone
}

TEST(ChooseFlowByMeasurement, ASingleFlowIsKeptWithoutMeasuringRounds) {
  Fixture f;
  std::vector<TensorMap> inputs{random_inputs(f.graph, 1)};
  MeasuredFlowChoice choice = choose_flow_by_measurement(f.graph, {f.flow({"emu:fast"})}, inputs, quick());
  EXPECT_EQ(choice.chosen, 0u);
  EXPECT_EQ(choice.rounds, 0) << choice.reason;
  EXPECT_NE(choice.reason.find("emu:fast, the only flow (not measured)"), std::string::npos) << choice.reason;
  ASSERT_TRUE(choice.pool);
  EXPECT_EQ(choice.pool->workers().size(), 1u);
  ASSERT_EQ(choice.per_s.size(), 1u);
  EXPECT_GT(choice.per_s[0], 0);
}

TEST(FlowCandidates, TheDevicesAloneTheirUnionAndSideBySide) {
  auto cores = describe_machine().usable_cores;
  if (cores.size() < 2) GTEST_SKIP() << "needs two cores";
  Graph g = testing::relu_chain(2, 64);
  auto roofline = [](Platform& p) { return std::shared_ptr<const CostModel>(make_roofline_cost_model(p)); };
  DeviceSpec a, b, both;
  a.cores = {cores[0]};
  b.cores = {cores[1]};
  both.cores = {cores[0], cores[1]};
  std::vector<std::string> names;
  for (const RequestFlow& f : flow_candidates(g, make_platform(a.name() + "," + b.name(), ""), roofline))
    names.push_back(f.name);
  EXPECT_EQ(names, (std::vector<std::string>{a.name() + " alone", b.name() + " alone", both.name() + " alone",
                                             "side by side on " + a.name() + ", " + b.name()}));
  // One device of two cores: itself, and split into two streams.
  names.clear();
  std::vector<RequestFlow> flows = flow_candidates(g, make_platform(both.name(), ""), roofline);
  for (const RequestFlow& f : flows) names.push_back(f.name);
  EXPECT_EQ(names, (std::vector<std::string>{both.name() + " alone", "2 streams of 1 core"}));
  ASSERT_EQ(flows[1].workers.size(), 2u);
  EXPECT_EQ(flows[1].workers[0].device, a.name());
  EXPECT_TRUE(flows[1].platform->find_device(b.name()) >= 0);
}

TEST(ThroughputSession, ServesConcurrentRequestsWithTheSequentialOutputs) {
  auto cores = describe_machine().usable_cores;
  if (cores.size() < 2) GTEST_SKIP() << "needs two cores";
  auto dir = testing::temp_dir("throughput_session");
  SessionOptions options(fmt::format("cpu:{},cpu:{}", cores[0], cores[1]));
  options.mode = RunMode::kThroughput;
  options.profile_first = false;
  options.profile_db = (dir / "p.db").string();
  Session session = Session::load("zoo:squeezenet1_0", {}, options);
  ExecutionSummary summary = session.summary();
  EXPECT_NE(summary.choice.find("throughput: "), std::string::npos) << summary.choice;
  EXPECT_NE(summary.choice.find("requests/s"), std::string::npos) << summary.choice;
  ASSERT_FALSE(summary.workers.empty());
  EXPECT_FALSE(summary.flow.empty());
  EXPECT_EQ(summary.workers.size() > 1, summary.choice.find("keeping side by side") != std::string::npos)
      << summary.choice;
  ASSERT_GE(summary.flows.size(), 2u);
  int chosen = 0;
  for (const FlowOutcome& f : summary.flows) {
    EXPECT_GT(f.predicted_per_s, 0) << f.name;
    EXPECT_GT(f.measured_per_s, 0) << f.name;
    EXPECT_GT(f.measured_p50_ms, 0) << f.name;
    if (f.chosen) {
      ++chosen;
      EXPECT_EQ(f.name, summary.flow);
      EXPECT_EQ(f.workers.size(), summary.workers.size());
    }
  }
  EXPECT_EQ(chosen, 1);

  Session reference = Session::load("zoo:squeezenet1_0", {}, SessionOptions("", true));
  std::vector<TensorMap> inputs, want;
  for (uint64_t s = 0; s < 3; ++s) {
    inputs.push_back(session.random_inputs(s + 10));
    want.push_back(reference.run(inputs.back()));
  }
  run_closed_loop(9, 3, [&](int i) {
    testing::expect_same_outputs(session.run(inputs[static_cast<size_t>(i) % 3]), want[static_cast<size_t>(i) % 3],
                                 fmt::format("request {}", i));
  });
  int64_t served = 0;
  for (const WorkerLoad& load : session.loads()) served += load.n_requests;
  EXPECT_EQ(served, 9);  // the measurement's requests are not counted

  options.scheduler = "heft";
  EXPECT_THROW(Session::load("zoo:squeezenet1_0", {}, options), Error);
  std::filesystem::remove_all(dir);
}

TEST(ThroughputCli, WritesTheRateAndLatencyPercentiles) {
  auto cores = describe_machine().usable_cores;
  if (cores.size() < 2) GTEST_SKIP() << "needs two cores";
  auto dir = testing::temp_dir("throughput_cli");
  std::string json = (dir / "r.json").string();
  std::string db = (dir / "p.db").string();
  testing::CliResult r = testing::run_cli(fmt::format(
      "run zoo:squeezenet1_0 --devices cpu:{},cpu:{} --mode throughput -n 12 --concurrency 3 --db {} --json {}",
      cores[0], cores[1], db, json));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("requests/s"), std::string::npos) << r.output;
  nlohmann::json j = nlohmann::json::parse(std::ifstream(json));
  EXPECT_EQ(j["mode"], "throughput");
  EXPECT_EQ(j["requests"], 12);
  EXPECT_EQ(j["in_flight"], 3);
  EXPECT_GT(j["throughput_per_s"].get<double>(), 0);
  EXPECT_LE(j["p50_ms"].get<double>(), j["p99_ms"].get<double>());
  EXPECT_FALSE(j["flow"].get<std::string>().empty());
  int64_t served = 0;
  for (const auto& w : j["served"]) served += w["requests"].get<int64_t>();
  EXPECT_EQ(served, 12);

  EXPECT_EQ(testing::run_cli("run zoo:squeezenet1_0 --concurrency 2").exit_code, 2);
  EXPECT_EQ(testing::run_cli("run zoo:squeezenet1_0 --mode fastest").exit_code, 2);
  EXPECT_EQ(testing::run_cli("run zoo:squeezenet1_0 --mode throughput --concurrency 0").exit_code, 2);
  std::filesystem::remove_all(dir);
}

TEST(ThroughputCli, CompareListsEveryFlowPredictedAndMeasured) {
  auto dir = testing::temp_dir("throughput_compare");
  std::string json = (dir / "c.json").string();
  std::string platform = std::string(HETSCHED_SOURCE_DIR) + "/platforms/phone-soc.json";
  testing::CliResult r = testing::run_cli(fmt::format(
      "compare zoo:squeezenet1_0 --platform {} --mode throughput --measure -n 2 -w 0 --db {} --json {}", platform,
      (dir / "p.db").string(), json));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("emulated /s"), std::string::npos) << r.output;
  nlohmann::json j = nlohmann::json::parse(std::ifstream(json));
  EXPECT_EQ(j["mode"], "throughput");
  EXPECT_TRUE(j["emulated"].get<bool>());
  ASSERT_GE(j["flows"].size(), 2u);
  for (const auto& flow : j["flows"]) {
    EXPECT_GT(flow["predicted_per_s"].get<double>(), 0) << flow.dump();
    EXPECT_GT(flow["measured_per_s"].get<double>(), 0) << flow.dump();
  }
  EXPECT_EQ(testing::run_cli("compare zoo:squeezenet1_0 --mode throughput --schedulers heft").exit_code, 2);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace hetsched
