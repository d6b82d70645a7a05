// The makespan lower bound (see lower_bound.h).
#include "sched/lower_bound.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <vector>

#include <ClpSimplex.hpp>
#include <CoinPackedMatrix.hpp>
#include <fmt/format.h>

#include "hetsched/error.h"
#include "plan/plan_builder.h"
#include "sim/simulator.h"

namespace hetsched {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// min T subject to: every unit split over the devices that run it
// (sum_d x[u][d] = 1, x >= 0), and every resource busy at most T:
//   streams of d:     sum_u x[u][d] c[u][d]                 <= n_streams(d) T
//   compute of d:     sum_u x[u][d] c[u][d] compute[u][d]   <= T
//   bandwidth of d:   sum_u x[u][d] c[u][d] memory[u][d]    <= T
//   shared resource:  sum over its devices of the bandwidth terms * share <= T
double capacity_bound(const std::vector<std::vector<double>>& time, const std::vector<std::vector<ResourceDemand>>& demand,
                      const Platform& platform) {
  size_t n_units = time.size(), n_devices = platform.devices.size();
  ResourceSharing sharing = resource_sharing(platform);
  // Columns: T, then x[u][d] where the device runs the unit.
  std::vector<double> col_lower{0}, col_upper{COIN_DBL_MAX}, objective{1};
  std::vector<std::vector<int>> column(n_units, std::vector<int>(n_devices, -1));
  for (size_t u = 0; u < n_units; ++u)
    for (size_t d = 0; d < n_devices; ++d)
      if (std::isfinite(time[u][d])) {
        column[u][d] = static_cast<int>(col_lower.size());
        col_lower.push_back(0);
        col_upper.push_back(1);
        objective.push_back(0);
      }

  CoinPackedMatrix rows(false, 0, 0);
  rows.setDimensions(0, static_cast<int>(col_lower.size()));
  std::vector<double> row_lower, row_upper;
  auto add_row = [&](std::vector<int> index, std::vector<double> element, double lower, double upper) {
    rows.appendRow(static_cast<int>(index.size()), index.data(), element.data());
    row_lower.push_back(lower);
    row_upper.push_back(upper);
  };
  for (size_t u = 0; u < n_units; ++u) {
    std::vector<int> index;
    for (size_t d = 0; d < n_devices; ++d)
      if (column[u][d] >= 0) index.push_back(column[u][d]);
    add_row(index, std::vector<double>(index.size(), 1.0), 1, 1);
  }
  // One row per resource: -capacity * T + sum of busy time <= 0.
  auto add_capacity_row = [&](double capacity, const std::vector<std::pair<int, double>>& terms) {
    std::vector<int> index{0};
    std::vector<double> element{-capacity};
    for (const auto& [col, busy] : terms)
      if (busy > 0) {
        index.push_back(col);
        element.push_back(busy);
      }
    if (index.size() > 1) add_row(index, element, -COIN_DBL_MAX, 0);
  };
  std::vector<std::vector<std::pair<int, double>>> shared(static_cast<size_t>(sharing.n_resources));
  for (size_t d = 0; d < n_devices; ++d) {
    std::vector<std::pair<int, double>> streams, compute, memory;
    for (size_t u = 0; u < n_units; ++u) {
      int col = column[u][d];
      if (col < 0) continue;
      streams.emplace_back(col, time[u][d]);
      compute.emplace_back(col, time[u][d] * demand[u][d].compute);
      memory.emplace_back(col, time[u][d] * demand[u][d].memory);
      if (sharing.resource_of[d] >= 0)
        shared[static_cast<size_t>(sharing.resource_of[d])].emplace_back(
            col, time[u][d] * demand[u][d].memory * sharing.share[d]);
    }
    add_capacity_row(platform.devices[d].n_streams, streams);
    add_capacity_row(1, compute);
    add_capacity_row(1, memory);
  }
  for (const auto& terms : shared) add_capacity_row(1, terms);

  ClpSimplex lp;
  lp.setLogLevel(0);
  lp.loadProblem(rows, col_lower.data(), col_upper.data(), objective.data(), row_lower.data(), row_upper.data());
  lp.dual();
  if (!lp.isProvenOptimal())
    throw Error(ErrorCode::kRuntime, fmt::format("lower bound: the capacity LP did not solve (Clp status {})",
                                                 lp.status()));
  return lp.objectiveValue();
}

constexpr double kPerMicrosecond = 1e3;  // GFLOP/s and GB/s to per-microsecond

double weight_bytes(const Graph& graph, const std::vector<NodeId>& nodes) {
  double bytes = 0;
  for (NodeId id : nodes)
    for (ValueId v : graph.nodes[id].inputs)
      if (v != kNoValue && graph.values[v].is_constant()) bytes += graph.values[v].nbytes();
  return bytes;
}

// The least node `id` (of fusion unit `unit`) can take on `device` inside
// any launch; see lower_bound.h.
double node_floor_us(const Graph& graph, NodeId id, const std::vector<NodeId>& unit, const PlatformDevice& device,
                     const CostModel& cost) {
  if (!device.supports(graph.nodes[id])) return kInfinity;
  Estimate alone = cost.launch(graph, {id}, device);
  bool peaks = device.peak_gflops > 0 && device.bandwidth_gbps > 0;
  auto compute_us = [&](const std::vector<NodeId>& nodes) {
    double flops = 0;
    for (NodeId n : nodes) flops += graph.nodes[n].cost.flops;
    return flops / (device.peak_gflops * kPerMicrosecond);
  };
  auto weights_us = [&](const std::vector<NodeId>& nodes) {
    return weight_bytes(graph, nodes) / (device.bandwidth_gbps * kPerMicrosecond);
  };
  if (peaks && device.onchip_bytes > 0 && device.is_emulated())  // a group may be one kernel, activations on chip
    return std::min(alone.us, std::max(compute_us({id}), weights_us({id})));
  bool whole_unit = std::all_of(unit.begin(), unit.end(), [&](NodeId n) { return device.supports(graph.nodes[n]); });
  std::vector<NodeId> group = whole_unit ? unit : std::vector<NodeId>{id};
  Estimate estimate = cost.launch(graph, group, device);
  double floor = estimate.us;
  if (estimate.source == CostSource::kRoofline && peaks)
    // A launch of k kernels pays k overheads and max(FLOPs / peak,
    // bytes / bandwidth) over all of them, which is at least the mean of
    // the two, and its bytes include every kernel's weights.
    floor = device.launch_overhead_us + (compute_us(group) + weights_us(group)) / 2;
  if (group.size() > 1) {
    // The group's floor shared over its nodes by their own work.
    double mine = compute_us({id}) + weights_us({id}), all = compute_us(group) + weights_us(group);
    floor *= peaks && all > 0 ? mine / all : 1.0 / static_cast<double>(group.size());
  }
  return std::min(alone.us, floor);
}

}  // namespace

MakespanLowerBound makespan_lower_bound(const Graph& graph, const Platform& platform, const CostModel& cost) {
  // Nodes, not fusion units: a plan may launch any grouping of them.
  std::vector<std::vector<NodeId>> fusion = fusion_units(graph);
  std::vector<int> fusion_unit_of(graph.nodes.size(), -1);
  for (size_t f = 0; f < fusion.size(); ++f)
    for (NodeId id : fusion[f]) fusion_unit_of[id] = static_cast<int>(f);
  std::vector<std::vector<NodeId>> units;
  for (NodeId id = 0; id < static_cast<NodeId>(graph.nodes.size()); ++id) units.push_back({id});
  size_t n_units = units.size(), n_devices = platform.devices.size();
  std::vector<int> unit_of(graph.nodes.size(), -1);
  for (size_t u = 0; u < n_units; ++u)
    for (NodeId id : units[u]) unit_of[id] = static_cast<int>(u);

  std::vector<std::vector<double>> time(n_units, std::vector<double>(n_devices, kInfinity));
  std::vector<std::vector<ResourceDemand>> demand(n_units, std::vector<ResourceDemand>(n_devices));
  std::vector<double> fastest(n_units, kInfinity);
  for (size_t u = 0; u < n_units; ++u) {
    for (size_t d = 0; d < n_devices; ++d) {
      const PlatformDevice& device = platform.devices[d];
      NodeId id = units[u][0];
      double us = node_floor_us(graph, id, fusion[fusion_unit_of[id]], device, cost);
      if (!std::isfinite(us)) continue;
      time[u][d] = us;
      demand[u][d] = cost.demand(graph, units[u], device, us);
      fastest[u] = std::min(fastest[u], us);
    }
    if (!std::isfinite(fastest[u]))
      throw Error(ErrorCode::kUnsupported,
                  fmt::format("lower bound: no device of platform '{}' runs node '{}' ({})", platform.name,
                              graph.nodes[units[u].front()].name, graph.nodes[units[u].front()].op_type));
  }

  // finish[u][d]: the earliest unit u could end on device d if every
  // device were free: after each predecessor ends, on whichever device is
  // best for it, plus the hand-over or copy from there. Graph inputs start
  // in host memory and graph outputs end there. Units come in a topological
  // order, so predecessors are done when a unit is reached.
  int host = -1;
  for (size_t d = 0; d < n_devices && host < 0; ++d)
    if (platform.devices[d].memory_space == kHostMemory) host = static_cast<int>(d);
  auto transfer_us = [&](double bytes, size_t from, size_t to) {
    if (from == to || bytes <= 0) return 0.0;
    return cost.transfer(bytes, platform.devices[from], platform.devices[to]).us;
  };
  std::vector<std::vector<double>> finish(n_units, std::vector<double>(n_devices, kInfinity));
  MakespanLowerBound bound;
  for (size_t u = 0; u < n_units; ++u) {
    std::map<int, double> bytes_from;  // predecessor unit -> bytes read from it
    double input_bytes = 0, output_bytes = 0;
    for (NodeId id : units[u]) {
      for (ValueId v : graph.nodes[id].inputs) {
        if (v == kNoValue) continue;
        NodeId producer = graph.values[v].producer;
        double bytes = graph.values[v].nbytes();
        if (producer == kNoNode) {
          if (!graph.values[v].initializer) input_bytes += bytes;
        } else if (unit_of[producer] != static_cast<int>(u)) {
          bytes_from[unit_of[producer]] += bytes;
        }
      }
      for (ValueId v : graph.nodes[id].outputs)
        if (v != kNoValue && graph.is_graph_output(v))
          output_bytes += graph.values[v].nbytes();
    }
    double best_end = kInfinity;
    for (size_t d = 0; d < n_devices; ++d) {
      if (!std::isfinite(time[u][d])) continue;
      double ready = host >= 0 ? transfer_us(input_bytes, static_cast<size_t>(host), d) : 0;
      for (const auto& [p, bytes] : bytes_from) {
        double earliest = kInfinity;
        for (size_t from = 0; from < n_devices; ++from)
          earliest = std::min(earliest, finish[static_cast<size_t>(p)][from] + transfer_us(bytes, from, d));
        ready = std::max(ready, earliest);
      }
      finish[u][d] = ready + time[u][d];
      double out = host >= 0 ? transfer_us(output_bytes, d, static_cast<size_t>(host)) : 0;
      best_end = std::min(best_end, finish[u][d] + out);
    }
    bound.critical_path_us = std::max(bound.critical_path_us, best_end);
  }
  bound.capacity_us = capacity_bound(time, demand, platform);
  bound.us = std::max(bound.critical_path_us, bound.capacity_us);
  return bound;
}

}  // namespace hetsched
