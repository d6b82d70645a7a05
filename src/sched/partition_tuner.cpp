// "partition-tuner": PartitionTuner (Yu et al., ETRI Journal 2023,
// "PartitionTuner: An operator scheduler for deep-learning compilers
// supporting multiple heterogeneous processing units").
//
// It works from profiles of single ops and of fused op groups (cost.launch of
// a node alone and of a fusion unit's first nodes together) and of
// transfers. The graph is cut into branches: maximal chains of fusion units
// between forks and joins (a unit is never split across branches, so a
// Conv keeps the residual Add it absorbs). Along each branch a dynamic
// program over (op, device, fused with the previous op) picks every op's
// device: staying on a device may fuse an op with the previous one where the
// backend fuses them (paying the fused group's cost instead of the single
// ones), switching devices pays for moving the values that cross. Branches
// are solved in topological order, each seeing when the devices are free
// from the branches before it and when its inputs from them are ready, so
// parallel branches spread over the devices and run side by side. Launches
// are emitted in a topological order by predicted start; build_plan adds
// the events and copies. The result is never slower than the best single
// device (simulated). No parameters.
#include <algorithm>
#include <memory>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "hetsched/error.h"
#include "hetsched/scheduler.h"
#include "sched/branches.h"
#include "sim/simulator.h"

namespace hetsched {

// ---------------------------------------------------------------- the dynamic program

ChainSolution solve_chain(const ChainProblem& p) {
  using Join = ChainProblem::Join;
  auto bad = [](const std::string& what) {
    throw Error(ErrorCode::kUsage, "solve_chain: malformed chain problem: " + what);
  };
  const int n = p.n_ops, nd = p.n_devices;
  if (n <= 0 || nd <= 0) bad(fmt::format("{} ops on {} devices", n, nd));
  auto sized = [&](const auto& rows, const char* name) {
    if (static_cast<int>(rows.size()) != n) bad(fmt::format("{} has {} rows, expected {}", name, rows.size(), n));
    for (const auto& row : rows)
      if (static_cast<int>(row.size()) != nd) bad(fmt::format("{} has a row of {}, expected {}", name, row.size(), nd));
  };
  sized(p.alone, "alone");
  sized(p.fused_step, "fused_step");
  sized(p.in_us, "in_us");
  if (static_cast<int>(p.join.size()) != n || static_cast<int>(p.in_ready.size()) != n ||
      static_cast<int>(p.link_us.size()) != n || static_cast<int>(p.free_at.size()) != nd)
    bad("join, in_ready, link_us or free_at has the wrong size");
  if (p.join[0] != Join::kNever) bad("op 0 cannot be fused with a previous op");
  for (int i = 1; i < n; ++i) {
    if (static_cast<int>(p.link_us[i].size()) != nd) bad(fmt::format("link_us[{}] has the wrong size", i));
    for (const auto& row : p.link_us[i])
      if (static_cast<int>(row.size()) != nd) bad(fmt::format("link_us[{}] has the wrong size", i));
  }

  ChainSolution out;
  out.table.assign(n, std::vector<std::array<double, 2>>(nd, {kNever, kNever}));
  // parent[i][d][f]: the (device, fused) state of op i - 1 the best finish came from.
  std::vector<std::vector<std::array<std::pair<int, int>, 2>>> parent(
      n, std::vector<std::array<std::pair<int, int>, 2>>(nd, {std::make_pair(-1, -1), std::make_pair(-1, -1)}));
  auto plus = [](double a, double b) { return std::isfinite(a) && std::isfinite(b) ? a + b : kNever; };

  for (int i = 0; i < n; ++i)
    for (int d = 0; d < nd; ++d) {
      double own = plus(p.in_us[i][d], 0);
      // On its own: after the device is free, the previous op finished and
      // the outside inputs are ready; it pays its launch and what it pulls.
      if (p.join[i] != Join::kMust && std::isfinite(p.alone[i][d]) && std::isfinite(own)) {
        double base = std::max(p.free_at[d], p.in_ready[i]);
        if (i == 0) {
          out.table[i][d][0] = base + p.alone[i][d] + own;
        } else {
          for (int from = 0; from < nd; ++from)
            for (int f = 0; f < 2; ++f) {
              double prev = out.table[i - 1][from][f];
              double link = from == d ? 0 : p.link_us[i][from][d];
              if (!std::isfinite(prev) || !std::isfinite(link)) continue;
              double finish = std::max(base, prev) + p.alone[i][d] + own + link;
              if (finish < out.table[i][d][0]) {
                out.table[i][d][0] = finish;
                parent[i][d][0] = {from, f};
              }
            }
        }
      }
      // Fused: in the previous op's launch, which must itself begin the
      // unit or be fused, so that a fused run always starts at its unit's
      // first op and fused_step telescopes to the run's cost.
      if (p.join[i] != Join::kNever && std::isfinite(own)) {
        int f = p.join[i - 1] == Join::kNever ? 0 : 1;
        double prev = out.table[i - 1][d][f];
        double step = p.fused_step[i][d];
        if (std::isfinite(prev) && std::isfinite(step)) {
          out.table[i][d][1] = std::max(prev, p.in_ready[i]) + step + own;
          parent[i][d][1] = {d, f};
        }
      }
    }

  int best_d = -1, best_f = -1;
  for (int d = 0; d < nd; ++d)
    for (int f = 0; f < 2; ++f)
      if (std::isfinite(out.table[n - 1][d][f]) &&
          (best_d < 0 || out.table[n - 1][d][f] < out.table[n - 1][best_d][best_f])) {
        best_d = d;
        best_f = f;
      }
  if (best_d < 0) throw Error(ErrorCode::kUnsupported, "solve_chain: no assignment of the chain has a finite cost");

  out.device.assign(n, -1);
  out.fused.assign(n, false);
  out.start.assign(n, 0);
  out.finish.assign(n, 0);
  for (int i = n - 1, d = best_d, f = best_f; i >= 0; --i) {
    out.device[i] = d;
    out.fused[i] = f == 1;
    out.finish[i] = out.table[i][d][f];
    auto [pd, pf] = parent[i][d][f];
    double prev = i > 0 ? out.table[i - 1][pd][pf] : 0;
    out.start[i] = f == 1 ? std::max(prev, p.in_ready[i]) : std::max({p.free_at[d], p.in_ready[i], prev});
    d = pd;
    f = pf;
  }
  out.makespan = out.finish[n - 1];
  return out;
}

// ---------------------------------------------------------------- the scheduler

namespace {

// A branch: its ops in order (its units' nodes), each's join rule.
struct Branch {
  std::vector<NodeId> ops;
  std::vector<ChainProblem::Join> join;
};

// Chains of fusion units between forks and joins, as op sequences the
// dynamic program can take: an op reads, of the branch's values, only the
// previous op's (or, within a unit whose nodes do not form a line, its own
// unit's, and then the unit is always fused); where a unit's op reads an
// earlier unit's value other than through the previous op, the branch is cut
// before that unit and the value comes from a finished branch.
std::vector<Branch> extract_branches(const Graph& graph, const UnitDag& dag) {
  std::vector<Branch> branches;
  for (const std::vector<int>& chain : unit_chains(dag)) {
    Branch current;
    for (int u : chain) {
      const std::vector<NodeId>& unit = dag.units[u];
      auto in_current = [&](NodeId id) {
        return std::find(current.ops.begin(), current.ops.end(), id) != current.ops.end();
      };
      bool reads_behind = false;
      for (size_t k = 0; k < unit.size(); ++k)
        for (ValueId v : graph.nodes[unit[k]].inputs) {
          if (v == kNoValue) continue;
          NodeId producer = graph.values[v].producer;
          if (producer == kNoNode || !in_current(producer)) continue;
          if (k != 0 || producer != current.ops.back()) reads_behind = true;
        }
      if (reads_behind) {
        branches.push_back(std::move(current));
        current = Branch{};
      }
      bool line = true;
      for (size_t k = 1; k < unit.size(); ++k)
        for (ValueId v : graph.nodes[unit[k]].inputs) {
          if (v == kNoValue) continue;
          NodeId producer = graph.values[v].producer;
          if (producer != kNoNode && dag.unit_of[producer] == u && producer != unit[k - 1]) line = false;
        }
      for (size_t k = 0; k < unit.size(); ++k) {
        current.ops.push_back(unit[k]);
        current.join.push_back(k == 0 ? ChainProblem::Join::kNever
                                       : (line ? ChainProblem::Join::kMay : ChainProblem::Join::kMust));
      }
    }
    if (!current.ops.empty()) branches.push_back(std::move(current));
  }
  return branches;
}

class Tuner {
 public:
  Tuner(const Graph& graph, const Platform& platform, const CostModel& cost)
      : graph_(graph), platform_(platform), cost_(cost), dag_(build_unit_dag(graph)) {
    nd_ = static_cast<int>(platform_.devices.size());
    device_of_.assign(graph_.nodes.size(), -1);
    finish_of_.assign(graph_.nodes.size(), 0);
    free_at_.assign(nd_, 0);
  }

  struct Run {
    std::vector<NodeId> nodes;
    int device = -1;
    double start = 0, finish = 0;
    std::string reason;
  };

  std::vector<Run> runs;
  int n_branches = 0;
  double model_makespan_us = 0;

  void plan() {
    std::vector<Branch> branches = extract_branches(graph_, dag_);
    n_branches = static_cast<int>(branches.size());
    std::vector<std::vector<NodeId>> node_sets;
    std::vector<int> branch_of(graph_.nodes.size(), -1);
    for (size_t b = 0; b < branches.size(); ++b) {
      std::vector<NodeId> sorted = branches[b].ops;
      std::sort(sorted.begin(), sorted.end());
      node_sets.push_back(std::move(sorted));
      for (NodeId id : branches[b].ops) branch_of[id] = static_cast<int>(b);
    }
    std::vector<int> order = subgraph_topological_order(graph_, node_sets, branch_of, "partition-tuner");
    for (size_t k = 0; k < order.size(); ++k) solve_branch(branches[order[k]], static_cast<int>(k));
  }

  // Runs in a topological order, earliest predicted start first.
  std::vector<LaunchAssignment> launches() const {
    std::vector<std::vector<NodeId>> node_sets;
    std::vector<int> run_of(graph_.nodes.size(), -1);
    std::vector<double> start;
    for (size_t r = 0; r < runs.size(); ++r) {
      node_sets.push_back(runs[r].nodes);
      start.push_back(runs[r].start);
      for (NodeId id : runs[r].nodes) run_of[id] = static_cast<int>(r);
    }
    std::vector<LaunchAssignment> out;
    for (int r : subgraph_topological_order(graph_, node_sets, run_of, "partition-tuner", start))
      out.push_back(LaunchAssignment{runs[r].nodes, runs[r].device, 0, runs[r].reason});
    return out;
  }

 private:
  double launch_us(const std::vector<NodeId>& nodes, int d) const {
    const PlatformDevice& device = platform_.devices[d];
    if (!runs_all(graph_, nodes, device)) return kNever;
    return cost_.launch(graph_, nodes, device).us;
  }

  ChainProblem problem_for(const Branch& branch) const {
    const int n = static_cast<int>(branch.ops.size());
    ChainProblem p;
    p.n_ops = n;
    p.n_devices = nd_;
    p.join = branch.join;
    p.alone.assign(n, std::vector<double>(nd_, kNever));
    p.fused_step.assign(n, std::vector<double>(nd_, kNever));
    p.in_us.assign(n, std::vector<double>(nd_, 0));
    p.in_ready.assign(n, 0);
    p.link_us.assign(n, std::vector<std::vector<double>>(nd_, std::vector<double>(nd_, 0)));
    p.free_at = free_at_;
    size_t head = 0;  // the current unit's first op
    for (int i = 0; i < n; ++i) {
      NodeId id = branch.ops[i];
      if (branch.join[i] == ChainProblem::Join::kNever) head = i;
      std::vector<NodeId> run(branch.ops.begin() + head, branch.ops.begin() + i + 1);
      std::vector<NodeId> run_before(branch.ops.begin() + head, branch.ops.begin() + i);
      for (int d = 0; d < nd_; ++d) {
        p.alone[i][d] = launch_us({id}, d);
        if (branch.join[i] != ChainProblem::Join::kNever) {
          double with = launch_us(run, d), without = launch_us(run_before, d);
          p.fused_step[i][d] = std::isfinite(with) && std::isfinite(without) ? with - without : kNever;
        }
      }
      const Node& node = graph_.nodes[id];
      for (ValueId v : node.inputs) {
        if (v == kNoValue || graph_.values[v].is_constant()) continue;
        double bytes = graph_.values[v].nbytes();
        NodeId producer = graph_.values[v].producer;
        if (producer == kNoNode) {
          for (int d = 0; d < nd_; ++d)
            p.in_us[i][d] += copy_from_host_us(cost_, platform_, bytes, platform_.devices[d]);
        } else if (i > 0 && producer == branch.ops[i - 1]) {
          for (int a = 0; a < nd_; ++a)
            for (int b = 0; b < nd_; ++b)
              p.link_us[i][a][b] += crossing_us(cost_, platform_, bytes, platform_.devices[a], platform_.devices[b]);
        } else if (device_of_[producer] >= 0) {
          const PlatformDevice& there = platform_.devices[device_of_[producer]];
          for (int d = 0; d < nd_; ++d)
            p.in_us[i][d] += crossing_us(cost_, platform_, bytes, there, platform_.devices[d]);
          p.in_ready[i] = std::max(p.in_ready[i], finish_of_[producer]);
        }
        // Otherwise an earlier op of its own (always fused) unit: free.
      }
      for (ValueId v : node.outputs)
        if (v != kNoValue && graph_.is_graph_output(v))
          for (int d = 0; d < nd_; ++d)
            p.in_us[i][d] += copy_to_host_us(cost_, platform_, graph_.values[v].nbytes(), platform_.devices[d]);
    }
    return p;
  }

  void solve_branch(const Branch& branch, int index) {
    ChainProblem problem = problem_for(branch);
    ChainSolution sol;
    try {
      sol = solve_chain(problem);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kUnsupported) throw;
      throw Error(ErrorCode::kUnsupported,
                  fmt::format("scheduler 'partition-tuner': no device of this platform runs the branch from {} "
                              "with a finite cost estimate",
                              graph_.nodes[branch.ops[0]].label()));
    }
    const int n = problem.n_ops;
    for (int i = 0; i < n;) {
      int j = i;
      while (j + 1 < n && sol.fused[j + 1]) ++j;
      Run run;
      run.nodes.assign(branch.ops.begin() + i, branch.ops.begin() + j + 1);
      run.device = sol.device[i];
      run.start = sol.start[i];
      run.finish = sol.finish[j];
      run.reason = reason(index, i, j, n, sol, run);
      for (NodeId id : run.nodes) {
        device_of_[id] = run.device;
        finish_of_[id] = run.finish;
      }
      free_at_[run.device] = std::max(free_at_[run.device], run.finish);
      model_makespan_us = std::max(model_makespan_us, run.finish);
      runs.push_back(std::move(run));
      i = j + 1;
    }
  }

  // The DP's choice for ops i..j and what the other choices would have
  // given at op j: every other device, and the run's last op on its own.
  std::string reason(int branch, int i, int j, int n, const ChainSolution& sol, const Run& run) const {
    const std::string& chosen = platform_.devices[run.device].name;
    std::string what = j > i ? fmt::format("ops {}-{} of {} fused on {}", i + 1, j + 1, n, chosen)
                             : fmt::format("op {} of {} on {}", i + 1, n, chosen);
    std::vector<std::string> alternatives;
    for (int d = 0; d < nd_; ++d) {
      if (d == run.device) continue;
      double other = std::min(sol.table[j][d][0], sol.table[j][d][1]);
      alternatives.push_back(std::isfinite(other)
                                 ? fmt::format("on {} {}", platform_.devices[d].name, format_ms(other))
                                 : fmt::format("{} cannot run it", platform_.devices[d].name));
    }
    if (j > i && std::isfinite(sol.table[j][run.device][0]))
      alternatives.push_back(fmt::format("not fused {}", format_ms(sol.table[j][run.device][0])));
    std::string text = fmt::format("partition-tuner: branch {}, {}: finish {} by the DP", branch, what,
                                   format_ms(run.finish));
    if (!alternatives.empty())
      text += fmt::format(" (alternatives at op {}: {})", j + 1, fmt::join(alternatives, "; "));
    return text;
  }

  const Graph& graph_;
  const Platform& platform_;
  const CostModel& cost_;
  UnitDag dag_;
  int nd_ = 0;
  std::vector<int> device_of_;      // [node], once its branch is solved
  std::vector<double> finish_of_;   // [node]: its launch's predicted finish
  std::vector<double> free_at_;     // [device]
};

class PartitionTunerScheduler : public Scheduler {
 public:
  Plan schedule(const Graph& graph, const Platform& platform, const CostModel& cost,
                const ScheduleOptions& options) const override {
    if (!options.params.empty())
      throw Error(ErrorCode::kUsage, fmt::format("scheduler 'partition-tuner' takes no parameters (got '{}')",
                                                 options.params.begin()->first));
    if (platform.devices.empty())
      throw Error(ErrorCode::kUsage, "scheduler 'partition-tuner': the platform has no device");
    std::unique_ptr<CostModel> memo_model = make_memoizing_cost_model(cost);
    const CostModel& memo = *memo_model;
    Tuner tuner(graph, platform, memo);
    tuner.plan();
    std::vector<LaunchAssignment> launches = tuner.launches();
    Plan plan = build_plan(graph, platform, launches, "partition-tuner");
    double simulated_us = simulate(plan, graph, platform, memo).makespan_us;
    plan.notes.push_back(fmt::format(
        "partition-tuner: {} branches (chains of fusion units between forks and joins), each placed by a dynamic "
        "program over (op, device, fused with the previous op); {} launches; {} by its own model, {} simulated",
        tuner.n_branches, launches.size(), format_ms(tuner.model_makespan_us), format_ms(simulated_us)));
    return keep_or_fall_back_to_one_device(graph, platform, memo, std::move(plan), simulated_us, "partition-tuner");
  }

  // The fused groups the dynamic program costs that the profiler does not
  // time on its own: each fusion unit's leading ops short of the whole unit.
  std::vector<std::vector<NodeId>> profile_units(const Graph& graph, const Platform&) const override {
    std::vector<std::vector<NodeId>> out;
    for (auto unit : fusion_units(graph)) {
      std::sort(unit.begin(), unit.end());
      for (size_t k = 2; k < unit.size(); ++k) out.emplace_back(unit.begin(), unit.begin() + k);
    }
    return out;
  }
};

}  // namespace

HETSCHED_SCHEDULER("partition-tuner",
                   "PartitionTuner: per branch (chain between forks and joins) a dynamic program over op, device and "
                   "fusion with the previous op, on single-op and fused-group costs and transfers; branches side by "
                   "side",
                   PartitionTunerScheduler);

}  // namespace hetsched
