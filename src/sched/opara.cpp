// "opara" (Opara, 2023): the whole graph on one multi-stream device. Streams
// follow the graph's chains (a unit takes over the stream of a predecessor
// nothing else has continued yet), and launches are ordered so that
// compute-bound and memory-bound kernels alternate, lightest first, letting
// neighbouring streams overlap on different resources.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "hetsched/error.h"
#include "hetsched/scheduler.h"
#include "plan/plan_builder.h"
#include "sched/stream_device.h"

namespace hetsched {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

struct Unit {
  std::vector<NodeId> nodes;
  std::vector<int> preds;  // producer units, in input order, without repeats
  std::vector<int> succs;
  double us = 0;
  double intensity = 0;  // FLOP per byte
  bool memory_bound = false;
  double demand = 0;  // share of the resource it is bound by
  int stream = -1;
  std::string stream_why;
};

// Opara's Alg. 1: a unit continues the stream of its first predecessor that
// is still the tail of its stream; otherwise it opens a new one. Past the
// device's stream count, the least-loaded stream (predicted busy time) takes it.
int assign_streams(const Graph& graph, std::vector<Unit>& units, int n_streams) {
  std::vector<int> tail;     // per stream: its last unit so far
  std::vector<double> load;  // per stream: predicted busy time
  int wrapped = 0;
  for (size_t u = 0; u < units.size(); ++u) {
    Unit& unit = units[u];
    for (int p : unit.preds)
      if (tail[units[p].stream] == p) {
        unit.stream = units[p].stream;
        unit.stream_why = fmt::format("reuses {}'s stream", graph.nodes[units[p].nodes.back()].label());
        break;
      }
    if (unit.stream < 0) {
      if (static_cast<int>(tail.size()) < n_streams) {
        unit.stream = static_cast<int>(tail.size());
        tail.push_back(-1);
        load.push_back(0);
        unit.stream_why = "new stream";
      } else {
        unit.stream = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
        unit.stream_why = fmt::format("least-loaded of {} streams", n_streams);
        ++wrapped;
      }
    }
    tail[unit.stream] = static_cast<int>(u);
    if (std::isfinite(unit.us)) load[unit.stream] += unit.us;
  }
  return wrapped;
}

// Opara's Alg. 2: among ready units, take turns between the compute-bound and
// the memory-bound list (compute first), each time the least demanding one.
std::vector<int> launch_order(const std::vector<Unit>& units) {
  std::vector<int> waiting(units.size());
  std::vector<int> ready_compute, ready_memory;
  auto make_ready = [&](int u) { (units[u].memory_bound ? ready_memory : ready_compute).push_back(u); };
  for (size_t u = 0; u < units.size(); ++u) {
    waiting[u] = static_cast<int>(units[u].preds.size());
    if (waiting[u] == 0) make_ready(static_cast<int>(u));
  }
  std::vector<int> order;
  bool last_was_compute = false;
  while (!ready_compute.empty() || !ready_memory.empty()) {
    bool take_compute = ready_memory.empty() || (!ready_compute.empty() && !last_was_compute);
    std::vector<int>& list = take_compute ? ready_compute : ready_memory;
    // Ties go to the earlier unit in topological order.
    auto best = std::min_element(list.begin(), list.end(), [&](int a, int b) {
      return units[a].demand != units[b].demand ? units[a].demand < units[b].demand : a < b;
    });
    int u = *best;
    list.erase(best);
    last_was_compute = take_compute;
    order.push_back(u);
    for (int s : units[u].succs)
      if (--waiting[s] == 0) make_ready(s);
  }
  return order;
}

class OparaScheduler : public Scheduler {
 public:
  Plan schedule(const Graph& graph, const Platform& platform, const CostModel& cost,
                const ScheduleOptions& options) const override {
    for (const auto& [key, value] : options.params)
      if (key != "device")
        throw Error(ErrorCode::kUsage, fmt::format("scheduler 'opara': unknown parameter '{}' (known: device)", key));
    int device_index = pick_stream_device(graph, platform, options, "opara");
    const PlatformDevice& device = platform.devices[device_index];
    std::vector<std::string> notes;

    std::optional<double> ridge;
    if (device.peak_gflops > 0 && device.bandwidth_gbps > 0) ridge = device.peak_gflops / device.bandwidth_gbps;
    else
      notes.push_back(fmt::format("{} has no known peak FLOP/s and bandwidth: every unit is treated as compute-bound",
                                  device.name));

    std::vector<Unit> units;
    std::vector<int> unit_of(graph.nodes.size(), -1);
    for (auto& nodes : fusion_units(graph)) {
      for (NodeId id : nodes) unit_of[id] = static_cast<int>(units.size());
      Unit unit;
      unit.nodes = std::move(nodes);
      units.push_back(std::move(unit));
    }
    for (size_t u = 0; u < units.size(); ++u) {
      Unit& unit = units[u];
      for (NodeId id : unit.nodes)
        for (ValueId v : graph.nodes[id].inputs) {
          if (v == kNoValue || graph.values[v].producer == kNoNode) continue;
          int p = unit_of[graph.values[v].producer];
          if (p == static_cast<int>(u) || std::find(unit.preds.begin(), unit.preds.end(), p) != unit.preds.end())
            continue;
          unit.preds.push_back(p);
          units[p].succs.push_back(static_cast<int>(u));
        }
      double flops = 0;
      for (NodeId id : unit.nodes) flops += graph.nodes[id].cost.flops;
      double bytes = launch_bytes(graph, unit.nodes);
      unit.intensity = bytes > 0 ? flops / bytes : (flops > 0 ? kInfinity : 0);
      unit.memory_bound = ridge && unit.intensity < *ridge;
      unit.us = cost.launch(graph, unit.nodes, device).us;
      ResourceDemand demand = cost.demand(graph, unit.nodes, device, unit.us);
      unit.demand = unit.memory_bound ? demand.memory : demand.compute;
    }

    int wrapped = assign_streams(graph, units, std::max(1, device.n_streams));
    if (wrapped > 0)
      notes.push_back(fmt::format("{} runs at most {} stream(s); {} units that would have opened a new stream "
                                  "share the least-loaded one",
                                  device.name, device.n_streams, wrapped));

    std::vector<LaunchAssignment> launches;
    for (int u : launch_order(units)) {
      Unit& unit = units[u];
      std::string bound;
      if (!ridge)
        bound = "compute-bound (ridge unknown)";
      else
        bound = fmt::format("{} (intensity {:.1f} {} ridge {:.1f})", unit.memory_bound ? "memory-bound" : "compute-bound",
                            unit.intensity, unit.memory_bound ? "<" : ">=", *ridge);
      std::string reason = fmt::format("opara: stream {} ({}), {}", unit.stream, unit.stream_why, bound);
      launches.push_back(LaunchAssignment{std::move(unit.nodes), device_index, unit.stream, std::move(reason)});
    }
    move_pinned_launches(launches, graph, platform);
    Plan plan = build_plan(graph, platform, launches, "opara");
    plan.notes = std::move(notes);
    return plan;
  }
};

}  // namespace

HETSCHED_SCHEDULER("opara",
                   "Opara: one multi-stream device (the one with most streams, or --sched-param device=NAME); "
                   "streams follow chains, launches alternate compute- and memory-bound units",
                   OparaScheduler);

}  // namespace hetsched
