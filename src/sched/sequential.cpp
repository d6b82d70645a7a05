// "sequential": the whole graph on one device and one stream, fusion units
// in topological order — the baseline every other plan is compared with.
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "hetsched/error.h"
#include "hetsched/scheduler.h"
#include "plan/plan_builder.h"

namespace hetsched {

namespace {

std::string format_ms(double us) { return std::isfinite(us) ? fmt::format("{:.2f} ms", us / 1000.0) : "unknown"; }

class SequentialScheduler : public Scheduler {
 public:
  Plan schedule(const Graph& graph, const Platform& platform, const CostModel& cost,
                const ScheduleOptions& options) const override {
    for (const auto& [key, value] : options.params)
      if (key != "device")
        throw Error(ErrorCode::kUsage,
                    fmt::format("scheduler 'sequential': unknown parameter '{}' (known: device)", key));
    std::vector<std::vector<NodeId>> units = fusion_units(graph);
    // One launch after another; pinned units on their own devices.
    auto predicted_us = [&](const PlatformDevice& device) {
      double sum = 0;
      for (const auto& unit : units) {
        const PlatformDevice* runs = &device;
        for (NodeId id : unit) {
          auto pin = platform.pinned.find(graph.nodes[id].name);
          if (pin != platform.pinned.end()) runs = &platform.devices[platform.find_device(pin->second.device)];
        }
        sum += cost.launch(graph, unit, *runs).us;
      }
      return sum;
    };

    int chosen = -1;
    double chosen_us = 0;
    std::string why;
    std::vector<std::string> notes;
    auto given = options.params.find("device");
    if (given != options.params.end()) {
      chosen = platform.find_device(given->second);
      if (chosen < 0)
        throw Error(ErrorCode::kUsage,
                    fmt::format("scheduler 'sequential': parameter device='{}' is not a device of this platform",
                                given->second));
      const PlatformDevice& device = platform.devices[chosen];
      for (const Node& node : graph.nodes)
        if (!device.supports(node) && !device.pinned_elsewhere.count(node.name))
          throw Error(ErrorCode::kUsage, fmt::format("scheduler 'sequential': device {} does not run {}",
                                                     device.name, node.label()));
      chosen_us = predicted_us(device);
      why = fmt::format("device given ({} predicted)", format_ms(chosen_us));
    } else {
      std::vector<std::string> others;
      std::vector<double> times(platform.devices.size(), std::numeric_limits<double>::infinity());
      for (size_t d = 0; d < platform.devices.size(); ++d) {
        const PlatformDevice& device = platform.devices[d];
        if (!device.supports_all_unpinned(graph)) {
          notes.push_back(fmt::format("{} not considered: it does not run every op of the graph", device.name));
          continue;
        }
        times[d] = predicted_us(device);
        // The first device wins ties, and any device beats none; an unknown
        // (infinite) estimate only wins when nothing better exists.
        if (chosen < 0 || times[d] < times[chosen]) chosen = static_cast<int>(d);
      }
      if (chosen < 0)
        throw Error(ErrorCode::kUnsupported,
                    fmt::format("scheduler 'sequential': no device of this platform runs every op of the graph: {}",
                                platform.refusals(graph)));
      chosen_us = times[chosen];
      for (size_t d = 0; d < platform.devices.size(); ++d)
        if (static_cast<int>(d) != chosen && !std::isinf(times[d]))
          others.push_back(fmt::format("{} {}", platform.devices[d].name, format_ms(times[d])));
      if (others.empty())
        why = fmt::format("the only device running every op ({} predicted)", format_ms(chosen_us));
      else
        why = fmt::format("fastest single device ({} predicted; {})", format_ms(chosen_us), fmt::join(others, ", "));
    }

    std::string reason = fmt::format("sequential on {}: {}", platform.devices[chosen].name, why);
    std::vector<LaunchAssignment> launches;
    for (auto& unit : units) launches.push_back(LaunchAssignment{std::move(unit), chosen, 0, reason});
    move_pinned_launches(launches, graph, platform);
    Plan plan = build_plan(graph, platform, launches, "sequential");
    plan.predicted_ms = std::isfinite(chosen_us) ? chosen_us / 1000.0 : -1;
    plan.notes = std::move(notes);
    return plan;
  }
};

}  // namespace

HETSCHED_SCHEDULER("sequential",
                   "the whole graph on one device and stream: the fastest single device, or --sched-param device=NAME",
                   SequentialScheduler);

}  // namespace hetsched
