// List scheduling on an abstract task graph: HEFT and PEFT, as published,
// so that they can be checked against the papers' examples; and the glue
// that turns a model graph into such a task graph and a schedule back into a
// Plan (used by the "heft" and "peft" schedulers, src/sched/heft.cpp and
// src/sched/peft.cpp).
//
// Model: n_tasks tasks form a DAG; task t runs on processor p for
// cost[t][p] (+infinity: p cannot run t); each edge carries one
// communication time, paid when its two ends are on different processors
// and free on one processor. A processor runs one task at a time. Both
// algorithms place tasks one by one with the insertion-based policy: a task
// may start in an idle gap between tasks already on a processor, as early as
// its inputs have arrived, if the gap is long enough.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "hetsched/cost_model.h"
#include "hetsched/graph.h"
#include "hetsched/platform.h"
#include "plan/plan_builder.h"

namespace hetsched {

struct TaskGraph {
  int n_tasks = 0;
  int n_procs = 0;
  std::vector<std::vector<double>> cost;  // [task][proc], +inf = cannot run
  // task -> (successor, communication time when on different processors)
  std::vector<std::vector<std::pair<int, double>>> succ;
  // false (the papers): communication is a delay between processors, the
  // successor may start once its data have arrived. true (hetsched's plans,
  // where a Copy or hand-over runs on the reader's lane): the successor's
  // processor spends that time itself, so its duration on a processor is its
  // cost plus the communication times of its inputs from other processors,
  // and it may start once its predecessors have finished.
  bool receiver_pays_communication = false;
};

struct TaskSchedule {
  std::vector<int> proc;             // [task]
  std::vector<double> start, finish;  // [task]
  double makespan = 0;
  std::vector<int> order;  // tasks in scheduling order (a topological order)
  std::vector<double> rank;  // [task]: the priority the algorithm ranked it by
  // [task][proc]: the finish time the task would have had on each processor
  // when it was placed (+inf where the processor cannot run it).
  std::vector<std::vector<double>> eft;
  // [task][proc]: what the processor choice added to the finish time (PEFT:
  // the optimistic cost table); empty for HEFT, which minimises eft alone.
  std::vector<std::vector<double>> lookahead;
};

// Throws ErrorCode::kUsage, naming `algorithm`, for a malformed task graph
// (sizes, an edge to an unknown task, a negative or NaN cost, an infinite or
// negative communication time) and ErrorCode::kUnsupported for a task no
// processor can run.
void check_task_graph(const TaskGraph& graph, const char* algorithm);

// A topological order of the tasks, the lowest-numbered ready task first (so
// the task numbering itself wherever that is topological); a cycle is
// ErrorCode::kUsage naming `algorithm`. Expects check_task_graph() passed.
std::vector<int> topological_order(const TaskGraph& graph, const char* algorithm);

// Topcuoglu, Hariri & Wu 2002: rank_u(t) = mean cost of t + max over
// successors s of (comm(t, s) + rank_u(s)), the mean over the processors
// that can run t; tasks in decreasing rank_u (ties: topological order), each
// on the processor where it finishes first (ties: the lowest index).
// Throws ErrorCode::kUsage for malformed input (sizes, an edge to an
// unknown task, a negative cost, a cycle) and ErrorCode::kUnsupported for a
// task no processor can run.
TaskSchedule heft(const TaskGraph& graph);

// Arabnejad & Barbosa 2014: OCT(t, p) = max over successors s of min over
// processors q of (OCT(s, q) + cost(s, q) + (q == p ? 0 : comm(t, s))),
// 0 for exit tasks; rank_oct(t) = mean of OCT(t, p) over all processors.
// The ready task with the highest rank_oct (ties: topological order) goes
// on the processor minimising EFT + OCT (ties: the lowest index). Throws as
// heft() does.
TaskSchedule peft(const TaskGraph& graph);

// A model graph as a task graph: one task per launch unit (by default the
// fusion units of plan_builder.h), in topological order, with
// receiver_pays_communication set.
struct UnitTaskGraph {
  std::vector<std::vector<NodeId>> units;  // [task]
  TaskGraph tasks;
  // Set by the caller when the units are not plain fusion units (a partition
  // pass such as onchip_partition.h made them): `units_note` goes into the
  // plan's notes, unit_notes[task] (when non-empty) at the end of the
  // placement reason of the task's nodes. Empty: fusion units.
  std::string units_note;
  std::vector<std::string> unit_notes;
};

// cost[t][p] = cost.launch(unit t, device p) (+inf when the device does not
// run one of its nodes); one edge per pair of units where the second reads
// values the first produces, its communication time the sum over those
// values of the mean of cost.transfer() over ordered pairs of distinct
// devices (the abstract model has one time per edge; HEFT ranks by this mean
// too). Pairs of devices with no link are left out of the mean. A unit
// reading graph inputs also pays, on a device outside host memory, for
// copying them there (cost.transfer from a host device; the mean link time
// when the platform has no device in host memory). A unit no device runs is
// ErrorCode::kUnsupported naming its node. `units`: the launch units, every
// node exactly once, listed in a topological order of their contraction
// (launch_units_from_params() in onchip_partition.h gives such); empty =
// fusion_units(graph); units missing a node or holding one twice are
// ErrorCode::kUsage (a scheduler bug).
UnitTaskGraph build_unit_task_graph(const Graph& graph, const Platform& platform, const CostModel& cost,
                                    const std::string& scheduler, std::vector<std::vector<NodeId>> units = {});

// The schedule as a Plan: one launch per unit on stream 0 of its processor,
// in order of start time (ties: scheduling order, so the order stays
// topological), each placement's reason giving the finish time (and the
// lookahead, if any) on the chosen device and on the others, e.g.
// "heft: earliest finish 3.200 ms on cpu:1 (cpu:0 would finish at 3.900 ms)";
// a schedule without eft (not built task by task, e.g. optimal_schedule())
// gives the unit's start and finish and the makespan instead;
// predicted_ms = makespan / 1000. When one device alone would finish sooner
// under the same task graph (the sum of its costs), the plan is every unit
// on that device instead, saying so in the reasons and notes. The problem's
// units_note and unit_notes (what made the units) are added to the notes and
// reasons.
Plan plan_from_task_schedule(const Graph& graph, const Platform& platform, const UnitTaskGraph& problem,
                             const TaskSchedule& schedule, const std::string& scheduler);

}  // namespace hetsched
