// IOS (Ding, Zhu, Jia, Pekhimenko & Han, "IOS: Inter-Operator Scheduler
// for CNN Acceleration", MLSys 2021): the parts of the "ios" scheduler
// (src/sched/ios.cpp) that tests check directly — the stage model, the
// dynamic program over endings and the split at cut units.
//
// The problem: the fusion units of a graph on ONE device with several
// streams. A schedule is a sequence of stages; a stage is either
//   - concurrent: its units split into groups, the weakly connected
//     components of the stage's own subgraph; each group runs one unit after
//     another on one stream, the groups on different streams, all at once;
//   - merge: Conv units reading the same input with the same attributes and
//     epilogue (conv_merge_key), run as ONE launch that the cost model
//     charges as IOS's wider convolution (one roofline over all of them,
//     the shared input read once), though the CPU backend runs each
//     convolution as its own kernel, each paying its launch overhead.
// IOS's search: cost[S] for S a set of units closed under predecessors (what
// has run after some stages) is the least over the endings E of S (E closed
// under successors within S; E is S's last stage) of cost[S - E] +
// latency(E); cost[{}] = 0 and the optimum is cost[all units]. Pruning: at
// most `r` units per group and `s` groups per stage (and a concurrent stage's
// groups cannot outnumber the device's streams).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hetsched/cost_model.h"
#include "hetsched/graph.h"
#include "hetsched/platform.h"
#include "hetsched/scheduler.h"

namespace hetsched::ios {

struct Options {
  int r = 3;  // most units in one group
  int s = 8;  // most groups in one stage
  // Most endings the dynamic program may enumerate in one block (each state
  // and each candidate stage examined from it counts one); past it, that
  // block's stages are chosen greedily.
  int64_t max_states = 500000;
};

// Reads r and s and max_states from the scheduler's parameters (device is
// read by pick_stream_device, stream_device.h); an
// unknown parameter or a value that is not a positive integer is
// ErrorCode::kUsage naming the parameter and what was expected.
Options parse_options(const ScheduleOptions& options);

// The units IOS schedules and what it knows about them on one device. The
// graph, platform and cost model must outlive it.
struct Problem {
  const Graph* graph = nullptr;
  const Platform* platform = nullptr;
  int device = 0;  // index into Platform::devices
  const CostModel* cost = nullptr;
  Options options;
  int max_groups = 1;  // of a concurrent stage: min(s, the device's streams)

  std::vector<std::vector<NodeId>> units;  // fusion units, topological order
  std::vector<std::vector<int>> preds, succs;  // unit DAG: sorted, no repeats
  std::vector<double> alone_us;                // cost.launch() of each unit alone
  std::vector<ResourceDemand> demand;          // cost.demand() of each unit
  // Units with the same non-empty key can merge into one launch: Conv heads
  // reading the same value with equal attributes, weight shapes except the
  // output channels, and fused epilogue. "" = never merges.
  std::vector<std::string> merge_key;
  // Fraction of the device's SharedResource its memory traffic takes (as the
  // simulator computes it); 0 when it names none.
  double resource_share = 0;

  const PlatformDevice& platform_device() const { return platform->devices[device]; }
};

// Units, their DAG, costs and merge keys for `graph` on platform device
// `device`. Every node must run there.
Problem make_problem(const Graph& graph, const Platform& platform, int device, const CostModel& cost,
                     const Options& options);

enum class StageKind { kConcurrent, kMerge };

struct Stage {
  StageKind kind = StageKind::kConcurrent;
  // kConcurrent: the groups, each a list of unit indices in topological
  // order, ordered by their first unit. kMerge: one group, the merged units.
  std::vector<std::vector<int>> groups;
  double us = 0;  // the stage's latency
  double separate_us = 0;  // kMerge: what the best concurrent form would take (+inf when none is allowed)
};

// Latency of groups starting together, each running its units one after
// another on its own stream of the problem's device: the simulator's fluid
// model (every running launch slows by the largest oversubscription of the
// device's compute, its bandwidth or its SharedResource, recomputed whenever
// a launch starts or ends).
double concurrent_us(const Problem& problem, const std::vector<std::vector<int>>& groups);

// Latency of the units run as one merged launch.
double merged_us(const Problem& problem, const std::vector<int>& units);

// The faster allowed form of `units` (unit indices, no particular order) as
// one stage: concurrent when its components number at most max_groups and
// none has more than r units; merge when every unit has the same merge key
// and there are 2 to s of them. us = +infinity when neither is allowed.
Stage best_stage(const Problem& problem, std::vector<int> units);

// Units every other unit either precedes or follows: no stage of an optimal
// schedule needs to contain one together with other units (such a stage is a
// single group, as fast as its units one at a time), so the graph splits
// there into blocks solved one by one. In topological order.
std::vector<int> cut_units(const Problem& problem);

struct SearchResult {
  std::vector<Stage> stages;  // in execution order
  double total_us = 0;        // sum of the stages' latencies
  double one_stream_us = 0;   // every unit alone, one after another
  int n_blocks = 0;           // blocks of two or more units searched
  int n_cut_units = 0;
  int n_greedy_blocks = 0;    // blocks over max_states, scheduled greedily
  std::vector<std::string> greedy_blocks;  // "units 12..40 (29 units)"
  std::vector<bool> greedy_stage;          // per stage: chosen greedily
  int64_t n_states = 0;       // DP states (sets of units already run) visited
  int64_t n_candidates = 0;   // candidate last stages examined
  int64_t n_evaluated = 0;    // distinct stages whose latency was computed
  double search_ms = 0;       // wall-clock time of the search
};

// The dynamic program, block by block between cut units.
SearchResult search(const Problem& problem);

}  // namespace hetsched::ios
