// The on-chip partition pass (see onchip_partition.h): greedy growth of
// groups of fusion units under a device's on-chip capacity, and the
// `partition` parameter of the schedulers on the unit task graph.
#include "sched/onchip_partition.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "hetsched/error.h"
#include "plan/plan_builder.h"
#include "sched/branches.h"

namespace hetsched {

namespace {

// "32 MiB", "1.5 MiB", "96 KiB": on-chip sizes are powers of two.
std::string format_bytes(double bytes) {
  if (bytes >= (1 << 20)) return fmt::format("{:.3g} MiB", bytes / (1 << 20));
  if (bytes >= 1024) return fmt::format("{:.3g} KiB", bytes / 1024);
  return fmt::format("{:.0f} B", bytes);
}

// Every node in exactly one unit, and every unit after the units it reads
// from: the visit order's argument (onchip_partition.h) needs both.
void check_units(const Graph& graph, const UnitDag& dag) {
  for (size_t id = 0; id < graph.nodes.size(); ++id)
    if (dag.unit_of[id] < 0)
      throw Error(ErrorCode::kUsage,
                  fmt::format("onchip_partition: the units leave out {}", graph.nodes[id].label()));
  size_t covered = 0;
  for (const auto& unit : dag.units) covered += unit.size();
  if (covered != graph.nodes.size())
    throw Error(ErrorCode::kUsage, "onchip_partition: the units hold a node twice");
  for (size_t u = 0; u < dag.units.size(); ++u)
    for (int p : dag.preds[u])
      if (p > static_cast<int>(u))
        throw Error(ErrorCode::kUsage,
                    fmt::format("onchip_partition: the units are not in a topological order ({} reads from a "
                                "later unit)",
                                graph.nodes[dag.units[u][0]].label()));
}

struct Group {
  std::vector<int> units;      // in visit order
  bool joinable = false;       // holds units the device runs
  double kept_bytes = 0;       // onchip_bytes_between() of its units
  std::set<ValueId> kept;      // the values counted in kept_bytes
  std::set<int> succ_groups;   // groups reading a value it produces (visited ones)
};

}  // namespace

double onchip_bytes_between(const Graph& graph, const std::vector<std::vector<NodeId>>& units) {
  std::vector<int> unit_of(graph.nodes.size(), -1);
  for (size_t u = 0; u < units.size(); ++u)
    for (NodeId id : units[u]) unit_of[id] = static_cast<int>(u);
  double bytes = 0;
  for (size_t u = 0; u < units.size(); ++u)
    for (NodeId id : units[u])
      for (ValueId v : graph.nodes[id].outputs) {
        if (v == kNoValue) continue;
        const Value& value = graph.values[v];
        bool to_other_unit = std::any_of(value.consumers.begin(), value.consumers.end(), [&](NodeId reader) {
          return unit_of[reader] >= 0 && unit_of[reader] != static_cast<int>(u);
        });
        if (!to_other_unit) continue;
        if (!value.shape_is_static()) return -1;
        bytes += value.nbytes();
      }
  return bytes;
}

std::vector<std::vector<NodeId>> onchip_partition(const Graph& graph, const PlatformDevice& device,
                                                  std::vector<std::vector<NodeId>> units) {
  if (units.empty()) units = fusion_units(graph);
  UnitDag dag = build_unit_dag(graph, units);
  check_units(graph, dag);
  if (device.onchip_bytes <= 0) return units;
  const double capacity = static_cast<double>(device.onchip_bytes);
  const int n = static_cast<int>(dag.units.size());

  std::vector<Group> groups;
  std::vector<int> group_of(n, -1);

  // Whether `from` reaches any of `targets` through the visited groups.
  auto reaches_any = [&](int from, const std::set<int>& targets) {
    std::vector<bool> seen(groups.size(), false);
    std::vector<int> stack = {from};
    seen[from] = true;
    while (!stack.empty()) {
      int g = stack.back();
      stack.pop_back();
      for (int s : groups[g].succ_groups) {
        if (targets.count(s)) return true;
        if (!seen[s]) {
          seen[s] = true;
          stack.push_back(s);
        }
      }
    }
    return false;
  };

  for (int u = 0; u < n; ++u) {
    const std::vector<NodeId>& unit = dag.units[u];
    bool runs = runs_all(graph, unit, device);
    std::set<int> pred_groups;
    for (int p : dag.preds[u]) pred_groups.insert(group_of[p]);

    int chosen = -1;
    double chosen_bytes = -1;
    std::vector<ValueId> chosen_values;
    if (runs) {
      for (int g : pred_groups) {
        const Group& group = groups[g];
        if (!group.joinable) continue;
        // The values u reads from G that G does not keep on chip yet.
        std::vector<ValueId> added;
        double added_bytes = 0;
        bool sized = true;
        for (NodeId id : unit)
          for (ValueId v : graph.nodes[id].inputs) {
            if (v == kNoValue || graph.values[v].producer == kNoNode) continue;
            if (group_of[dag.unit_of[graph.values[v].producer]] != g) continue;
            if (group.kept.count(v) || std::find(added.begin(), added.end(), v) != added.end()) continue;
            if (!graph.values[v].shape_is_static()) sized = false;
            added.push_back(v);
            added_bytes += graph.values[v].nbytes();
          }
        if (!sized || group.kept_bytes + added_bytes > capacity) continue;
        std::set<int> others = pred_groups;
        others.erase(g);
        if (!others.empty() && reaches_any(g, others)) continue;
        // The most bytes kept on chip; ties: the group that grew last.
        bool better = chosen < 0 || added_bytes > chosen_bytes ||
                      (added_bytes == chosen_bytes && group.units.back() > groups[chosen].units.back());
        if (better) {
          chosen = g;
          chosen_bytes = added_bytes;
          chosen_values = std::move(added);
        }
      }
    }
    if (chosen < 0) {
      chosen = static_cast<int>(groups.size());
      groups.emplace_back();
      groups.back().joinable = runs;
    } else {
      Group& group = groups[chosen];
      group.kept_bytes += chosen_bytes;
      group.kept.insert(chosen_values.begin(), chosen_values.end());
    }
    groups[chosen].units.push_back(u);
    group_of[u] = chosen;
    for (int g : pred_groups)
      if (g != chosen) groups[g].succ_groups.insert(chosen);
  }

  std::vector<std::vector<NodeId>> out(groups.size());
  std::vector<int> group_of_node(graph.nodes.size(), -1);
  for (size_t g = 0; g < groups.size(); ++g) {
    for (int u : groups[g].units) out[g].insert(out[g].end(), dag.units[u].begin(), dag.units[u].end());
    std::sort(out[g].begin(), out[g].end());
    for (NodeId id : out[g]) group_of_node[id] = static_cast<int>(g);
  }
  // A singleton keeps its unit's own node order (the caller's, as given).
  for (size_t g = 0; g < groups.size(); ++g)
    if (groups[g].units.size() == 1) out[g] = units[groups[g].units[0]];
  // Also proves the argument above: a cycle here is a bug, reported as one.
  std::vector<int> order = subgraph_topological_order(graph, out, group_of_node, "onchip_partition");
  std::vector<std::vector<NodeId>> ordered;
  ordered.reserve(order.size());
  for (int g : order) ordered.push_back(std::move(out[g]));
  return ordered;
}

int default_partition_device(const Platform& platform) {
  int best = -1;
  for (size_t d = 0; d < platform.devices.size(); ++d)
    if (platform.devices[d].onchip_bytes > 0 &&
        (best < 0 || platform.devices[d].onchip_bytes > platform.devices[best].onchip_bytes))
      best = static_cast<int>(d);
  return best;
}

LaunchUnits launch_units_from_params(const Graph& graph, const Platform& platform,
                                     std::map<std::string, std::string>& params, const std::string& scheduler) {
  std::string partition = "none", device_name;
  bool device_given = false;
  if (auto it = params.find("partition"); it != params.end()) {
    partition = it->second;
    params.erase(it);
  }
  if (auto it = params.find("partition_device"); it != params.end()) {
    device_name = it->second;
    device_given = true;
    params.erase(it);
  }
  if (partition != "none" && partition != "onchip")
    throw Error(ErrorCode::kUsage, fmt::format("scheduler '{}': parameter partition='{}': expected onchip (fusion "
                                               "units grouped to keep values on chip) or none (fusion units)",
                                               scheduler, partition));
  LaunchUnits out;
  if (partition == "none") {
    if (device_given)
      throw Error(ErrorCode::kUsage, fmt::format("scheduler '{}': parameter partition_device='{}' needs "
                                                 "partition=onchip",
                                                 scheduler, device_name));
    out.units = fusion_units(graph);
    return out;
  }

  int d = default_partition_device(platform);
  if (device_given) {
    d = platform.find_device(device_name);
    if (d < 0) {
      std::vector<std::string> names;
      for (const PlatformDevice& device : platform.devices) names.push_back(device.name);
      throw Error(ErrorCode::kUsage,
                  fmt::format("scheduler '{}': parameter partition_device='{}' is not a device of this platform "
                              "(expected one of {})",
                              scheduler, device_name, fmt::join(names, ", ")));
    }
    if (platform.devices[d].onchip_bytes <= 0)
      throw Error(ErrorCode::kUsage,
                  fmt::format("scheduler '{}': parameter partition_device='{}': the device has no on-chip memory "
                              "(onchip_bytes 0); expected a device with some",
                              scheduler, device_name));
  }
  std::vector<std::vector<NodeId>> fusion = fusion_units(graph);
  if (d < 0) {
    out.units = std::move(fusion);
    out.note = "partition=onchip: no device of this platform has on-chip memory (onchip_bytes); fusion units kept";
    return out;
  }
  const PlatformDevice& device = platform.devices[d];
  const size_t n_fusion = fusion.size();
  out.units = onchip_partition(graph, device, fusion);

  std::vector<int> fusion_of(graph.nodes.size(), -1);
  for (size_t f = 0; f < fusion.size(); ++f)
    for (NodeId id : fusion[f]) fusion_of[id] = static_cast<int>(f);
  int n_groups = 0, n_grouped = 0, largest = 0;
  double most_kept = 0;
  out.unit_notes.assign(out.units.size(), "");
  for (size_t u = 0; u < out.units.size(); ++u) {
    std::set<int> members;
    for (NodeId id : out.units[u]) members.insert(fusion_of[id]);
    if (members.size() < 2) continue;
    std::vector<std::vector<NodeId>> parts;
    for (int f : members) parts.push_back(fusion[f]);
    double kept = onchip_bytes_between(graph, parts);
    ++n_groups;
    n_grouped += static_cast<int>(members.size());
    largest = std::max(largest, static_cast<int>(members.size()));
    most_kept = std::max(most_kept, kept);
    out.unit_notes[u] = fmt::format("launch unit: on-chip group of {} fusion units for {} ({} passed between them)",
                                    members.size(), device.name, format_bytes(kept));
  }
  out.note = fmt::format(
      "partition=onchip: on-chip groups for {} ({} on chip): {} fusion units -> {} launch units ({} fusion units "
      "in {} groups of up to {} units; up to {} passed on chip in one group)",
      device.name, format_bytes(static_cast<double>(device.onchip_bytes)), n_fusion, out.units.size(), n_grouped,
      n_groups, largest, format_bytes(most_kept));
  return out;
}

}  // namespace hetsched
