// Plans: what runs where, on which stream, in which order.
//
// A Plan is data: schedulers produce it, the executor (runtime/executor.h)
// runs it for real and the simulator (sim/simulator.h) predicts it; both
// give it the same meaning:
//   - Each Lane is one (device, stream): its steps run one after another.
//   - Launch runs a set of nodes as one unit (a node, a fused group such as
//     Conv+Add+Relu, or a larger subgraph) on the lane's device. Its inputs
//     must be available in the device's memory space when it starts.
//   - Copy makes a value available in another memory space (over a Link).
//     Between devices sharing a memory space no Copy is needed: the
//     happens-before given by events is enough.
//   - Record(e) marks event e done once every earlier step of its lane has
//     finished; Wait(e) holds the lane until e is done. Every event is
//     recorded exactly once; any lane may wait on it, any number of times.
// A value may be read on a lane only after a step that produced it (same
// lane, earlier) or after a Wait on an event recorded after it was produced
// (another lane) — the validator proves this for every read, proves every
// node is launched exactly once, every graph output ends up in host memory,
// and that no set of Waits can deadlock.
//
// Equivalence contract: every valid plan produces the outputs of the
// sequential plan (tests/unit/test_executor.cpp checks randomised plans).
#pragma once

#include <string>
#include <vector>

#include "hetsched/graph.h"
#include "hetsched/platform.h"

namespace hetsched {

enum class StepKind { kLaunch, kCopy, kRecord, kWait };

const char* step_kind_name(StepKind kind);  // "launch", "copy", "record", "wait"

struct PlanStep {
  StepKind kind = StepKind::kLaunch;
  std::vector<NodeId> nodes;  // kLaunch: in topological order
  ValueId value = kNoValue;   // kCopy
  std::string from_space, to_space;  // kCopy
  int event = -1;             // kRecord, kWait
};

struct Lane {
  int device = 0;  // index into Plan::devices
  int stream = 0;  // < the device's n_streams
  std::vector<PlanStep> steps;
};

// Why a node is where it is, for `explain`.
struct Placement {
  int device = -1;
  int lane = -1;
  std::string reason;  // e.g. "earliest finish (2.1 ms vs 3.4 ms on cpu:1)", "only device running Gather"
};

struct Plan {
  std::string scheduler;
  std::string model;               // where the model came from (informational)
  std::string model_hash;          // graph_fingerprint() of the graph it was made for
  std::string platform_signature;  // Platform::signature() it was made for
  std::vector<std::string> devices;  // device names; Lane::device indexes this
  std::vector<Lane> lanes;
  int n_events = 0;
  std::vector<Placement> placement;  // indexed by NodeId
  double predicted_ms = -1;          // the scheduler's own prediction; -1 when none
  std::vector<std::string> notes;    // scheduler remarks shown by explain
  std::string source;                // the file it was read from, if any: named in validate_plan's errors

  int n_launches() const;
  int n_copies() const;
};

// The work a plan gives each of its devices (indexed as Plan::devices): its
// lanes, its launches, and the nodes and FLOPs of those launches. What
// `explain`, compare's JSON and the HTML report show as each device's share.
struct PlanDeviceWork {
  int lanes = 0, launches = 0, nodes = 0;
  double flops = 0;
};
std::vector<PlanDeviceWork> work_by_device(const Plan& plan, const Graph& graph);

// Hash (hex) of the graph's structure: node ops, attributes, connections,
// value names, dtypes and shapes (not weights). A plan made for one graph
// is refused for another.
std::string graph_fingerprint(const Graph& graph);

// JSON (see docs/plans.md): nodes and values are named, not numbered.
std::string plan_to_json(const Plan& plan, const Graph& graph);
// Parses a plan for `graph`; malformed JSON, unknown node or value names, or
// a model_hash other than the graph's are ErrorCode::kInvalidFile errors
// naming `source` (the file) and the field; the plan keeps `source`, so that
// validate_plan's errors name the file too.
Plan plan_from_json(const std::string& text, const Graph& graph, const std::string& source);
void write_plan_file(const Plan& plan, const Graph& graph, const std::string& path);
Plan read_plan_file(const std::string& path, const Graph& graph);

// Proves the plan runnable on `platform` (see the top of this file); throws
// ErrorCode::kInvalidFile naming the first problem: another platform, an
// unknown device or stream, a node launched twice or never, a node on a
// device that does not run its op (on a CUDA GPU: a node its kernel
// declines, with the kernel's reason), a read before the value is available,
// an event recorded twice or never, a cycle of waits.
void validate_plan(const Plan& plan, const Graph& graph, const Platform& platform);

// Where values live while a plan runs. A value produced and read on one lane
// only is lane-local (the lane's device reuses its memory after the last
// read); a value crossing lanes or memory spaces is held for the whole run in
// each space it is needed in.
struct MemoryPlan {
  struct Space {
    std::string name;
    int n_values = 0;     // values held for the whole run
    int64_t bytes = 0;
  };
  std::vector<Space> spaces;     // cross-lane values, per memory space
  std::vector<int> lane_local;   // per lane: values local to it
};
MemoryPlan plan_memory(const Plan& plan, const Graph& graph, const Platform& platform);

}  // namespace hetsched
