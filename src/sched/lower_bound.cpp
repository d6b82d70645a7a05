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

}  // namespace

MakespanLowerBound makespan_lower_bound(const Graph& graph, const Platform& platform, const CostModel& cost) {
  std::vector<std::vector<NodeId>> units = fusion_units(graph);
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
      double us = cost.launch(graph, units[u], device).us;
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
