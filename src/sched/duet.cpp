// "duet": DUET (Zhang et al., IPDPS 2021, "DUET: A Compiler-Runtime Subgraph
// Scheduling Approach for Tensor Programs on a Coupled CPU-GPU
// Architecture"), on any set of devices.
//   1. Coarse-grained partition of the fusion-unit DAG into subgraphs of high
//      compute granularity and low communication volume: split at forks and
//      joins, each chain one subgraph, then small subgraphs (under a share of
//      the graph's FLOPs) merged into a neighbour while that shrinks the cut,
//      never closing a cycle between subgraphs (duet_partition, branches.h).
//      The paper's devices (CPU, GPU) run every op; an accelerator running
//      only some keeps them: units and chains are split where the devices
//      able to run them change.
//   2. Compiler-aware profiling: each subgraph is one launch, costed with
//      cost.launch(subgraph, device) — measured as that one launch when
//      `hetsched profile` ran (profile_units() proposes the subgraphs), so a
//      backend's fusion across the subgraph counts.
//   3. Greedy placement in topological order on the device where each
//      subgraph finishes first (the reader pays for moving values, as plans
//      do), then correction: moving one subgraph to another device, or
//      swapping two subgraphs' devices, while the simulator's makespan drops
//      (first- or best-improvement, within a budget of simulations). Each
//      step is first bounded by the greedy's list model, which is the
//      simulator without interference: a step the bound rules out is never
//      simulated, which keeps the search fast on large graphs.
// The result is never slower than the best single device (simulated).
//
// Parameters: small=FRACTION (default 0.02: subgraphs under 2% of the FLOPs
// are merged), correction=first|best|none (default first), max_evals=N
// (default 200 simulations for the correction).
#include <algorithm>
#include <memory>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "hetsched/error.h"
#include "hetsched/scheduler.h"
#include "sched/branches.h"

namespace hetsched {

// ---------------------------------------------------------------- the partition

namespace {

// The subgraphs while they are merged: node sets with their FLOPs and the
// devices running all of their nodes.
struct Parts {
  std::vector<std::vector<NodeId>> nodes;
  std::vector<double> flops;
  std::vector<std::vector<bool>> runs_on;
  std::vector<bool> alive;
  std::vector<int> of;  // [node]
};

// One value crossing subgraphs: its bytes, its producer's subgraph and the
// other subgraphs reading it.
struct Crossing {
  double bytes = 0;
  int producer = -1;
  std::vector<int> readers;  // distinct, without the producer
};

std::vector<Crossing> crossings(const Graph& graph, const std::vector<int>& of) {
  std::vector<Crossing> out;
  for (const Value& value : graph.values) {
    if (value.producer == kNoNode || value.is_constant()) continue;
    Crossing c;
    c.bytes = value.nbytes();
    c.producer = of[value.producer];
    for (NodeId reader : value.consumers) {
      int s = of[reader];
      if (s != c.producer && std::find(c.readers.begin(), c.readers.end(), s) == c.readers.end())
        c.readers.push_back(s);
    }
    if (!c.readers.empty()) out.push_back(std::move(c));
  }
  return out;
}

double cut_bytes(const std::vector<Crossing>& cut) {
  double bytes = 0;
  for (const Crossing& c : cut) bytes += c.bytes * static_cast<double>(c.readers.size());
  return bytes;
}

// Whether merging a and b closes a cycle: some path leaves one of them
// through a third subgraph and comes back to either.
bool merge_closes_cycle(const std::vector<std::set<int>>& succs, int a, int b) {
  std::vector<bool> seen(succs.size(), false);
  std::vector<int> stack;
  for (int from : {a, b})
    for (int s : succs[from])
      if (s != a && s != b && !seen[s]) {
        seen[s] = true;
        stack.push_back(s);
      }
  while (!stack.empty()) {
    int s = stack.back();
    stack.pop_back();
    for (int t : succs[s]) {
      if (t == a || t == b) return true;
      if (!seen[t]) {
        seen[t] = true;
        stack.push_back(t);
      }
    }
  }
  return false;
}

// Merges the smallest mergeable subgraph into its best neighbour; false when
// no small subgraph can be merged.
bool merge_one_small_subgraph(const Graph& graph, Parts& parts, double small_flops) {
  const int n = static_cast<int>(parts.nodes.size());
  std::vector<Crossing> cut = crossings(graph, parts.of);
  // What merging each adjacent pair saves: the values passed between them,
  // and the values both read from a third (one reader fewer).
  std::map<std::pair<int, int>, double> saved;
  std::vector<std::set<int>> succs(n), neighbours(n);
  for (const Crossing& c : cut) {
    for (int r : c.readers) {
      saved[{std::min(c.producer, r), std::max(c.producer, r)}] += c.bytes;
      succs[c.producer].insert(r);
      neighbours[c.producer].insert(r);
      neighbours[r].insert(c.producer);
    }
  }
  for (const Crossing& c : cut)
    for (size_t i = 0; i < c.readers.size(); ++i)
      for (size_t j = i + 1; j < c.readers.size(); ++j) {
        auto key = std::make_pair(std::min(c.readers[i], c.readers[j]), std::max(c.readers[i], c.readers[j]));
        if (neighbours[key.first].count(key.second)) saved[key] += c.bytes;
      }

  std::vector<int> small;
  for (int s = 0; s < n; ++s)
    if (parts.alive[s] && parts.flops[s] < small_flops) small.push_back(s);
  std::stable_sort(small.begin(), small.end(), [&](int a, int b) { return parts.flops[a] < parts.flops[b]; });
  for (int s : small) {
    int best = -1;
    double best_saved = 0;
    for (int t : neighbours[s]) {
      if (parts.runs_on[t] != parts.runs_on[s]) continue;
      double bytes = saved[{std::min(s, t), std::max(s, t)}];
      if (bytes <= best_saved) continue;  // ties keep the lower index
      if (merge_closes_cycle(succs, s, t)) continue;
      best = t;
      best_saved = bytes;
    }
    if (best < 0) continue;
    for (NodeId id : parts.nodes[s]) parts.of[id] = best;
    parts.nodes[best].insert(parts.nodes[best].end(), parts.nodes[s].begin(), parts.nodes[s].end());
    parts.nodes[s].clear();
    parts.flops[best] += parts.flops[s];
    parts.alive[s] = false;
    return true;
  }
  return false;
}

}  // namespace

DuetPartition duet_partition(const Graph& graph, const Platform& platform, double small_share) {
  if (!(small_share >= 0 && small_share < 1))
    throw Error(ErrorCode::kUsage, fmt::format("duet_partition: small_share {} is not in [0, 1)", small_share));
  std::vector<std::vector<NodeId>> units;
  for (std::vector<NodeId>& unit : fusion_units(graph)) {
    bool partly = std::any_of(platform.devices.begin(), platform.devices.end(), [&](const PlatformDevice& device) {
      auto runs = [&](NodeId id) { return device.supports(graph.nodes[id]); };
      return std::any_of(unit.begin(), unit.end(), runs) && !std::all_of(unit.begin(), unit.end(), runs);
    });
    if (!partly) {
      units.push_back(std::move(unit));
      continue;
    }
    std::sort(unit.begin(), unit.end());
    for (NodeId id : unit) units.push_back({id});
  }
  UnitDag dag = build_unit_dag(graph, std::move(units));
  const int n_units = static_cast<int>(dag.units.size());
  std::vector<std::vector<bool>> unit_runs_on(n_units, std::vector<bool>(platform.devices.size(), false));
  for (int u = 0; u < n_units; ++u)
    for (size_t d = 0; d < platform.devices.size(); ++d)
      unit_runs_on[u][d] = runs_all(graph, dag.units[u], platform.devices[d]);
  std::vector<std::vector<int>> chains =
      unit_chains(dag, [&](int u, int v) { return unit_runs_on[u] == unit_runs_on[v]; });

  Parts parts;
  parts.of.assign(graph.nodes.size(), -1);
  for (size_t c = 0; c < chains.size(); ++c) {
    std::vector<NodeId> nodes;
    double flops = 0;
    for (int u : chains[c])
      for (NodeId id : dag.units[u]) {
        nodes.push_back(id);
        flops += graph.nodes[id].cost.flops;
        parts.of[id] = static_cast<int>(c);
      }
    parts.nodes.push_back(std::move(nodes));
    parts.flops.push_back(flops);
    parts.runs_on.push_back(unit_runs_on[chains[c].front()]);
    parts.alive.push_back(true);
  }

  DuetPartition out;
  out.n_units = n_units;
  out.n_chains = static_cast<int>(chains.size());
  out.chain_cut_bytes = cut_bytes(crossings(graph, parts.of));
  const double small_flops = small_share * graph.total_flops();
  while (merge_one_small_subgraph(graph, parts, small_flops)) ++out.n_merges;

  std::vector<std::vector<NodeId>> subgraphs;
  std::vector<int> renumber(parts.nodes.size(), -1);
  for (size_t s = 0; s < parts.nodes.size(); ++s)
    if (parts.alive[s]) {
      renumber[s] = static_cast<int>(subgraphs.size());
      std::sort(parts.nodes[s].begin(), parts.nodes[s].end());
      subgraphs.push_back(parts.nodes[s]);
    }
  std::vector<int> of(graph.nodes.size());
  for (size_t id = 0; id < of.size(); ++id) of[id] = renumber[parts.of[id]];
  std::vector<int> order = subgraph_topological_order(graph, subgraphs, of, "duet");
  std::vector<int> position(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    position[order[i]] = static_cast<int>(i);
    out.subgraphs.push_back(std::move(subgraphs[order[i]]));
  }
  out.subgraph_of.resize(of.size());
  for (size_t id = 0; id < of.size(); ++id) out.subgraph_of[id] = position[of[id]];
  out.cut_bytes = cut_bytes(crossings(graph, out.subgraph_of));
  return out;
}

// ---------------------------------------------------------------- the scheduler

namespace {

constexpr double kDefaultSmall = 0.02;
constexpr int kDefaultMaxEvals = 200;

enum class Correction { kFirst, kBest, kNone };

struct DuetParams {
  double small = kDefaultSmall;
  Correction correction = Correction::kFirst;
  int max_evals = kDefaultMaxEvals;
};

DuetParams parse_params(const ScheduleOptions& options) {
  DuetParams params;
  for (const auto& [key, text] : options.params) {
    auto bad = [&key = key, &text = text](const char* expected) {
      throw Error(ErrorCode::kUsage,
                  fmt::format("scheduler 'duet': parameter {}='{}': expected {}", key, text, expected));
    };
    if (key == "small") {
      size_t used = 0;
      double value = -1;
      try {
        value = std::stod(text, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != text.size() || !(value >= 0 && value < 1))
        bad("a share of the graph's FLOPs in [0, 1), e.g. 0.02");
      params.small = value;
    } else if (key == "correction") {
      if (text == "first") params.correction = Correction::kFirst;
      else if (text == "best") params.correction = Correction::kBest;
      else if (text == "none") params.correction = Correction::kNone;
      else bad("first, best or none");
    } else if (key == "max_evals") {
      size_t used = 0;
      long value = -1;
      try {
        value = std::stol(text, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != text.size() || value < 0 || value > 1000000) bad("a number of simulations from 0 to 1000000");
      params.max_evals = static_cast<int>(value);
    } else {
      throw Error(ErrorCode::kUsage,
                  fmt::format("scheduler 'duet': unknown parameter '{}' (known: small, correction, max_evals)", key));
    }
  }
  return params;
}

// The list model DUET places subgraphs with: the plan build_plan() makes,
// walked without interference. Each subgraph, in topological order, is one
// launch on its device's lane; before it the lane waits for each input in
// turn and copies it into its memory space when it is not there yet (once
// per value and space: later readers there only wait for that copy); a
// value handed over from another device of the same space is paid in the
// launch; graph outputs are copied back to host memory after it. The
// simulator walks the same plan with the same costs and only adds the
// slowdown of co-running launches, so this model's makespan bounds the
// simulated one from below: the correction skips the steps whose bound
// cannot beat the makespan.
class DuetPlanner {
 public:
  DuetPlanner(const Graph& graph, const Platform& platform, const CostModel& cost, const DuetPartition& partition)
      : graph_(graph), platform_(platform), cost_(cost), part_(partition) {
    n_ = static_cast<int>(part_.subgraphs.size());
    d_ = static_cast<int>(platform_.devices.size());
    std::vector<std::string> spaces = {kHostMemory};
    for (const PlatformDevice& device : platform_.devices) {
      auto it = std::find(spaces.begin(), spaces.end(), device.memory_space);
      space_of_.push_back(static_cast<int>(it - spaces.begin()));
      if (it == spaces.end()) spaces.push_back(device.memory_space);
    }
    n_spaces_ = static_cast<int>(spaces.size());
    launch_us_.assign(n_, std::vector<double>(d_, kNever));
    io_.resize(n_);
    std::vector<int> slot_of_value(graph_.values.size(), -1);
    auto slot = [&](ValueId v) {
      if (slot_of_value[v] < 0) slot_of_value[v] = n_slots_++;
      return slot_of_value[v];
    };
    for (int s = 0; s < n_; ++s) {
      const std::vector<NodeId>& nodes = part_.subgraphs[s];
      bool somewhere = false;
      for (int d = 0; d < d_; ++d) {
        if (!runs_all(graph_, nodes, platform_.devices[d])) continue;
        launch_us_[s][d] = cost_.launch(graph_, nodes, platform_.devices[d]).us;
        somewhere = somewhere || std::isfinite(launch_us_[s][d]);
      }
      if (!somewhere)
        throw Error(ErrorCode::kUnsupported,
                    fmt::format("scheduler 'duet': no device of this platform runs {} with a finite cost estimate",
                                graph_.nodes[nodes[0]].label()));
      // Inputs in the order build_plan() brings them: node by node, input by input.
      std::vector<ValueId> seen;
      for (NodeId id : nodes)
        for (ValueId v : graph_.nodes[id].inputs) {
          if (v == kNoValue || graph_.values[v].is_constant()) continue;
          NodeId producer = graph_.values[v].producer;
          if (producer != kNoNode && part_.subgraph_of[producer] == s) continue;
          if (std::find(seen.begin(), seen.end(), v) != seen.end()) continue;
          seen.push_back(v);
          Input in;
          in.slot = slot(v);
          in.producer = producer == kNoNode ? -1 : part_.subgraph_of[producer];
          double bytes = graph_.values[v].nbytes();
          in.us.assign(d_, std::vector<double>(d_, 0));
          for (int from = 0; from < d_; ++from)
            for (int to = 0; to < d_; ++to)
              in.us[from][to] = in.producer < 0 ? copy_from_host_us(cost_, platform_, bytes, platform_.devices[to])
                                                : crossing_us(cost_, platform_, bytes, platform_.devices[from],
                                                              platform_.devices[to]);
          io_[s].inputs.push_back(std::move(in));
        }
      io_[s].copy_back.assign(d_, 0);
      for (NodeId id : nodes)
        for (ValueId v : graph_.nodes[id].outputs)
          if (v != kNoValue && graph_.is_graph_output(v)) {
            io_[s].outputs_to_host.push_back(slot(v));
            for (int d = 0; d < d_; ++d)
              io_[s].copy_back[d] += copy_to_host_us(cost_, platform_, graph_.values[v].nbytes(),
                                                     platform_.devices[d]);
          }
    }
  }

  int n_subgraphs() const { return n_; }
  bool runs(int s, int d) const { return std::isfinite(launch_us_[s][d]); }

  // Subgraphs in topological order, each on the device where it finishes
  // first (its lane free again) given those placed before it; eft[s][d] is
  // what each device would have given.
  std::vector<int> greedy(std::vector<std::vector<double>>& eft, double& makespan_us) const {
    std::vector<int> device(n_, -1);
    State state = fresh_state();
    eft.assign(n_, std::vector<double>(d_, kNever));
    for (int s = 0; s < n_; ++s) {
      Timing best;
      for (int d = 0; d < d_; ++d) {
        if (!runs(s, d)) continue;
        Timing t = timing(s, d, device, state);
        eft[s][d] = t.lane_end;
        if (device[s] < 0 || t.lane_end < best.lane_end) {
          device[s] = d;
          best = std::move(t);
        }
      }
      commit(s, device[s], best, state);
    }
    makespan_us = state.makespan;
    return device;
  }

  // The list model's makespan of a given placement.
  double model_us(const std::vector<int>& device) const {
    State state = fresh_state();
    for (int s = 0; s < n_; ++s) commit(s, device[s], timing(s, device[s], device, state), state);
    return state.makespan;
  }

  std::vector<LaunchAssignment> launches(const std::vector<int>& device,
                                         const std::vector<std::string>& reasons) const {
    std::vector<LaunchAssignment> out;
    for (int s = 0; s < n_; ++s)
      out.push_back(LaunchAssignment{part_.subgraphs[s], device[s], 0, reasons.empty() ? std::string() : reasons[s]});
    return out;
  }

  double simulate_us(const std::vector<int>& device) const {
    return simulated_makespan_us(graph_, platform_, cost_, launches(device, {}), "duet");
  }

 private:
  struct Input {
    int slot = 0;       // the value, numbered among the values crossing subgraphs
    int producer = -1;  // its subgraph; -1: a graph input
    std::vector<std::vector<double>> us;  // [from][to]: moving it (a graph input: [*][to], from host)
  };
  struct Io {
    std::vector<Input> inputs;        // in build_plan's order
    std::vector<int> outputs_to_host;  // slots of its graph outputs
    std::vector<double> copy_back;    // [device]: copying them to host memory
  };
  struct State {
    std::vector<double> ready;      // [subgraph]: its outputs readable from then
    std::vector<double> free_at;    // [device]
    std::vector<double> copied_at;  // [slot * n_spaces + space]: in that space from then; -1: not copied
    double makespan = 0;
  };
  struct Timing {
    double ready = 0, lane_end = 0;
    std::vector<std::pair<size_t, double>> copies;  // (copied_at index, when done)
  };

  State fresh_state() const {
    State state;
    state.ready.assign(n_, 0);
    state.free_at.assign(d_, 0);
    state.copied_at.assign(static_cast<size_t>(n_slots_) * n_spaces_, -1);
    return state;
  }

  Timing timing(int s, int d, const std::vector<int>& device, const State& state) const {
    Timing t;
    const int space = space_of_[d];
    double now = state.free_at[d], handed_over = 0;
    for (const Input& in : io_[s].inputs) {
      int from = in.producer < 0 ? -1 : device[in.producer];
      double ready = in.producer < 0 ? 0 : state.ready[in.producer];
      int from_space = from < 0 ? 0 : space_of_[from];
      if (from_space == space) {
        now = std::max(now, ready);
        if (from >= 0 && from != d) handed_over += in.us[from][d];
        continue;
      }
      size_t key = static_cast<size_t>(in.slot) * n_spaces_ + space;
      if (state.copied_at[key] >= 0) {
        now = std::max(now, state.copied_at[key]);
        continue;
      }
      now = std::max(now, ready) + in.us[from < 0 ? 0 : from][d];
      t.copies.emplace_back(key, now);
    }
    t.ready = now + launch_us_[s][d] + handed_over;
    t.lane_end = t.ready + io_[s].copy_back[d];
    if (space != 0)
      for (int out : io_[s].outputs_to_host) t.copies.emplace_back(static_cast<size_t>(out) * n_spaces_, t.lane_end);
    return t;
  }

  void commit(int s, int d, const Timing& t, State& state) const {
    state.ready[s] = t.ready;
    state.free_at[d] = t.lane_end;
    state.makespan = std::max(state.makespan, t.lane_end);
    for (auto [key, when] : t.copies) state.copied_at[key] = when;
  }

  const Graph& graph_;
  const Platform& platform_;
  const CostModel& cost_;
  const DuetPartition& part_;
  int n_ = 0, d_ = 0, n_spaces_ = 0, n_slots_ = 0;
  std::vector<int> space_of_;  // [device]: memory space number, host = 0
  std::vector<std::vector<double>> launch_us_;
  std::vector<Io> io_;
};

// One step of the correction: subgraph a to `device`, or (b >= 0) a and b
// exchanging devices.
struct Candidate {
  int a = -1, b = -1, device = -1;
};

struct CorrectionResult {
  std::vector<int> device;
  double makespan_us = 0;
  int steps = 0, evals = 0;
  int ruled_out = 0;  // steps the list model's bound showed could not help
  bool budget_reached = false;
  std::vector<std::string> why;  // [subgraph]: the last correction step that changed it
};

// Lower bounds computed per simulation allowed: the bounds are cheap, but
// not free on large graphs.
constexpr int kBoundsPerSimulation = 100;

bool applicable(const DuetPlanner& planner, const std::vector<int>& device, const Candidate& c) {
  if (c.b < 0) return c.device != device[c.a] && planner.runs(c.a, c.device);
  return device[c.a] != device[c.b] && planner.runs(c.a, device[c.b]) && planner.runs(c.b, device[c.a]);
}

void apply(std::vector<int>& device, const Candidate& c) {
  if (c.b < 0) device[c.a] = c.device;
  else std::swap(device[c.a], device[c.b]);
}

CorrectionResult correct(const DuetPlanner& planner, const Platform& platform, std::vector<int> start,
                         double start_us, Correction mode, int max_evals) {
  CorrectionResult r;
  r.device = std::move(start);
  r.makespan_us = start_us;
  r.why.assign(planner.n_subgraphs(), "");
  if (mode == Correction::kNone) return r;
  const int n = planner.n_subgraphs();
  std::vector<Candidate> candidates;
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < static_cast<int>(platform.devices.size()); ++d) candidates.push_back({s, -1, d});
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b) candidates.push_back({a, b, -1});
  // Accept only a clear drop, so that rounding never makes the search cycle.
  auto improves = [](double us, double than) { return us < than * (1 - 1e-9); };
  auto accept = [&](const Candidate& c, double us) {
    const auto& names = platform.devices;
    std::string change = c.b < 0 ? fmt::format("moved by correction from {} to {}", names[r.device[c.a]].name,
                                               names[c.device].name)
                                 : fmt::format("swapped by correction with subgraph {} ({} <-> {})", c.b,
                                               names[r.device[c.a]].name, names[r.device[c.b]].name);
    std::string makespan = fmt::format("makespan {} -> {}", format_ms(r.makespan_us), format_ms(us));
    r.why[c.a] = change + ": " + makespan;
    if (c.b >= 0)
      r.why[c.b] = fmt::format("swapped by correction with subgraph {} ({} <-> {}): {}", c.a,
                               names[r.device[c.b]].name, names[r.device[c.a]].name, makespan);
    apply(r.device, c);
    r.makespan_us = us;
    ++r.steps;
  };
  const long max_bounds = static_cast<long>(kBoundsPerSimulation) * max_evals;
  long bounds = 0;
  auto bound = [&](const Candidate& c) {
    std::vector<int> trial = r.device;
    apply(trial, c);
    ++bounds;
    return planner.model_us(trial);
  };
  auto simulate = [&](const Candidate& c) {
    std::vector<int> trial = r.device;
    apply(trial, c);
    ++r.evals;
    return planner.simulate_us(trial);
  };

  const size_t m = candidates.size();
  if (mode == Correction::kFirst) {
    // Scan the neighbourhood round and round from where the last step was
    // taken; a whole round without a drop is a local optimum.
    size_t since_improvement = 0;
    for (size_t k = 0; since_improvement < m; k = (k + 1) % m) {
      const Candidate& c = candidates[k];
      ++since_improvement;
      if (!applicable(planner, r.device, c)) continue;
      if (r.evals >= max_evals || bounds >= max_bounds) {
        r.budget_reached = true;
        break;
      }
      if (!improves(bound(c), r.makespan_us)) {
        ++r.ruled_out;
        continue;
      }
      double us = simulate(c);
      if (improves(us, r.makespan_us)) {
        accept(c, us);
        since_improvement = 0;
      }
    }
  } else {
    // Every step's bound, then simulations from the lowest bound up, until
    // the bounds cannot beat the best simulated so far.
    while (!r.budget_reached) {
      std::vector<std::pair<double, size_t>> hopeful;
      for (size_t k = 0; k < m; ++k) {
        if (!applicable(planner, r.device, candidates[k])) continue;
        if (bounds >= max_bounds) {
          r.budget_reached = true;
          break;
        }
        double b = bound(candidates[k]);
        if (improves(b, r.makespan_us)) hopeful.emplace_back(b, k);
        else ++r.ruled_out;
      }
      std::stable_sort(hopeful.begin(), hopeful.end(),
                       [](const auto& x, const auto& y) { return x.first < y.first; });
      int best = -1;
      double best_us = r.makespan_us;
      for (auto [b, k] : hopeful) {
        if (!improves(b, best_us)) break;
        if (r.evals >= max_evals) {
          r.budget_reached = true;
          break;
        }
        double us = simulate(candidates[k]);
        if (improves(us, best_us)) {
          best = static_cast<int>(k);
          best_us = us;
        }
      }
      if (best < 0) break;
      accept(candidates[best], best_us);
    }
  }
  return r;
}

class DuetScheduler : public Scheduler {
 public:
  Plan schedule(const Graph& graph, const Platform& platform, const CostModel& cost,
                const ScheduleOptions& options) const override {
    DuetParams params = parse_params(options);
    if (platform.devices.empty()) throw Error(ErrorCode::kUsage, "scheduler 'duet': the platform has no device");
    std::unique_ptr<CostModel> memo_model = make_memoizing_cost_model(cost);
    const CostModel& memo = *memo_model;
    DuetPartition part = duet_partition(graph, platform, params.small);
    DuetPlanner planner(graph, platform, memo, part);
    const int n = planner.n_subgraphs();

    std::vector<std::vector<double>> eft;
    double greedy_model_us = 0;
    std::vector<int> greedy = planner.greedy(eft, greedy_model_us);
    double greedy_us = planner.simulate_us(greedy);
    CorrectionResult corrected = correct(planner, platform, greedy, greedy_us, params.correction, params.max_evals);

    double total_flops = graph.total_flops();
    std::vector<std::string> reasons(n);
    for (int s = 0; s < n; ++s) {
      std::vector<std::string> others;
      for (size_t d = 0; d < platform.devices.size(); ++d)
        if (static_cast<int>(d) != greedy[s])
          others.push_back(std::isfinite(eft[s][d])
                               ? fmt::format("{} would finish at {}", platform.devices[d].name, format_ms(eft[s][d]))
                               : fmt::format("{} cannot run it", platform.devices[d].name));
      std::string greedy_why = fmt::format("earliest finish {} on {}", format_ms(eft[s][greedy[s]]),
                                           platform.devices[greedy[s]].name);
      if (!others.empty()) greedy_why += fmt::format(" ({})", fmt::join(others, "; "));
      size_t size = part.subgraphs[s].size();
      std::string what = fmt::format("duet: subgraph {} of {} ({} node{}, {:.1f}% of FLOPs)", s, n, size,
                                     size == 1 ? "" : "s", share_percent(graph, part.subgraphs[s], total_flops));
      reasons[s] = corrected.why[s].empty() ? fmt::format("{}: {}", what, greedy_why)
                                            : fmt::format("{}: {} (greedy: {})", what, corrected.why[s], greedy_why);
    }

    Plan plan = build_plan(graph, platform, planner.launches(corrected.device, reasons), "duet");
    plan.notes.push_back(fmt::format(
        "duet: {} launch units (fusion units; node by node where a device runs only part of one) -> {} chains "
        "split at forks and joins (cut {}) -> {} subgraphs after {} merges of subgraphs under {:g}% of the FLOPs "
        "(cut {}); each subgraph is one launch, costed as one",
        part.n_units, part.n_chains, format_bytes(part.chain_cut_bytes), n, part.n_merges, params.small * 100,
        format_bytes(part.cut_bytes)));
    plan.notes.push_back(fmt::format("greedy earliest finish in topological order: {} by its own model, {} simulated",
                                     format_ms(greedy_model_us), format_ms(greedy_us)));
    if (params.correction == Correction::kNone)
      plan.notes.push_back("correction off");
    else
      plan.notes.push_back(fmt::format(
          "correction ({}-improvement, moves and swaps): {} steps in {} simulations ({} steps ruled out by the "
          "list model's lower bound), makespan {} -> {}{}",
          params.correction == Correction::kFirst ? "first" : "best", corrected.steps, corrected.evals,
          corrected.ruled_out, format_ms(greedy_us), format_ms(corrected.makespan_us),
          corrected.budget_reached ? fmt::format(" (stopped at the budget: max_evals={})", params.max_evals) : ""));
    return keep_or_fall_back_to_one_device(graph, platform, memo, std::move(plan), corrected.makespan_us, "duet");
  }

  // The subgraphs of the default partition other than single nodes and
  // fusion units (the profiler times those anyway), each to be timed as one
  // launch.
  std::vector<std::vector<NodeId>> profile_units(const Graph& graph, const Platform& platform) const override {
    std::set<std::vector<NodeId>> units;
    for (auto unit : fusion_units(graph)) {
      std::sort(unit.begin(), unit.end());
      units.insert(std::move(unit));
    }
    std::vector<std::vector<NodeId>> out;
    for (auto& subgraph : duet_partition(graph, platform, kDefaultSmall).subgraphs)
      if (subgraph.size() > 1 && !units.count(subgraph)) out.push_back(std::move(subgraph));
    return out;
  }

 private:
  static double share_percent(const Graph& graph, const std::vector<NodeId>& nodes, double total_flops) {
    if (total_flops <= 0) return 0;
    double flops = 0;
    for (NodeId id : nodes) flops += graph.nodes[id].cost.flops;
    return 100 * flops / total_flops;
  }

  static std::string format_bytes(double bytes) { return fmt::format("{:.2f} MB", bytes / 1e6); }
};

}  // namespace

HETSCHED_SCHEDULER("duet",
                   "DUET: fusion units partitioned into coarse subgraphs (chains, small ones merged to shrink the "
                   "cut), each one launch, placed greedily by earliest finish, then corrected by simulated moves and "
                   "swaps (params small, correction=first|best|none, max_evals)",
                   DuetScheduler);

}  // namespace hetsched
