// "round-robin": fusion units in topological order dealt to the devices in
// turn. Deliberately naive: a multi-device plan with many crossings, for
// tests and as a floor for real schedulers.
#include <fmt/format.h>

#include "hetsched/error.h"
#include "hetsched/scheduler.h"
#include "plan/plan_builder.h"

namespace hetsched {

namespace {

bool runs_unit(const Graph& graph, const std::vector<NodeId>& unit, const PlatformDevice& device) {
  for (NodeId id : unit)
    if (!device.supports(graph.nodes[id])) return false;
  return true;
}

class RoundRobinScheduler : public Scheduler {
 public:
  Plan schedule(const Graph& graph, const Platform& platform, const CostModel&,
                const ScheduleOptions& options) const override {
    if (!options.params.empty())
      throw Error(ErrorCode::kUsage, fmt::format("scheduler 'round-robin' takes no parameters (got '{}')",
                                                 options.params.begin()->first));
    int n_devices = static_cast<int>(platform.devices.size());
    std::vector<LaunchAssignment> launches;
    int next = 0;
    for (auto& unit : fusion_units(graph)) {
      int chosen = -1;
      for (int k = 0; k < n_devices && chosen < 0; ++k) {
        int d = (next + k) % n_devices;
        if (runs_unit(graph, unit, platform.devices[d])) chosen = d;
      }
      if (chosen < 0)
        throw Error(ErrorCode::kUnsupported, fmt::format("scheduler 'round-robin': no device of this platform runs {}",
                                                         graph.nodes[unit[0]].label()));
      next = (chosen + 1) % n_devices;
      launches.push_back(LaunchAssignment{std::move(unit), chosen, 0, "round-robin"});
    }
    return build_plan(graph, platform, launches, "round-robin");
  }
};

}  // namespace

HETSCHED_SCHEDULER("round-robin", "fusion units dealt to the devices in turn (naive; for tests)", RoundRobinScheduler);

}  // namespace hetsched
