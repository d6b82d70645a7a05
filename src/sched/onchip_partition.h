// Hardware-aware partitioning: fusion units grouped into larger subgraphs
// whose intermediate values stay in one device's on-chip memory, after Zhao
// et al., "Effectively Scheduling Computational Graphs of Deep Neural
// Networks toward Their Domain-Specific Accelerators" (OSDI 2023). The paper
// partitions a DNN graph for a DSA into fewer, larger kernels so that the
// values between layers are exchanged on chip instead of through off-chip
// memory; this is a greedy pass in that spirit (growth along the topological
// order under the on-chip capacity, as a heuristic baseline does), not the
// paper's full search, its layer-wise memory balancing or its instruction
// scheduling.
//
// Why it pays: the roofline cost model (src/profile/cost_model.cpp) charges
// a launch of several kernels as ONE kernel, with off-chip traffic only at
// its boundary and one launch overhead, when every value passed between its
// kernels fits in the device's on-chip memory at once; otherwise each kernel
// pays its own overhead and those values are written out and read back. The
// groups below are exactly launches the model charges as one kernel on
// `device` (the kernels being the given units).
//
// The pass is "a partition any scheduler can use": schedulers built on the
// unit task graph (heft, peft, optimal; list_scheduling.h) take the groups
// as their launch units under the parameter `partition=onchip`
// (launch_units_from_params below).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "hetsched/graph.h"
#include "hetsched/platform.h"

namespace hetsched {

// Bytes kept on chip when `units` (disjoint node sets) run as one launch
// whose kernels are those units: the sum of Value::nbytes() over the
// distinct values produced by a node of one unit and read by a node of
// another unit of the set. Values passed inside one unit (a Conv's output
// to its fused Relu) and values read only outside do not count. A value of
// unknown size (no static shape) between two units makes the answer -1: it
// cannot be shown to fit.
double onchip_bytes_between(const Graph& graph, const std::vector<std::vector<NodeId>>& units);

// Groups `units` (every node exactly once, listed in a topological order;
// empty = fusion_units(graph)) into launch units for `device`.
//
// The rule. Units are visited in their (topological) order. A unit the
// device does not run (a node whose op is not in PlatformDevice::ops) stays
// alone and no unit ever joins it. A unit u the device runs joins one group
// G that already holds a predecessor of u (a unit producing a value u reads)
// and holds only units the device runs, when
//   1. capacity: onchip_bytes_between(G + u) <= device.onchip_bytes, the
//      values u reads from G counted once each with the values already
//      passed inside G (every value between the group's units is on chip at
//      once, as the cost model assumes: no liveness-based reuse), and every
//      one of them has a static shape; and
//   2. acyclicity: G reaches no other group holding a predecessor of u.
// Among the groups satisfying both, u joins the one it reads the most bytes
// from (the traffic the join keeps on chip), ties going to the group that
// grew last (growth along chains); with none, u starts a group of its own.
// A unit joins only a group it reads from: a group of unconnected units
// would keep nothing on chip and only lose parallelism.
//
// Why the contraction stays acyclic (so every group is convex, and a plan
// can run each group as one launch): by induction over the visit order,
// with every unit not yet visited counted as a group of its own. Edges of
// the unit DAG go forward in the topological order, so an unvisited unit
// has no edge into a visited one: a path between two visited groups passes
// through visited groups only, and nothing leads from u back to a visited
// group. Merging u into G closes a cycle exactly when a path G -> ... -> u
// passes another group, i.e. when G reaches a group H != G holding a
// predecessor of u -- rule 2 forbids that. (Only the groups visited so far
// are searched, a DFS over at most as many groups as units.)
//
// Returns the groups in a topological order of their contraction (ties: the
// group with the lowest first node first), every node once: a group of
// several units with its nodes ascending, a unit left alone as given. A
// device with onchip_bytes <= 0 gets `units` back unchanged. Throws ErrorCode::kUsage when `units` does not cover every node
// exactly once (a caller bug).
std::vector<std::vector<NodeId>> onchip_partition(const Graph& graph, const PlatformDevice& device,
                                                  std::vector<std::vector<NodeId>> units = {});

// The launch units a scheduler on the unit task graph places, with what the
// plan should say about them.
struct LaunchUnits {
  std::vector<std::vector<NodeId>> units;  // a topological order; every node once
  // For the plan's notes: which partition made the units; empty for plain
  // fusion units.
  std::string note;
  // [unit]: appended to the placement reason of its nodes; empty for a unit
  // that is one fusion unit, or when `note` is empty.
  std::vector<std::string> unit_notes;
};

// Reads (and erases from `params`) the partition parameters a scheduler
// named `scheduler` understands; other keys are left for it to check:
//   partition=none (the default): fusion_units(graph);
//   partition=onchip: onchip_partition() for the device with the largest
//     onchip_bytes (the first on ties), or for partition_device=NAME. Units
//     that device does not run stay fusion units. When no device has
//     on-chip memory, the fusion units, the note saying so.
// ErrorCode::kUsage, naming the parameter and what was expected, for another
// partition value, a partition_device that is not a device of the platform
// or has no on-chip memory, or a partition_device without partition=onchip.
LaunchUnits launch_units_from_params(const Graph& graph, const Platform& platform,
                                     std::map<std::string, std::string>& params, const std::string& scheduler);

// The device partition=onchip groups for by default: the largest
// onchip_bytes, the first on ties; -1 when no device has on-chip memory.
int default_partition_device(const Platform& platform);

}  // namespace hetsched
