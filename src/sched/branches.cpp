// The fusion-unit DAG, its chains, transfer costs as plans pay them, and the
// single-device fallback shared by "duet" and "partition-tuner".
#include "sched/branches.h"

#include <algorithm>
#include <cmath>
#include <queue>
#include <set>

#include <fmt/format.h>

#include "hetsched/error.h"
#include "sim/simulator.h"

namespace hetsched {

UnitDag build_unit_dag(const Graph& graph, std::vector<std::vector<NodeId>> units) {
  UnitDag dag;
  dag.units = units.empty() ? fusion_units(graph) : std::move(units);
  const int n = static_cast<int>(dag.units.size());
  dag.unit_of.assign(graph.nodes.size(), -1);
  for (int u = 0; u < n; ++u) {
    std::sort(dag.units[u].begin(), dag.units[u].end());
    for (NodeId id : dag.units[u]) dag.unit_of[id] = u;
  }
  std::vector<std::set<int>> preds(n), succs(n);
  for (int u = 0; u < n; ++u)
    for (NodeId id : dag.units[u])
      for (ValueId v : graph.nodes[id].inputs) {
        if (v == kNoValue || graph.values[v].producer == kNoNode) continue;
        int p = dag.unit_of[graph.values[v].producer];
        if (p == u) continue;
        preds[u].insert(p);
        succs[p].insert(u);
      }
  for (int u = 0; u < n; ++u) {
    dag.preds.emplace_back(preds[u].begin(), preds[u].end());
    dag.succs.emplace_back(succs[u].begin(), succs[u].end());
  }
  return dag;
}

std::vector<std::vector<int>> unit_chains(const UnitDag& dag, const std::function<bool(int, int)>& may_join) {
  const int n = static_cast<int>(dag.units.size());
  // next[u]: the unit continuing u's chain, -1 when the chain ends at u.
  std::vector<int> next(n, -1);
  std::vector<bool> continues(n, false);
  for (int u = 0; u < n; ++u) {
    if (dag.succs[u].size() != 1) continue;
    int v = dag.succs[u][0];
    if (dag.preds[v].size() != 1 || (may_join && !may_join(u, v))) continue;
    next[u] = v;
    continues[v] = true;
  }
  std::vector<std::vector<int>> chains;
  for (int u = 0; u < n; ++u) {
    if (continues[u]) continue;
    std::vector<int> chain;
    for (int w = u; w >= 0; w = next[w]) chain.push_back(w);
    chains.push_back(std::move(chain));
  }
  return chains;
}

std::vector<int> subgraph_topological_order(const Graph& graph, const std::vector<std::vector<NodeId>>& subgraphs,
                                            const std::vector<int>& subgraph_of, const std::string& scheduler,
                                            const std::vector<double>& earliest) {
  const int n = static_cast<int>(subgraphs.size());
  std::vector<std::set<int>> succs(n);
  std::vector<int> in_degree(n, 0);
  for (int s = 0; s < n; ++s)
    for (NodeId id : subgraphs[s])
      for (ValueId v : graph.nodes[id].outputs) {
        if (v == kNoValue) continue;
        for (NodeId reader : graph.values[v].consumers) {
          int t = subgraph_of[reader];
          if (t != s && succs[s].insert(t).second) ++in_degree[t];
        }
      }
  std::vector<NodeId> first(n);
  for (int s = 0; s < n; ++s) first[s] = *std::min_element(subgraphs[s].begin(), subgraphs[s].end());
  // The priority queue's top is its greatest element: the latest comes last.
  auto later = [&](int a, int b) {
    if (!earliest.empty() && earliest[a] != earliest[b]) return earliest[a] > earliest[b];
    return first[a] > first[b];
  };
  std::priority_queue<int, std::vector<int>, decltype(later)> ready(later);
  for (int s = 0; s < n; ++s)
    if (in_degree[s] == 0) ready.push(s);
  std::vector<int> order;
  while (!ready.empty()) {
    int s = ready.top();
    ready.pop();
    order.push_back(s);
    for (int t : succs[s])
      if (--in_degree[t] == 0) ready.push(t);
  }
  if (static_cast<int>(order.size()) != n)
    throw Error(ErrorCode::kUsage, fmt::format("scheduler '{}': its subgraphs depend on each other in a cycle",
                                               scheduler));
  return order;
}

bool runs_all(const Graph& graph, const std::vector<NodeId>& nodes, const PlatformDevice& device) {
  return std::all_of(nodes.begin(), nodes.end(), [&](NodeId id) { return device.supports(graph.nodes[id]); });
}

namespace {

double link_us(const Platform& platform, double bytes, const std::string& from, const std::string& to) {
  const Link* link = platform.link(from, to);
  if (!link) return kNever;
  if (link->bandwidth_gbps <= 0) return bytes > 0 ? kNever : link->latency_us;
  return link->latency_us + bytes / (link->bandwidth_gbps * 1e3);
}

const PlatformDevice* host_device(const Platform& platform) {
  for (const PlatformDevice& device : platform.devices)
    if (device.memory_space == kHostMemory) return &device;
  return nullptr;
}

// Between host memory and `device`, in the direction given: a host device
// stands for the host end where there is one, so that measured links count.
double host_leg_us(const CostModel& cost, const Platform& platform, double bytes, const PlatformDevice& device,
                   bool to_device) {
  if (device.memory_space == kHostMemory) return 0;
  if (const PlatformDevice* host = host_device(platform))
    return to_device ? cost.transfer(bytes, *host, device).us : cost.transfer(bytes, device, *host).us;
  return to_device ? link_us(platform, bytes, kHostMemory, device.memory_space)
                   : link_us(platform, bytes, device.memory_space, kHostMemory);
}

}  // namespace

double crossing_us(const CostModel& cost, const Platform& platform, double bytes, const PlatformDevice& from,
                   const PlatformDevice& to) {
  if (from.name == to.name) return 0;
  double direct = cost.transfer(bytes, from, to).us;
  if (std::isfinite(direct) || from.memory_space == to.memory_space) return direct;
  return host_leg_us(cost, platform, bytes, from, false) + host_leg_us(cost, platform, bytes, to, true);
}

double copy_from_host_us(const CostModel& cost, const Platform& platform, double bytes, const PlatformDevice& device) {
  return host_leg_us(cost, platform, bytes, device, true);
}

double copy_to_host_us(const CostModel& cost, const Platform& platform, double bytes, const PlatformDevice& device) {
  return host_leg_us(cost, platform, bytes, device, false);
}

double simulated_makespan_us(const Graph& graph, const Platform& platform, const CostModel& cost,
                             const std::vector<LaunchAssignment>& launches, const std::string& scheduler) {
  SimOptions options;
  options.trace = false;
  return simulate(build_plan(graph, platform, launches, scheduler, /*stamp_identity=*/false), graph, platform, cost,
                  options)
      .makespan_us;
}

std::string format_ms(double us) {
  return std::isfinite(us) ? fmt::format("{:.3f} ms", us / 1000.0) : std::string("never");
}

std::string launch_label(const Graph& graph, const std::vector<NodeId>& nodes) {
  constexpr size_t kNamed = 3;
  std::string label;
  for (size_t i = 0; i < nodes.size() && i < kNamed; ++i) label += (i ? " + " : "") + graph.nodes[nodes[i]].label();
  if (nodes.size() > kNamed) label += fmt::format(" + {} more", nodes.size() - kNamed);
  return label;
}

Plan keep_or_fall_back_to_one_device(const Graph& graph, const Platform& platform, const CostModel& cost, Plan plan,
                                     double plan_us, const std::string& scheduler) {
  std::vector<std::vector<NodeId>> units = fusion_units(graph);
  auto on_device = [&](int device, const std::string& reason) {
    std::vector<LaunchAssignment> launches;
    for (const auto& unit : units) launches.push_back(LaunchAssignment{unit, device, 0, reason});
    return launches;
  };
  int best = -1;
  double best_us = kNever;
  std::vector<std::string> others;
  for (size_t d = 0; d < platform.devices.size(); ++d) {
    const PlatformDevice& device = platform.devices[d];
    if (!device.supports_all(graph)) continue;
    double us = simulated_makespan_us(graph, platform, cost, on_device(static_cast<int>(d), scheduler), scheduler);
    others.push_back(fmt::format("{} {}", device.name, format_ms(us)));
    if (best < 0 || us < best_us) {
      best = static_cast<int>(d);
      best_us = us;
    }
  }
  if (best < 0) {
    plan.notes.push_back("no single device runs every op: nothing to compare with");
  } else if (best_us < plan_us) {
    std::string reason = fmt::format("{}: all on {}: {} alone beats the partitioned plan's {} (simulated)", scheduler,
                                     platform.devices[best].name, format_ms(best_us), format_ms(plan_us));
    std::vector<std::string> notes = std::move(plan.notes);
    plan = build_plan(graph, platform, on_device(best, reason), scheduler);
    plan.notes = std::move(notes);
    plan.notes.push_back(reason);
    plan_us = best_us;
  } else {
    plan.notes.push_back(fmt::format("single devices, simulated: {}", fmt::join(others, ", ")));
  }
  plan.predicted_ms = plan_us / 1000.0;
  return plan;
}

}  // namespace hetsched
