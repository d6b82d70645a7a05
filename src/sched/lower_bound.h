// A lower bound on the makespan of any plan of a graph on a platform, under
// a cost model: what `compare` measures every scheduler against.
//
// It holds for any grouping of nodes into launches. Each node is costed at
// the least it could take inside any launch on a device (never more than the
// cost model's estimate for it alone):
//  - on an emulated device with on-chip memory (a fused group may be one
//    kernel with its activations on chip): its FLOPs at the device's peak or its weights
//    at the device's bandwidth, whichever is longer;
//  - on a roofline-costed device without it: its fusion unit (a launch pays
//    one overhead per unit it holds) at one launch overhead plus the mean of
//    its FLOPs at peak and its weights at bandwidth (max(a, b) >= (a + b) / 2
//    holds for sums over the units of any launch), shared over the unit's
//    nodes by their own such work;
//  - on a measured device: its fusion unit's measured time, shared the same
//    way — a launch measured as one could, in principle, take less.
// Two bounds, the larger wins:
//  - critical path: the longest chain of nodes, each on any device, plus
//    the hand-overs and copies between devices along it (graph inputs start
//    and outputs end in host memory), every device free;
//  - capacity (an LP relaxation, solved with COIN-OR Clp): the smallest T
//    such that the nodes can be split fractionally over the devices with no
//    resource busy for longer than T. The resources are those the simulator
//    shares (simulator.h): each device's streams (a node takes its whole
//    time on one stream), its compute and its bandwidth (a node takes its
//    ResourceDemand's fraction of them), and each SharedResource's bandwidth.
#pragma once

#include "hetsched/cost_model.h"
#include "hetsched/graph.h"
#include "hetsched/platform.h"

namespace hetsched {

struct MakespanLowerBound {
  double us = 0;  // max of the two below
  double critical_path_us = 0;
  double capacity_us = 0;
};

// Throws ErrorCode::kUnsupported when a node has no device that runs it.
MakespanLowerBound makespan_lower_bound(const Graph& graph, const Platform& platform, const CostModel& cost);

}  // namespace hetsched
