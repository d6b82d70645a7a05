// `hetsched plan` and `hetsched explain` (see plan_commands.h).
#include "plan_commands.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_common.h"
#include "hetsched/explain.h"
#include "report/text_table.h"
#include "hetsched/plan.h"
#include "hetsched/scheduler.h"
#include "hetsched/session.h"

namespace {

using namespace hetsched;
using hetsched::cli::ModelOptions;

std::map<std::string, std::string> parse_scheduler_params(const std::vector<std::string>& params) {
  std::map<std::string, std::string> out;
  for (const auto& p : params) {
    auto eq = p.find('=');
    if (eq == std::string::npos || eq == 0)
      throw Error(ErrorCode::kUsage, fmt::format("--sched-param '{}': expected KEY=VALUE", p));
    out[p.substr(0, eq)] = p.substr(eq + 1);
  }
  return out;
}

// ---------------------------------------------------------------- plan

struct PlanCommand {
  ModelOptions model;
  std::string scheduler = "sequential";
  std::string db;
  uint64_t seed = 0;
  std::vector<std::string> params;
  std::string output;

  CLI::App* add_to(CLI::App& app) {
    auto* cmd = app.add_subcommand("plan", "run a scheduler and write its plan (see docs/plans.md, docs/schedulers.md)");
    model.add_to(cmd);
    std::vector<std::string> known;
    for (const auto& [name, summary] : scheduler_names()) known.push_back(name);
    cmd->add_option("--scheduler", scheduler, fmt::format("scheduler: {}", fmt::join(known, ", ")))
        ->capture_default_str();
    ModelOptions::add_db_option(cmd, db);
    cmd->add_option("--seed", seed, "seed for randomised schedulers")->capture_default_str();
    cmd->add_option("--sched-param", params, "scheduler parameter KEY=VALUE, e.g. device=cpu:1 (repeatable)");
    cmd->add_option("-o,--output", output, "the plan file to write (JSON)")->required();
    model.add_pin_option(cmd);
    return cmd;
  }

  int execute() {
    using Clock = std::chrono::steady_clock;
    ScheduleOptions options;
    options.seed = seed;
    options.params = parse_scheduler_params(params);
    std::unique_ptr<Scheduler> algorithm = make_scheduler(scheduler);
    Graph graph = cli::load_static_model(model, "plan");
    Platform platform = cli::make_cli_platform(model, graph);
    std::shared_ptr<const CostModel> cost = cli::make_cli_cost_model(platform, db);

    auto start = Clock::now();
    Plan plan = algorithm->schedule(graph, platform, *cost, options);
    double plan_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    validate_plan(plan, graph, platform);
    write_plan_file(plan, graph, output);

    std::string predicted = plan.predicted_ms >= 0 ? fmt::format("predicted {:.2f} ms", plan.predicted_ms)
                                                   : std::string("no prediction");
    fmt::print("plan '{}' for {}: {} launches, {} copies, {} events on {}; {}; planned in {:.1f} ms -> {}\n",
               plan.scheduler, model.model, plan.n_launches(), plan.n_copies(), plan.n_events, devices_used(plan),
               predicted, plan_ms, output);
    return 0;
  }
};

// ---------------------------------------------------------------- explain

struct ExplainCommand {
  std::string plan_path;
  ModelOptions model;  // model left empty: the plan's own
  std::string devices;
  std::string db;

  CLI::App* add_to(CLI::App& app) {
    auto* cmd = app.add_subcommand("explain", "show what a plan runs where, and why");
    cmd->add_option("plan", plan_path, "a plan file written by `hetsched plan`")->required();
    cmd->add_option("model", model.model,
                    "the model the plan was made for (default: the plan's \"model\" when it is zoo:NAME or a file)");
    cmd->add_option("--devices", devices, "the devices the plan runs on (default: the plan's)");
    cmd->add_option("--platform", model.platform, "the platform file the plan was made with, if any");
    cmd->add_option("--shape", model.shapes, "fix a free input dim: NAME=1x3x224x224, as given to `plan` (repeatable)");
    cmd->add_option("--param", model.params, "zoo model parameter KEY=VALUE, as given to `plan` (repeatable)");
    cmd->add_flag("--no-optimize", model.no_optimize, "the model was planned without load-time optimisations");
    ModelOptions::add_db_option(cmd, db);
    return cmd;
  }

  int execute() {
    std::ifstream in(plan_path, std::ios::binary);
    if (!in) throw Error(ErrorCode::kIo, fmt::format("{}: cannot read the plan file", plan_path));
    std::stringstream buffer;
    buffer << in.rdbuf();
    std::string text = buffer.str();

    // The model and devices are needed before the plan can be parsed
    // against the graph; the full check comes with plan_from_json.
    nlohmann::json head = nlohmann::json::parse(text, nullptr, false);
    std::vector<std::string> plan_devices;
    std::string plan_model;
    if (head.is_object()) {
      if (head.contains("model") && head["model"].is_string()) plan_model = head["model"].get<std::string>();
      if (head.contains("devices") && head["devices"].is_array())
        for (const auto& d : head["devices"])
          if (d.is_string()) plan_devices.push_back(d.get<std::string>());
    }
    std::string model_name = model.model;
    if (model_name.empty()) {
      if (plan_model.rfind("zoo:", 0) != 0 && !std::filesystem::exists(plan_model))
        throw Error(ErrorCode::kUsage,
                    fmt::format("explain {}: give the model: the plan's model '{}' is neither zoo:NAME nor an "
                                "existing file",
                                plan_path, plan_model));
      model_name = plan_model;
    }
    Graph graph = load_model(model_name, model.load_options());
    Plan plan = plan_from_json(text, graph, plan_path);

    std::string spec = devices.empty() ? fmt::format("{}", fmt::join(plan.devices, ",")) : devices;
    if (model.platform.empty() && spec.find("emu:") != std::string::npos)
      throw Error(ErrorCode::kUsage, fmt::format("explain {}: the plan uses emulated devices ({}): give the "
                                                 "--platform file it was made with",
                                                 plan_path, spec));
    Platform platform = make_platform(spec, model.platform);
    validate_plan(plan, graph, platform);
    auto cost = cli::make_cli_cost_model(platform, db);

    fmt::print("{}", explain_plan(plan, graph, platform, *cost, model_name));
    return 0;
  }
};

}  // namespace

void add_plan_commands(CLI::App& app, int* exit_code) {
  // CLI11 writes the options into the commands while parsing; the
  // callbacks, held by `app`, keep them alive for as long as that.
  auto plan = std::make_shared<PlanCommand>();
  plan->add_to(app)->callback([plan, exit_code] { *exit_code = plan->execute(); });
  auto explain = std::make_shared<ExplainCommand>();
  explain->add_to(app)->callback([explain, exit_code] { *exit_code = explain->execute(); });
}
