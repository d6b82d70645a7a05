// Placement overrides (--pin NODE_OR_OP=DEVICE): parse_pin and apply_pins
// (declared in hetsched/platform.h). They live beside the plan builder
// because a pin must respect the fusion units schedulers place whole.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "hetsched/error.h"
#include "hetsched/platform.h"
#include "plan/plan_builder.h"
#include "platform/gpu_probe.h"

namespace hetsched {

namespace {

[[noreturn]] void usage(const std::string& what) { throw Error(ErrorCode::kUsage, what); }

std::string device_names(const Platform& platform) {
  std::vector<std::string> names;
  for (const auto& d : platform.devices) names.push_back(d.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

// Node name -> the pin that places it: name pins first, then op type pins
// for the nodes no name pin placed.
std::map<std::string, Pin> pinned_nodes(const Platform& platform, const Graph& graph, const std::vector<Pin>& pins) {
  std::map<std::string, Pin> by_node;
  for (bool by_name : {true, false})
    for (const Pin& pin : pins) {
      if (platform.find_device(pin.device) < 0)
        usage(fmt::format("--pin {}: no device '{}' (the devices are {})", pin.text(), pin.device,
                          device_names(platform)));
      auto named = [&](const Node& n) { return n.name == pin.node_or_op; };
      auto typed = [&](const Node& n) { return n.op_type == pin.node_or_op; };
      bool names_node = std::any_of(graph.nodes.begin(), graph.nodes.end(), named);
      if (!names_node && std::none_of(graph.nodes.begin(), graph.nodes.end(), typed))
        usage(fmt::format("--pin {}: the model has no node or op type '{}'", pin.text(), pin.node_or_op));
      if (names_node != by_name) continue;
      for (const Node& node : graph.nodes) {
        if (!(by_name ? named(node) : typed(node))) continue;
        auto [it, inserted] = by_node.emplace(node.name, pin);
        bool placed_by_name = it->second.node_or_op == node.name;
        // A name pin placed earlier is more specific; an equal one conflicts.
        if (!inserted && it->second.device != pin.device && placed_by_name == by_name)
          usage(fmt::format("--pin {} and --pin {} send {} to different devices", it->second.text(), pin.text(),
                            node.label()));
      }
    }
  return by_node;
}

}  // namespace

Pin parse_pin(const std::string& text) {
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size() || text.find('=', eq + 1) != std::string::npos)
    usage(fmt::format("--pin '{}': expected NODE_OR_OP=DEVICE, e.g. Conv=cpu:0", text));
  return {text.substr(0, eq), text.substr(eq + 1)};
}

void apply_pins(Platform& platform, const Graph& graph, const std::vector<Pin>& pins) {
  for (PlatformDevice& device : platform.devices) {
    if (device.kind != DeviceKind::kCuda) continue;
    device.declined.clear();
    for (const Node& node : graph.nodes) {
      std::string why = gpu_declines_node(graph, node);
      // An op without a kernel is `ops`'s to refuse, in its own words.
      bool has_kernel = device.ops.empty() || std::count(device.ops.begin(), device.ops.end(), node.op_type);
      if (!why.empty() && has_kernel) device.declined[node.name] = why;
    }
  }
  std::map<std::string, Pin> by_node = pinned_nodes(platform, graph, pins);
  if (by_node.empty()) return;
  // Schedulers place fusion units whole (Conv+Add+Relu is one kernel): the
  // pinned device must run the whole unit, and one unit cannot go two ways.
  for (const auto& unit : fusion_units(graph)) {
    const Pin* unit_pin = nullptr;
    for (NodeId id : unit) {
      auto it = by_node.find(graph.nodes[id].name);
      if (it == by_node.end()) continue;
      if (unit_pin && unit_pin->device != it->second.device)
        usage(fmt::format("--pin {} and --pin {} split one kernel: {} and {} run fused; pin them to one device",
                          unit_pin->text(), it->second.text(), graph.nodes[unit.front()].label(),
                          graph.nodes[unit.back()].label()));
      unit_pin = &it->second;
    }
    if (!unit_pin) continue;
    const PlatformDevice& device = platform.devices[platform.find_device(unit_pin->device)];
    for (NodeId id : unit) {
      std::string why = device.why_not(graph.nodes[id]);
      if (!why.empty())
        usage(fmt::format("--pin {}: {} cannot run {}{}: {}", unit_pin->text(), device.name, graph.nodes[id].label(),
                          unit.size() > 1 ? " (fused with the pinned node)" : "", why));
    }
  }
  for (const auto& [node, pin] : by_node) {
    for (PlatformDevice& device : platform.devices)
      if (device.name != pin.device) device.pinned_elsewhere[node] = pin.text();
    platform.pinned[node] = pin;
  }
}

}  // namespace hetsched
