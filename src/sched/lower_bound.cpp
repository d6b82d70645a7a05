// The makespan lower bound (see lower_bound.h).
#include "sched/lower_bound.h"

#include <algorithm>
#include <cmath>
#include <limits>
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

  // Units come in a topological order, so every predecessor's finish is
  // known when a unit is reached.
  std::vector<double> finish(n_units, 0);
  MakespanLowerBound bound;
  for (size_t u = 0; u < n_units; ++u) {
    double ready = 0;
    for (NodeId id : units[u])
      for (ValueId v : graph.nodes[id].inputs) {
        if (v == kNoValue) continue;
        NodeId producer = graph.values[v].producer;
        if (producer == kNoNode || unit_of[producer] == static_cast<int>(u)) continue;
        ready = std::max(ready, finish[static_cast<size_t>(unit_of[producer])]);
      }
    finish[u] = ready + fastest[u];
    bound.critical_path_us = std::max(bound.critical_path_us, finish[u]);
  }
  bound.capacity_us = capacity_bound(time, demand, platform);
  bound.us = std::max(bound.critical_path_us, bound.capacity_us);
  return bound;
}

}  // namespace hetsched
