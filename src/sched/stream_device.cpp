// Choosing the device of a multi-stream scheduler (see stream_device.h).
#include "sched/stream_device.h"

#include <algorithm>

#include <fmt/format.h>

#include "hetsched/error.h"

namespace hetsched {

int pick_stream_device(const Graph& graph, const Platform& platform, const ScheduleOptions& options,
                       const std::string& scheduler) {
  auto given = options.params.find("device");
  if (given != options.params.end()) {
    int index = platform.find_device(given->second);
    if (index < 0)
      throw Error(ErrorCode::kUsage, fmt::format("scheduler '{}': parameter device='{}' is not a device of this "
                                                 "platform",
                                                 scheduler, given->second));
    for (const Node& node : graph.nodes)
      if (!platform.devices[index].supports(node) && !platform.devices[index].pinned_elsewhere.count(node.name))
        throw Error(ErrorCode::kUsage,
                    fmt::format("scheduler '{}': device {} does not run {} ({} places the whole graph on one device)",
                                scheduler, platform.devices[index].name, node.label(), scheduler));
    return index;
  }
  int chosen = -1;
  for (size_t d = 0; d < platform.devices.size(); ++d) {
    const PlatformDevice& device = platform.devices[d];
    if (device.supports_all_unpinned(graph) && (chosen < 0 || device.n_streams > platform.devices[chosen].n_streams))
      chosen = static_cast<int>(d);
  }
  if (chosen < 0)
    throw Error(ErrorCode::kUnsupported,
                fmt::format("scheduler '{}': no device of this platform runs every op of the graph: {}", scheduler,
                            platform.refusals(graph, true)));
  return chosen;
}

}  // namespace hetsched
