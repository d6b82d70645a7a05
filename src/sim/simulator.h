// The simulator: predicts a Plan's timeline from a cost model, walking the
// plan exactly as the executor does (lanes in order, Waits on Records).
//
// Discrete-event, with co-run interference: each running launch progresses
// at a rate of 1 / slowdown, where the slowdown is the largest oversubscription
// among the resources it uses — its device's compute when several streams of
// one device run at once, the shared memory bandwidth when devices naming
// the same SharedResource run at once (sum of ResourceDemand over the
// running launches, when above 1). Rates are recomputed whenever a launch
// starts or ends. So two memory-bound kernels slow each other, while a
// compute-bound and a memory-bound one overlap well (Opara's observation).
// Where the cost model knows a launch's measured co-run time
// (CostModel::corun_us), the launch, while a launch of another device naming
// its SharedResource runs, slows down by at least corun_us / launch time
// (never below 1); a launch with no such overlap keeps the fluid slowdown.
#pragma once

#include "hetsched/cost_model.h"
#include "hetsched/plan.h"
#include "hetsched/trace.h"

namespace hetsched {

struct SimOptions {
  bool interference = true;
  bool trace = true;  // false: leave SimResult::trace empty (searches simulate thousands of plans)
};

struct SimResult {
  double makespan_us = 0;
  Trace trace;                        // kind "simulated"
  std::vector<double> busy_us;        // per plan device: time running launches or copies
  std::vector<double> utilisation;    // busy_us / makespan_us
  // Sum over launches of their end times: a finer objective than the
  // makespan for searches (it drops when any launch ends sooner).
  double launch_end_sum_us = 0;
  int n_estimates[5] = {0, 0, 0, 0, 0};  // per CostSource
};

// How the model shares bandwidth: devices naming one SharedResource share
// its bandwidth (unknown: the fastest member alone saturates it), and a
// launch's memory demand, a fraction of its own device's bandwidth, counts
// as demand * share[device] of the resource's.
struct ResourceSharing {
  std::vector<int> resource_of;  // per platform device: resource index, -1 when it shares none
  std::vector<double> share;     // per platform device: its bandwidth / the resource's
  int n_resources = 0;
};
ResourceSharing resource_sharing(const Platform& platform);

SimResult simulate(const Plan& plan, const Graph& graph, const Platform& platform, const CostModel& cost,
                   const SimOptions& options = {});

}  // namespace hetsched
