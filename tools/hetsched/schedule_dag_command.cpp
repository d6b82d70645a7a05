// `hetsched schedule-dag` (see schedule_dag_command.h).
#include "schedule_dag_command.h"

#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_common.h"
#include "hetsched/error.h"
#include "sched/list_scheduling.h"
#include "sched/optimal.h"
#include "sched/task_graph_io.h"

namespace {

using namespace hetsched;

struct DagResult {
  TaskSchedule schedule;
  std::string note;  // e.g. whether optimality was proved
};
using DagScheduler = std::function<DagResult(const TaskGraph&, double time_limit_s)>;

// The schedulers that work on abstract task graphs.
const std::map<std::string, DagScheduler>& dag_schedulers() {
  static const std::map<std::string, DagScheduler> schedulers = {
      {"heft", [](const TaskGraph& g, double) { return DagResult{heft(g), ""}; }},
      {"peft", [](const TaskGraph& g, double) { return DagResult{peft(g), ""}; }},
      {"optimal",
       [](const TaskGraph& g, double time_limit_s) {
         OptimalOptions options;
         options.time_limit_s = time_limit_s;
         OptimalResult r = optimal_schedule(g, options);
         std::string note = r.proved_optimal ? "proved optimal"
                                             : fmt::format("time limit reached after {:.1f} s; lower bound {:g}",
                                                           r.seconds, r.lower_bound);
         return DagResult{std::move(r.schedule), note};
       }},
  };
  return schedulers;
}

struct ScheduleDagCommand {
  std::string path;
  std::string scheduler = "heft";
  std::string json_path;
  double time_limit_s = 10;

  void execute() {
    const auto& known = dag_schedulers();
    auto it = known.find(scheduler);
    if (it == known.end()) {
      std::vector<std::string> names;
      for (const auto& [name, fn] : known) names.push_back(name);
      throw Error(ErrorCode::kUsage, fmt::format("schedule-dag: unknown scheduler '{}' (task-graph schedulers: {})",
                                                 scheduler, fmt::join(names, ", ")));
    }
    NamedTaskGraph dag = read_task_graph_file(path);
    DagResult result = it->second(dag.graph, time_limit_s);
    const TaskSchedule& schedule = result.schedule;

    fmt::print("{}: {} tasks on {} devices, scheduler {}\n", path, dag.graph.n_tasks, dag.graph.n_procs, scheduler);
    std::vector<std::vector<std::string>> rows = {{"task", "device", "start", "finish"}};
    for (int t : schedule.order)
      rows.push_back({dag.task_ids[t], dag.devices[schedule.proc[t]], fmt::format("{:g}", schedule.start[t]),
                      fmt::format("{:g}", schedule.finish[t])});
    cli::print_table(rows, {false, false, true, true});
    if (!result.note.empty()) fmt::print("{}\n", result.note);
    fmt::print("makespan {:g}\n", schedule.makespan);
    if (!json_path.empty()) write_json(dag, result);
  }

  void write_json(const NamedTaskGraph& dag, const DagResult& result) const {
    const TaskSchedule& schedule = result.schedule;
    nlohmann::json tasks = nlohmann::json::array();
    for (int t : schedule.order)
      tasks.push_back({{"id", dag.task_ids[t]},
                       {"device", dag.devices[schedule.proc[t]]},
                       {"start", schedule.start[t]},
                       {"finish", schedule.finish[t]}});
    nlohmann::json j = {{"scheduler", scheduler}, {"makespan", schedule.makespan}, {"tasks", tasks}};
    if (!result.note.empty()) j["note"] = result.note;
    std::ofstream out(json_path);
    if (!out) throw Error(ErrorCode::kIo, fmt::format("{}: cannot open for writing", json_path));
    out << j.dump(2) << "\n";
    if (!out) throw Error(ErrorCode::kIo, fmt::format("{}: write failed", json_path));
  }
};

}  // namespace

void add_schedule_dag_command(CLI::App& app, int* exit_code) {
  auto state = std::make_shared<ScheduleDagCommand>();
  auto* cmd = app.add_subcommand("schedule-dag",
                                 "schedule an abstract task graph (JSON: devices, tasks with a cost per device, edges)");
  cmd->add_option("dag", state->path, "the task graph file (see docs/schedulers.md)")->required();
  cmd->add_option("--scheduler", state->scheduler, "heft, peft or optimal")->capture_default_str();
  cmd->add_option("--time-limit", state->time_limit_s, "seconds the optimal scheduler may search")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--json", state->json_path, "write the schedule as JSON to this file");
  cmd->callback([state, exit_code] {
    state->execute();
    *exit_code = 0;
  });
}
