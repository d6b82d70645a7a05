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
//      Copy on the reader's lane (once per value and space);
//   4. copies graph outputs produced outside host memory back to host;
//   5. before a launch on a device that overlaps others (a union device and
//      the devices it is the union of, PlatformDevice::overlaps), a Wait on
//      the latest earlier launch of each overlapping device, so that
//      launches on overlapping devices run one at a time, in the order
//      given (these Waits come before the launch's data Waits).
// Throws ErrorCode::kUsage when the order is not topological or a device
// does not support a node (a scheduler bug, named).
// `stamp_identity` false leaves model_hash and platform_signature empty: for
// the many plans a search only simulates, never to be written or run.
Plan build_plan(const Graph& graph, const Platform& platform, const std::vector<LaunchAssignment>& launches,
                const std::string& scheduler, bool stamp_identity = true);

// The inverse of build_plan: a plan's launches as assignments (device as a
// platform index, the first node's placement reason), listed in a
// topological order that keeps each lane's order; ties go to the launch
// whose first node comes first. For revising a plan and building it again.
std::vector<LaunchAssignment> plan_launches(const Plan& plan, const Graph& graph, const Platform& platform);

}  // namespace hetsched
