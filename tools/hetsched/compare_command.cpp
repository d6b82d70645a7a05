// `hetsched compare` (see compare_command.h).
#include "compare_command.h"

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_common.h"
#include "hetsched/choose.h"
#include "hetsched/compare.h"
#include "hetsched/error.h"
#include "hetsched/report.h"
#include "hetsched/scheduler.h"
#include "hetsched/throughput.h"

namespace {

using namespace hetsched;

std::string ms(double value) { return value >= 0 ? fmt::format("{:.3f}", value) : "-"; }
std::string measured(const Measurement& m) {
  return m.p50_ms >= 0 ? fmt::format("{:.3f} ({:.3f}-{:.3f})", m.p50_ms, m.min_ms, m.max_ms) : "-";
}
std::string ratio(double num, double den) { return num > 0 && den > 0 ? fmt::format("{:.2f}x", num / den) : "-"; }

// Speed-ups compare like with like: measured with measured, predicted with
// predicted.
double best_predicted(const Comparison& c) {
  double best = -1;
  for (const auto& b : c.sequential)
    if (best < 0 || b.predicted_ms < best) best = b.predicted_ms;
  return best;
}

}  // namespace

namespace hetsched::cli {

void print_comparison(const Comparison& c, const Graph& graph, const Platform& platform, const std::string& model,
                      bool measured_runs) {
  const char* what = platform.has_emulated() ? "emulated" : "measured";
  fmt::print("model: {} ({} nodes, {:.2f} GFLOPs) on {}\n", model, graph.nodes.size(), graph.total_flops() / 1e9,
             platform.name);
  fmt::print("lower bound: {:.3f} ms (critical path {:.3f} ms, capacity {:.3f} ms, combined {:.3f} ms)\n",
             c.lower_bound_ms, c.critical_path_ms, c.capacity_ms, c.combined_ms);
  fmt::print("\none device, one launch after another:\n");
  std::vector<std::vector<std::string>> rows = {{"device", "predicted ms", fmt::format("{} p50 ms (min-max)", what)}};
  for (const auto& b : c.sequential) rows.push_back({b.device, ms(b.predicted_ms), measured(b.measured)});
  print_table(rows, {false, true, true});
  fmt::print("best sequential: {} ({:.3f} ms {})\n", c.best_sequential_device, c.best_sequential_ms,
             measured_runs ? what : "predicted");
  for (const std::string& note : prediction_drift_notes(c, platform)) fmt::print("note: {}\n", note);
  for (const std::string& device : c.marked_stale)
    fmt::print("note: {}'s profile entries for this model are marked stale: the next `hetsched profile` measures "
               "them again\n",
               device);

  double best_predicted_ms = best_predicted(c);
  fmt::print("\nschedulers (predicted: simulated with one cost model for all):\n");
  rows = {{"scheduler", "predicted ms", "speed-up", "/ bound", fmt::format("{} p50 ms (min-max)", what), "speed-up",
           "plan ms", "note"}};
  for (const SchedulerOutcome& s : c.schedulers) {
    if (!s.error.empty()) {
      rows.push_back({s.name, "-", "-", "-", "-", "-", "-", s.error});
      continue;
    }
    rows.push_back({s.name, ms(s.predicted_ms), ratio(best_predicted_ms, s.predicted_ms),
                    ratio(s.predicted_ms, c.lower_bound_ms), measured(s.measured),
                    s.measured.p50_ms >= 0 ? ratio(c.best_sequential_ms, s.measured.p50_ms) : "-",
                    fmt::format("{:.1f}", s.plan_ms), ""});
  }
  print_table(rows, {false, true, true, true, true, true, true, false});
}

}  // namespace hetsched::cli

namespace {

using namespace hetsched;

struct CompareCommand {
  cli::ModelOptions model;
  std::vector<std::string> schedulers;
  CompareOptions options;
  std::string json_path;
  std::string report_dir;
  std::string mode = "latency";

  void write_json(const Comparison& c, const Graph& graph, const Platform& platform) const {
    auto number_or_null = [](double v) { return v >= 0 ? nlohmann::json(v) : nlohmann::json(nullptr); };
    nlohmann::json sequential = nlohmann::json::array();
    for (const auto& b : c.sequential)
      sequential.push_back({{"device", b.device},
                            {"predicted_ms", number_or_null(b.predicted_ms)},
                            {"measured_p50_ms", number_or_null(b.measured.p50_ms)},
                            {"measured_min_ms", number_or_null(b.measured.min_ms)},
                            {"measured_max_ms", number_or_null(b.measured.max_ms)}});
    nlohmann::json rows = nlohmann::json::array();
    for (const SchedulerOutcome& s : c.schedulers) {
      nlohmann::json row = {{"name", s.name},
                            {"predicted_ms", number_or_null(s.predicted_ms)},
                            {"measured_p50_ms", number_or_null(s.measured.p50_ms)},
                            {"measured_min_ms", number_or_null(s.measured.min_ms)},
                            {"measured_max_ms", number_or_null(s.measured.max_ms)},
                            {"plan_ms", s.plan_ms}};
      if (!s.error.empty()) row["error"] = s.error;
      if (s.plan) {
        // Each device's share of the work, e.g. how much a CPU takes next to a GPU.
        std::vector<PlanDeviceWork> work = work_by_device(*s.plan, graph);
        nlohmann::json devices = nlohmann::json::array();
        for (size_t d = 0; d < work.size(); ++d)
          devices.push_back({{"device", s.plan->devices[d]},
                             {"lanes", work[d].lanes},
                             {"launches", work[d].launches},
                             {"nodes", work[d].nodes},
                             {"flops", work[d].flops}});
        row["devices"] = devices;
      }
      rows.push_back(row);
    }
    nlohmann::json j = {{"model", model.model},
                        {"platform", platform.name},
                        {"measured", options.measure},
                        {"emulated", platform.has_emulated()},
                        {"lower_bound_ms", c.lower_bound_ms},
                        {"nodes", graph.nodes.size()},
                        {"total_flops", graph.total_flops()},
                        {"best_sequential_ms", c.best_sequential_ms},
                        {"best_sequential_device", c.best_sequential_device},
                        {"sequential", sequential},
                        {"schedulers", rows}};
    std::ofstream out(json_path);
    if (!out) throw Error(ErrorCode::kIo, fmt::format("{}: cannot open for writing", json_path));
    out << j.dump(2) << "\n";
    if (!out) throw Error(ErrorCode::kIo, fmt::format("{}: write failed", json_path));
  }

  // --mode throughput: every flow of requests over the devices
  // (throughput.h), predicted, and with --measure served in interleaved
  // rounds (choose_flow_by_measurement), one request per worker in flight.
  void execute_throughput(const Graph& graph, Platform& platform) {
    if (!schedulers.empty() || !report_dir.empty() || !platform.pinned.empty())
      throw Error(ErrorCode::kUsage, "--schedulers, --report and --pin are for --mode latency: throughput mode "
                                     "compares flows of whole requests");
    std::vector<RequestFlow> flows = flow_candidates(
        graph, platform, [&](Platform& p) { return cli::make_cli_cost_model(p, model.db); });
    if (flows.empty())
      throw Error(ErrorCode::kUnsupported, "no device runs the whole graph: " + platform.refusals(graph));
    std::vector<FlowPrediction> predicted;
    for (const RequestFlow& f : flows) predicted.push_back(predict_flow(graph, f));
    MeasuredFlowChoice choice;
    if (options.measure) {
      FlowChoiceOptions o;
      o.warmups = options.warmups;
      o.rounds = std::min(options.rounds, 15);
      o.max_rounds = o.rounds;
      std::vector<TensorMap> inputs;
      for (uint64_t seed = 0; seed < 4; ++seed) inputs.push_back(random_inputs(graph, seed));
      choice = choose_flow_by_measurement(graph, flows, inputs, o);
    }
    const char* what = platform.has_emulated() ? "emulated" : "measured";
    fmt::print("model: {} ({} nodes, {:.2f} GFLOPs) on {}\n", model.model, graph.nodes.size(),
               graph.total_flops() / 1e9, platform.name);
    fmt::print("\nflows of requests, one per worker in flight (predicted: from the cost model's co-run times):\n");
    std::vector<std::vector<std::string>> rows = {{"flow", "workers", "predicted /s", "predicted latency ms",
                                                   fmt::format("{} /s", what), fmt::format("{} p50 ms", what)}};
    nlohmann::json json_flows = nlohmann::json::array();
    for (size_t f = 0; f < flows.size(); ++f) {
      std::vector<std::string> devices;
      for (const FlowWorker& w : flows[f].workers) devices.push_back(w.device);
      bool measured_flow = options.measure;
      rows.push_back({flows[f].name, fmt::format("{}", fmt::join(devices, ",")),
                      fmt::format("{:.1f}", predicted[f].per_s), fmt::format("{:.3f}", predicted[f].latency_ms),
                      measured_flow ? fmt::format("{:.1f}", choice.per_s[f]) : "-",
                      measured_flow ? fmt::format("{:.3f}", choice.p50_ms[f]) : "-"});
      nlohmann::json row = {{"flow", flows[f].name},
                            {"workers", devices},
                            {"predicted_per_s", predicted[f].per_s},
                            {"predicted_latency_ms", predicted[f].latency_ms}};
      if (measured_flow) {
        row["measured_per_s"] = choice.per_s[f];
        row["measured_p50_ms"] = choice.p50_ms[f];
      }
      json_flows.push_back(row);
    }
    cli::print_table(rows, {false, false, true, true, true, true});
    if (options.measure) fmt::print("{}\n", choice.reason);
    if (!json_path.empty()) {
      nlohmann::json j = {{"model", model.model},   {"platform", platform.name}, {"mode", "throughput"},
                          {"measured", options.measure}, {"emulated", platform.has_emulated()}, {"flows", json_flows}};
      if (options.measure) j["choice"] = choice.reason;
      std::ofstream out(json_path);
      if (!out) throw Error(ErrorCode::kIo, fmt::format("{}: cannot open for writing", json_path));
      out << j.dump(2) << "\n";
    }
  }

  void execute() {
    if (mode == "throughput") {
      Graph graph = cli::load_static_model(model, "compare");
      Platform platform = cli::make_cli_platform(model, graph);
      execute_throughput(graph, platform);
      return;
    }
    for (const std::string& name : schedulers) make_scheduler(name);  // a typo fails before --report's folder is made
    Graph graph = cli::load_static_model(model, "compare");
    Platform platform = cli::make_cli_platform(model, graph);
    std::shared_ptr<const CostModel> cost = cli::make_cli_cost_model(platform, model.db);
    options.schedulers = schedulers;
    options.keep_traces = !report_dir.empty();
    if (!report_dir.empty()) {
      // Fail before a long measurement, not after it.
      std::error_code ec;
      std::filesystem::create_directories(report_dir, ec);
      if (ec) throw Error(ErrorCode::kIo, fmt::format("{}: cannot create the report folder ({})", report_dir, ec.message()));
    }
    Comparison comparison;
    {
      cli::ProgressBar bar;
      options.progress = [&bar](int done, int total, const std::string& what) { bar.update(done, total, what); };
      comparison = compare_schedulers(graph, platform, cost, model.db, options);
    }
    cli::print_comparison(comparison, graph, platform, model.model, options.measure);
    if (!json_path.empty()) write_json(comparison, graph, platform);
    if (!report_dir.empty()) {
      ReportInput report;
      report.model = model.model;
      report.graph = &graph;
      report.platform = &platform;
      report.comparison = &comparison;
      fmt::print("report written to {}\n", write_html_report(report_dir, report));
    }
  }
};

}  // namespace

void add_compare_command(CLI::App& app, int* exit_code) {
  auto state = std::make_shared<CompareCommand>();
  auto* cmd = app.add_subcommand(
      "compare", "every scheduler's plan, predicted (and with --measure run), against the best single device");
  state->model.add_to(cmd);
  cli::ModelOptions::add_db_option(cmd, state->model.db);
  cmd->add_option("--schedulers", state->schedulers, "schedulers to compare (default: all; see `hetsched schedulers`)")
      ->delimiter(',');
  cmd->add_option("--seed", state->options.seed, "seed for randomised schedulers")->capture_default_str();
  cmd->add_flag("--measure", state->options.measure, "also run every plan, interleaved rounds, and report medians");
  cmd->add_option("-w,--warmup", state->options.warmups, "untimed runs of each plan before measuring")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  cmd->add_option("-n,--rounds", state->options.rounds, "measured runs of each plan (one per round)")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  cmd->add_option("--json", state->json_path, "write the comparison as JSON to this file");
  cmd->add_option("--report", state->report_dir,
                  "write an HTML report (tables, timelines, placement) to DIR/index.html");
  state->model.add_pin_option(cmd);
  cmd->add_option("--mode", state->mode,
                  "latency: every scheduler's plan of one request; throughput: every flow of many requests over the "
                  "devices (docs/throughput.md)")
      ->check(CLI::IsMember({"latency", "throughput"}))
      ->capture_default_str();
  cmd->callback([state, exit_code] {
    state->execute();
    *exit_code = 0;
  });
}
