// `hetsched demo` (see demo_command.h).
#include "demo_command.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli_common.h"
#include "compare_command.h"
#include "hetsched/choose.h"
#include "hetsched/compare.h"
#include "hetsched/device.h"
#include "hetsched/error.h"
#include "hetsched/profile.h"
#include "hetsched/report.h"
#include "hetsched/scheduler.h"
#include "hetsched/session.h"
#include "hetsched/throughput.h"
#include "runtime/executor.h"

namespace {

using namespace hetsched;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

struct DemoCommand {
  cli::ModelOptions model;
  CompareOptions compare;
  std::string report_dir = "hetsched-report";
  std::string trace_path;
  double rtol = 1e-4, atol = 1e-5;

  void add_to(CLI::App* cmd) {
    cmd->add_option("model", model.model, "an .onnx file or zoo:NAME")->capture_default_str();
    cmd->add_option("--devices", model.devices,
                    "where to run (default: this machine's cores in two halves; with GPUs, each GPU and every core "
                    "but the first; as `hetsched devices` says)");
    cmd->add_option("--platform", model.platform, "a platform file of devices to emulate (platforms/)");
    cmd->add_option("--shape", model.shapes, "fix a free input dim: NAME=1x3x224x224 (repeatable)");
    cmd->add_option("--param", model.params, "zoo model parameter KEY=VALUE, e.g. layers=2 (repeatable)");
    cli::ModelOptions::add_db_option(cmd, model.db);
    model.add_pin_option(cmd);
    cmd->add_option("--schedulers", compare.schedulers, "schedulers to compare (default: all)")->delimiter(',');
    cmd->add_option("-w,--warmup", compare.warmups, "untimed runs of each plan before measuring")
        ->check(CLI::Range(0, 1000000))
        ->capture_default_str();
    cmd->add_option("-n,--rounds", compare.rounds, "measured runs of each plan (one per round)")
        ->check(CLI::Range(1, 1000000))
        ->capture_default_str();
    cmd->add_option("--report", report_dir, "folder for the HTML report (index.html)")->capture_default_str();
    cmd->add_option("--trace", trace_path, "write the best plan's checked run as a Chrome trace (Perfetto)");
  }

  static void step(int k, const std::string& what) { fmt::print("\n[{}/6] {}\n", k, what); }

  // Profiles the model on the platform's real devices and, when there are
  // several CPU core groups, on one device over all their cores (compare's
  // baseline), so that every prediction reads measured launches.
  void profile(const Graph& graph, Platform& platform) {
    auto start = Clock::now();
    std::vector<Platform> others;
    std::string union_device = cpu_union_device(platform);
    if (!union_device.empty()) others.push_back(make_platform(union_device, ""));
    int n_measured = 0, n_reused = 0;
    std::string db_path;
    for (Platform* p : {&platform, others.empty() ? nullptr : &others[0]}) {
      if (!p) continue;
      ProfileOptions options;
      cli::ProgressBar bar;
      options.progress = [&bar](int done, int total, const std::string& what) { bar.update(done, total, what); };
      ModelProfile profile = profile_model(graph, *p, model.db, options);
      for (const auto& w : profile.warnings) fmt::print(stderr, "hetsched: warning: {}\n", w);
      for (const auto& w : profile_load_warnings(profile.report)) fmt::print("  warning: {}\n", w);
      for (const auto& d : profile.report.devices) {
        n_measured += d.n_measured;
        n_reused += d.n_reused;
      }
      db_path = profile.db_path;
    }
    fmt::print("  {} launch units measured, {} reused from {} ({:.1f} s)\n", n_measured, n_reused, db_path,
               seconds_since(start));
  }

  // The plan that wins, and where it runs: a scheduler's, or one device
  // alone when no plan beat it (the demo never picks a slower plan). The
  // three fastest plans of the comparison and the fastest device alone run
  // again, in more rounds, and the winner must hold there (choose.h): one
  // lucky round in the comparison does not decide.
  struct Choice {
    std::string what;
    std::shared_ptr<const Plan> plan;
    Platform platform;
    std::shared_ptr<const CostModel> cost;
  };

  Choice choose(const Comparison& c, const Graph& graph, const Platform& platform,
                std::shared_ptr<const CostModel> cost) {
    std::vector<const SchedulerOutcome*> measured;
    for (const SchedulerOutcome& s : c.schedulers)
      if (s.plan && s.measured.p50_ms >= 0) measured.push_back(&s);
    std::sort(measured.begin(), measured.end(), [](const SchedulerOutcome* a, const SchedulerOutcome* b) {
      return a->measured.p50_ms < b->measured.p50_ms;
    });
    std::vector<PlanCandidate> candidates;
    for (const SchedulerOutcome* s : measured) {
      if (candidates.size() == 3) break;
      candidates.push_back({s->name, s->plan, s->platform, s->cost, false});
    }
    auto alone = std::make_shared<Platform>(platform);
    auto alone_cost = cost;
    if (platform.find_device(c.best_sequential_device) < 0) {
      *alone = make_platform(c.best_sequential_device, "");
      alone_cost = open_cost_model(*alone, model.db, nullptr);
    }
    ScheduleOptions options;
    options.params["device"] = c.best_sequential_device;
    auto sequential =
        std::make_shared<const Plan>(make_scheduler("sequential")->schedule(graph, *alone, *alone_cost, options));
    candidates.push_back({c.best_sequential_device + " alone", sequential, alone, alone_cost, true});
    MeasuredChoice measured_choice = choose_by_measurement(graph, candidates, random_inputs(graph, 2));
    const PlanCandidate& winner = candidates[measured_choice.chosen];
    double ms = measured_choice.measured[measured_choice.chosen].p50_ms;
    double alone_ms = measured_choice.measured.back().p50_ms;
    // The gain over the platform's first device alone (one core group) says
    // what using the machine's devices brought, whichever way won.
    const SequentialBaseline& first = c.sequential.front();
    std::string over_first =
        first.device + " alone" == winner.name || first.measured.p50_ms <= 0
            ? ""
            : fmt::format(", {:.2f}x over {} alone", first.measured.p50_ms / ms, first.device);
    std::string what =
        winner.one_device
            ? fmt::format("{} ({:.3f} ms measured{}; no plan over several devices beat it: {})", winner.name, ms,
                          over_first, measured_choice.reason)
            : fmt::format("{} ({:.3f} ms measured, {:.2f}x over {} alone{}; {})", winner.name, ms, alone_ms / ms,
                          c.best_sequential_device, over_first, measured_choice.reason);
    return {what, winner.plan, *winner.platform, winner.cost};
  }

  // Runs the chosen plan concurrently and a sequential plan on one device
  // on the same inputs; returns false when an output differs beyond the
  // tolerance.
  bool check_outputs(const Choice& choice, const Graph& graph, const Platform& platform,
                     std::shared_ptr<const CostModel> cost) {
    TensorMap inputs = random_inputs(graph, 1);
    Executor best(graph, *choice.plan, choice.platform, choice.cost);
    RunTimeline timeline;
    TensorMap got = best.run(inputs, &timeline);
    int reference_device = -1;
    for (size_t d = 0; d < platform.devices.size() && reference_device < 0; ++d)
      if (platform.devices[d].supports_all(graph)) reference_device = static_cast<int>(d);
    if (reference_device < 0) throw Error(ErrorCode::kUnsupported, "demo: no device runs the whole model alone");
    ScheduleOptions options;
    options.params["device"] = platform.devices[reference_device].name;
    Executor sequential(graph, make_scheduler("sequential")->schedule(graph, platform, *cost, options), platform, cost);
    TensorMap want = sequential.run(inputs);

    bool identical = true, within = true;
    for (const auto& [name, tensor] : want) {
      std::string exact = cli::tensor_difference(got.at(name), tensor, 0, 0);
      std::string close = cli::tensor_difference(got.at(name), tensor, rtol, atol);
      identical = identical && exact.empty();
      if (!close.empty()) {
        within = false;
        fmt::print("  output '{}' differs from sequential: {}\n", name, close);
      }
    }
    std::string against = fmt::format("sequential on {}", platform.devices[reference_device].name);
    if (identical)
      fmt::print("  outputs identical to {} ({} outputs, bit for bit)\n", against, want.size());
    else if (within)
      fmt::print("  outputs match {} within rtol {} / atol {}\n", against, rtol, atol);
    if (!trace_path.empty()) {
      write_chrome_trace(timeline_trace(timeline, *choice.plan, graph, choice.platform), trace_path);
      fmt::print("  trace of this run written to {}\n", trace_path);
    }
    outputs_note = identical ? "outputs identical to " + against + " (bit for bit)"
                             : within ? fmt::format("outputs match {} within rtol {} / atol {}", against, rtol, atol)
                                      : "outputs DIFFER from " + against;
    return within;
  }

  std::string outputs_note;
  std::vector<FlowOutcome> flows;  // throughput mode's, for the report

  // Throughput mode on the same devices: its flow chosen by measurement,
  // then a few seconds of requests, against one request at a time on the
  // fastest device alone (measured in step 3). "" when it does not apply.
  std::string throughput(const Graph& graph, const Platform& platform, const Comparison& comparison) {
    if (platform.has_emulated() || !platform.pinned.empty()) {
      fmt::print("  skipped: {}\n", platform.has_emulated() ? "emulated devices serve no real requests"
                                                              : "pins place the nodes of one request");
      return "";
    }
    SessionOptions options = model.session_options();
    options.mode = RunMode::kThroughput;
    options.scheduler = "sequential";
    options.plan.clear();
    Session session(graph, options);
    ExecutionSummary summary = session.summary();
    flows = summary.flows;
    fmt::print("  {}\n", summary.choice);
    std::vector<TensorMap> inputs;
    for (uint64_t seed = 0; seed < 4; ++seed) inputs.push_back(session.random_inputs(seed));
    int in_flight = static_cast<int>(summary.workers.size());
    auto serve = [&](int n) {
      return run_closed_loop(n, in_flight, [&](int i) { session.run(inputs[static_cast<size_t>(i) % 4]); });
    };
    LoadResult probe = serve(4 * in_flight);
    LoadResult r = serve(std::max(4 * in_flight, static_cast<int>(2 * probe.per_s)));  // about 2 s
    std::string line = fmt::format("{}: {:.1f} requests/s, request latency p50 {:.2f} ms, p99 {:.2f} ms", summary.flow,
                                   r.per_s, r.p50_ms, r.p99_ms);
    double alone_ms = comparison.best_sequential_ms;
    if (alone_ms > 0)
      line += fmt::format("; {:.2f}x one request at a time on {} ({:.1f}/s)", r.per_s * alone_ms / 1000,
                          comparison.best_sequential_device, 1000 / alone_ms);
    fmt::print("  {}\n", line);
    return line;
  }

  int execute() {
    auto start = Clock::now();
    MachineInfo machine = describe_machine();
    // The devices `run` schedules over by default; compare measures the
    // union of their cores as one device among its baselines.
    if (model.devices.empty()) model.devices = model.platform.empty() ? machine_devices_spec() : "";
    Graph graph = cli::load_static_model(model, "demo");
    fmt::print("hetsched demo: {} ({} nodes, {:.2f} GFLOPs)\n", model.model, graph.nodes.size(),
               graph.total_flops() / 1e9);

    step(1, "devices");
    Platform platform = cli::make_cli_platform(model, graph);
    fmt::print("  this machine: {} ({} usable cores)\n", machine.cpu_model, machine.usable_cores.size());
    for (const PlatformDevice& d : platform.devices)
      fmt::print("  {:<10} {}{}\n", d.name, d.description, d.is_emulated() ? " (emulated)" : "");

    step(2, "profiling every launch unit on every real device");
    profile(graph, platform);
    std::shared_ptr<const CostModel> cost = cli::make_cli_cost_model(platform, model.db);

    step(3, "planning with every scheduler, then measuring every plan in interleaved rounds");
    compare.measure = true;
    compare.keep_traces = !report_dir.empty();
    Comparison comparison;
    {
      cli::ProgressBar bar;
      compare.progress = [&bar](int done, int total, const std::string& what) { bar.update(done, total, what); };
      comparison = compare_schedulers(graph, platform, cost, model.db, compare);
    }

    step(4, "running the fastest concurrently and checking its outputs against a sequential run");
    Choice choice = choose(comparison, graph, platform, cost);
    fmt::print("  fastest: {}\n", choice.what);
    bool same = check_outputs(choice, graph, platform, cost);

    step(5, "comparison");
    cli::print_comparison(comparison, graph, platform, model.model, true);

    step(6, "many requests at once: each device serving requests of its own (throughput mode)");
    std::string throughput_line = throughput(graph, platform, comparison);
    if (!report_dir.empty()) {
      ReportInput input;
      input.title = "hetsched demo: " + model.model;
      input.model = model.model;
      input.graph = &graph;
      input.platform = &platform;
      input.comparison = &comparison;
      input.notes = {"fastest: " + choice.what, outputs_note};
      if (!throughput_line.empty()) input.notes.push_back("many requests at once: " + throughput_line);
      input.flows = flows;
      fmt::print("\nreport written to {}\n", write_html_report(report_dir, input));
    }
    fmt::print("demo took {:.0f} s\n", seconds_since(start));
    return same ? 0 : 1;
  }
};

}  // namespace

void add_demo_command(CLI::App& app, int* exit_code) {
  auto state = std::make_shared<DemoCommand>();
  state->model.model = "zoo:googlenet";
  state->model.devices = "";
  state->compare.warmups = 1;
  state->compare.rounds = 5;
  auto* cmd = app.add_subcommand("demo",
                                 "the main job: detect the devices, profile a model, plan it with every scheduler, "
                                 "run the fastest and show how much faster (HTML report)");
  state->add_to(cmd);
  cmd->callback([state, exit_code] { *exit_code = state->execute(); });
}
