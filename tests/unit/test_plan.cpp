// Plans: JSON, the validator, the plan builder, the first schedulers and the
// `plan` / `explain` commands.
#include <sys/wait.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "graph_test_util.h"

#include "cli_test_util.h"
#include <nlohmann/json.hpp>

#include "hetsched/error.h"
#include "hetsched/scheduler.h"
#include "hetsched/session.h"
#include "onnx_model_util.h"
#include "plan/plan_builder.h"

namespace hetsched {
namespace {

// ---------------------------------------------------------------- fixtures

ValueId add_float_value(Graph& g, const std::string& name, Shape shape = {1, 8}) {
  return testing::add_float_value(g, name, std::move(shape));
}
using testing::add_op;



// x -> Relu 'a' -> {Sigmoid 'b', Tanh 'c'} -> Add 'd' -> y: two branches to
// run side by side.
Graph diamond(Shape shape = {1, 8}) {
  Graph g;
  g.name = "diamond";
  g.source = "test:diamond";
  ValueId x = add_float_value(g, "x", shape), a = add_float_value(g, "a", shape), b = add_float_value(g, "b", shape),
          c = add_float_value(g, "c", shape), y = add_float_value(g, "y", shape);
  add_op(g, "Relu", "a", {x}, {a});
  add_op(g, "Sigmoid", "b", {a}, {b});
  add_op(g, "Tanh", "c", {a}, {c});
  add_op(g, "Add", "d", {b, c}, {y});
  g.inputs = {x};
  g.outputs = {y};
  g.finalize();
  return g;
}

PlatformDevice cpu_device(int core) {
  PlatformDevice d;
  d.name = "cpu:" + std::to_string(core);
  d.kind = DeviceKind::kCpu;
  d.cores = {core};
  d.signature = "test-cpu";
  return d;
}

PlatformDevice emulated_device(const std::string& name, const std::string& space, int n_streams,
                               std::vector<std::string> ops = {}) {
  PlatformDevice d;
  d.name = "emu:" + name;
  d.kind = DeviceKind::kEmulated;
  d.model_kind = "npu";
  d.memory_space = space;
  d.n_streams = n_streams;
  d.ops = std::move(ops);
  d.signature = "test-" + name;
  return d;
}

Link link(const std::string& from, const std::string& to) { return Link{from, to, 10, 10, "file"}; }

Platform two_cpus() {
  Platform p;
  p.name = "two cpus";
  p.devices = {cpu_device(0), cpu_device(1)};
  return p;
}

// cpu:0, cpu:1 and their union cpu:0-1, which overlaps both.
Platform two_cpus_and_union() {
  Platform p;
  p.name = "two cpus and their union";
  PlatformDevice wide = cpu_device(0);
  wide.name = "cpu:0-1";
  wide.cores = {0, 1};
  p.devices = {cpu_device(0), cpu_device(1), wide};
  p.devices[0].overlaps = {"cpu:0-1"};
  p.devices[1].overlaps = {"cpu:0-1"};
  p.devices[2].overlaps = {"cpu:0", "cpu:1"};
  return p;
}

// A CPU in host memory and an NPU with its own memory and two streams that
// runs neither Add nor anything outside its list.
Platform cpu_and_npu() {
  Platform p;
  p.name = "cpu+npu";
  p.devices = {cpu_device(0), emulated_device("npu", "npu", 2, {"Relu", "Sigmoid", "Tanh", "Conv", "Concat"})};
  p.links = {link(kHostMemory, "npu"), link("npu", kHostMemory)};
  return p;
}

// Two accelerators in separate memories linked only through host memory.
Platform two_islands() {
  Platform p;
  p.name = "islands";
  p.devices = {emulated_device("npu", "npu", 1), emulated_device("gpu", "gpu", 3)};
  p.links = {link(kHostMemory, "npu"), link("npu", kHostMemory), link(kHostMemory, "gpu"),
             link("gpu", kHostMemory)};
  return p;
}

// Every node costs 10 us times the device's factor.
class FixedCostModel : public CostModel {
 public:
  explicit FixedCostModel(std::map<std::string, double> factors = {}) : factors_(std::move(factors)) {}
  Estimate launch(const Graph& graph, const std::vector<NodeId>& nodes, const PlatformDevice& device) const override {
    for (NodeId id : nodes)
      if (!device.supports(graph.nodes[id])) return {std::numeric_limits<double>::infinity(), CostSource::kRoofline};
    auto it = factors_.find(device.name);
    double factor = it == factors_.end() ? 1.0 : it->second;
    return {10.0 * factor * static_cast<double>(nodes.size()), CostSource::kRoofline};
  }
  Estimate transfer(double, const PlatformDevice&, const PlatformDevice&) const override {
    return {1.0, CostSource::kLink};
  }

 private:
  std::map<std::string, double> factors_;
};

Plan schedule(const std::string& name, const Graph& g, const Platform& p, uint64_t seed = 0,
              std::map<std::string, std::string> params = {}) {
  ScheduleOptions options;
  options.seed = seed;
  options.params = std::move(params);
  return make_scheduler(name)->schedule(g, p, FixedCostModel(), options);
}

// The message of the kInvalidFile error `validate_plan` throws ("" when valid).
std::string validation_error(const Plan& plan, const Graph& g, const Platform& p) {
  try {
    validate_plan(plan, g, p);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidFile) << e.what();
    return e.what();
  }
  return "";
}

PlanStep launch_step(std::vector<NodeId> nodes) {
  PlanStep s;
  s.kind = StepKind::kLaunch;
  s.nodes = std::move(nodes);
  return s;
}
PlanStep event_step(StepKind kind, int event) {
  PlanStep s;
  s.kind = kind;
  s.event = event;
  return s;
}

Plan empty_plan(const Graph& g, const Platform& p) {
  Plan plan;
  plan.scheduler = "hand-made";
  plan.model = g.source;
  plan.model_hash = graph_fingerprint(g);
  plan.platform_signature = p.signature();
  for (const auto& d : p.devices) plan.devices.push_back(d.name);
  return plan;
}

// Removes the steps `drop` matches from every lane.
void remove_steps(Plan& plan, const std::function<bool(const PlanStep&)>& drop) {
  for (Lane& lane : plan.lanes) std::erase_if(lane.steps, drop);
}

int count_kind(const Plan& plan, StepKind kind) {
  int n = 0;
  for (const Lane& lane : plan.lanes)
    for (const PlanStep& s : lane.steps) n += s.kind == kind;
  return n;
}

std::set<int> devices_used(const Plan& plan) {
  std::set<int> used;
  for (const Lane& lane : plan.lanes)
    for (const PlanStep& s : lane.steps)
      if (s.kind == StepKind::kLaunch) used.insert(lane.device);
  return used;
}

void expect_same_plan(const Plan& a, const Plan& b) {
  EXPECT_EQ(a.scheduler, b.scheduler);
  EXPECT_EQ(a.model, b.model);
  EXPECT_EQ(a.model_hash, b.model_hash);
  EXPECT_EQ(a.platform_signature, b.platform_signature);
  EXPECT_EQ(a.devices, b.devices);
  EXPECT_EQ(a.n_events, b.n_events);
  EXPECT_DOUBLE_EQ(a.predicted_ms, b.predicted_ms);
  EXPECT_EQ(a.notes, b.notes);
  ASSERT_EQ(a.lanes.size(), b.lanes.size());
  for (size_t l = 0; l < a.lanes.size(); ++l) {
    EXPECT_EQ(a.lanes[l].device, b.lanes[l].device);
    EXPECT_EQ(a.lanes[l].stream, b.lanes[l].stream);
    ASSERT_EQ(a.lanes[l].steps.size(), b.lanes[l].steps.size());
    for (size_t s = 0; s < a.lanes[l].steps.size(); ++s) {
      const PlanStep& x = a.lanes[l].steps[s];
      const PlanStep& y = b.lanes[l].steps[s];
      EXPECT_EQ(x.kind, y.kind);
      EXPECT_EQ(x.nodes, y.nodes);
      EXPECT_EQ(x.value, y.value);
      EXPECT_EQ(x.from_space, y.from_space);
      EXPECT_EQ(x.to_space, y.to_space);
      EXPECT_EQ(x.event, y.event);
    }
  }
  ASSERT_EQ(a.placement.size(), b.placement.size());
  for (size_t i = 0; i < a.placement.size(); ++i) {
    EXPECT_EQ(a.placement[i].device, b.placement[i].device);
    EXPECT_EQ(a.placement[i].lane, b.placement[i].lane);
    EXPECT_EQ(a.placement[i].reason, b.placement[i].reason);
  }
}

template <typename F>
std::string error_of(F&& f, ErrorCode expected) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), expected) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error thrown";
  return "";
}

const Graph& squeezenet() {
  static const Graph g = load_model("zoo:squeezenet1_0");
  return g;
}

// ---------------------------------------------------------------- JSON

TEST(PlanJson, RoundTripKeepsEverything) {
  Graph g = diamond();
  Platform p = cpu_and_npu();
  Plan plan = schedule("random", g, p, 3);
  plan.predicted_ms = 1.25;
  plan.notes = {"a remark", "another"};
  ASSERT_GT(plan.n_copies(), 0);
  ASSERT_GT(plan.n_events, 0);
  std::string text = plan_to_json(plan, g);
  Plan back = plan_from_json(text, g, "plan.json");
  expect_same_plan(plan, back);
  EXPECT_EQ(plan_to_json(back, g), text);
}

TEST(PlanJson, NamesNodesAndValuesAndMarksTheFormat) {
  Graph g = diamond();
  Platform p = cpu_and_npu();
  Plan plan = schedule("round-robin", g, p);
  auto j = nlohmann::json::parse(plan_to_json(plan, g));
  EXPECT_EQ(j["format"], "hetsched-plan");
  EXPECT_EQ(j["version"], 1);
  EXPECT_EQ(j["lanes"][0]["device"], "cpu:0");
  EXPECT_EQ(j["lanes"][0]["steps"][0]["launch"][0], "a");
  EXPECT_EQ(j["placement"]["b"]["device"], "emu:npu");
  EXPECT_EQ(j["placement"]["b"]["reason"], "round-robin");
  EXPECT_FALSE(j.contains("predicted_ms"));
}

TEST(PlanJson, RoundTripOfAZooModelPlanThroughAFile) {
  const Graph& g = squeezenet();
  Platform p = two_cpus();
  Plan plan = schedule("round-robin", g, p);
  std::string path = ::testing::TempDir() + "/hetsched_plan_roundtrip.json";
  write_plan_file(plan, g, path);
  Plan back = read_plan_file(path, g);
  expect_same_plan(plan, back);
  EXPECT_NO_THROW(validate_plan(back, g, p));
}

TEST(PlanJson, RefusesAPlanMadeForAnotherGraph) {
  Graph g = diamond();
  Plan plan = schedule("sequential", g, two_cpus());
  std::string text = plan_to_json(plan, g);
  Graph other = diamond({1, 16});
  std::string message = error_of([&] { plan_from_json(text, other, "old.json"); }, ErrorCode::kInvalidFile);
  EXPECT_NE(message.find("old.json"), std::string::npos) << message;
  EXPECT_NE(message.find("model_hash"), std::string::npos) << message;
  EXPECT_NE(message.find("another graph"), std::string::npos) << message;
}

TEST(PlanJson, RefusesMalformedPlansNamingTheField) {
  Graph g = diamond();
  std::string good = plan_to_json(schedule("round-robin", g, cpu_and_npu()), g);
  auto broken = [&](const std::function<void(nlohmann::json&)>& edit) {
    auto j = nlohmann::json::parse(good);
    edit(j);
    return error_of([&] { plan_from_json(j.dump(), g, "bad.json"); }, ErrorCode::kInvalidFile);
  };
  auto expect_mentions = [](const std::string& message, const std::string& part) {
    EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
    EXPECT_NE(message.find("bad.json"), std::string::npos) << message;
  };
  expect_mentions(error_of([&] { plan_from_json("{ not json", g, "bad.json"); }, ErrorCode::kInvalidFile), "JSON");
  expect_mentions(broken([](auto& j) { j.erase("format"); }), "'format'");
  expect_mentions(broken([](auto& j) { j["version"] = 7; }), "version 7");
  expect_mentions(broken([](auto& j) { j.erase("lanes"); }), "'lanes'");
  expect_mentions(broken([](auto& j) { j["lanes"][0]["stream"] = "zero"; }), "'lanes[0].stream'");
  expect_mentions(broken([](auto& j) { j["lanes"][0]["device"] = "cpu:9"; }), "'lanes[0].device'");
  expect_mentions(broken([](auto& j) { j["lanes"][0]["steps"][0]["launch"][0] = "nope"; }),
                  "'lanes[0].steps[0].launch[0]'");
  expect_mentions(broken([](auto& j) { j["lanes"][0]["steps"][0] = {{"jump", 1}}; }), "'lanes[0].steps[0]'");
  expect_mentions(broken([](auto& j) { j["placement"]["ghost"] = {{"reason", "x"}}; }), "'placement.ghost'");
  expect_mentions(broken([](auto& j) { j["extra"] = 1; }), "'extra'");
}

// ---------------------------------------------------------------- fingerprint

TEST(GraphFingerprint, ChangesWithStructureNotWithWeights) {
  Graph a = diamond(), b = diamond();
  EXPECT_EQ(graph_fingerprint(a), graph_fingerprint(b));
  EXPECT_EQ(graph_fingerprint(a).size(), 16u);
  EXPECT_NE(graph_fingerprint(a), graph_fingerprint(diamond({2, 8})));

  Graph renamed = diamond();
  renamed.values[renamed.find_value("b")].name = "b2";
  EXPECT_NE(graph_fingerprint(a), graph_fingerprint(renamed));

  Graph rewired = diamond();
  NodeId d = rewired.find_node("d");
  std::swap(rewired.nodes[d].inputs[0], rewired.nodes[d].inputs[1]);
  EXPECT_NE(graph_fingerprint(a), graph_fingerprint(rewired));

  Graph with_attr = diamond();
  Attribute alpha;
  alpha.kind = Attribute::Kind::kFloat;
  alpha.f = 0.5f;
  with_attr.nodes[0].attributes["alpha"] = alpha;
  EXPECT_NE(graph_fingerprint(a), graph_fingerprint(with_attr));

  // Same weights' shape, other data: the same structure.
  Graph w1 = load_model("zoo:squeezenet1_0");
  Graph w2 = w1;
  for (auto& v : w2.values)
    if (v.is_constant() && v.initializer->dtype() == DType::kFloat32 && v.initializer->numel() > 0) {
      Tensor t = v.initializer->clone();
      t.data<float>()[0] += 1.0f;
      v.initializer = t;
      break;
    }
  EXPECT_EQ(graph_fingerprint(w1), graph_fingerprint(w2));
}

// ---------------------------------------------------------------- validator

TEST(ValidatePlan, AcceptsBuiltPlans) {
  Graph g = diamond();
  for (const Platform& p : {two_cpus(), cpu_and_npu(), two_islands()})
    for (const char* name : {"sequential", "round-robin", "random"})
      EXPECT_EQ(validation_error(schedule(name, g, p), g, p), "") << name << " on " << p.name;
}

TEST(ValidatePlan, RefusesANodeNeverLaunched) {
  Graph g = diamond();
  Platform p = two_cpus();
  Plan plan = schedule("sequential", g, p);
  NodeId c = g.find_node("c");
  remove_steps(plan, [&](const PlanStep& s) { return s.kind == StepKind::kLaunch && s.nodes == std::vector{c}; });
  EXPECT_NE(validation_error(plan, g, p).find("Tanh 'c' is never launched"), std::string::npos)
      << validation_error(plan, g, p);
}

TEST(ValidatePlan, RefusesANodeLaunchedTwice) {
  Graph g = diamond();
  Platform p = two_cpus();
  Plan plan = schedule("sequential", g, p);
  plan.lanes[0].steps.push_back(launch_step({g.find_node("a")}));
  EXPECT_NE(validation_error(plan, g, p).find("Relu 'a' is launched twice"), std::string::npos)
      << validation_error(plan, g, p);
}

TEST(ValidatePlan, RefusesAReadAcrossLanesWithoutAWait) {
  Graph g = diamond();
  Platform p = two_cpus();
  Plan plan = schedule("round-robin", g, p);
  ASSERT_EQ(plan.lanes.size(), 2u);
  remove_steps(plan, [](const PlanStep& s) { return s.kind == StepKind::kWait; });
  std::string message = validation_error(plan, g, p);
  EXPECT_NE(message.find("before it is available"), std::string::npos) << message;
  EXPECT_NE(message.find("plan 'round-robin' for test:diamond"), std::string::npos) << message;
  EXPECT_NE(message.find("lane 1 (cpu:1 stream 0) step"), std::string::npos) << message;
}

TEST(ValidatePlan, RefusesAReadWaitingOnAnEventRecordedTooEarly) {
  // Lane 1 waits for e0, but lane 0 records e0 before producing 'a'.
  Graph g = diamond();
  Platform p = two_cpus();
  Plan plan = empty_plan(g, p);
  plan.n_events = 2;
  plan.lanes = {Lane{0, 0, {event_step(StepKind::kRecord, 0), launch_step({g.find_node("a")}),
                            launch_step({g.find_node("b")}), event_step(StepKind::kWait, 1),
                            launch_step({g.find_node("d")})}},
                Lane{1, 0, {event_step(StepKind::kWait, 0), launch_step({g.find_node("c")}),
                            event_step(StepKind::kRecord, 1)}}};
  std::string message = validation_error(plan, g, p);
  EXPECT_NE(message.find("reads 'a' before it is available"), std::string::npos) << message;

  // Recording after the producer makes it valid.
  std::swap(plan.lanes[0].steps[0], plan.lanes[0].steps[1]);
  EXPECT_EQ(validation_error(plan, g, p), "");
}

TEST(ValidatePlan, RefusesAMissingCopyToAnotherMemorySpace) {
  Graph g = diamond();
  Platform p = cpu_and_npu();
  Plan plan = schedule("round-robin", g, p);
  remove_steps(plan, [](const PlanStep& s) { return s.kind == StepKind::kCopy && s.to_space == "npu"; });
  std::string message = validation_error(plan, g, p);
  EXPECT_NE(message.find("in memory space 'npu', where it never is"), std::string::npos) << message;
  EXPECT_NE(message.find("Copy to 'npu'"), std::string::npos) << message;
}

TEST(ValidatePlan, RefusesAGraphOutputLeftOutsideHostMemory) {
  Graph g;
  ValueId x = add_float_value(g, "x"), y = add_float_value(g, "y");
  add_op(g, "Relu", "r", {x}, {y});
  g.inputs = {x};
  g.outputs = {y};
  g.finalize();
  Platform p = cpu_and_npu();
  Plan plan = schedule("sequential", g, p, 0, {{"device", "emu:npu"}});
  EXPECT_EQ(validation_error(plan, g, p), "");
  remove_steps(plan, [](const PlanStep& s) { return s.kind == StepKind::kCopy && s.to_space == kHostMemory; });
  std::string message = validation_error(plan, g, p);
  EXPECT_NE(message.find("graph output 'y' never reaches 'host'"), std::string::npos) << message;
}

TEST(ValidatePlan, RefusesEventsRecordedNeverOrTwice) {
  Graph g = diamond();
  Platform p = two_cpus();
  Plan plan = schedule("round-robin", g, p);
  ASSERT_GT(plan.n_events, 0);
  Plan never = plan;
  remove_steps(never, [](const PlanStep& s) { return s.kind == StepKind::kRecord && s.event == 0; });
  EXPECT_NE(validation_error(never, g, p).find("event e0 is never recorded"), std::string::npos)
      << validation_error(never, g, p);
  Plan twice = plan;
  twice.lanes[1].steps.push_back(event_step(StepKind::kRecord, 0));
  EXPECT_NE(validation_error(twice, g, p).find("event e0 is recorded twice"), std::string::npos)
      << validation_error(twice, g, p);
  Plan out_of_range = plan;
  out_of_range.lanes[1].steps.push_back(event_step(StepKind::kWait, plan.n_events));
  EXPECT_NE(validation_error(out_of_range, g, p).find("out of range"), std::string::npos)
      << validation_error(out_of_range, g, p);
}

TEST(ValidatePlan, RefusesWaitsThatDeadlock) {
  Graph g = diamond();
  Platform p = two_cpus();
  Plan plan = empty_plan(g, p);
  plan.n_events = 2;
  // Each lane waits for what the other records only after its own wait.
  plan.lanes = {Lane{0, 0, {launch_step({g.find_node("a")}), event_step(StepKind::kWait, 1),
                            event_step(StepKind::kRecord, 0), launch_step({g.find_node("b")}),
                            launch_step({g.find_node("d")})}},
                Lane{1, 0, {event_step(StepKind::kWait, 0), launch_step({g.find_node("c")}),
                            event_step(StepKind::kRecord, 1)}}};
  std::string message = validation_error(plan, g, p);
  EXPECT_NE(message.find("deadlock"), std::string::npos) << message;
  EXPECT_NE(message.find("lane 0 (cpu:0 stream 0) step 1 (wait e1)"), std::string::npos) << message;
  EXPECT_NE(message.find("lane 1 (cpu:1 stream 0) step 0 (wait e0)"), std::string::npos) << message;

  Plan self = empty_plan(g, p);
  self.n_events = 1;
  self.lanes = {Lane{0, 0, {event_step(StepKind::kWait, 0), event_step(StepKind::kRecord, 0),
                            launch_step({g.find_node("a"), g.find_node("b"), g.find_node("c"), g.find_node("d")})}}};
  message = validation_error(self, g, p);
  EXPECT_NE(message.find("deadlock"), std::string::npos) << message;
}

TEST(ValidatePlan, RefusesAnOpTheDeviceDoesNotRun) {
  Graph g = diamond();
  Platform p = cpu_and_npu();
  Plan plan = schedule("sequential", g, p, 0, {{"device", "cpu:0"}});
  plan.lanes[0].device = 1;  // the NPU, which runs no Add
  std::string message = validation_error(plan, g, p);
  EXPECT_NE(message.find("emu:npu does not run Add 'd'"), std::string::npos) << message;
}

TEST(ValidatePlan, RefusesAStreamOutOfRange) {
  Graph g = diamond();
  Platform p = two_cpus();
  Plan plan = schedule("sequential", g, p);
  plan.lanes[0].stream = 1;
  std::string message = validation_error(plan, g, p);
  EXPECT_NE(message.find("stream 1 is out of range: cpu:0 has 1 stream"), std::string::npos) << message;
}

TEST(ValidatePlan, RefusesAnotherPlatformOrUnknownDevice) {
  Graph g = diamond();
  Plan plan = schedule("sequential", g, two_cpus());
  EXPECT_NE(validation_error(plan, g, cpu_and_npu()).find("made for another platform"), std::string::npos);
  Platform same = two_cpus();
  plan.devices[1] = "cpu:7";
  EXPECT_NE(validation_error(plan, g, same).find("device 'cpu:7' is not on this platform"), std::string::npos)
      << validation_error(plan, g, same);
}

TEST(ValidatePlan, RefusesANodeBeforeItsProducerInOneLaunch) {
  Graph g = diamond();
  Platform p = two_cpus();
  Plan plan = empty_plan(g, p);
  plan.lanes = {Lane{0, 0, {launch_step({g.find_node("b"), g.find_node("a"), g.find_node("c"), g.find_node("d")})}}};
  std::string message = validation_error(plan, g, p);
  EXPECT_NE(message.find("Sigmoid 'b' reads 'a' before Relu 'a' produces it in the same launch"), std::string::npos)
      << message;
}

// ---------------------------------------------------------------- builder

TEST(BuildPlan, RoundRobinOnTwoDevicesSynchronisesTheBranches) {
  Graph g = diamond();
  Platform p = two_cpus();
  Plan plan = schedule("round-robin", g, p);
  EXPECT_EQ(validation_error(plan, g, p), "");
  EXPECT_EQ(devices_used(plan), (std::set<int>{0, 1}));
  EXPECT_EQ(plan.devices, (std::vector<std::string>{"cpu:0", "cpu:1"}));
  EXPECT_EQ(plan.model, "test:diamond");
  EXPECT_EQ(plan.model_hash, graph_fingerprint(g));
  EXPECT_EQ(plan.platform_signature, p.signature());
  EXPECT_EQ(plan.n_launches(), 4);
  EXPECT_EQ(plan.n_copies(), 0);  // one memory space
  // a on cpu:0, b on cpu:1 (waits for a), c on cpu:0, d on cpu:1 (waits for c).
  EXPECT_EQ(plan.n_events, 2);
  EXPECT_EQ(count_kind(plan, StepKind::kWait), 2);
  for (const Placement& pl : plan.placement) EXPECT_EQ(pl.reason, "round-robin");
  EXPECT_EQ(plan.placement[g.find_node("b")].device, 1);
}

TEST(BuildPlan, CopiesValuesIntoAnotherMemorySpaceAndOutputsBackToHost) {
  Graph g = diamond();
  Platform p = cpu_and_npu();
  // a on the NPU (needs x copied in), b and c on its two streams, d on the CPU.
  NodeId a = g.find_node("a"), b = g.find_node("b"), c = g.find_node("c"), d = g.find_node("d");
  Plan plan = build_plan(g, p,
                         {{{a}, 1, 0, "npu"}, {{b}, 1, 1, "npu stream 1"}, {{c}, 1, 0, "npu"}, {{d}, 0, 0, "cpu"}},
                         "test");
  EXPECT_EQ(validation_error(plan, g, p), "");
  std::set<std::string> copies;
  for (const Lane& lane : plan.lanes)
    for (const PlanStep& s : lane.steps)
      if (s.kind == StepKind::kCopy)
        copies.insert(g.values[s.value].name + ":" + s.from_space + "->" + s.to_space);
  EXPECT_EQ(copies, (std::set<std::string>{"x:host->npu", "b:npu->host", "c:npu->host"}));
  EXPECT_EQ(plan.placement[b].reason, "npu stream 1");
  EXPECT_EQ(plan.placement[b].lane, 1);

  // d alone on the NPU's memory: y must come back to host.
  Graph single;
  ValueId x = add_float_value(single, "x"), y = add_float_value(single, "y");
  add_op(single, "Relu", "r", {x}, {y});
  single.inputs = {x};
  single.outputs = {y};
  single.finalize();
  Plan on_npu = build_plan(single, p, {{{0}, 1, 0, "npu"}}, "test");
  EXPECT_EQ(on_npu.n_copies(), 2);
  EXPECT_EQ(on_npu.lanes[0].steps.back().kind, StepKind::kCopy);
  EXPECT_EQ(on_npu.lanes[0].steps.back().to_space, kHostMemory);
}

// The lane each copy is on, as "value:from->to@device/stream".
std::set<std::string> copies_by_lane(const Plan& plan, const Graph& g) {
  std::set<std::string> copies;
  for (const Lane& lane : plan.lanes)
    for (const PlanStep& s : lane.steps)
      if (s.kind == StepKind::kCopy)
        copies.insert(fmt::format("{}:{}->{}@{}/{}", g.values[s.value].name, s.from_space, s.to_space,
                                  plan.devices[lane.device], lane.stream));
  return copies;
}

TEST(BuildPlan, PushesAndPullsCopiesOnAStreamOfTheLaunchsDevice) {
  Graph g = diamond();
  Platform p = cpu_and_npu();
  NodeId a = g.find_node("a"), b = g.find_node("b"), c = g.find_node("c"), d = g.find_node("d");

  // a on the NPU pushes its output out on stream 1; the CPU only waits.
  LaunchAssignment on_npu{{a}, 1, 0, "npu"};
  on_npu.push_stream = 1;
  Plan pushed = build_plan(g, p, {on_npu, {{b}, 0, 0, "cpu"}, {{c}, 0, 0, "cpu"}, {{d}, 0, 0, "cpu"}}, "test");
  EXPECT_EQ(validation_error(pushed, g, p), "");
  EXPECT_EQ(copies_by_lane(pushed, g), (std::set<std::string>{"x:host->npu@emu:npu/0", "a:npu->host@emu:npu/1"}));

  // b on the NPU pulls its input in on stream 1 (c, on stream 0 after it,
  // finds it there); d's inputs come back on the CPU's lane as by default.
  LaunchAssignment pulling{{b}, 1, 0, "npu"};
  pulling.pull_stream = 1;
  Plan pulled = build_plan(g, p, {{{a}, 0, 0, "cpu"}, pulling, {{c}, 1, 0, "npu"}, {{d}, 0, 0, "cpu"}}, "test");
  EXPECT_EQ(validation_error(pulled, g, p), "");
  EXPECT_EQ(copies_by_lane(pulled, g), (std::set<std::string>{"a:host->npu@emu:npu/1", "b:npu->host@cpu:0/0",
                                                              "c:npu->host@cpu:0/0"}));

  // Spread over the NPU's streams in turn: b and c, both read on the CPU,
  // leave on streams 1 and 0.
  LaunchAssignment spreading{{a, b, c}, 1, 0, "npu"};
  spreading.push_stream = 1;
  spreading.push_spread = true;
  Plan spread = build_plan(g, p, {spreading, {{d}, 0, 0, "cpu"}}, "test");
  EXPECT_EQ(validation_error(spread, g, p), "");
  EXPECT_EQ(copies_by_lane(spread, g), (std::set<std::string>{"x:host->npu@emu:npu/0", "b:npu->host@emu:npu/1",
                                                              "c:npu->host@emu:npu/0"}));

  // b and c leave on the push stream; the CPU launch's push, with nothing
  // to copy (its output is read nowhere else and is in host memory), opens
  // no lane.
  LaunchAssignment all_on_npu{{a, b, c}, 1, 0, "npu"};
  all_on_npu.push_stream = 1;
  LaunchAssignment on_cpu{{d}, 0, 0, "cpu"};
  on_cpu.push_stream = 0;
  Plan quiet = build_plan(g, p, {all_on_npu, on_cpu}, "test");
  EXPECT_EQ(validation_error(quiet, g, p), "");
  EXPECT_EQ(quiet.lanes.size(), 3u);  // npu 0, npu 1 (its copies), cpu 0

  LaunchAssignment out_of_range{{a, b, c, d}, 0, 0, "cpu"};
  out_of_range.push_stream = 1;  // the CPU has one stream
  try {
    build_plan(g, p, {out_of_range}, "test");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUsage);
    EXPECT_NE(std::string(e.what()).find("push_stream 1 is out of range"), std::string::npos) << e.what();
  }
}

TEST(BuildPlan, MovesValuesBetweenSpacesOverHostWithoutADirectLink) {
  Graph g = diamond();
  Platform p = two_islands();
  Plan plan = schedule("round-robin", g, p);  // a on npu, b on gpu: a goes npu -> host -> gpu
  EXPECT_EQ(validation_error(plan, g, p), "");
  int hops = 0;
  for (const Lane& lane : plan.lanes)
    for (const PlanStep& s : lane.steps)
      if (s.kind == StepKind::kCopy && g.values[s.value].name == "a") ++hops;
  EXPECT_EQ(hops, 2);
}

TEST(BuildPlan, WaitsOncePerLaneAndEvent) {
  const Graph& g = squeezenet();
  Platform p = two_cpus();
  Plan plan = schedule("round-robin", g, p);
  EXPECT_EQ(validation_error(plan, g, p), "");
  for (const Lane& lane : plan.lanes) {
    std::set<int> waited;
    for (const PlanStep& s : lane.steps)
      if (s.kind == StepKind::kWait) {
        EXPECT_TRUE(waited.insert(s.event).second) << "e" << s.event << " waited twice";
      }
  }
}

TEST(BuildPlan, RefusesAnOrderThatIsNotTopological) {
  Graph g = diamond();
  Platform p = two_cpus();
  NodeId a = g.find_node("a"), b = g.find_node("b"), c = g.find_node("c"), d = g.find_node("d");
  std::string message =
      error_of([&] { build_plan(g, p, {{{b}, 0, 0, ""}, {{a}, 0, 0, ""}, {{c}, 0, 0, ""}, {{d}, 0, 0, ""}}, "t"); },
               ErrorCode::kUsage);
  EXPECT_NE(message.find("comes before launch 1, which produces its input 'a'"), std::string::npos) << message;
  message = error_of([&] { build_plan(g, p, {{{a}, 0, 0, ""}, {{b, c}, 0, 0, ""}}, "t"); }, ErrorCode::kUsage);
  EXPECT_NE(message.find("Add 'd' is in no launch"), std::string::npos) << message;
  message = error_of([&] { build_plan(g, cpu_and_npu(), {{{a, b, c, d}, 1, 0, ""}}, "t"); }, ErrorCode::kUsage);
  EXPECT_NE(message.find("emu:npu does not run Add 'd'"), std::string::npos) << message;
}

// Launches on overlapping devices in a plan, each as (lane, step): every
// pair of them must be ordered by the plan's events and lanes. Computed here
// by brute force over the happens-before graph, independently of the
// validator's vector clocks.
std::vector<std::string> unordered_overlapping_launches(const Plan& plan, const Platform& p) {
  std::vector<std::pair<int, int>> steps;
  std::map<std::pair<int, int>, int> index;
  for (size_t l = 0; l < plan.lanes.size(); ++l)
    for (size_t s = 0; s < plan.lanes[l].steps.size(); ++s) {
      index[{static_cast<int>(l), static_cast<int>(s)}] = static_cast<int>(steps.size());
      steps.emplace_back(static_cast<int>(l), static_cast<int>(s));
    }
  size_t n = steps.size();
  std::vector<std::vector<char>> before(n, std::vector<char>(n, 0));  // before[a][b]: a finishes before b starts
  std::map<int, int> record_of;
  for (size_t i = 0; i < n; ++i) {
    const PlanStep& st = plan.lanes[steps[i].first].steps[steps[i].second];
    if (st.kind == StepKind::kRecord) record_of[st.event] = static_cast<int>(i);
  }
  for (size_t i = 0; i < n; ++i) {
    auto [l, s] = steps[i];
    if (s > 0) before[index[{l, s - 1}]][i] = 1;
    const PlanStep& st = plan.lanes[l].steps[s];
    if (st.kind == StepKind::kWait) before[record_of.at(st.event)][i] = 1;
  }
  for (size_t k = 0; k < n; ++k)
    for (size_t i = 0; i < n; ++i)
      if (before[i][k])
        for (size_t j = 0; j < n; ++j)
          if (before[k][j]) before[i][j] = 1;
  std::vector<std::string> unordered;
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i + 1; j < n; ++j) {
      auto [li, si] = steps[i];
      auto [lj, sj] = steps[j];
      if (plan.lanes[li].steps[si].kind != StepKind::kLaunch || plan.lanes[lj].steps[sj].kind != StepKind::kLaunch)
        continue;
      int di = p.find_device(plan.devices[plan.lanes[li].device]);
      int dj = p.find_device(plan.devices[plan.lanes[lj].device]);
      if (p.overlapping(di, dj) && !before[i][j] && !before[j][i])
        unordered.push_back(fmt::format("lane {} step {} / lane {} step {}", li, si, lj, sj));
    }
  return unordered;
}

// Same devices, but as if nothing overlapped: build_plan adds no exclusion.
Platform without_overlaps(Platform p) {
  for (PlatformDevice& d : p.devices) d.overlaps.clear();
  return p;
}

TEST(BuildPlan, OrdersLaunchesOnOverlappingDevices) {
  Graph g = diamond();
  Platform p = two_cpus_and_union();
  NodeId a = g.find_node("a"), b = g.find_node("b"), c = g.find_node("c"), d = g.find_node("d");
  // a on cpu:0; b on cpu:1 and c on the union read only a: nothing in the
  // data orders b and c, but they share core 1. d on cpu:0.
  std::vector<LaunchAssignment> launches = {{{a}, 0, 0, ""}, {{b}, 1, 0, ""}, {{c}, 2, 0, ""}, {{d}, 0, 0, ""}};
  Plan plan = build_plan(g, p, launches, "t");
  EXPECT_EQ(validation_error(plan, g, p), "");
  EXPECT_EQ(unordered_overlapping_launches(plan, p), std::vector<std::string>{});
  // In the order given: c (the union) after b, d (cpu:0) after c.
  Plan unordered = build_plan(g, without_overlaps(p), launches, "t");
  EXPECT_NE(unordered_overlapping_launches(unordered, p), std::vector<std::string>{});

  // Random placements over the three devices of a zoo model: always ordered.
  const Graph& sq = squeezenet();
  for (uint64_t seed : {1, 2, 3}) {
    Plan random = schedule("random", sq, p, seed);
    EXPECT_EQ(validation_error(random, sq, p), "") << "seed " << seed;
    EXPECT_EQ(devices_used(random).size(), 3u) << "seed " << seed;
    EXPECT_EQ(unordered_overlapping_launches(random, p), std::vector<std::string>{}) << "seed " << seed;
  }
}

TEST(ValidatePlan, RefusesLaunchesOnOverlappingDevicesNotOrderedByEvents) {
  Graph g = diamond();
  Platform p = two_cpus_and_union();
  NodeId a = g.find_node("a"), b = g.find_node("b"), c = g.find_node("c"), d = g.find_node("d");
  std::vector<LaunchAssignment> launches = {{{a}, 0, 0, ""}, {{b}, 1, 0, ""}, {{c}, 2, 0, ""}, {{d}, 0, 0, ""}};
  // Valid as far as data goes, but b (cpu:1) and c (cpu:0-1) may run at once.
  Plan plan = build_plan(g, without_overlaps(p), launches, "t");
  EXPECT_EQ(validation_error(plan, g, without_overlaps(p)), "");
  std::string message = validation_error(plan, g, p);
  EXPECT_NE(message.find("may run at once on overlapping devices"), std::string::npos) << message;
  EXPECT_NE(message.find("(cpu:1 stream 0)"), std::string::npos) << message;
  EXPECT_NE(message.find("(cpu:0-1 stream 0)"), std::string::npos) << message;
  // Disjoint devices need no order: cpu:0 and cpu:1 alone.
  Plan narrow = build_plan(g, p, {{{a}, 0, 0, ""}, {{b}, 1, 0, ""}, {{c}, 0, 0, ""}, {{d}, 1, 0, ""}}, "t");
  EXPECT_EQ(validation_error(narrow, g, p), "");
  EXPECT_EQ(count_kind(narrow, StepKind::kWait),
            count_kind(build_plan(g, two_cpus(), {{{a}, 0, 0, ""}, {{b}, 1, 0, ""}, {{c}, 0, 0, ""}, {{d}, 1, 0, ""}},
                                  "t"),
                       StepKind::kWait));
}

TEST(FusionUnits, CoverEveryNodeOnceAndGroupConvWithItsActivation) {
  const Graph& g = squeezenet();
  auto units = fusion_units(g);
  std::vector<int> seen(g.nodes.size(), 0);
  bool conv_relu = false;
  for (const auto& unit : units) {
    for (NodeId id : unit) ++seen[id];
    if (unit.size() == 2 && g.nodes[unit[0]].op_type == "Conv" && g.nodes[unit[1]].op_type == "Relu") conv_relu = true;
  }
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], 1) << g.nodes[i].label();
  EXPECT_TRUE(conv_relu);
  EXPECT_LT(units.size(), g.nodes.size());
}

// ---------------------------------------------------------------- schedulers

TEST(SchedulerRegistry, ListsSchedulersAndRefusesUnknownNames) {
  auto names = scheduler_names();
  for (const char* name : {"sequential", "round-robin", "random"}) EXPECT_EQ(names.count(name), 1u) << name;
  std::string message = error_of([] { make_scheduler("fastest"); }, ErrorCode::kUsage);
  EXPECT_NE(message.find("unknown scheduler 'fastest' (known: "), std::string::npos) << message;
  EXPECT_NE(message.find("random, round-robin"), std::string::npos) << message;
}

TEST(SequentialScheduler, PicksTheFastestDeviceAndSaysWhy) {
  Graph g = diamond();
  Platform p = two_cpus();
  FixedCostModel cost({{"cpu:0", 2.0}, {"cpu:1", 1.0}});
  Plan plan = make_scheduler("sequential")->schedule(g, p, cost, {});
  EXPECT_EQ(validation_error(plan, g, p), "");
  ASSERT_EQ(plan.lanes.size(), 1u);
  EXPECT_EQ(plan.lanes[0].device, 1);
  EXPECT_EQ(plan.n_launches(), 4);
  EXPECT_DOUBLE_EQ(plan.predicted_ms, 0.04);
  EXPECT_EQ(plan.placement[0].reason, "sequential on cpu:1: fastest single device (0.04 ms predicted; cpu:0 0.08 ms)");

  Plan tie = make_scheduler("sequential")->schedule(g, p, FixedCostModel(), {});
  EXPECT_EQ(tie.lanes[0].device, 0);

  // The NPU runs no Add: never a candidate, even when faster.
  Plan only = make_scheduler("sequential")->schedule(g, cpu_and_npu(), FixedCostModel({{"emu:npu", 0.1}}), {});
  EXPECT_EQ(only.lanes[0].device, 0);
  ASSERT_EQ(only.notes.size(), 1u);
  EXPECT_NE(only.notes[0].find("emu:npu not considered"), std::string::npos);
  EXPECT_EQ(only.placement[0].reason, "sequential on cpu:0: the only device running every op (0.04 ms predicted)");
}

TEST(SequentialScheduler, TakesTheDeviceParameter) {
  Graph g = diamond();
  Platform p = two_cpus();
  Plan plan = schedule("sequential", g, p, 0, {{"device", "cpu:1"}});
  EXPECT_EQ(plan.lanes[0].device, 1);
  EXPECT_NE(plan.placement[0].reason.find("sequential on cpu:1: device given"), std::string::npos);
  std::string message = error_of([&] { schedule("sequential", g, p, 0, {{"device", "cpu:5"}}); }, ErrorCode::kUsage);
  EXPECT_NE(message.find("cpu:5"), std::string::npos) << message;
  error_of([&] { schedule("sequential", g, p, 0, {{"speed", "max"}}); }, ErrorCode::kUsage);
  error_of([&] { schedule("sequential", g, cpu_and_npu(), 0, {{"device", "emu:npu"}}); }, ErrorCode::kUsage);
}

// No device runs the whole graph: the error names each device's first node
// it refuses, and why.
TEST(SequentialScheduler, NamesWhatEachDeviceRefusesWhenNoneRunsTheGraph) {
  Graph g = diamond();
  Platform p = cpu_and_npu();
  p.devices.erase(p.devices.begin());  // the NPU alone: it runs no Add
  const std::string want = "emu:npu does not run Add 'd' (it runs only Relu, Sigmoid, Tanh, Conv, Concat)";
  for (const char* scheduler : {"sequential", "opara"}) {
    std::string message = error_of([&] { schedule(scheduler, g, p); }, ErrorCode::kUnsupported);
    EXPECT_NE(message.find(want), std::string::npos) << message;
  }
  EXPECT_EQ(p.devices[0].first_refusal(g), want);
  EXPECT_EQ(cpu_and_npu().devices[0].first_refusal(g), "") << "the CPU runs it all";
}

TEST(RoundRobinScheduler, SkipsDevicesThatDoNotRunAUnit) {
  Graph g = diamond();
  Platform p = cpu_and_npu();
  Plan plan = schedule("round-robin", g, p);
  EXPECT_EQ(validation_error(plan, g, p), "");
  // a -> cpu, b -> npu, c -> cpu, d (Add) -> npu lacks Add -> cpu.
  EXPECT_EQ(plan.placement[g.find_node("b")].device, 1);
  EXPECT_EQ(plan.placement[g.find_node("d")].device, 0);
  for (const Lane& lane : plan.lanes) EXPECT_EQ(lane.stream, 0);
}

TEST(RandomScheduler, ManySeedsGiveValidPlans) {
  const Graph& zoo = squeezenet();
  Graph small = diamond();
  std::set<std::string> distinct;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    for (const Platform& p : {cpu_and_npu(), two_islands()}) {
      Plan plan = schedule("random", small, p, seed);
      EXPECT_EQ(validation_error(plan, small, p), "") << "seed " << seed << " on " << p.name;
      distinct.insert(plan_to_json(plan, small));
    }
    if (seed % 4 == 0) {
      Platform p = two_islands();
      Plan plan = schedule("random", zoo, p, seed);
      EXPECT_EQ(validation_error(plan, zoo, p), "") << "seed " << seed;
      EXPECT_EQ(plan.placement[0].reason, "random (seed " + std::to_string(seed) + ")");
    }
  }
  EXPECT_GT(distinct.size(), 10u);
  Platform p = two_islands();
  EXPECT_EQ(plan_to_json(schedule("random", small, p, 9), small), plan_to_json(schedule("random", small, p, 9), small));
}

// ---------------------------------------------------------------- memory plan

TEST(PlanMemory, CountsLaneLocalAndCrossingValues) {
  Graph g = diamond();
  Platform p = two_cpus();
  NodeId a = g.find_node("a"), b = g.find_node("b"), c = g.find_node("c"), d = g.find_node("d");
  // Lane 0: a, b, d; lane 1: c. 'a' and 'c' cross lanes, 'b' stays, 'y' is an output.
  Plan plan = build_plan(g, p, {{{a}, 0, 0, ""}, {{b}, 0, 0, ""}, {{c}, 1, 0, ""}, {{d}, 0, 0, ""}}, "t");
  MemoryPlan memory = plan_memory(plan, g, p);
  ASSERT_EQ(memory.spaces.size(), 1u);
  EXPECT_EQ(memory.spaces[0].name, "host");
  EXPECT_EQ(memory.spaces[0].n_values, 3);  // a, c, y
  EXPECT_EQ(memory.spaces[0].bytes, 3 * 8 * 4);
  EXPECT_EQ(memory.lane_local, (std::vector<int>{1, 0}));  // b

  Platform q = cpu_and_npu();
  Plan split = build_plan(g, q, {{{a}, 1, 0, ""}, {{b}, 1, 0, ""}, {{c}, 1, 1, ""}, {{d}, 0, 0, ""}}, "t");
  MemoryPlan spread = plan_memory(split, g, q);
  ASSERT_EQ(spread.spaces.size(), 2u);
  EXPECT_EQ(spread.spaces[1].name, "npu");
  EXPECT_EQ(spread.spaces[1].n_values, 4);  // x copied in, a (two lanes), b and c (copied out)
  EXPECT_EQ(spread.spaces[0].n_values, 3);  // b, c and y
}

// ---------------------------------------------------------------- CLI

using hetsched::testing::CliResult;
using hetsched::testing::run_cli;

// Emulated devices only: nothing to calibrate. The accelerator has its own
// memory, so plans using it need copies.
constexpr const char* kCliPlatform = R"({
  "name": "plan-test",
  "devices": [
    {"name": "host", "kind": "cpu", "streams": 1, "peak_gflops": 10, "bandwidth_gbps": 10, "launch_overhead_us": 2},
    {"name": "acc", "kind": "gpu", "memory_space": "acc-mem", "streams": 2, "peak_gflops": 100,
     "bandwidth_gbps": 50, "launch_overhead_us": 5}
  ],
  "links": [{"from": "host", "to": "acc-mem", "latency_us": 5, "bandwidth_gbps": 8, "bidirectional": true}]
})";

class PlanCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::temp_dir(std::string("plancli_") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    platform_ = (dir_ / "platform.json").string();
    std::ofstream(platform_) << kCliPlatform;
    db_ = (dir_ / "profile.db").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string plan_path(const std::string& name) const { return (dir_ / name).string(); }
  std::filesystem::path dir_;
  std::string platform_, db_;
};

TEST_F(PlanCli, WritesAValidPlanAndExplainsIt) {
  std::string out = plan_path("random.json");
  CliResult planned = run_cli("plan zoo:squeezenet1_0 --platform " + platform_ + " --db " + db_ +
                              " --scheduler random --seed 4 -o " + out);
  ASSERT_EQ(planned.exit_code, 0) << planned.output;
  EXPECT_NE(planned.output.find("plan 'random' for zoo:squeezenet1_0: "), std::string::npos) << planned.output;
  EXPECT_NE(planned.output.find(" launches, "), std::string::npos) << planned.output;

  const Graph& g = squeezenet();
  Plan plan = read_plan_file(out, g);
  EXPECT_EQ(plan.scheduler, "random");
  EXPECT_EQ(plan.placement[0].reason, "random (seed 4)");
  EXPECT_EQ(validation_error(plan, g, make_platform("", platform_)), "");
  ASSERT_GT(plan.n_copies(), 0);

  // The model comes from the plan; the devices too.
  CliResult explained = run_cli("explain " + out + " --platform " + platform_ + " --db " + db_);
  ASSERT_EQ(explained.exit_code, 0) << explained.output;
  // Emulated devices only: every launch estimate is the roofline, every copy a link's.
  for (const char* part : {"plan 'random' for zoo:squeezenet1_0", "devices:", "lane 0:", "launch", "copy",
                           "acc-mem", "features.0/conv", "random (seed 4)", "memory:", "lane-local values",
                           " ms roofline", " ms link", "estimates by source: link "})
    EXPECT_NE(explained.output.find(part), std::string::npos) << part << " missing in:\n" << explained.output;
}

TEST_F(PlanCli, SequentialTakesSchedulerParametersAndPredicts) {
  std::string out = plan_path("seq.json");
  CliResult r = run_cli("plan zoo:squeezenet1_0 --platform " + platform_ + " --db " + db_ +
                        " --sched-param device=emu:host -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("on 1 device (emu:host); predicted "), std::string::npos) << r.output;
  Plan plan = read_plan_file(out, squeezenet());
  EXPECT_GT(plan.predicted_ms, 0);
  EXPECT_EQ(plan.n_copies(), 0);
}

TEST_F(PlanCli, ErrorsExitWithTheirCodes) {
  std::string common = " --platform " + platform_ + " --db " + db_;
  CliResult unknown = run_cli("plan zoo:squeezenet1_0 --scheduler fastest -o " + plan_path("x.json") + common);
  EXPECT_EQ(unknown.exit_code, 2) << unknown.output;
  EXPECT_NE(unknown.output.find("unknown scheduler 'fastest' (known: "), std::string::npos) << unknown.output;
  CliResult bad_param = run_cli("plan zoo:squeezenet1_0 --sched-param oops -o " + plan_path("x.json") + common);
  EXPECT_EQ(bad_param.exit_code, 2) << bad_param.output;

  std::string out = plan_path("rr.json");
  ASSERT_EQ(run_cli("plan zoo:squeezenet1_0 --scheduler round-robin -o " + out + common).exit_code, 0);
  CliResult other_model = run_cli("explain " + out + " zoo:googlenet --platform " + platform_);
  EXPECT_EQ(other_model.exit_code, 1) << other_model.output;
  EXPECT_NE(other_model.output.find("field 'model_hash'"), std::string::npos) << other_model.output;
  CliResult no_platform = run_cli("explain " + out);
  EXPECT_EQ(no_platform.exit_code, 2) << no_platform.output;
  EXPECT_NE(no_platform.output.find("--platform"), std::string::npos) << no_platform.output;
}

}  // namespace
}  // namespace hetsched
