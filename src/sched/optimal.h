// The exact minimum makespan of a task graph (list_scheduling.h's model) as a
// mixed-integer linear program solved by CBC, and the "optimal" scheduler
// built on it (src/sched/optimal.cpp).
//
// The search is exponential in the worst case: it is meant for small graphs
// (tens of tasks), as a yardstick for the heuristics, and stops at a time
// limit with the best schedule found and a proven lower bound.
#pragma once

#include "sched/list_scheduling.h"

namespace hetsched {

struct OptimalOptions {
  // Wall-clock limit for the whole call, in seconds (> 0). The solver stops
  // there and the best schedule found so far is returned.
  double time_limit_s = 10;
  // A schedule of the same graph to start from (proc and start are read:
  // each task's processor, and on each processor the tasks in order of
  // start), besides HEFT's and the single-processor ones; nullptr for none.
  const TaskSchedule* incumbent = nullptr;
};

struct OptimalResult {
  // proc, start, finish, makespan and order (tasks by start, a topological
  // order) are filled; rank, eft and lookahead are empty. Each task starts
  // as early as its inputs and its processor allow, given the processors'
  // task sequences.
  TaskSchedule schedule;
  // No schedule is shorter (up to a relative 1e-7 of the starting
  // schedule's makespan, the solver's tolerance).
  bool proved_optimal = false;
  // No schedule is shorter than this; equal to the makespan when proved.
  double lower_bound = 0;
  double seconds = 0;  // wall-clock time of the call
};

// Minimises the makespan of `graph` under either communication model
// (TaskGraph::receiver_pays_communication). The result is never longer
// than HEFT's schedule, the incumbent's (re-timed as above) or every task
// on one processor in topological order. Throws as heft() does for a
// malformed graph, and ErrorCode::kUsage for a time limit that is not > 0
// or an incumbent of the wrong size or with a task on a processor that
// cannot run it. Solves are serialised across threads (the solver's driver
// is not reentrant).
OptimalResult optimal_schedule(const TaskGraph& graph, const OptimalOptions& options);

}  // namespace hetsched
