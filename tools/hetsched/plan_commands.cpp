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
#include "hetsched/plan.h"
#include "hetsched/scheduler.h"
#include "hetsched/session.h"

namespace {

using namespace hetsched;
using hetsched::cli::ModelOptions;
using hetsched::cli::print_table;

std::string format_bytes(double bytes) {
  if (bytes >= 1 << 30) return fmt::format("{:.2f} GiB", bytes / (1 << 30));
  if (bytes >= 1 << 20) return fmt::format("{:.1f} MiB", bytes / (1 << 20));
  if (bytes >= 1 << 10) return fmt::format("{:.1f} KiB", bytes / (1 << 10));
  return fmt::format("{:.0f} B", bytes);
}

std::string percent(double part, double whole) {
  return whole > 0 ? fmt::format("{:.1f}%", 100.0 * part / whole) : "-";
}

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

std::string devices_used(const Plan& plan) {
  std::vector<std::string> used;
  for (const Lane& lane : plan.lanes) {
    const std::string& name = plan.devices[lane.device];
    if (std::find(used.begin(), used.end(), name) == used.end()) used.push_back(name);
  }
  return fmt::format("{} device{} ({})", used.size(), used.size() == 1 ? "" : "s", fmt::join(used, ", "));
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
    cmd->add_option("--db", db, "profile database for the cost model (default: the per-user cache)");
    cmd->add_option("--seed", seed, "seed for randomised schedulers")->capture_default_str();
    cmd->add_option("--sched-param", params, "scheduler parameter KEY=VALUE, e.g. device=cpu:1 (repeatable)");
    cmd->add_option("-o,--output", output, "the plan file to write (JSON)")->required();
    return cmd;
  }

  int execute() {
    using Clock = std::chrono::steady_clock;
    ScheduleOptions options;
    options.seed = seed;
    options.params = parse_scheduler_params(params);
    std::unique_ptr<Scheduler> algorithm = make_scheduler(scheduler);
    Graph graph = load_model(model.model, model.load_options());
    Platform platform = cli::make_cli_platform(model);
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
    cmd->add_option("--db", db, "profile database for the cost estimates (default: the per-user cache)");
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

    print_overview(plan, graph, model_name);
    print_devices(plan, graph);
    print_lanes(plan, graph, platform, *cost);
    print_nodes(plan, graph);
    print_memory(plan, graph, platform);
    if (!plan.notes.empty()) {
      fmt::print("\nnotes:\n");
      for (const auto& note : plan.notes) fmt::print("  {}\n", note);
    }
    return 0;
  }

  static void print_overview(const Plan& plan, const Graph& graph, const std::string& model_name) {
    int n_waits = 0;
    double copy_bytes = 0;
    for (const Lane& lane : plan.lanes)
      for (const PlanStep& step : lane.steps) {
        if (step.kind == StepKind::kWait) ++n_waits;
        if (step.kind == StepKind::kCopy) copy_bytes += graph.values[step.value].nbytes();
      }
    fmt::print("plan '{}' for {} ({} nodes, {:.3f} GFLOPs)\n", plan.scheduler, model_name, graph.nodes.size(),
               graph.total_flops() / 1e9);
    fmt::print("  {} lane{} on {}\n", plan.lanes.size(), plan.lanes.size() == 1 ? "" : "s", devices_used(plan));
    fmt::print("  {} launches, {} copies ({}), {} events ({} waits)\n", plan.n_launches(), plan.n_copies(),
               format_bytes(copy_bytes), plan.n_events, n_waits);
    if (plan.predicted_ms >= 0) fmt::print("  predicted by the scheduler: {:.3f} ms\n", plan.predicted_ms);
  }

  static void print_devices(const Plan& plan, const Graph& graph) {
    size_t n = plan.devices.size();
    std::vector<int> lanes(n, 0), launches(n, 0), nodes(n, 0);
    std::vector<double> flops(n, 0);
    for (const Lane& lane : plan.lanes) {
      ++lanes[lane.device];
      for (const PlanStep& step : lane.steps) {
        if (step.kind != StepKind::kLaunch) continue;
        ++launches[lane.device];
        for (NodeId id : step.nodes) {
          ++nodes[lane.device];
          flops[lane.device] += graph.nodes[id].cost.flops;
        }
      }
    }
    double total_flops = graph.total_flops();
    std::vector<std::vector<std::string>> rows = {{"device", "lanes", "launches", "share", "nodes", "GFLOPs", "share"}};
    for (size_t d = 0; d < n; ++d)
      rows.push_back({plan.devices[d], std::to_string(lanes[d]), std::to_string(launches[d]),
                      percent(launches[d], plan.n_launches()), std::to_string(nodes[d]),
                      fmt::format("{:.3f}", flops[d] / 1e9), percent(flops[d], total_flops)});
    fmt::print("\ndevices:\n");
    print_table(rows, {false, true, true, true, true, true, true});
  }

  // "Conv+Relu" for a few nodes; "40 nodes: Conv x20, Relu x18, ..." for many.
  static std::string launch_ops(const PlanStep& step, const Graph& graph) {
    if (step.nodes.size() <= 4) {
      std::vector<std::string> ops;
      for (NodeId id : step.nodes) ops.push_back(graph.nodes[id].op_type);
      return fmt::format("{}", fmt::join(ops, "+"));
    }
    std::map<std::string, int> counts;
    for (NodeId id : step.nodes) ++counts[graph.nodes[id].op_type];
    std::vector<std::pair<int, std::string>> sorted;
    for (const auto& [op, count] : counts) sorted.emplace_back(-count, op);
    std::sort(sorted.begin(), sorted.end());
    std::vector<std::string> parts;
    for (size_t i = 0; i < sorted.size() && i < 3; ++i)
      parts.push_back(fmt::format("{} x{}", sorted[i].second, -sorted[i].first));
    if (sorted.size() > 3) parts.push_back("...");
    return fmt::format("{} nodes: {}", step.nodes.size(), fmt::join(parts, ", "));
  }

  static std::string launch_names(const PlanStep& step, const Graph& graph) {
    std::vector<std::string> names;
    for (size_t i = 0; i < step.nodes.size() && i < 3; ++i) names.push_back(graph.nodes[step.nodes[i]].name);
    std::string out = fmt::format("{}", fmt::join(names, ", "));
    if (step.nodes.size() > 3) out += fmt::format(" +{} more", step.nodes.size() - 3);
    return out;
  }

  // "1.234 ms measured": the cost model's estimate and where it came from.
  static std::string estimate_text(const Estimate& e) {
    return fmt::format("{:.3f} ms {}", e.us / 1e3, cost_source_name(e.source));
  }

  static void print_lanes(const Plan& plan, const Graph& graph, const Platform& platform, const CostModel& cost) {
    std::map<std::string, int> sources;  // estimates by source
    std::map<int, std::pair<int, int>> recorded_at;  // event -> (lane, step)
    for (size_t l = 0; l < plan.lanes.size(); ++l)
      for (size_t s = 0; s < plan.lanes[l].steps.size(); ++s)
        if (plan.lanes[l].steps[s].kind == StepKind::kRecord)
          recorded_at[plan.lanes[l].steps[s].event] = {static_cast<int>(l), static_cast<int>(s)};
    for (size_t l = 0; l < plan.lanes.size(); ++l) {
      const Lane& lane = plan.lanes[l];
      fmt::print("\nlane {}: {} stream {}, {} steps\n", l, plan.devices[lane.device], lane.stream, lane.steps.size());
      const PlatformDevice& device = platform.devices[platform.find_device(plan.devices[lane.device])];
      std::vector<std::vector<std::string>> rows = {{"step", "kind", "what", "estimate", "detail"}};
      for (size_t s = 0; s < lane.steps.size(); ++s) {
        const PlanStep& step = lane.steps[s];
        std::string what, estimate, detail;
        switch (step.kind) {
          case StepKind::kLaunch: {
            what = launch_ops(step, graph);
            Estimate e = cost.launch(graph, step.nodes, device);
            estimate = estimate_text(e);
            ++sources[cost_source_name(e.source)];
            detail = launch_names(step, graph);
            break;
          }
          case StepKind::kCopy: {
            what = fmt::format("'{}' {}->{}", graph.values[step.value].name, step.from_space, step.to_space);
            const Link* link = platform.link(step.from_space, step.to_space);
            if (link) {
              double bytes = graph.values[step.value].nbytes();
              estimate = fmt::format("{:.3f} ms link", (link->latency_us + bytes / (link->bandwidth_gbps * 1e3)) / 1e3);
              ++sources["link"];
            }
            detail = format_bytes(graph.values[step.value].nbytes());
            break;
          }
          case StepKind::kRecord: what = fmt::format("e{}", step.event); break;
          case StepKind::kWait: {
            what = fmt::format("e{}", step.event);
            auto at = recorded_at[step.event];
            detail = fmt::format("recorded at lane {} step {}", at.first, at.second);
            break;
          }
        }
        rows.push_back({std::to_string(s), step_kind_name(step.kind), what, estimate, detail});
      }
      print_table(rows, {true, false, false, true, false});
    }
    std::vector<std::string> counts;
    for (const auto& [source, n] : sources) counts.push_back(fmt::format("{} {}", source, n));
    fmt::print("\nestimates by source: {}\n", fmt::join(counts, ", "));
  }

  static void print_nodes(const Plan& plan, const Graph& graph) {
    fmt::print("\nnodes:\n");
    std::vector<std::vector<std::string>> rows = {{"node", "op", "device", "lane", "reason"}};
    for (size_t i = 0; i < graph.nodes.size(); ++i) {
      const Placement& p = plan.placement[i];
      rows.push_back({graph.nodes[i].name, graph.nodes[i].op_type, p.device >= 0 ? plan.devices[p.device] : "-",
                      p.lane >= 0 ? std::to_string(p.lane) : "-", p.reason});
    }
    print_table(rows, {false, false, false, true, false});
  }

  static void print_memory(const Plan& plan, const Graph& graph, const Platform& platform) {
    MemoryPlan memory = plan_memory(plan, graph, platform);
    fmt::print("\nmemory: values crossing lanes or memory spaces, held for the whole run:\n");
    std::vector<std::vector<std::string>> rows = {{"space", "values", "bytes"}};
    for (const auto& space : memory.spaces)
      rows.push_back({space.name, std::to_string(space.n_values), format_bytes(static_cast<double>(space.bytes))});
    print_table(rows, {false, true, true});
    std::vector<std::string> local;
    for (size_t l = 0; l < memory.lane_local.size(); ++l)
      local.push_back(fmt::format("lane {}: {}", l, memory.lane_local[l]));
    fmt::print("  lane-local values (memory reused after their last read): {}\n", fmt::join(local, ", "));
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
