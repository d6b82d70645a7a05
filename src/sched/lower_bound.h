// A lower bound on the makespan of any plan of a graph on a platform, under
// a cost model: what `compare` measures every scheduler against.
//
// Two bounds, the larger wins:
//  - critical path: the longest chain of fusion units (plan_builder.h), each
//    on the device where it is fastest, communication free;
//  - capacity (an LP relaxation, solved with COIN-OR Clp): the smallest T
//    such that the fusion units can be split fractionally over the devices
//    with no resource busy for longer than T. The resources are those the
//    simulator shares (simulator.h): each device's streams (a unit takes its
//    whole time on one stream), its compute and its bandwidth (a unit takes
//    its ResourceDemand's fraction of them for its time), and each
//    SharedResource's bandwidth.
//
// It bounds plans whose launches cost at least the sum of their fusion
// units — every plan of the shipped schedulers but those whose coarser
// launches were measured faster as one (a DUET subgraph), which may come in
// under it by that gain.
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
