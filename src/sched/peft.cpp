// "peft": Predict Earliest Finish Time (Arabnejad & Barbosa 2014) over
// fusion units; the algorithm itself is in list_scheduling.cpp.
#include <fmt/format.h>

#include "hetsched/error.h"
#include "hetsched/scheduler.h"
#include "sched/list_scheduling.h"

namespace hetsched {

namespace {

class PeftScheduler : public Scheduler {
 public:
  Plan schedule(const Graph& graph, const Platform& platform, const CostModel& cost,
                const ScheduleOptions& options) const override {
    if (!options.params.empty())
      throw Error(ErrorCode::kUsage, fmt::format("scheduler 'peft' takes no parameters (got '{}')",
                                                 options.params.begin()->first));
    UnitTaskGraph problem = build_unit_task_graph(graph, platform, cost, "peft");
    return plan_from_task_schedule(graph, platform, problem, peft(problem.tasks), "peft");
  }
};

}  // namespace

HETSCHED_SCHEDULER("peft",
                   "PEFT list scheduling: fusion units by optimistic cost table, each on the device minimising "
                   "finish time + remaining cost",
                   PeftScheduler);

}  // namespace hetsched
