// "heft": Heterogeneous Earliest Finish Time (Topcuoglu, Hariri & Wu 2002)
// over fusion units, or with partition=onchip over the on-chip groups of
// onchip_partition.h; the algorithm itself is in list_scheduling.cpp.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "hetsched/error.h"
#include "hetsched/scheduler.h"
#include "plan/plan_builder.h"
#include "sched/list_scheduling.h"
#include "sched/onchip_partition.h"

namespace hetsched {

namespace {

class HeftScheduler : public Scheduler {
 public:
  Plan schedule(const Graph& graph, const Platform& platform, const CostModel& cost,
                const ScheduleOptions& options) const override {
    std::map<std::string, std::string> params = options.params;
    LaunchUnits units = launch_units_from_params(graph, platform, params, "heft");
    if (!params.empty())
      throw Error(ErrorCode::kUsage,
                  fmt::format("scheduler 'heft': unknown parameter '{}' (known: partition=none|onchip, "
                              "partition_device)",
                              params.begin()->first));
    UnitTaskGraph problem = build_unit_task_graph(graph, platform, cost, "heft", std::move(units.units));
    problem.units_note = std::move(units.note);
    problem.unit_notes = std::move(units.unit_notes);
    return plan_from_task_schedule(graph, platform, problem, heft(problem.tasks), "heft");
  }

  // The on-chip groups partition=onchip makes for its default device (peft
  // and optimal use the same), so that a profile times each group on the
  // real devices as the one launch it is rather than as the sum of its
  // fusion units.
  std::vector<std::vector<NodeId>> profile_units(const Graph& graph, const Platform& platform) const override {
    int device = default_partition_device(platform);
    if (device < 0) return {};
    std::set<std::vector<NodeId>> fusion;
    for (auto unit : fusion_units(graph)) {
      std::sort(unit.begin(), unit.end());
      fusion.insert(std::move(unit));
    }
    std::vector<std::vector<NodeId>> groups;
    for (auto& group : onchip_partition(graph, platform.devices[device]))
      if (!fusion.count(group)) groups.push_back(std::move(group));
    return groups;
  }
};

}  // namespace

HETSCHED_SCHEDULER("heft",
                   "HEFT list scheduling: fusion units by upward rank, each on the device where it finishes first "
                   "(params partition=none|onchip, partition_device)",
                   HeftScheduler);

}  // namespace hetsched
