// A lower bound on the makespan of any plan of a graph on a platform, under
// a cost model: what `compare` measures every scheduler against.
//
// It holds for any grouping of nodes into launches, and for the copies
// build_plan adds. A roofline launch runs its kernels one after another,
// each its overheads plus max(FLOPs / peak, bytes / bandwidth) of its own
// nodes (where its bytes are what crosses its edge, spilled values
// included), or, on an emulated device whose chip holds the values between
// them, all as one kernel; so any mix lambda * FLOPs / peak + (1 - lambda)
// * bytes / bandwidth of a launch's nodes, lambda in [0, 1], is at most its
// duration — and, where launches run kernel by kernel (a roofline device
// that never makes a launch one kernel), each kernel's nodes may take
// their own lambda. Each node gets a floor in two views, compute
// (lambda = 1) and memory (lambda = 0), never more than the cost model's
// estimate for it alone:
//  - overhead: on a device without on-chip memory, or a real one (each
//    kernel pays one, and a kernel is at most a fusion unit), the launch
//    overhead shared by the unit's nodes the device runs; none on an
//    emulated device with on-chip memory (a launch whose values between
//    kernels fit there is one kernel, however many nodes it holds);
//  - compute: its FLOPs at peak;
//  - memory: the bytes it moves in any launch, shared so that a launch's
//    nodes never add up to more than the launch moves: weights and graph
//    inputs (fetched once, shared by their readers), graph outputs, and the
//    values passed between fusion units — written once and read at least
//    once per launch holding a reader, or spilled (both) within a launch.
//    Those values count in full on devices without on-chip memory; on an
//    emulated device with it, at min(launch overhead / onchip_bytes,
//    2 / bandwidth) per byte (half to the write, half to the reads): what
//    a launch keeps on chip is at most onchip_bytes, paid by its one
//    overhead; what it spills or leaves goes through memory; nothing on a
//    real device, whose caches may keep it;
//  - on a measured device: its fusion unit's measured time shared by the
//    unit's nodes' work, in both views — a launch measured as one could,
//    in principle, take less.
// Kernel by kernel, a kernel holds nodes of one merge class only: a fusion
// unit, or the Conv units IOS's merge joins (conv_merge_key). A node alone
// in its class takes the longer of its two views wherever a view is taken
// (on chains whose edges carry the values, with those values where it is
// a kernel of its own — see the critical path — else in the mix), and the
// capacity LP counts each class's nodes on a device at the larger of their
// two views summed.
// Three bounds, the largest wins:
//  - critical path: the longest chain of nodes, each on any device, every
//    device free, with the hand-overs and copies between devices along it
//    (graph inputs start and outputs end in host memory). Each device takes
//    its own mix of the two views (every combination of lambda in {0, 1/4,
//    1/2, 3/4, 1} for up to three devices, one common lambda beyond), and
//    the chain is counted three ways: nodes at their floors; or nodes without
//    the values between fusion units, and each edge of the chain with the
//    whole values it passes (written and read, or spilled, or on chip as
//    above; nothing within one fusion unit), since one chain passes a
//    value once; or as that, but on an emulated device with on-chip memory
//    the chain pays the launch overhead wherever it starts there or enters
//    from another device, and nothing on its edges within the device (a
//    launch it enters starts after the value it enters with, and its
//    overhead is in no node's floor). In the second and third counts, a
//    node alone in its class on a roofline device without on-chip memory
//    is its own kernel, which reads every value it takes from other nodes
//    and writes every value they take from it: it counts whole, the longer
//    of its compute and its memory with those values, and the chain's edges
//    into and out of it leave them out (one view per device would count a
//    compute-bound and a memory-bound kernel there at less than they take).
//    In the third count, a cut node (see below) on an on-chip device also
//    ends at least one overhead after an earlier cut node on it, plus the
//    longest chain between them, where the values passed between kernels
//    among the nodes between them (both included) exceed its chip: a launch holding both holds all of those,
//    so no one-kernel launch holds both. And in every count, a node starts
//    no sooner than its latest ancestors allow on the lanes they share:
//    take the k ancestors with the latest releases (finish less own floor,
//    on their best devices), all released at r0 or later; whichever device
//    x each takes, it holds a lane of x for its floor between r0 and the
//    node's start, and the node starts no sooner than its end there plus
//    the chain from it to the node. So the start is at least the least T
//    such that every one of them has a device it reaches the node from by
//    T, and r0 plus the floors of those with only one such device fit on
//    that device's lanes by T (and everyone's least floor on all lanes).
//    Per path, each branch before a join takes the device that ends it
//    soonest, all at once; here they queue on its lanes or take the way
//    to another device.
//  - capacity (an LP relaxation, solved with COIN-OR Clp): the smallest T
//    such that the nodes can be split fractionally over the devices with no
//    resource busy for longer than T. The resources are each device's
//    streams (every launch and copy takes a lane; both views, and kernel
//    by kernel where launches run so), and those
//    the simulator shares (simulator.h): each device's compute (FLOPs at
//    peak) and bandwidth, and each SharedResource's bandwidth, which count
//    only what a launch's demand counts (launch_bytes: external bytes, and
//    values between devices, whose producer writes and reader reads them;
//    not spills). On the streams a fusion unit's overhead counts whole on
//    each device holding any part of it, not shared by its nodes (a
//    unit in a kernel pays one overhead, however few of its nodes are
//    there). A value reaching a device alone in its memory space from
//    another one is a copy on that device's lanes or on the lanes of the
//    producer's device (build_plan copies on the reading lane, or a stream
//    of the reader's device, or one of the producer's when its launch
//    pushes its outputs; a graph output leaves on its producer's device).
//    And segment by segment: cut nodes (a node every other
//    node is an ancestor or a descendant of: an inception block's Concat, a
//    residual Add) split the graph into segments whose launches run in
//    windows of time that never overlap (a launch holding a cut node holds
//    the nodes of the segments beside it in its own time), so T is at
//    least the sum of the windows, each holding its segment's floors on
//    every device's streams and each of its nodes' alone (one view for
//    all segments: a launch may hold nodes of three).
//  - combined (the same LP, solved again with the chains added): the
//    capacity rows and the chains on the SAME fractional assignment
//    x[n][d], so that the chain cannot take each node's fastest device
//    while the capacity rows spread it over all of them. For each view —
//    one lambda per device, every combination of 0 and 1 (compute and
//    memory) for up to three devices, else all 0 and all 1 — start times
//    s[n] >= 0 with s[n] >= s[p] + duration(p) + delay(p -> n) on each
//    edge, s[n] at least its graph inputs' copies from host memory, and
//    T >= s[n] + duration(n) + its graph outputs' copies to host memory,
//    where duration(n) = sum_d x[n][d] (lambda[d] compute floor +
//    (1 - lambda[d]) memory floor). Why that holds for any plan: take x
//    the plan's placement, and within each launch L let s[n] be L's start
//    plus the longest chain of floors inside L before n. A launch lasts
//    at least its nodes' floors in any one view (one lambda per launch;
//    one lambda per device makes that so for every launch), so each node
//    ends within its launch, and a node's predecessor in another launch
//    ends before that launch does — plus, between devices, the copy or
//    hand-over. The delay is linearised as the capacity LP's values are:
//    sent[e][a] >= x[p][a] - x[n][a] times the least transfer out of a to
//    a device that runs n, received[e][b] >= x[n][b] - x[p][b] times the
//    least into b from one that runs p; the delay is at least either sum,
//    which for a plan is at most the transfer it makes. On graphs of at
//    most 500 nodes it is solved again with the views doubled, the second
//    half counting as the critical path's second count does: floors
//    without the values between fusion units, and each edge at least its
//    least cost (copy, write and read, spill or on-chip share) with the
//    producer's device fixed, and again with the reader's — linearised as
//    sum_a (x[p][a] least[a] + sent[e][a] (least_other[a] - least[a])),
//    least_other[a] the least with the reader elsewhere; for a plan, at
//    most the edge's cost. Where a device keeps launches on chip, a third
//    time, as the critical path's third count (each start there and each
//    edge entering it from another device with its launch overhead). It
//    does not mix views within a device (the
//    critical path tries quarters), so it need not reach the critical
//    path; hence the max of all three. Where Clp takes more than 10 s of
//    CPU time on it, the capacity bound (whose rows it holds) stands in
//    for it, or the last solution for the next.
#pragma once

#include "hetsched/cost_model.h"
#include "hetsched/graph.h"
#include "hetsched/platform.h"

namespace hetsched {

struct MakespanLowerBound {
  double us = 0;  // max of the three below
  double critical_path_us = 0;
  double capacity_us = 0;
  double combined_us = 0;  // the capacity LP with the chains on its assignment
};

// Throws ErrorCode::kUnsupported when a node has no device that runs it.
MakespanLowerBound makespan_lower_bound(const Graph& graph, const Platform& platform, const CostModel& cost);

}  // namespace hetsched
