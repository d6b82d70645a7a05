// What a plan runs where, and why: the report `hetsched explain` prints and
// the Python binding's Session.explain() returns.
#pragma once

#include <string>

#include "hetsched/cost_model.h"
#include "hetsched/graph.h"
#include "hetsched/plan.h"
#include "hetsched/platform.h"

namespace hetsched {

// The report, as text ending in a newline: an overview (scheduler, lanes,
// launches, copies, events, the scheduler's prediction), each device's share
// of launches and FLOPs, every lane's steps with the cost model's estimate
// and its source, each node's device and placement reason, the memory held
// for values crossing lanes, and the scheduler's notes. `plan` must be valid
// for `graph` and `platform` (validate_plan); `model_name` is how the model
// is named in the first line.
std::string explain_plan(const Plan& plan, const Graph& graph, const Platform& platform, const CostModel& cost,
                         const std::string& model_name);

}  // namespace hetsched
