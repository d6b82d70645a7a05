// `hetsched simulate` (see simulate_command.h).
#include "simulate_command.h"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_common.h"
#include "hetsched/error.h"
#include "hetsched/plan.h"
#include "hetsched/scheduler.h"
#include "hetsched/session.h"
#include "hetsched/trace.h"
#include "sim/simulator.h"

namespace {

using namespace hetsched;

struct SimulateOptions {
  cli::ModelOptions model;  // with --scheduler, --plan and --db
  uint64_t seed = 0;
  bool no_interference = false;
  std::string trace_path;
  std::string json_path;
};

constexpr CostSource kSources[] = {CostSource::kMeasured, CostSource::kMeasuredSum, CostSource::kRoofline,
                                   CostSource::kLink, CostSource::kFree};

void print_result(const SimulateOptions& o, const Graph& graph, const Plan& plan, const SimResult& result) {
  fmt::print("model: {} ({} nodes, {:.2f} GFLOPs)\n", o.model.model, graph.nodes.size(), graph.total_flops() / 1e9);
  fmt::print("plan: {} ({} lanes, {} launches, {} copies)\n", plan.scheduler, plan.lanes.size(), plan.n_launches(),
             plan.n_copies());
  fmt::print("predicted makespan: {:.3f} ms (simulated)\n", result.makespan_us / 1e3);
  if (o.no_interference) fmt::print("interference: off\n");
  if (plan.predicted_ms >= 0) fmt::print("scheduler's own prediction: {:.3f} ms\n", plan.predicted_ms);
  size_t width = 0;
  for (const auto& name : plan.devices) width = std::max(width, name.size());
  fmt::print("device utilisation:\n");
  for (size_t d = 0; d < plan.devices.size(); ++d)
    fmt::print("  {:<{}}  busy {:.3f} ms  {:5.1f}%\n", plan.devices[d], width, result.busy_us[d] / 1e3,
               100.0 * result.utilisation[d]);
  std::string estimates;
  for (CostSource source : kSources) {
    int n = result.n_estimates[static_cast<int>(source)];
    if (n > 0) estimates += fmt::format("{}{} {}", estimates.empty() ? "" : ", ", cost_source_name(source), n);
  }
  fmt::print("estimates: {}\n", estimates.empty() ? "none" : estimates);
}

void write_json(const SimulateOptions& o, const Plan& plan, const SimResult& result) {
  nlohmann::json devices = nlohmann::json::array();
  for (size_t d = 0; d < plan.devices.size(); ++d)
    devices.push_back(
        {{"name", plan.devices[d]}, {"busy_ms", result.busy_us[d] / 1e3}, {"utilisation", result.utilisation[d]}});
  nlohmann::json estimates = nlohmann::json::object();
  for (CostSource source : kSources) estimates[cost_source_name(source)] = result.n_estimates[static_cast<int>(source)];
  nlohmann::json j = {{"model", o.model.model},
                      {"scheduler", plan.scheduler},
                      {"predicted_ms", result.makespan_us / 1e3},
                      {"interference", !o.no_interference},
                      {"devices", devices},
                      {"estimates", estimates}};
  std::ofstream out(o.json_path);
  if (!out) throw Error(ErrorCode::kIo, fmt::format("{}: cannot open for writing", o.json_path));
  out << j.dump(2) << "\n";
  if (!out) throw Error(ErrorCode::kIo, fmt::format("{}: write failed", o.json_path));
}

void execute(const SimulateOptions& o, bool scheduler_given) {
  if (scheduler_given && !o.model.plan.empty())
    throw Error(ErrorCode::kUsage, "simulate: give either --scheduler NAME or --plan FILE, not both");
  Graph graph = cli::load_static_model(o.model, "simulate");
  Platform platform = cli::make_cli_platform(o.model, graph);
  std::shared_ptr<const CostModel> cost = cli::make_cli_cost_model(platform, o.model.db);

  Plan plan;
  if (!o.model.plan.empty()) {
    plan = read_plan_file(o.model.plan, graph);
  } else {
    ScheduleOptions schedule_options;
    schedule_options.seed = o.seed;
    plan = make_scheduler(o.model.scheduler)->schedule(graph, platform, *cost, schedule_options);
  }
  validate_plan(plan, graph, platform);

  SimOptions options;
  options.interference = !o.no_interference;
  SimResult result = simulate(plan, graph, platform, *cost, options);

  print_result(o, graph, plan, result);
  if (!o.trace_path.empty()) {
    write_chrome_trace(result.trace, o.trace_path);
    fmt::print("trace written to {}\n", o.trace_path);
  }
  if (!o.json_path.empty()) write_json(o, plan, result);
}

}  // namespace

void add_simulate_command(CLI::App& app, int* exit_code) {
  auto options = std::make_shared<SimulateOptions>();
  auto* cmd = app.add_subcommand("simulate", "predict a plan's makespan and device utilisation without running it");
  options->model.add_to(cmd);
  options->model.add_plan_options(cmd);
  cmd->add_option("--seed", options->seed, "seed for randomised schedulers")->capture_default_str();
  cmd->add_flag("--no-interference", options->no_interference,
                "ignore the slowdown of kernels sharing compute or memory bandwidth");
  cmd->add_option("--trace", options->trace_path, "write the predicted timeline as a Chrome trace to this file");
  cmd->add_option("--json", options->json_path, "write the prediction as JSON to this file");
  cmd->callback([options, exit_code, cmd] {
    execute(*options, cmd->count("--scheduler") > 0);
    *exit_code = 0;
  });
}
