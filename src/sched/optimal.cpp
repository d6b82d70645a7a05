// "optimal": the minimum makespan of the list-scheduling task graph
// (list_scheduling.h: fusion units, or with partition=onchip the on-chip
// groups of onchip_partition.h; per-device launch estimates, mean transfer
// costs) found exactly by a mixed-integer linear program, solved by
// CBC (COIN-OR Branch and Cut) within a time limit.
//
// The formulation is the classic disjunctive one for scheduling a DAG on
// processors with communication delays (as compared by Venugopalan &
// Sinnen, "ILP Formulations for Optimal Task Scheduling with Communication
// Delays on Parallel Systems", IEEE TPDS 26(1), 2015), extended to unrelated
// processors (a cost per task and processor) and to the receiver-pays model:
//   x[t][p] binary: t runs on p (only where p can run t), sum_p x[t][p] = 1;
//   z[e] >= x[u][p] - x[v][p] for each p: edge e = u -> v crosses processors;
//   S[t], F[t] its start and finish, F[t] = S[t] + sum_p cost[t][p] x[t][p]
//     (receiver pays: + comm(e) z[e] for each edge e into t);
//   S[v] >= F[u] (+ comm(e) z[e] when communication is a delay);
//   C >= F[t] for each exit task, C >= each processor's load; minimise C;
//   for each pair i, j that no path orders, y binary (i first) with big-M
//   rows active only when both are on the same processor p:
//     S[j] >= F[i] - M (1 - y) - M (2 - x[i][p] - x[j][p])
//     S[i] >= F[j] - M y       - M (2 - x[i][p] - x[j][p]).
// The starting schedule is the best of HEFT's, the caller's and the
// single-processor ones. Times are scaled by its makespan, so every M is at
// most 1; earliest starts and latest finishes from the critical paths bound
// S and F and shrink each pair's M further. The solver looks only for
// schedules shorter than the starting one (a cutoff), which a time-out
// returns. Identical parallel branches (same costs, same neighbours) are
// interchangeable in any schedule, so their first tasks are made to start
// in a fixed order: the search does not try every permutation of them. The
// solution's processors and per-processor order are then re-timed (each
// task as early as possible), which can only shorten it.
#include "sched/optimal.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <queue>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <Cbc_C_Interface.h>
#include <fmt/format.h>

#include "hetsched/error.h"
#include "hetsched/scheduler.h"
#include "sched/onchip_partition.h"

namespace hetsched {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
// The solver's absolute gap, in units of the starting makespan: "proved
// optimal" means within this fraction of it.
constexpr double kRelativeGap = 1e-7;

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point begin) {
  return std::chrono::duration<double>(Clock::now() - begin).count();
}

// Each task's processor and the order in which tasks claim their
// processors, timed so that every task starts as soon as its inputs and its
// processor allow: the earliest schedule with those processor sequences.
// The time rules are heft()'s, edge by edge.
TaskSchedule timed_schedule(const TaskGraph& g, const std::vector<std::vector<std::pair<int, double>>>& pred,
                            const std::vector<int>& proc, const std::vector<int>& sequence) {
  TaskSchedule s;
  s.proc = proc;
  s.start.assign(g.n_tasks, 0);
  s.finish.assign(g.n_tasks, 0);
  s.order = sequence;
  std::vector<double> processor_free(g.n_procs, 0);
  for (int t : sequence) {
    const int p = proc[t];
    double duration = g.cost[t][p];
    double ready = 0;
    for (auto [m, comm] : pred[t]) {
      double crossing = proc[m] == p ? 0 : comm;
      if (g.receiver_pays_communication) {
        duration += crossing;
        crossing = 0;
      }
      ready = std::max(ready, s.finish[m] + crossing);
    }
    s.start[t] = std::max(ready, processor_free[p]);
    s.finish[t] = s.start[t] + duration;
    processor_free[p] = s.finish[t];
    s.makespan = std::max(s.makespan, s.finish[t]);
  }
  return s;
}

// Tasks in increasing `key` (ties: topological position), never before a
// predecessor even where the key says otherwise (a solver's start times may
// be off by its tolerance). For start times of a valid schedule this is
// simply the tasks sorted by start.
std::vector<int> sequence_by_key(const TaskGraph& g, const std::vector<int>& topo_position,
                                 const std::vector<double>& key) {
  std::vector<int> unplaced_preds(g.n_tasks, 0);
  for (const auto& edges : g.succ)
    for (auto [s, comm] : edges) ++unplaced_preds[s];
  auto later = [&](int a, int b) {
    if (key[a] != key[b]) return key[a] > key[b];
    return topo_position[a] > topo_position[b];
  };
  std::priority_queue<int, std::vector<int>, decltype(later)> ready(later);
  for (int t = 0; t < g.n_tasks; ++t)
    if (unplaced_preds[t] == 0) ready.push(t);
  std::vector<int> sequence;
  sequence.reserve(g.n_tasks);
  while (!ready.empty()) {
    int t = ready.top();
    ready.pop();
    sequence.push_back(t);
    for (auto [s, comm] : g.succ[t])
      if (--unplaced_preds[s] == 0) ready.push(s);
  }
  return sequence;
}

// A sparse MILP, handed to CBC in one piece (column-major).
class Milp {
 public:
  int add_column(double lower, double upper, double objective, bool integer) {
    lower_.push_back(lower);
    upper_.push_back(upper);
    objective_.push_back(objective);
    integer_.push_back(integer);
    columns_.emplace_back();
    return static_cast<int>(lower_.size()) - 1;
  }

  // lower <= sum of coefficient * column <= upper; repeated columns add up.
  void add_row(const std::vector<std::pair<int, double>>& terms, double lower, double upper) {
    std::map<int, double> merged;
    for (auto [column, coefficient] : terms) merged[column] += coefficient;
    const int row = static_cast<int>(row_lower_.size());
    for (auto [column, coefficient] : merged)
      if (coefficient != 0) columns_[column].emplace_back(row, coefficient);
    row_lower_.push_back(lower);
    row_upper_.push_back(upper);
  }

  int n_columns() const { return static_cast<int>(lower_.size()); }
  int n_rows() const { return static_cast<int>(row_lower_.size()); }

  void load_into(Cbc_Model* model) const {
    std::vector<int> starts{0}, rows;
    std::vector<double> values;
    for (const auto& column : columns_) {
      for (auto [row, coefficient] : column) {
        rows.push_back(row);
        values.push_back(coefficient);
      }
      starts.push_back(static_cast<int>(rows.size()));
    }
    Cbc_loadProblem(model, n_columns(), n_rows(), starts.data(), rows.data(), values.data(), lower_.data(),
                    upper_.data(), objective_.data(), row_lower_.data(), row_upper_.data());
    for (int c = 0; c < n_columns(); ++c)
      if (integer_[c]) Cbc_setInteger(model, c);
  }

 private:
  std::vector<double> lower_, upper_, objective_;
  std::vector<bool> integer_;
  std::vector<std::vector<std::pair<int, double>>> columns_;
  std::vector<double> row_lower_, row_upper_;
};

struct CbcModelDeleter {
  void operator()(Cbc_Model* model) const { Cbc_deleteModel(model); }
};

// CBC's command driver, behind Cbc_solve, keeps its settings in globals.
std::mutex& cbc_mutex() {
  static std::mutex mutex;
  return mutex;
}

// The incumbent's processors and order, re-timed; kUsage when it does not
// fit the graph.
TaskSchedule incumbent_schedule(const TaskGraph& g, const std::vector<std::vector<std::pair<int, double>>>& pred,
                                const std::vector<int>& topo_position, const TaskSchedule& incumbent) {
  auto bad = [](const std::string& what) {
    throw Error(ErrorCode::kUsage, fmt::format("optimal: options.incumbent: {}", what));
  };
  if (static_cast<int>(incumbent.proc.size()) != g.n_tasks || static_cast<int>(incumbent.start.size()) != g.n_tasks)
    bad(fmt::format("{} processors and {} start times, expected n_tasks = {} of each", incumbent.proc.size(),
                    incumbent.start.size(), g.n_tasks));
  for (int t = 0; t < g.n_tasks; ++t) {
    int p = incumbent.proc[t];
    if (p < 0 || p >= g.n_procs || !std::isfinite(g.cost[t][p]))
      bad(fmt::format("task {} is on processor {}, expected one of 0..{} that can run it", t, p, g.n_procs - 1));
    if (!std::isfinite(incumbent.start[t]))
      bad(fmt::format("task {} starts at {}, expected a finite time", t, incumbent.start[t]));
  }
  return timed_schedule(g, pred, incumbent.proc, sequence_by_key(g, topo_position, incumbent.start));
}

// Interchangeable branches. Cut the DAG into maximal chains (t -> s is a
// link when s is t's only successor and t is s's only predecessor). Two
// chains with the same length, cost rows, internal communication, the same
// predecessors of their heads and the same successors of their tails (with
// the same communication times) can swap places in any schedule: moving
// each task to its counterpart's processor and times gives a valid schedule
// of the same makespan. So among each set of such chains, the heads may be
// taken to start in task order, which spares the search every permutation
// of identical parallel branches.
// Returns the groups' heads, each group in increasing task number.
std::vector<std::vector<int>> interchangeable_chain_heads(int n, const std::map<std::pair<int, int>, double>& edges,
                                                          const std::vector<std::vector<double>>& cost) {
  std::vector<std::vector<std::pair<int, double>>> succ(n), pred(n);
  for (const auto& [edge, comm] : edges) {
    succ[edge.first].emplace_back(edge.second, comm);
    pred[edge.second].emplace_back(edge.first, comm);
  }
  auto link = [&](int t) { return succ[t].size() == 1 && pred[succ[t][0].first].size() == 1 ? succ[t][0].first : -1; };
  struct Signature {
    std::vector<double> costs_and_comms;  // per task: its cost row, then the link's communication
    std::vector<std::pair<int, double>> head_preds, tail_succs;
    bool operator<(const Signature& other) const {
      return std::tie(costs_and_comms, head_preds, tail_succs) <
             std::tie(other.costs_and_comms, other.head_preds, other.tail_succs);
    }
  };
  std::map<Signature, std::vector<int>> groups;
  for (int head = 0; head < n; ++head) {
    if (pred[head].size() == 1 && link(pred[head][0].first) == head) continue;  // inside a chain
    Signature signature;
    signature.head_preds = pred[head];
    int t = head;
    while (true) {
      signature.costs_and_comms.insert(signature.costs_and_comms.end(), cost[t].begin(), cost[t].end());
      int next = link(t);
      if (next < 0) break;
      signature.costs_and_comms.push_back(succ[t][0].second);
      t = next;
    }
    signature.tail_succs = succ[t];
    groups[std::move(signature)].push_back(head);
  }
  std::vector<std::vector<int>> result;
  for (auto& [signature, heads] : groups)
    if (heads.size() > 1) result.push_back(std::move(heads));
  return result;
}

}  // namespace

OptimalResult optimal_schedule(const TaskGraph& g, const OptimalOptions& options) {
  const Clock::time_point begin = Clock::now();
  check_task_graph(g, "optimal");
  if (!(options.time_limit_s > 0) || !std::isfinite(options.time_limit_s))
    throw Error(ErrorCode::kUsage,
                fmt::format("optimal: time_limit_s is {}, expected a finite number of seconds > 0",
                            options.time_limit_s));
  const std::vector<int> topo = topological_order(g, "optimal");
  const int n = g.n_tasks, n_procs = g.n_procs;
  std::vector<int> topo_position(n);
  for (int i = 0; i < n; ++i) topo_position[topo[i]] = i;
  std::vector<std::vector<std::pair<int, double>>> pred(n);
  for (int t = 0; t < n; ++t)
    for (auto [s, comm] : g.succ[t]) pred[s].emplace_back(t, comm);

  // The starting schedule: the shortest of HEFT's, the incumbent's and each
  // processor alone running every task in topological order (which the
  // "all on one device" comparison of plan_from_task_schedule sums in the
  // same order, so it never finds one device better than this result).
  std::vector<TaskSchedule> candidates;
  if (options.incumbent) candidates.push_back(incumbent_schedule(g, pred, topo_position, *options.incumbent));
  {
    TaskSchedule h = heft(g);
    candidates.push_back(timed_schedule(g, pred, h.proc, sequence_by_key(g, topo_position, h.start)));
  }
  for (int p = 0; p < n_procs; ++p) {
    bool runs_all = std::all_of(g.cost.begin(), g.cost.end(), [&](const auto& row) { return std::isfinite(row[p]); });
    if (runs_all) candidates.push_back(timed_schedule(g, pred, std::vector<int>(n, p), topo));
  }
  TaskSchedule best = *std::min_element(candidates.begin(), candidates.end(),
                                        [](const auto& a, const auto& b) { return a.makespan < b.makespan; });
  const double upper = best.makespan;

  // Per task: the fastest it can run, the earliest it can start and how
  // long at least the longest path from its start to the end takes
  // (communication left out: both are bounds whatever the placement).
  std::vector<double> fastest(n, kInfinity), earliest_start(n, 0), tail(n, 0);
  for (int t = 0; t < n; ++t)
    for (double c : g.cost[t]) fastest[t] = std::min(fastest[t], c);
  for (int t : topo)
    for (auto [s, comm] : g.succ[t]) earliest_start[s] = std::max(earliest_start[s], earliest_start[t] + fastest[t]);
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    int t = *it;
    double longest_after = 0;
    for (auto [s, comm] : g.succ[t]) longest_after = std::max(longest_after, tail[s]);
    tail[t] = fastest[t] + longest_after;
  }
  double lower = 0, total_fastest = 0;
  for (int t = 0; t < n; ++t) {
    lower = std::max(lower, tail[t]);
    total_fastest += fastest[t];
  }
  lower = std::max(lower, total_fastest / n_procs);

  auto result_of = [&](TaskSchedule schedule, bool proved, double lower_bound) {
    schedule.order = sequence_by_key(g, topo_position, schedule.start);
    OptimalResult result;
    result.schedule = std::move(schedule);
    result.proved_optimal = proved;
    result.lower_bound = proved ? result.schedule.makespan : std::min(lower_bound, result.schedule.makespan);
    result.seconds = seconds_since(begin);
    return result;
  };
  // Nothing to search: no task, no time, or a bound already met.
  if (n == 0 || upper <= 0 || lower >= upper * (1 - kRelativeGap)) return result_of(std::move(best), true, upper);

  // Times in units of the starting makespan: the big Ms are then at most 1.
  const double scale = 1 / upper;
  auto cost = [&](int t, int p) { return g.cost[t][p] * scale; };

  // One edge per ordered pair of tasks: parallel edges add up when the
  // receiver pays (heft() charges each) and the longest counts as a delay.
  std::map<std::pair<int, int>, double> edge_comm;
  for (int t = 0; t < n; ++t)
    for (auto [s, comm] : g.succ[t]) {
      double& c = edge_comm[{t, s}];
      c = g.receiver_pays_communication ? c + comm : std::max(c, comm);
    }

  // Which pairs a path orders: those need no ordering variable.
  std::vector<std::vector<bool>> reaches(n, std::vector<bool>(n, false));
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    int t = *it;
    for (auto [s, comm] : g.succ[t]) {
      reaches[t][s] = true;
      for (int w = 0; w < n; ++w)
        if (reaches[s][w]) reaches[t][w] = true;
    }
  }

  // Interchangeable branches: heads in task order, which also settles each
  // pair's ordering variable.
  std::vector<std::pair<int, int>> head_first_rows;
  std::set<std::pair<int, int>> head_first;
  for (const std::vector<int>& heads : interchangeable_chain_heads(n, edge_comm, g.cost))
    for (size_t a = 0; a < heads.size(); ++a) {
      if (a + 1 < heads.size()) head_first_rows.emplace_back(heads[a], heads[a + 1]);
      for (size_t b = a + 1; b < heads.size(); ++b) head_first.insert({heads[a], heads[b]});
    }

  Milp milp;
  const int makespan_column = milp.add_column(lower * scale, 1, 1, false);
  // Start and finish of each task, within the bounds the paths give.
  auto latest_finish = [&](int t) { return std::max(upper - tail[t] + fastest[t], earliest_start[t] + fastest[t]); };
  std::vector<int> start_column(n), finish_column(n);
  for (int t = 0; t < n; ++t) {
    start_column[t] = milp.add_column(earliest_start[t] * scale, (latest_finish(t) - fastest[t]) * scale, 0, false);
    finish_column[t] = milp.add_column((earliest_start[t] + fastest[t]) * scale, latest_finish(t) * scale, 0, false);
  }
  std::vector<std::vector<int>> assign_column(n, std::vector<int>(n_procs, -1));
  for (int t = 0; t < n; ++t) {
    std::vector<std::pair<int, double>> one_processor;
    for (int p = 0; p < n_procs; ++p)
      if (std::isfinite(g.cost[t][p])) {
        assign_column[t][p] = milp.add_column(0, 1, 0, true);
        one_processor.emplace_back(assign_column[t][p], 1);
      }
    milp.add_row(one_processor, 1, 1);
  }
  // z per edge that costs something to cross: z >= x[u][p] - x[v][p].
  struct CrossingEdge {
    int from, to, column;
    double comm;  // scaled
  };
  std::vector<CrossingEdge> crossing_edges;
  std::vector<std::vector<int>> crossing_into(n);  // task -> indices into crossing_edges
  for (const auto& [edge, comm] : edge_comm) {
    if (comm <= 0) continue;
    auto [u, v] = edge;
    int column = milp.add_column(0, 1, 0, false);
    for (int p = 0; p < n_procs; ++p) {
      if (assign_column[u][p] < 0) continue;
      std::vector<std::pair<int, double>> terms{{column, 1}, {assign_column[u][p], -1}};
      if (assign_column[v][p] >= 0) terms.emplace_back(assign_column[v][p], 1);
      milp.add_row(terms, 0, kInfinity);
    }
    crossing_into[v].push_back(static_cast<int>(crossing_edges.size()));
    crossing_edges.push_back({u, v, column, comm * scale});
  }
  // F[t] = S[t] + D[t].
  for (int t = 0; t < n; ++t) {
    std::vector<std::pair<int, double>> terms{{finish_column[t], 1}, {start_column[t], -1}};
    for (int p = 0; p < n_procs; ++p)
      if (assign_column[t][p] >= 0) terms.emplace_back(assign_column[t][p], -cost(t, p));
    if (g.receiver_pays_communication)
      for (int e : crossing_into[t]) terms.emplace_back(crossing_edges[e].column, -crossing_edges[e].comm);
    milp.add_row(terms, 0, 0);
  }

  // Precedence: S[v] - F[u] (- comm z when it is a delay) >= 0.
  std::map<std::pair<int, int>, int> crossing_of;
  for (size_t e = 0; e < crossing_edges.size(); ++e)
    crossing_of[{crossing_edges[e].from, crossing_edges[e].to}] = static_cast<int>(e);
  for (const auto& [edge, comm] : edge_comm) {
    auto [u, v] = edge;
    std::vector<std::pair<int, double>> terms{{start_column[v], 1}, {finish_column[u], -1}};
    auto crossing = crossing_of.find(edge);
    if (!g.receiver_pays_communication && crossing != crossing_of.end())
      terms.emplace_back(crossing_edges[crossing->second].column, -crossing_edges[crossing->second].comm);
    milp.add_row(terms, 0, kInfinity);
  }
  // Makespan: C >= F[t] for exit tasks (the others finish before a
  // successor starts); C >= each processor's load.
  for (int t = 0; t < n; ++t)
    if (g.succ[t].empty()) milp.add_row({{makespan_column, 1}, {finish_column[t], -1}}, 0, kInfinity);
  for (int p = 0; p < n_procs; ++p) {
    std::vector<std::pair<int, double>> terms{{makespan_column, 1}};
    for (int t = 0; t < n; ++t)
      if (assign_column[t][p] >= 0) terms.emplace_back(assign_column[t][p], -cost(t, p));
    milp.add_row(terms, 0, kInfinity);
  }
  // Disjunctions. F[i] - S[j] is at most latest_finish(i) -
  // earliest_start(j): all the slack a row ever needs.
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j) {
      if (reaches[i][j] || reaches[j][i]) continue;
      std::vector<int> shared;
      for (int p = 0; p < n_procs; ++p)
        if (assign_column[i][p] >= 0 && assign_column[j][p] >= 0) shared.push_back(p);
      if (shared.empty()) continue;
      const int y = milp.add_column(head_first.count({i, j}) ? 1 : 0, 1, 0, true);  // 1: i before j
      const double m_ij = std::clamp((latest_finish(i) - earliest_start[j]) * scale, 0.0, 1.0);
      const double m_ji = std::clamp((latest_finish(j) - earliest_start[i]) * scale, 0.0, 1.0);
      for (int p : shared) {
        const int xi = assign_column[i][p], xj = assign_column[j][p];
        // S[j] - F[i] >= -M (1 - y) - M (2 - x_i - x_j)
        milp.add_row({{start_column[j], 1}, {finish_column[i], -1}, {y, -m_ij}, {xi, -m_ij}, {xj, -m_ij}},
                     -3 * m_ij, kInfinity);
        // S[i] - F[j] >= -M y - M (2 - x_i - x_j)
        milp.add_row({{start_column[i], 1}, {finish_column[j], -1}, {y, m_ji}, {xi, -m_ji}, {xj, -m_ji}},
                     -2 * m_ji, kInfinity);
      }
    }

  for (auto [a, b] : head_first_rows) milp.add_row({{start_column[a], 1}, {start_column[b], -1}}, -kInfinity, 0);

  // The starting schedule stays out of the solver: a cutoff just below its
  // makespan has CBC search for better ones only. (Handing it over as a MIP
  // start costs CBC one more LP solve of the whole model, too slow for a
  // time limit of a second on a few dozen tasks.)
  const double cutoff = 1 - kRelativeGap;
  double objective = 1, solver_bound = -kInfinity;
  bool solver_proved = false;
  std::vector<double> solution;
  {
    std::lock_guard<std::mutex> lock(cbc_mutex());
    std::unique_ptr<Cbc_Model, CbcModelDeleter> model(Cbc_newModel());
    milp.load_into(model.get());
    const double seconds_left = std::max(options.time_limit_s - seconds_since(begin), 0.01);
    Cbc_setLogLevel(model.get(), 0);
    Cbc_setParameter(model.get(), "log", "0");
    Cbc_setParameter(model.get(), "slog", "0");
    Cbc_setParameter(model.get(), "timeMode", "elapsed");
    Cbc_setParameter(model.get(), "seconds", fmt::format("{:.3f}", seconds_left).c_str());
    // CBC 2.10's preprocessing can crash when the time limit stops it.
    Cbc_setParameter(model.get(), "preprocess", "off");
    // Cutting planes hardly lift the bound of big-M rows and slow every LP:
    // proofs take about half the time without them.
    Cbc_setParameter(model.get(), "cuts", "off");
    Cbc_setParameter(model.get(), "cutoff", fmt::format("{}", cutoff).c_str());
    Cbc_setParameter(model.get(), "ratioGap", "0");
    Cbc_setParameter(model.get(), "allowableGap", fmt::format("{}", kRelativeGap).c_str());
    Cbc_solve(model.get());
    if (const double* found = Cbc_bestSolution(model.get())) {
      solution.assign(found, found + milp.n_columns());
      objective = Cbc_getObjValue(model.get());
    }
    // Infeasible under the cutoff: nothing beats the starting schedule.
    solver_proved = Cbc_isProvenOptimal(model.get()) || Cbc_isProvenInfeasible(model.get());
    solver_bound = Cbc_getBestPossibleObjValue(model.get());
  }

  if (!solution.empty()) {
    std::vector<int> proc(n, -1);
    for (int t = 0; t < n; ++t) {
      double most = -1;
      for (int p = 0; p < n_procs; ++p)
        if (assign_column[t][p] >= 0 && solution[assign_column[t][p]] > most) {
          most = solution[assign_column[t][p]];
          proc[t] = p;
        }
    }
    std::vector<double> key(n);
    for (int t = 0; t < n; ++t) key[t] = solution[start_column[t]];
    TaskSchedule found = timed_schedule(g, pred, proc, sequence_by_key(g, topo_position, key));
    if (found.makespan < best.makespan) best = std::move(found);
  }
  // Proved only when the re-timed schedule keeps the solver's optimum (it
  // never lengthens it, up to rounding).
  bool proved = solver_proved && best.makespan <= (objective + kRelativeGap) * upper;
  // Whatever the solver left open is above its bound, and what the cutoff
  // removed is no better than the starting schedule.
  double lower_bound = std::max(lower, std::min(solver_bound, cutoff) * upper);
  if (lower_bound >= best.makespan * (1 - kRelativeGap)) proved = true;
  return result_of(std::move(best), proved, lower_bound);
}

namespace {

double number_param(const std::string& key, const std::string& value, const char* expected) {
  char* end = nullptr;
  double number = std::strtod(value.c_str(), &end);
  if (value.empty() || end != value.c_str() + value.size() || !std::isfinite(number))
    throw Error(ErrorCode::kUsage, fmt::format("scheduler 'optimal': parameter {}='{}' is not a number; expected {}",
                                               key, value, expected));
  return number;
}

class OptimalScheduler : public Scheduler {
 public:
  Plan schedule(const Graph& graph, const Platform& platform, const CostModel& cost,
                const ScheduleOptions& options) const override {
    double time_limit = 10;
    int max_tasks = 40;
    std::map<std::string, std::string> params = options.params;
    LaunchUnits units = launch_units_from_params(graph, platform, params, "optimal");
    for (const auto& [key, value] : params) {
      if (key == "time_limit") {
        time_limit = number_param(key, value, "seconds > 0");
        if (time_limit <= 0)
          throw Error(ErrorCode::kUsage,
                      fmt::format("scheduler 'optimal': parameter time_limit={} must be > 0 (seconds)", value));
      } else if (key == "max_tasks") {
        double number = number_param(key, value, "a whole number >= 1");
        if (number < 1 || number != std::floor(number) || number > 1e6)
          throw Error(ErrorCode::kUsage,
                      fmt::format("scheduler 'optimal': parameter max_tasks={} must be a whole number >= 1", value));
        max_tasks = static_cast<int>(number);
      } else {
        throw Error(ErrorCode::kUsage,
                    fmt::format("scheduler 'optimal': unknown parameter '{}' (known: time_limit, max_tasks, "
                                "partition=none|onchip, partition_device)",
                                key));
      }
    }
    UnitTaskGraph problem = build_unit_task_graph(graph, platform, cost, "optimal", std::move(units.units));
    problem.units_note = std::move(units.note);
    problem.unit_notes = std::move(units.unit_notes);
    if (problem.tasks.n_tasks > max_tasks)
      throw Error(ErrorCode::kUnsupported,
                  fmt::format("scheduler 'optimal': the graph has {} launch units, more than max_tasks={} (the exact "
                              "search grows exponentially with them); use another scheduler such as heft, or raise "
                              "max_tasks (hetsched plan --sched-param max_tasks={})",
                              problem.tasks.n_tasks, max_tasks, problem.tasks.n_tasks));
    OptimalOptions solve;
    solve.time_limit_s = time_limit;
    OptimalResult result = optimal_schedule(problem.tasks, solve);
    Plan plan = plan_from_task_schedule(graph, platform, problem, result.schedule, "optimal");
    const double best_ms = result.schedule.makespan / 1000, lower_ms = result.lower_bound / 1000;
    if (result.proved_optimal)
      plan.notes.push_back(
          fmt::format("optimal: proved optimal: makespan {:.3f} ms (search: {:.2f} s)", best_ms, result.seconds));
    else
      plan.notes.push_back(fmt::format(
          "optimal: {} after {:.2f} s; best found {:.3f} ms, lower bound {:.3f} ms (gap {:.1f}%)",
          result.seconds >= 0.95 * time_limit ? "time limit reached" : "search stopped unproved", result.seconds,
          best_ms, lower_ms, best_ms > 0 ? 100 * (best_ms - lower_ms) / best_ms : 0.0));
    return plan;
  }
};

}  // namespace

HETSCHED_SCHEDULER("optimal",
                   "exact minimum makespan of the HEFT task graph (fusion units) as a MILP solved by CBC; "
                   "time_limit (s, default 10), max_tasks (default 40), partition=none|onchip, partition_device",
                   OptimalScheduler);

}  // namespace hetsched
