// "random": a random valid plan — a random topological order of the fusion
// units, each on a random device that runs it and a random stream, its
// copies between memory spaces on random streams (LaunchAssignment's
// push_stream, push_spread and pull_stream). Used by
// the equivalence tests and to measure the simulator's fidelity over plans
// no heuristic would pick.
#include <algorithm>
#include <random>
#include <set>

#include <fmt/format.h>

#include "hetsched/error.h"
#include "hetsched/scheduler.h"
#include "plan/plan_builder.h"

namespace hetsched {

namespace {

class RandomScheduler : public Scheduler {
 public:
  Plan schedule(const Graph& graph, const Platform& platform, const CostModel&,
                const ScheduleOptions& options) const override {
    if (!options.params.empty())
      throw Error(ErrorCode::kUsage, fmt::format("scheduler 'random' takes no parameters (got '{}'); use --seed",
                                                 options.params.begin()->first));
    std::vector<std::vector<NodeId>> units = fusion_units(graph);
    std::vector<int> unit_of(graph.nodes.size(), -1);
    for (size_t u = 0; u < units.size(); ++u)
      for (NodeId id : units[u]) unit_of[id] = static_cast<int>(u);

    std::vector<std::set<int>> successors(units.size());
    std::vector<int> pending(units.size(), 0);
    for (size_t u = 0; u < units.size(); ++u) {
      std::set<int> predecessors;
      for (NodeId id : units[u])
        for (ValueId v : graph.nodes[id].inputs) {
          if (v == kNoValue || graph.values[v].producer == kNoNode) continue;
          int p = unit_of[graph.values[v].producer];
          if (p != static_cast<int>(u)) predecessors.insert(p);
        }
      pending[u] = static_cast<int>(predecessors.size());
      for (int p : predecessors) successors[p].insert(static_cast<int>(u));
    }

    // Plain modulo rather than std::uniform_int_distribution: the same seed
    // gives the same plan with every standard library.
    std::mt19937_64 rng(options.seed);
    auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
    std::vector<int> ready;
    for (size_t u = 0; u < units.size(); ++u)
      if (pending[u] == 0) ready.push_back(static_cast<int>(u));
    std::string reason = fmt::format("random (seed {})", options.seed);
    std::vector<LaunchAssignment> launches;
    while (!ready.empty()) {
      size_t r = pick(ready.size());
      int u = ready[r];
      ready[r] = ready.back();
      ready.pop_back();
      for (int s : successors[u])
        if (--pending[s] == 0) ready.push_back(s);

      std::vector<int> able;
      for (size_t d = 0; d < platform.devices.size(); ++d) {
        bool runs = true;
        for (NodeId id : units[u]) runs = runs && platform.devices[d].supports(graph.nodes[id]);
        if (runs) able.push_back(static_cast<int>(d));
      }
      if (able.empty())
        throw Error(ErrorCode::kUnsupported, fmt::format("scheduler 'random': no device of this platform runs {}",
                                                         graph.nodes[units[u][0]].label()));
      int device = able[pick(able.size())];
      size_t n_streams = static_cast<size_t>(std::max(1, platform.devices[device].n_streams));
      int stream = static_cast<int>(pick(n_streams));
      LaunchAssignment launch{units[u], device, stream, reason};
      // Copies between memory spaces on the reading lane (-1) or a stream
      // of this device, either way round.
      launch.push_stream = static_cast<int>(pick(n_streams + 1)) - 1;
      launch.pull_stream = static_cast<int>(pick(n_streams + 1)) - 1;
      launch.push_spread = pick(2) == 1;
      launches.push_back(std::move(launch));
    }
    return build_plan(graph, platform, launches, "random");
  }
};

}  // namespace

HETSCHED_SCHEDULER("random", "a random valid plan (random order, devices and streams; --seed)", RandomScheduler);

}  // namespace hetsched
