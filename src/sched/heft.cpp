// "heft": Heterogeneous Earliest Finish Time (Topcuoglu, Hariri & Wu 2002)
// over fusion units; the algorithm itself is in list_scheduling.cpp.
#include <fmt/format.h>

#include "hetsched/error.h"
#include "hetsched/scheduler.h"
#include "sched/list_scheduling.h"

namespace hetsched {

namespace {

class HeftScheduler : public Scheduler {
 public:
  Plan schedule(const Graph& graph, const Platform& platform, const CostModel& cost,
                const ScheduleOptions& options) const override {
    if (!options.params.empty())
      throw Error(ErrorCode::kUsage, fmt::format("scheduler 'heft' takes no parameters (got '{}')",
                                                 options.params.begin()->first));
    UnitTaskGraph problem = build_unit_task_graph(graph, platform, cost, "heft");
    return plan_from_task_schedule(graph, platform, problem, heft(problem.tasks), "heft");
  }
};

}  // namespace

HETSCHED_SCHEDULER("heft",
                   "HEFT list scheduling: fusion units by upward rank, each on the device where it finishes first",
                   HeftScheduler);

}  // namespace hetsched
