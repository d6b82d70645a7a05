// "peft": Predict Earliest Finish Time (Arabnejad & Barbosa 2014) over
// fusion units, or with partition=onchip over the on-chip groups of
// onchip_partition.h; the algorithm itself is in list_scheduling.cpp.
#include <map>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "hetsched/error.h"
#include "hetsched/scheduler.h"
#include "sched/list_scheduling.h"
#include "sched/onchip_partition.h"

namespace hetsched {

namespace {

class PeftScheduler : public Scheduler {
 public:
  Plan schedule(const Graph& graph, const Platform& platform, const CostModel& cost,
                const ScheduleOptions& options) const override {
    std::map<std::string, std::string> params = options.params;
    LaunchUnits units = launch_units_from_params(graph, platform, params, "peft");
    if (!params.empty())
      throw Error(ErrorCode::kUsage,
                  fmt::format("scheduler 'peft': unknown parameter '{}' (known: partition=none|onchip, "
                              "partition_device)",
                              params.begin()->first));
    UnitTaskGraph problem = build_unit_task_graph(graph, platform, cost, "peft", std::move(units.units));
    problem.units_note = std::move(units.note);
    problem.unit_notes = std::move(units.unit_notes);
    return plan_from_task_schedule(graph, platform, problem, peft(problem.tasks), "peft");
  }
};

}  // namespace

HETSCHED_SCHEDULER("peft",
                   "PEFT list scheduling: fusion units by optimistic cost table, each on the device minimising "
                   "finish time + remaining cost (params partition=none|onchip, partition_device)",
                   PeftScheduler);

}  // namespace hetsched
