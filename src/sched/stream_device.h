// The device a one-device multi-stream scheduler (opara, nimble, ios) works
// on: the `device` parameter if given, else the device with the most streams
// among those that run every node of the graph (ties: the first). Nodes
// pinned to other devices do not count: their launches go to their pins
// (move_pinned_launches).
#pragma once

#include <string>

#include "hetsched/graph.h"
#include "hetsched/platform.h"
#include "hetsched/scheduler.h"

namespace hetsched {

// A named device that is not in the platform, or that does not run a node,
// is ErrorCode::kUsage; no device running every node is kUnsupported. Both
// messages start with "scheduler '<scheduler>': ".
int pick_stream_device(const Graph& graph, const Platform& platform, const ScheduleOptions& options,
                       const std::string& scheduler);

}  // namespace hetsched
