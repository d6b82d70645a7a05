// Building blocks of the partitioning schedulers "duet" (src/sched/duet.cpp)
// and "partition-tuner" (src/sched/partition_tuner.cpp): the fusion-unit DAG
// and its chains (the branches between forks and joins), what moving a value
// between two devices costs the plan that build_plan() makes, the
// single-device plans both compare with, and — declared here so that tests
// can check them on their own — DUET's coarse partition and PartitionTuner's
// dynamic program along one chain.
#pragma once

#include <array>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hetsched/cost_model.h"
#include "hetsched/plan.h"
#include "plan/plan_builder.h"

namespace hetsched {

// ---------------------------------------------------------------- the unit DAG

// Launch units as a DAG: unit u precedes unit v when a node of v reads a
// value a node of u produces.
struct UnitDag {
  std::vector<std::vector<NodeId>> units;      // a topological order; each unit's nodes ascending
  std::vector<int> unit_of;                    // [node]
  std::vector<std::vector<int>> preds, succs;  // [unit]: distinct, ascending
};
// `units` must cover every node once, listed in a topological order
// (fusion_units() does); empty: fusion_units(graph).
UnitDag build_unit_dag(const Graph& graph, std::vector<std::vector<NodeId>> units = {});

// Maximal chains of the DAG: a unit and its successor share a chain when the
// successor is the unit's only successor and the unit is the successor's
// only predecessor (so no fork or join lies between them), and
// may_join(unit, successor) agrees (an empty function always does). Every
// unit is in exactly one chain; a chain lists its units in order, and chains
// are listed by their first unit. Contracting the chains keeps the DAG
// acyclic: the only way out of a chain's non-last unit leads to the next one.
std::vector<std::vector<int>> unit_chains(const UnitDag& dag,
                                          const std::function<bool(int, int)>& may_join = {});

// Subgraphs (disjoint node sets covering the graph, `subgraph_of` mapping
// each node to its own) in a topological order of their contraction: Kahn's
// algorithm taking first the ready subgraph with the least `earliest` (when
// given: e.g. a predicted start time), ties going to the lowest first node.
// Throws ErrorCode::kUsage (a scheduler bug) when the contraction has a cycle.
std::vector<int> subgraph_topological_order(const Graph& graph, const std::vector<std::vector<NodeId>>& subgraphs,
                                            const std::vector<int>& subgraph_of, const std::string& scheduler,
                                            const std::vector<double>& earliest = {});

// ---------------------------------------------------------------- devices and values

constexpr double kNever = std::numeric_limits<double>::infinity();

// Whether `device` runs every node of `nodes`.
bool runs_all(const Graph& graph, const std::vector<NodeId>& nodes, const PlatformDevice& device);

// What a launch on `to` pays for reading `bytes` produced by a launch on
// `from`, as build_plan() moves it: nothing on one device; the hand-over or
// link of cost.transfer(); through host memory where no link joins the two
// memory spaces (build_plan's route). kNever when no route exists.
double crossing_us(const CostModel& cost, const Platform& platform, double bytes, const PlatformDevice& from,
                   const PlatformDevice& to);
// Copying `bytes` from host memory to `device` (a graph input), or from
// `device` back to host memory (a graph output): 0 for a device in host memory.
double copy_from_host_us(const CostModel& cost, const Platform& platform, double bytes, const PlatformDevice& device);
double copy_to_host_us(const CostModel& cost, const Platform& platform, double bytes, const PlatformDevice& device);

// ---------------------------------------------------------------- plans

// The simulated makespan (µs, simulator.h with interference) of
// build_plan(launches), for searches: no trace, no identity stamped.
double simulated_makespan_us(const Graph& graph, const Platform& platform, const CostModel& cost,
                             const std::vector<LaunchAssignment>& launches, const std::string& scheduler);

// Both schedulers promise never to be slower than the best single device.
// Each device that runs every op gets the plan of every fusion unit in
// topological order on its stream 0, simulated; when the fastest of those
// beats `plan_us` (the scheduler's own plan, simulated), it is returned
// instead, its reasons and `notes` (kept, plus one more) saying why. Else
// `plan` is returned with predicted_ms = plan_us / 1000 and a note on the
// best single device.
Plan keep_or_fall_back_to_one_device(const Graph& graph, const Platform& platform, const CostModel& cost, Plan plan,
                                     double plan_us, const std::string& scheduler);

// "1.234 ms"
std::string format_ms(double us);
// "Conv 'c1' + Relu 'r1'"; past three nodes, "+ N more".
std::string launch_label(const Graph& graph, const std::vector<NodeId>& nodes);

// ---------------------------------------------------------------- DUET (duet.cpp)

// DUET's coarse-grained partition of the fusion-unit DAG — a fusion unit
// some device runs only in part (an NPU running a MatMul but not its bias
// Add) taken node by node, so that the device keeps the part it runs: split
// at forks and joins (unit_chains), each chain one subgraph — where the devices running
// every unit of a chain change along it, the chain is split there too, so
// that no device loses work it could do; then, while some subgraph with less
// than `small_share` of the graph's FLOPs has a neighbour (a subgraph it
// reads from or feeds) run by the same devices whose merge with it shrinks
// the cut and keeps the contraction acyclic, the smallest such subgraph is
// merged into the neighbour that shrinks the cut most (ties: the lower
// index). The cut counts each value's bytes once per subgraph reading it
// other than its producer's.
struct DuetPartition {
  std::vector<std::vector<NodeId>> subgraphs;  // nodes ascending; listed in a topological order
  std::vector<int> subgraph_of;                // [node]
  int n_units = 0;             // launch units partitioned (fusion units, some split)
  int n_chains = 0;            // subgraphs before merging small ones
  double chain_cut_bytes = 0;  // the cut between those
  double cut_bytes = 0;        // the cut between the final subgraphs
  int n_merges = 0;
};
// `small_share` in [0, 1).
DuetPartition duet_partition(const Graph& graph, const Platform& platform, double small_share);

// ---------------------------------------------------------------- PartitionTuner (partition_tuner.cpp)

// One chain of ops (positions 0..n-1, each reading the previous one's
// outputs) over n_devices devices, as PartitionTuner's dynamic program sees
// it. An op may share the previous op's launch (be fused with it) where the
// backend fuses them (the same fusion unit), on the same device; a fused run
// always begins at its unit's first op.
struct ChainProblem {
  enum class Join {
    kNever,  // first op of its fusion unit
    kMay,    // may be fused with the previous op
    kMust,   // must be (its unit's nodes read each other other than in a line)
  };
  int n_ops = 0, n_devices = 0;
  std::vector<Join> join;                        // [op]; op 0 is kNever
  std::vector<std::vector<double>> alone;        // [op][device]: launched alone; kNever = cannot run
  std::vector<std::vector<double>> fused_step;   // [op][device]: cost(run up to op) - cost(run up to op - 1)
  std::vector<std::vector<double>> in_us;        // [op][device]: inputs from outside the chain, outputs to host
  std::vector<double> in_ready;                  // [op]: when the inputs from outside the chain are ready
  std::vector<std::vector<std::vector<double>>> link_us;  // [op][from][to]: op-1's values to op; [0] unused
  std::vector<double> free_at;                   // [device]: busy with earlier chains until then
};

// The accounting the dynamic program minimises, for an assignment of
// devices and fused flags: an op fused with the previous one finishes at
//   max(finish[op-1], in_ready[op]) + fused_step[op][d] + in_us[op][d];
// an op launched on its own at
//   max(free_at[d], finish[op-1], in_ready[op]) + alone[op][d] + in_us[op][d] + link_us[op][d(op-1)][d]
// (the reader pays for moving values, as in plans); the chain's cost is the
// last op's finish. Every finish is non-decreasing in the previous one, so
// the best assignment's prefix is a best prefix for its (device, fused)
// state: the program keeps, per op, device and fused flag, the least finish.
struct ChainSolution {
  std::vector<int> device;    // [op]
  std::vector<bool> fused;    // [op]: shares the previous op's launch
  std::vector<double> start;  // [op]: max(...) above
  std::vector<double> finish; // [op]
  double makespan = 0;        // finish of the last op
  // [op][device][fused]: the least finish of the chain up to op in that
  // state (kNever: impossible), for the reasons' alternatives.
  std::vector<std::vector<std::array<double, 2>>> table;
};
// Throws ErrorCode::kUsage for malformed input and ErrorCode::kUnsupported
// when no assignment has a finite cost.
ChainSolution solve_chain(const ChainProblem& problem);

}  // namespace hetsched
