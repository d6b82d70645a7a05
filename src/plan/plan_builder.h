// Building valid plans from placement decisions: every scheduler decides
// which launches go on which (device, stream) and in which order; the builder
// adds the Copy, Record and Wait steps that make the plan valid.
#pragma once

#include <string>
#include <vector>

#include "hetsched/plan.h"

namespace hetsched {

struct LaunchAssignment {
  std::vector<NodeId> nodes;  // run as one launch, in topological order
  int device = 0;             // index into Platform::devices
  int stream = 0;
  std::string reason;         // becomes each node's Placement::reason
  // Where the copies between memory spaces around this launch run (see
  // build_plan, step 3). -1: on the reading lane. A stream of this launch's
  // device instead frees the other side's lanes, as a GPU's copy engine or
  // an accelerator's DMA does, and lets the copy overlap this device's work
  // on its other streams:
  int push_stream = -1;  // copies of its outputs to the spaces reading them, right after it
  int pull_stream = -1;  // copies of its inputs into its space, just before it
  // With push_stream: the k-th copy out on stream (push_stream + k) mod
  // n_streams instead, so that the copies run side by side.
  bool push_spread = false;
};

// The units schedulers place by default: every node in topological order,
// grouped with the nodes a backend fuses into its kernel (Conv+Add+Relu,
// MatMul+bias+activation; see backends/cpu/fusion.cpp).
std::vector<std::vector<NodeId>> fusion_units(const Graph& graph);

// One-device schedulers (sequential, opara, nimble, ios) honour pins to
// other devices this way: a launch holding a node pinned elsewhere
// (Platform::pinned) moves to the pinned device, stream 0.
void move_pinned_launches(std::vector<LaunchAssignment>& launches, const Graph& graph, const Platform& platform);

// `launches` must cover every node once and be listed in an order where each
// launch comes after the producers of its inputs (a topological order of
// launches); each lane keeps that order. The builder then:
//   1. puts each launch on lane (device, stream), creating lanes as needed;
//   2. after a launch whose outputs are read on another lane, adds one
//      Record; before the reader, a Wait on it (once per lane and event);
//   3. before a launch on a device whose memory space lacks an input, adds a
//      Copy on the reader's lane (once per value and space), or on its
//      device's `pull_stream`, the reader waiting for it; a launch with a
//      `push_stream` copies each output, right after it, on that stream of
//      its device (or, with `push_spread`, on its streams in turn) into
//      every other space where a launch reads it (and host memory for a
//      graph output), and the readers only wait;
//   4. copies graph outputs produced outside host memory back to host (on
//      the producer's lane, or its push_stream);
//   5. before a launch on a device that overlaps others (a union device and
//      the devices it is the union of, PlatformDevice::overlaps), a Wait on
//      the latest earlier launch of each overlapping device, so that
//      launches on overlapping devices run one at a time, in the order
//      given (these Waits come before the launch's data Waits).
// Throws ErrorCode::kUsage when the order is not topological or a device
// does not support a node (a scheduler bug, named).
// `stamp_identity` false leaves model_hash, platform_signature and the
// placement reasons empty: for the many plans a search only simulates,
// never to be written, explained or run.
Plan build_plan(const Graph& graph, const Platform& platform, const std::vector<LaunchAssignment>& launches,
                const std::string& scheduler, bool stamp_identity = true);

// The whole graph on device `device` (a platform index), one launch per
// fusion unit in topological order, each placed for `reason`: a device
// alone, as sessions, auto's measured choice and throughput workers run it.
Plan one_device_plan(const Graph& graph, const Platform& platform, int device, const std::string& scheduler,
                     const std::string& reason);

// The inverse of build_plan: a plan's launches as assignments (device as a
// platform index, the first node's placement reason; push_stream and
// pull_stream -1, the copies where build_plan puts them by default), listed in a
// topological order that keeps each lane's order; ties go to the launch
// whose first node comes first. For revising a plan and building it again.
std::vector<LaunchAssignment> plan_launches(const Plan& plan, const Graph& graph, const Platform& platform);

}  // namespace hetsched
