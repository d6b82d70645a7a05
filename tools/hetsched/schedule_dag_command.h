// `hetsched schedule-dag DAG.json --scheduler NAME [--json FILE]`: schedules
// an abstract task graph in the format of scheduling papers
// (sched/task_graph_io.h) and prints each task's device and times, then
// `makespan X`.
#pragma once

namespace CLI {
class App;
}

// Adds the `schedule-dag` subcommand to app; its callback sets *exit_code
// (0) on success; failures are thrown as hetsched::Error. exit_code must
// outlive app's parsing.
void add_schedule_dag_command(CLI::App& app, int* exit_code);
