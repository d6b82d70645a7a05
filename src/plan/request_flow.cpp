// The flows a throughput session considers (see hetsched/throughput.h).
#include <algorithm>

#include <fmt/format.h>

#include "hetsched/choose.h"
#include "hetsched/compare.h"
#include "hetsched/device.h"
#include "hetsched/throughput.h"
#include "plan/plan_builder.h"

namespace hetsched {

namespace {

RequestFlow make_flow(const Graph& graph, std::string name, const std::shared_ptr<const Platform>& platform,
                      const std::vector<std::string>& devices, const std::shared_ptr<const CostModel>& cost) {
  RequestFlow flow;
  flow.name = std::move(name);
  flow.platform = platform;
  flow.cost = cost;
  std::string reason = fmt::format("throughput: every request's nodes on the worker's device ({})", flow.name);
  for (const std::string& device : devices)
    flow.workers.push_back({device, std::make_shared<const Plan>(one_device_plan(
                                        graph, *platform, platform->find_device(device), "throughput", reason))});
  return flow;
}

// One CPU device of n cores split into n / t groups of t cores, for each
// t < n dividing n: the device specs, "cpu:0,cpu:1" for t = 1 on 2 cores.
std::vector<std::vector<std::string>> stream_splits(const PlatformDevice& device) {
  std::vector<std::vector<std::string>> splits;
  size_t n = device.cores.size();
  for (size_t t = 1; t < n; ++t) {
    if (n % t) continue;
    std::vector<std::string> groups;
    for (size_t g = 0; g < n / t; ++g) {
      DeviceSpec spec;
      spec.cores.assign(device.cores.begin() + static_cast<long>(g * t),
                        device.cores.begin() + static_cast<long>((g + 1) * t));
      groups.push_back(spec.name());
    }
    splits.push_back(groups);
  }
  return splits;
}

std::string join(const std::vector<std::string>& parts, const char* separator) {
  return fmt::format("{}", fmt::join(parts, separator));
}

}  // namespace

std::vector<RequestFlow> flow_candidates(const Graph& graph, const Platform& platform, const CostOpener& open_cost) {
  auto wide_platform = std::make_shared<Platform>(platform_with_cpu_union(platform));
  std::shared_ptr<const CostModel> cost = open_cost(*wide_platform);
  std::shared_ptr<const Platform> wide = wide_platform;
  std::vector<RequestFlow> flows;
  std::vector<std::string> whole;  // the given devices that run the whole graph
  for (const PlatformDevice& device : wide->devices) {
    if (!device.supports_all(graph)) continue;
    flows.push_back(make_flow(graph, device.name + " alone", wide, {device.name}, cost));
    if (platform.find_device(device.name) >= 0) whole.push_back(device.name);
  }
  bool disjoint = !platform.has_overlaps();
  if (whole.size() >= 2 && disjoint)
    flows.push_back(make_flow(graph, "side by side on " + join(whole, ", "), wide, whole, cost));
  if (platform.devices.size() == 1 && platform.devices[0].kind == DeviceKind::kCpu && whole.size() == 1) {
    for (const std::vector<std::string>& groups : stream_splits(platform.devices[0])) {
      auto split = std::make_shared<Platform>(make_platform(join(groups, ","), ""));
      std::shared_ptr<const CostModel> split_cost = open_cost(*split);
      size_t t = platform.devices[0].cores.size() / groups.size();
      flows.push_back(make_flow(graph, fmt::format("{} streams of {} core{}", groups.size(), t, t > 1 ? "s" : ""),
                                split, groups, split_cost));
    }
  }
  return flows;
}

}  // namespace hetsched
