// The "auto" scheduler's plans (the algorithm: the top of auto.cpp).
#pragma once

#include <vector>

#include "hetsched/scheduler.h"

namespace hetsched {

// auto's plan first (what the scheduler "auto" returns), then up to
// n_plans - 1 runners-up: the candidates it simulated, fastest first, that
// use several devices and place the launches differently. A choice by
// measurement (choose.h) runs them beside the plan: a prediction can rank
// two close plans wrongly, a measurement less so.
std::vector<Plan> auto_plans(const Graph& graph, const Platform& platform, const CostModel& cost,
                             const ScheduleOptions& options, size_t n_plans);

}  // namespace hetsched
