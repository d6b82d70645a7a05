#include "hetsched/session.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <list>
#include <mutex>
#include <random>
#include <sstream>

#include <fmt/format.h>

#include "hetsched/choose.h"
#include "hetsched/device.h"
#include "hetsched/profile.h"
#include "hetsched/scheduler.h"
#include "hetsched/throughput.h"
#include "core/half.h"
#include "plan/plan_builder.h"
#include "profile/profile_db.h"
#include "sched/auto.h"
#include "runtime/executor.h"
#include "runtime/request_pool.h"
#include "graph/onnx_import.h"
#include "graph/specialize.h"
#include "graph/stages.h"
#include "kernels/kernel.h"
#include "zoo/zoo.h"

namespace hetsched {

namespace fs = std::filesystem;

namespace {

constexpr const char* kZooPrefix = "zoo:";

bool is_zoo(const std::string& model) { return model.rfind(kZooPrefix, 0) == 0; }

// The inputs' shapes in graph.inputs order (every input given).
ShapeSignature input_shapes(const Graph& graph, const TensorMap& inputs) {
  ShapeSignature shapes;
  for (ValueId id : graph.inputs) shapes.push_back(inputs.at(graph.values[id].name).shape());
  return shapes;
}

// Prefixes an error with the model's name unless it already names it.
[[noreturn]] void rethrow_with_source(const Error& e, const std::string& source) {
  std::string msg = e.what();
  if (msg.rfind(source, 0) == 0) throw e;
  throw Error(e.code(), source + ": " + msg);
}

onnx::ModelProto model_proto(const std::string& model, const LoadOptions& options, fs::path* model_dir) {
  if (is_zoo(model)) {
    *model_dir = fs::current_path();
    return zoo::build_zoo_model(model.substr(std::string(kZooPrefix).size()), options.zoo_params);
  }
  if (!options.zoo_params.empty())
    throw Error(ErrorCode::kUsage, "zoo parameters are only accepted for zoo: models");
  *model_dir = fs::path(model).parent_path();
  return read_model_proto(model);
}

}  // namespace

Graph load_model(const std::string& model, const LoadOptions& options) {
  try {
    fs::path model_dir;
    onnx::ModelProto proto = model_proto(model, options, &model_dir);
    Graph graph = import_model(std::move(proto), model_dir, options);
    graph.source = model;
    if (options.optimize) propagate_and_fold(graph);
    graph.annotate_costs();
    return graph;
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kUsage) throw;
    rethrow_with_source(e, model);
  }
}

std::string model_to_onnx_bytes(const std::string& model, const LoadOptions& options) {
  try {
    fs::path model_dir;
    onnx::ModelProto proto = model_proto(model, options, &model_dir);
    import_model(proto, model_dir, options);  // the same checks as a load
    std::string bytes;
    if (!proto.SerializeToString(&bytes)) throw Error(ErrorCode::kRuntime, "cannot serialise the model");
    return bytes;
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kUsage) throw;
    rethrow_with_source(e, model);
  }
}

std::pair<std::string, Shape> parse_shape_override(const std::string& text) {
  auto eq = text.find('=');
  auto bad = [&] {
    return Error(ErrorCode::kUsage,
                 fmt::format("--shape '{}': expected NAME=DIMS with DIMS like 1x3x224x224", text));
  };
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) throw bad();
  Shape shape;
  std::stringstream dims(text.substr(eq + 1));
  std::string dim;
  while (std::getline(dims, dim, 'x')) {
    if (dim.empty() || dim.find_first_not_of("0123456789") != std::string::npos) throw bad();
    shape.push_back(std::stoll(dim));
  }
  return {text.substr(0, eq), shape};
}

// A session running auto's choice as the profile database kept it, checking
// that it still runs as fast as when it was measured: its first runs are
// left to warm up, the next kJudged give their median, and a median more
// than kSlower times the kept time forgets the choice in the database (a
// choice measured while another process held a core, say, or on a machine
// that changed since). The session keeps running it; the next session
// measures again.
struct KeptChoiceCheck {
  static constexpr int kWarmRuns = 3;
  static constexpr size_t kJudged = 7;
  static constexpr double kSlower = 1.3;
  std::string key, db_path;
  double measured_ms = 0;
  std::mutex mutex;
  int n_runs = 0;
  std::vector<double> times_ms;
  std::string verdict;  // a warning once the choice was forgotten

  void observe(double ms) {
    std::lock_guard lock(mutex);
    if (++n_runs <= kWarmRuns || times_ms.size() >= kJudged) return;
    times_ms.push_back(ms);
    if (times_ms.size() < kJudged) return;
    double median = percentile(times_ms, 50);
    if (median <= kSlower * measured_ms) return;
    std::string outcome = "forgotten in the profile database, the next session measures again";
    try {
      ProfileDB(db_path).delete_choice(key);
    } catch (const Error& e) {
      outcome = fmt::format("it could not be forgotten in the profile database: {}", e.what());
    }
    verdict = fmt::format("auto's kept choice ran {:.3f} ms here (median of {} runs), {:.3f} ms when it was measured: "
                          "{}",
                          median, kJudged, measured_ms, outcome);
  }
};

// A graph compiled for the session's devices: the loaded graph, or with free
// dims one specialization of it.
struct Session::Backend {
  std::shared_ptr<const Graph> graph;  // compiled programs point into it
  ExecutionSummary summary;  // on reference kernels, or before a free-dim session's first run
  std::string choice;  // ExecutionSummary::choice
  std::shared_ptr<KeptChoiceCheck> kept;  // auto's choice as kept in the profile database; null otherwise
  std::vector<std::string> warnings;  // ExecutionSummary::warnings
  Platform platform;
  // The workers; null: reference kernels. One worker in latency mode
  // (auto's comes from its measured choice), the flow's in throughput mode.
  std::shared_ptr<RequestPool> pool;
  std::string flow;                // ExecutionSummary::flow
  std::vector<FlowOutcome> flows;  // ExecutionSummary::flows
  // Shapes that depend on data (graph/stages.h): the head compiled as a
  // backend of its own (null when empty), the barriers a graph the reference
  // kernels run, the tail a session of its own, compiled per its inputs'
  // shapes (null when empty).
  struct Staged {
    StageCut cut;
    std::shared_ptr<Backend> head;
    Graph barriers;
    std::unique_ptr<Session> tail;
  };
  std::shared_ptr<Staged> staged;

  // The backend whose plan and workers the session shows: the head's when
  // staged.
  const Backend& shown() const { return staged && staged->head ? *staged->head : *this; }
};

// What a session keeps: its options, and either the one backend of a graph
// with static inputs (or of the reference kernels) or, with free dims, the
// backends of the input shapes seen, most recently used first.
struct Session::State {
  SessionOptions options;
  Platform platform;  // the devices as given, before pins
  std::shared_ptr<Backend> fixed;
  std::mutex mutex;          // guards `shapes` and `stats`
  std::mutex compile_mutex;  // one compile at a time: a shape is compiled once
  std::list<std::pair<ShapeSignature, std::shared_ptr<Backend>>> shapes;
  ShapeSpecializations stats;
};

namespace {

// One real device and nothing to choose: sequential, or auto on one CPU
// device (a GPU's streams are lanes auto may spread a graph over).
bool one_device_to_run(const Platform& platform, const SessionOptions& options) {
  if (platform.devices.size() != 1 || platform.has_emulated()) return false;
  return options.scheduler == "sequential" ||
         (options.scheduler == "auto" && platform.devices[0].kind == DeviceKind::kCpu);
}

// The plan a session runs: a plan file, the trivial one-device plan, or the
// scheduler's (which needs the cost model).
Plan session_plan(const Graph& graph, Platform& platform, const SessionOptions& options,
                  std::shared_ptr<const CostModel>& cost, std::vector<std::string>* warnings) {
  if (!options.plan.empty()) return read_plan_file(options.plan, graph);
  if (one_device_to_run(platform, options))
    return one_device_plan(graph, platform, 0, options.scheduler, "the only device");
  auto scheduler = make_scheduler(options.scheduler);
  if (!cost) cost = open_cost_model(platform, options.profile_db, warnings);
  return scheduler->schedule(graph, platform, *cost, ScheduleOptions{});
}

// A latency session's workers: its executor alone.
std::shared_ptr<RequestPool> one_worker_pool(std::shared_ptr<Executor> executor, const Platform& platform) {
  std::string device = executor->summary().device;
  return std::make_shared<RequestPool>(std::vector<RequestPool::Worker>{
      {device, std::move(executor), std::make_shared<const Platform>(platform)}});
}

// The key a choice by measurement is kept under in the profile database
// (ProfileDB::choice): the graph's structure (not its weights), the devices
// with their signatures (CPU model, cores, library versions) and the options
// that change the candidates or how they run.
std::string choice_key(const Graph& graph, const Platform& platform, const SessionOptions& options) {
  return fmt::format("auto latency|graph {}|platform {}|pins {}|cuda graph {}", graph_fingerprint(graph),
                     platform.signature(), fmt::join(options.pins, ","), static_cast<int>(options.cuda_graph));
}

// Whether profiling measured something now (the database lacked it or no
// longer trusted it): the predictions a kept choice rested on have changed.
bool measured_anything(const ModelProfile& profile) {
  if (profile.report.n_links_measured > 0) return true;
  for (const DeviceCalibration& c : profile.calibration)
    if (!c.from_database) return true;
  for (const ProfileReport::Device& d : profile.report.devices)
    if (d.n_measured > 0 || d.n_corun_measured > 0) return true;
  return false;
}

// `auto` on real devices, measured before it is trusted (choose.h): its
// plan and two runners-up, made on the platform with one more device on all
// the cores of its CPU core groups (serial stretches may run wide, branches
// on the groups), against each device of that platform alone; first, what
// the profile database lacks or no longer trusts is profiled. The choice is
// kept in the profile database: a later session of the same graph, devices
// and options runs it without measuring again, unless profiling measured
// something anew or `options.remeasure`. `platform` becomes the winner's;
// returns the choice, whose executor the session runs.
MeasuredChoice settle_auto_by_measurement(const Graph& graph, Platform& platform,
                                          const SessionOptions& options, std::vector<std::string>* warnings,
                                          std::shared_ptr<KeptChoiceCheck>* kept_check) {
  Platform wide = platform_with_cpu_union(platform);
  bool profile_changed = false;
  if (options.profile_first) {
    ProfileOptions profile;
    profile.progress = options.progress;
    ModelProfile done = profile_model(graph, wide, options.profile_db, profile);
    for (const std::string& line : profile_load_warnings(done.report, true)) warnings->push_back("profile: " + line);
    profile_changed = measured_anything(done);
  }
  std::shared_ptr<const CostModel> cost = open_cost_model(wide, options.profile_db, warnings);
  auto on = std::make_shared<const Platform>(wide);
  const std::string db_path = options.profile_db.empty() ? ProfileDB::default_path() : options.profile_db;
  ProfileDB db(db_path);
  std::string key = choice_key(graph, wide, options);
  if (!options.remeasure && !profile_changed) {
    if (std::optional<StoredChoice> kept = db.choice(key)) {
      try {
        MeasuredChoice choice;
        choice.executor =
            std::make_shared<Executor>(graph, plan_from_json(kept->plan, graph, "the profile database's choice"),
                                       wide, cost, options.cuda_graph);
        choice.reason = fmt::format("auto: {} (measured at {}, kept in the profile database; remeasure to measure "
                                    "again)",
                                    kept->reason, kept->measured_at);
        if (kept->measured_ms > 0) {
          *kept_check = std::make_shared<KeptChoiceCheck>();
          (*kept_check)->key = key;
          (*kept_check)->db_path = db_path;
          (*kept_check)->measured_ms = kept->measured_ms;
        }
        platform = std::move(wide);
        return choice;
      } catch (const Error& e) {
        // A plan this build no longer takes (the devices' ops changed, say):
        // measured again below, and replaced.
        warnings->push_back(fmt::format("the kept choice of auto was not usable, measured again: {}", e.what()));
      }
    }
  }
  std::vector<PlanCandidate> candidates;
  std::vector<Plan> plans = auto_plans(graph, *on, *cost, ScheduleOptions{}, 3);
  for (size_t i = 0; i < plans.size(); ++i)
    candidates.push_back({i == 0 ? "auto's plan" : fmt::format("auto's runner-up {}", i),
                          std::make_shared<const Plan>(std::move(plans[i])), on, cost, false});
  for (const PlatformDevice& device : on->devices) {
    // Alone, a device runs every node: the pins must leave it all of them.
    if (!device.pinned_elsewhere.empty() || !device.supports_all_unpinned(graph)) continue;
    std::string reason = fmt::format("auto: {} alone, measured against auto's plans (the session's choice says how)",
                                     device.name);
    auto alone =
        std::make_shared<const Plan>(one_device_plan(graph, *on, on->find_device(device.name), "auto", reason));
    candidates.push_back({device.name + " alone", alone, on, cost, true});
  }
  if (std::none_of(candidates.begin(), candidates.end(), [](const PlanCandidate& c) { return c.one_device; })) {
    MeasuredChoice choice;
    choice.executor = std::make_shared<Executor>(graph, *candidates.front().plan, wide, cost, options.cuda_graph);
    choice.reason = "auto: no device alone runs the whole graph (pins place nodes on several devices, or a device "
                    "lacks an op) to measure its plan against: running auto's plan as predicted";
    platform = std::move(wide);
    return choice;
  }
  ChoiceOptions choice_options;
  choice_options.cuda_graph = options.cuda_graph;
  MeasuredChoice choice = choose_by_measurement(graph, candidates, random_inputs(graph, 0), choice_options);
  db.put_choice(key, plan_to_json(*candidates[choice.chosen].plan, graph), choice.reason,
                choice.measured[choice.chosen].p50_ms);
  choice.reason = "auto: " + choice.reason;
  platform = std::move(wide);
  return choice;
}

// RunMode::kThroughput: the flows over the devices (throughput.h), each
// predicted; the best predicted of one worker and of several measured
// (choose.h), the winner kept. First, as for auto, what the profile
// database lacks or no longer trusts is profiled. `platform` becomes the
// winner's; `flow` its name; `outcomes` what was measured.
MeasuredFlowChoice settle_flow_by_measurement(const Graph& graph, Platform& platform, const SessionOptions& options,
                                              std::vector<std::string>* warnings, std::string* flow,
                                              std::vector<FlowOutcome>* outcomes) {
  if (options.scheduler != "sequential" || !options.plan.empty() || !platform.pinned.empty())
    throw Error(ErrorCode::kUsage, "throughput mode runs each request on one device with its sequential plan: "
                                   "a scheduler, a plan file or pins are for latency mode");
  if (options.concurrency < 0)
    throw Error(ErrorCode::kUsage, fmt::format("concurrency: expected 0 or more, got {}", options.concurrency));
  auto candidates = [&] {
    return flow_candidates(graph, platform,
                           [&](Platform& p) { return open_cost_model(p, options.profile_db, warnings); });
  };
  std::vector<RequestFlow> flows = candidates();
  // Profiled for the predictions, which only a choice needs (one core: its
  // one flow is served as it is).
  if (flows.size() > 1 && options.profile_first && !platform.has_emulated()) {
    ProfileOptions profile;
    profile.progress = options.progress;
    Platform wide = platform_with_cpu_union(platform);
    ModelProfile done = profile_model(graph, wide, options.profile_db, profile);
    for (const std::string& line : profile_load_warnings(done.report, true)) warnings->push_back("profile: " + line);
    flows = candidates();
  }
  if (flows.empty())
    throw Error(ErrorCode::kUnsupported,
                "throughput mode: no device runs the whole graph: " + platform.refusals(graph));
  std::vector<FlowPrediction> predicted;
  for (RequestFlow& f : flows) {
    FlowPrediction p = predict_flow(graph, f, options.concurrency);
    // The fastest worker first: of workers that would finish a request at
    // the same time, the first takes it (request_pool.h).
    std::vector<size_t> order(f.workers.size());
    for (size_t w = 0; w < order.size(); ++w) order[w] = w;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p.alone_ms[a] < p.alone_ms[b]; });
    std::vector<FlowWorker> workers;
    for (size_t w : order) workers.push_back(f.workers[w]);
    f.workers = std::move(workers);
    predicted.push_back(p);
  }
  std::vector<size_t> ranked(flows.size());
  for (size_t f = 0; f < ranked.size(); ++f) ranked[f] = f;
  std::stable_sort(ranked.begin(), ranked.end(),
                   [&](size_t a, size_t b) { return predicted[a].per_s > predicted[b].per_s; });
  // Measured: per kind (one worker, several), the best predicted and the
  // runner-up when predicted within 20% of it.
  std::vector<RequestFlow> measured;
  std::vector<double> measured_prediction;
  double best_one = 0, best_several = 0;
  int n_one = 0, n_several = 0;
  for (size_t f : ranked) {
    bool one = flows[f].one_device();
    int& n = one ? n_one : n_several;
    double& best = one ? best_one : best_several;
    if (n >= 2 || predicted[f].per_s < 0.8 * best) continue;
    best = std::max(best, predicted[f].per_s);
    ++n;
    measured.push_back(flows[f]);
    measured_prediction.push_back(predicted[f].per_s);
  }
  FlowChoiceOptions choice_options;
  choice_options.in_flight = options.concurrency;
  choice_options.cuda_graph = options.cuda_graph;
  std::vector<TensorMap> inputs;
  for (uint64_t seed = 0; seed < 4; ++seed) inputs.push_back(random_inputs(graph, seed));
  MeasuredFlowChoice choice = choose_flow_by_measurement(graph, measured, inputs, choice_options);
  std::vector<std::string> predictions;
  for (size_t f = 0; f < measured.size(); ++f)
    predictions.push_back(fmt::format("{} {:.1f}", measured[f].name, measured_prediction[f]));
  choice.reason = fmt::format("throughput: {} (predicted requests/s: {})", choice.reason, fmt::join(predictions, ", "));
  for (size_t f = 0; f < measured.size(); ++f) {
    FlowOutcome o{measured[f].name, {}, measured_prediction[f], choice.per_s[f], choice.p50_ms[f], f == choice.chosen};
    for (const FlowWorker& w : measured[f].workers) o.workers.push_back(w.device);
    outcomes->push_back(std::move(o));
  }
  const RequestFlow& winner = measured[choice.chosen];
  *flow = winner.name;
  platform = *winner.platform;
  choice.pool->reset_loads();
  return choice;
}

}  // namespace

std::shared_ptr<Session::Backend> Session::compile(std::shared_ptr<const Graph> graph, const SessionOptions& options,
                                                  Platform platform) {
  auto backend = std::make_shared<Backend>();
  Backend& b = *backend;
  b.graph = std::move(graph);
  const Graph& g = *b.graph;
  b.summary.n_nodes = static_cast<int>(g.nodes.size());
  if (options.reference) {
    b.summary.device = "reference";
    b.summary.n_steps = b.summary.n_nodes;
    return backend;
  }
  if (options.mode == RunMode::kLatency && options.plan.empty() && !all_shapes_static(g))
    return compile_staged(backend, options, std::move(platform));
  b.platform = std::move(platform);
  if (std::string warning = set_precision(b.platform, options.precision); !warning.empty())
    b.warnings.push_back(warning);
  std::vector<Pin> pins;
  for (const auto& text : options.pins) pins.push_back(parse_pin(text));
  apply_pins(b.platform, g, pins);
  if (std::any_of(b.platform.devices.begin(), b.platform.devices.end(),
                  [](const PlatformDevice& d) { return d.kind == DeviceKind::kCuda; }))
    if (std::string warning = cpu_beside_gpu_warning(b.platform, describe_machine().usable_cores); !warning.empty())
      b.warnings.push_back(warning);
  bool one_cpu_device = b.platform.devices.size() == 1 && b.platform.devices[0].kind == DeviceKind::kCpu;
  std::shared_ptr<const CostModel> cost;
  if (b.platform.has_emulated()) cost = open_cost_model(b.platform, options.profile_db, &b.warnings);
  if (options.mode == RunMode::kThroughput) {
    if (std::string warning = openmp_waits_warning(b.platform); !warning.empty()) b.warnings.push_back(warning);
    MeasuredFlowChoice choice = settle_flow_by_measurement(g, b.platform, options, &b.warnings, &b.flow, &b.flows);
    b.choice = choice.reason;
    b.pool = std::move(choice.pool);
    return backend;
  }
  bool measure_auto = options.scheduler == "auto" && options.plan.empty() && options.verify_auto &&
                      !b.platform.has_emulated() && !one_device_to_run(b.platform, options);
  if (measure_auto) {
    MeasuredChoice choice = settle_auto_by_measurement(g, b.platform, options, &b.warnings, &b.kept);
    // On the platform measured, the union of the CPU core groups among it.
    if (std::string warning = openmp_waits_warning(b.platform); !warning.empty()) b.warnings.push_back(warning);
    b.choice = choice.reason;
    b.pool = one_worker_pool(std::move(choice.executor), b.platform);
    return backend;
  }
  Plan plan = session_plan(g, b.platform, options, cost, &b.warnings);
  try {
    b.pool = one_worker_pool(std::make_shared<Executor>(g, std::move(plan), b.platform, cost, options.cuda_graph),
                             b.platform);
  } catch (const Error& e) {
    // One device and shapes that depend on data: the reference kernels
    // derive shapes as they go.
    if (e.code() != ErrorCode::kUnsupported || !one_cpu_device || !options.plan.empty()) throw;
    b.summary.device = b.platform.devices[0].name;
    b.summary.n_steps = b.summary.n_nodes;
    b.summary.n_fallbacks = b.summary.n_nodes;
    b.summary.note = std::string("running on reference kernels: ") + e.what();
  }
  return backend;
}

std::shared_ptr<Session::Backend> Session::compile_staged(std::shared_ptr<Backend> backend,
                                                         const SessionOptions& options, Platform platform) {
  Backend& b = *backend;
  const Graph& g = *b.graph;
  auto staged = std::make_shared<Backend::Staged>();
  staged->cut = cut_at_data_dependent_shapes(g);
  const StageCut& cut = staged->cut;
  b.platform = platform;
  // The pins checked against the whole graph; each stage gets those that
  // name one of its nodes or op types.
  std::vector<Pin> pins;
  for (const auto& text : options.pins) pins.push_back(parse_pin(text));
  apply_pins(b.platform, g, pins);
  auto stage_options = [&](const Graph& part) {
    SessionOptions o = options;
    o.pins.clear();
    for (const Pin& pin : pins)
      if (part.find_node(pin.node_or_op) != kNoNode ||
          std::any_of(part.nodes.begin(), part.nodes.end(), [&](const Node& n) { return n.op_type == pin.node_or_op; }))
        o.pins.push_back(pin.text());
    return o;
  };
  auto part = [&](const Stage& stage, const char* name) {
    return extract_graph(g, stage.nodes, stage.inputs, stage.outputs, g.name + "/" + name);
  };
  if (!cut.head.nodes.empty()) {
    auto head = std::make_shared<const Graph>(part(cut.head, "head"));
    staged->head = compile(head, stage_options(*head), platform);
  }
  staged->barriers = part(cut.barriers, "barriers");
  if (!cut.tail.nodes.empty()) {
    Graph tail = part(cut.tail, "tail");
    SessionOptions tail_options = stage_options(tail);
    tail_options.progress = nullptr;  // compiles at run time, when the caller's progress may be gone
    staged->tail = std::make_unique<Session>(std::move(tail), tail_options);
  }
  b.staged = std::move(staged);
  return backend;
}

Session::Session(Graph graph, const SessionOptions& options)
    : graph_(std::make_shared<const Graph>(std::move(graph))), state_(std::make_unique<State>()) {
  State& s = *state_;
  s.options = options;
  if (options.max_shapes < 1)
    throw Error(ErrorCode::kUsage, fmt::format("max_shapes: expected 1 or more, got {}", options.max_shapes));
  if (options.precision != "float32" && options.precision != "bfloat16")
    throw Error(ErrorCode::kUsage, fmt::format("precision '{}': expected float32 or bfloat16", options.precision));
  bool free_dims = !options.reference && options.plan.empty() && has_free_input_dims(*graph_);
  if (!free_dims) {
    s.fixed = compile(graph_, options, options.reference ? Platform{} : make_platform(options.devices, options.platform));
    return;
  }
  // Free dims: compiled per input shapes at their first run. What can be
  // checked without shapes is checked now: the devices and the pins.
  s.platform = make_platform(options.devices, options.platform);
  Platform pinned = s.platform;
  std::vector<Pin> pins;
  for (const auto& text : options.pins) pins.push_back(parse_pin(text));
  apply_pins(pinned, *graph_, pins);
  s.stats.free_dims = true;
  // The profiling and measuring of a compile at run time report no progress:
  // the caller's progress function may be gone by then.
  s.options.progress = nullptr;
}

Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;
Session::~Session() = default;

std::shared_ptr<Session::Backend> Session::latest() const {
  State& s = *state_;
  if (s.fixed) return s.fixed;
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.shapes.empty() ? nullptr : s.shapes.front().second;
}

std::shared_ptr<Session::Backend> Session::backend_for(const std::vector<Shape>& key) const {
  State& s = *state_;
  // Under s.mutex: the backend compiled for `key`, made the most recently used.
  auto find = [&]() -> std::shared_ptr<Backend> {
    for (auto it = s.shapes.begin(); it != s.shapes.end(); ++it) {
      if (it->first != key) continue;
      s.shapes.splice(s.shapes.begin(), s.shapes, it);
      ++s.stats.n_hits;
      return s.shapes.front().second;
    }
    return nullptr;
  };
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (auto backend = find()) return backend;
  }
  std::lock_guard<std::mutex> compiling(s.compile_mutex);
  {
    std::lock_guard<std::mutex> lock(s.mutex);  // compiled while this run waited
    if (auto backend = find()) return backend;
  }
  auto start = std::chrono::steady_clock::now();
  std::shared_ptr<Backend> backend;
  try {
    backend = compile(std::make_shared<const Graph>(specialize_graph(*graph_, key)), s.options, s.platform);
  } catch (const Error& e) {
    // Shapes the model cannot take surface here, in a node's shape check.
    ErrorCode code = e.code() == ErrorCode::kInvalidModel ? ErrorCode::kInvalidInput : e.code();
    throw Error(code, fmt::format("input shapes {}: {}", signature_text(*graph_, key), e.what()));
  }
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.shapes.emplace_front(key, backend);
  ++s.stats.n_compiles;
  s.stats.compile_ms += ms;
  s.stats.last_compile_ms = ms;
  // A run still using an evicted backend holds it until it ends.
  for (; s.shapes.size() > static_cast<size_t>(s.options.max_shapes); s.shapes.pop_back()) ++s.stats.n_evictions;
  return backend;
}

ExecutionSummary Session::summary() const {
  const State& s = *state_;
  std::shared_ptr<Backend> b = latest();
  ExecutionSummary summary;
  if (!b) {
    std::vector<std::string> devices;
    for (const PlatformDevice& d : s.platform.devices) devices.push_back(d.name);
    summary.device = fmt::format("{}", fmt::join(devices, ","));
    summary.n_nodes = static_cast<int>(graph_->nodes.size());
    summary.note = "free dims: the graph is compiled for each new set of input shapes at its first run; none yet";
  } else {
    const Backend& shown = b->shown();
    summary = shown.pool ? shown.pool->workers()[0].executor->summary() : shown.summary;
    summary.choice = shown.choice;
    summary.warnings = shown.warnings;
    if (shown.kept) {
      std::lock_guard lock(shown.kept->mutex);
      if (!shown.kept->verdict.empty()) summary.warnings.push_back(shown.kept->verdict);
    }
    summary.flow = shown.flow;
    summary.flows = shown.flows;
    if (shown.pool && !shown.flow.empty()) {
      for (const RequestPool::Worker& w : shown.pool->workers()) summary.workers.push_back(w.device);
      summary.device = fmt::format("{}", fmt::join(summary.workers, ","));
    }
    if (b->staged) describe_stages(*b, summary);
  }
  summary.float_chains = graph_->float_chains;
  std::lock_guard<std::mutex> lock(state_->mutex);
  summary.shapes = s.stats;
  for (const auto& [key, backend] : s.shapes) summary.shapes.kept.push_back(signature_text(*graph_, key));
  return summary;
}

void Session::describe_stages(const Backend& b, ExecutionSummary& summary) {
  const StageCut& cut = b.staged->cut;
  std::vector<std::string> barriers;
  for (NodeId n : cut.barriers.nodes) {
    barriers.push_back(b.graph->nodes[n].label());
    summary.fallbacks.push_back(b.graph->nodes[n].label() + ": the shape of its output depends on the data");
  }
  if (!b.staged->head) summary.device = b.platform.devices.empty() ? "" : b.platform.devices[0].name;
  summary.n_nodes = static_cast<int>(b.graph->nodes.size());
  summary.n_fallbacks += static_cast<int>(cut.barriers.nodes.size());
  std::string tail = "nothing after them";
  if (b.staged->tail) {
    ExecutionSummary t = b.staged->tail->summary();
    summary.n_fallbacks += t.shapes.n_compiles > 0 ? t.n_fallbacks : 0;
    tail = fmt::format("the other {} compiled for the shapes each run gives them ({} compiled so far)",
                       cut.tail.nodes.size(), t.shapes.n_compiles);
  }
  summary.note = fmt::format("shapes that depend on the data: {} nodes run as planned, then {} on reference kernels "
                             "({}), then {}",
                             cut.head.nodes.size(), cut.barriers.nodes.size(), fmt::join(barriers, ", "), tail);
}

std::vector<WorkerLoad> Session::loads() const {
  std::shared_ptr<Backend> b = latest();
  return b && b->shown().pool ? b->shown().pool->loads() : std::vector<WorkerLoad>{};
}

const Plan* Session::plan() const {
  std::shared_ptr<Backend> b = latest();
  return b && b->shown().pool ? &b->shown().pool->workers()[0].executor->plan() : nullptr;
}

const Graph& Session::plan_graph() const {
  std::shared_ptr<Backend> b = latest();
  return b ? *b->shown().graph : *graph_;
}

const Platform& Session::platform() const {
  std::shared_ptr<Backend> b = latest();
  return b ? b->shown().platform : state_->platform;
}

Session Session::load(const std::string& model, const LoadOptions& options, const SessionOptions& session_options) {
  return Session(load_model(model, options), session_options);
}

void check_inputs(const Graph& graph, const TensorMap& inputs) {
  for (const auto& [name, tensor] : inputs) {
    ValueId id = graph.find_value(name);
    if (id == kNoValue || !graph.is_graph_input(id))
      throw Error(ErrorCode::kInvalidInput, fmt::format("input '{}': the model has no such input", name));
  }
  for (ValueId id : graph.inputs) {
    const Value& v = graph.values[id];
    auto it = inputs.find(v.name);
    if (it == inputs.end())
      throw Error(ErrorCode::kInvalidInput, fmt::format("input '{}': missing (expected {} {})", v.name,
                                                        dtype_name(v.dtype), shape_to_string(v.shape)));
    const Tensor& t = it->second;
    bool dtype_ok = v.dtype == DType::kUndefined || v.dtype == t.dtype();
    bool shape_ok = !v.has_shape || v.shape.size() == t.shape().size();
    for (size_t d = 0; shape_ok && d < v.shape.size(); ++d)
      if (v.shape[d] >= 0 && v.shape[d] != t.shape()[d]) shape_ok = false;
    if (!dtype_ok || !shape_ok)
      throw Error(ErrorCode::kInvalidInput,
                  fmt::format("input '{}': expected {} {}, got {}", v.name, dtype_name(v.dtype),
                              v.has_shape ? shape_to_string(v.shape) : "of any shape", t.description()));
  }
  if (has_free_input_dims(graph)) check_input_dims(graph, input_shapes(graph, inputs));
}

void Session::check_inputs(const TensorMap& inputs) const { hetsched::check_inputs(*graph_, inputs); }

TensorMap Session::run(const TensorMap& inputs, Trace* trace, RunTiming* timing) const {
  check_inputs(inputs);
  if (!state_->stats.free_dims) return run_on(*state_->fixed, inputs, trace, timing);
  ShapeSignature shapes = input_shapes(*graph_, inputs);
  std::shared_ptr<Backend> backend = backend_for(shapes);
  try {
    return run_on(*backend, inputs, trace, timing);
  } catch (const Error& e) {
    // Shapes a model cannot take may only show when a kernel meets them.
    throw Error(e.code(), fmt::format("input shapes {}: {}", signature_text(*graph_, shapes), e.what()));
  }
}

TensorMap Session::run_on(const Backend& b, const TensorMap& inputs, Trace* trace, RunTiming* timing) {
  if (b.staged) return run_staged(b, inputs, trace, timing);
  if (!b.pool) {
    auto start = std::chrono::steady_clock::now();
    TensorMap outputs = run_reference(*b.graph, inputs);
    if (timing)
      *timing = {0, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), "reference"};
    return outputs;
  }
  RunTiming own;
  if (!timing) timing = &own;
  RunTimeline timeline;
  size_t w = 0;
  TensorMap outputs = b.pool->run(inputs, trace ? &timeline : nullptr, &w, timing);
  if (b.kept) b.kept->observe(timing->compute_s * 1e3);
  if (trace) {
    const RequestPool::Worker& worker = b.pool->workers()[w];
    *trace = timeline_trace(timeline, worker.executor->plan(), *b.graph, *worker.platform);
  }
  return outputs;
}

TensorMap Session::run_staged(const Backend& b, const TensorMap& inputs, Trace* trace, RunTiming* timing) {
  const Graph& g = *b.graph;
  const Backend::Staged& staged = *b.staged;
  TensorMap values = inputs;  // by name: each stage's outputs added as it ends
  auto feeds = [&](const Stage& stage) {
    TensorMap m;
    for (ValueId id : stage.inputs) m[g.values[id].name] = values.at(g.values[id].name);
    return m;
  };
  auto keep = [&](TensorMap outputs) { values.merge(outputs); };
  if (staged.head) keep(run_on(*staged.head, feeds(staged.cut.head), trace, timing));
  keep(run_reference(staged.barriers, feeds(staged.cut.barriers)));
  if (staged.tail) keep(staged.tail->run(feeds(staged.cut.tail)));
  TensorMap result;
  for (ValueId id : g.outputs) {
    const Value& v = g.values[id];
    result[v.name] = v.is_constant() ? *v.initializer : values.at(v.name);
  }
  return result;
}

TensorMap Session::random_inputs(uint64_t seed) const { return hetsched::random_inputs(*graph_, seed); }

TensorMap random_inputs(const Graph& graph, uint64_t seed) {
  TensorMap inputs;
  std::mt19937_64 rng(seed);
  for (ValueId id : graph.inputs) {
    const Value& v = graph.values[id];
    Shape shape = v.shape;
    for (int64_t& d : shape)
      if (d < 0) d = 1;
    DType dtype = v.dtype == DType::kUndefined ? DType::kFloat32 : v.dtype;
    Tensor t(dtype, shape);
    for (int64_t i = 0; i < t.numel(); ++i) {
      uint64_t r = rng();
      double unit = static_cast<double>(r >> 11) * (1.0 / 9007199254740992.0);  // [0, 1)
      switch (dtype) {
        case DType::kFloat32: t.data<float>()[i] = static_cast<float>(unit * 2 - 1); break;
        case DType::kFloat64: t.data<double>()[i] = unit * 2 - 1; break;
        case DType::kFloat16: t.data<Float16>()[i] = float16_of(static_cast<float>(unit * 2 - 1)); break;
        case DType::kBFloat16: t.data<BFloat16>()[i] = bfloat16_of(static_cast<float>(unit * 2 - 1)); break;
        case DType::kBool: t.data<bool>()[i] = (i % 2) == 0; break;
        case DType::kInt64: t.data<int64_t>()[i] = static_cast<int64_t>(r % 10); break;
        case DType::kInt32: t.data<int32_t>()[i] = static_cast<int32_t>(r % 10); break;
        case DType::kInt16: t.data<int16_t>()[i] = static_cast<int16_t>(r % 10); break;
        case DType::kInt8: t.data<int8_t>()[i] = static_cast<int8_t>(r % 10); break;
        case DType::kUInt8: t.data<uint8_t>()[i] = static_cast<uint8_t>(r % 10); break;
        case DType::kUInt16: t.data<uint16_t>()[i] = static_cast<uint16_t>(r % 10); break;
        case DType::kUInt32: t.data<uint32_t>()[i] = static_cast<uint32_t>(r % 10); break;
        case DType::kUInt64: t.data<uint64_t>()[i] = r % 10; break;
        default: throw Error(ErrorCode::kUnsupported, fmt::format("input '{}': cannot make random {} data", v.name, dtype_name(dtype)));
      }
    }
    inputs[v.name] = std::move(t);
  }
  return inputs;
}

}  // namespace hetsched
