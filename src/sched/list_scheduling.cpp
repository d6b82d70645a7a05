#include "sched/list_scheduling.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <queue>
#include <set>

#include <fmt/format.h>

#include "hetsched/error.h"

namespace hetsched {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

}  // namespace

void check_task_graph(const TaskGraph& g, const char* algorithm) {
  auto bad = [&](const std::string& what) {
    throw Error(ErrorCode::kUsage, fmt::format("{}: malformed task graph: {}", algorithm, what));
  };
  if (g.n_tasks < 0 || g.n_procs <= 0) bad(fmt::format("{} tasks on {} processors", g.n_tasks, g.n_procs));
  if (static_cast<int>(g.cost.size()) != g.n_tasks || static_cast<int>(g.succ.size()) != g.n_tasks)
    bad(fmt::format("cost has {} rows and succ {}, expected n_tasks = {}", g.cost.size(), g.succ.size(), g.n_tasks));
  for (int t = 0; t < g.n_tasks; ++t) {
    if (static_cast<int>(g.cost[t].size()) != g.n_procs)
      bad(fmt::format("task {} has {} costs, expected n_procs = {}", t, g.cost[t].size(), g.n_procs));
    bool runs_somewhere = false;
    for (double c : g.cost[t]) {
      if (std::isnan(c) || c < 0) bad(fmt::format("task {} has cost {}, expected >= 0 or +inf", t, c));
      runs_somewhere = runs_somewhere || std::isfinite(c);
    }
    if (!runs_somewhere)
      throw Error(ErrorCode::kUnsupported, fmt::format("{}: no processor can run task {}", algorithm, t));
    for (auto [s, comm] : g.succ[t]) {
      if (s < 0 || s >= g.n_tasks) bad(fmt::format("task {} has successor {}, expected 0..{}", t, s, g.n_tasks - 1));
      if (!std::isfinite(comm) || comm < 0)
        bad(fmt::format("edge {} -> {} has communication time {}, expected finite and >= 0", t, s, comm));
    }
  }
}

// Kahn's algorithm taking the lowest-numbered ready task first, so that the
// order is the task numbering wherever that numbering is topological.
std::vector<int> topological_order(const TaskGraph& g, const char* algorithm) {
  std::vector<int> in_degree(g.n_tasks, 0);
  for (const auto& edges : g.succ)
    for (auto [s, comm] : edges) ++in_degree[s];
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int t = 0; t < g.n_tasks; ++t)
    if (in_degree[t] == 0) ready.push(t);
  std::vector<int> order;
  order.reserve(g.n_tasks);
  while (!ready.empty()) {
    int t = ready.top();
    ready.pop();
    order.push_back(t);
    for (auto [s, comm] : g.succ[t])
      if (--in_degree[s] == 0) ready.push(s);
  }
  if (static_cast<int>(order.size()) != g.n_tasks)
    throw Error(ErrorCode::kUsage, fmt::format("{}: malformed task graph: it has a cycle", algorithm));
  return order;
}

namespace {

// Ranks computed in different association orders (80.0 reached as 14.33 +
// 23 + 42.67 or as 12.67 + 67.33 in the HEFT paper's example) must tie.
bool ranks_tie(double a, double b) {
  return std::abs(a - b) <= 1e-9 * std::max({1.0, std::abs(a), std::abs(b)});
}

// The list-scheduling loop both algorithms share: repeatedly take the ready
// task of highest rank (ties: earlier in `topo`), compute its insertion-based
// finish time on every processor, and put it where eft + lookahead is least.
TaskSchedule list_schedule(const TaskGraph& g, const std::vector<int>& topo, std::vector<double> rank,
                           std::vector<std::vector<double>> lookahead) {
  const int n = g.n_tasks;
  std::vector<int> topo_position(n);
  for (int i = 0; i < n; ++i) topo_position[topo[i]] = i;
  std::vector<std::vector<std::pair<int, double>>> pred(n);
  std::vector<int> unplaced_preds(n, 0);
  for (int t = 0; t < n; ++t)
    for (auto [s, comm] : g.succ[t]) {
      pred[s].emplace_back(t, comm);
      ++unplaced_preds[s];
    }

  TaskSchedule out;
  out.proc.assign(n, -1);
  out.start.assign(n, 0);
  out.finish.assign(n, 0);
  out.eft.assign(n, std::vector<double>(g.n_procs, kInfinity));
  // Per processor: (start, finish) of its tasks, sorted by start.
  std::vector<std::vector<std::pair<double, double>>> busy(g.n_procs);

  auto earliest_start = [&](int p, double ready_time, double duration) {
    double previous_end = 0;
    for (auto [busy_start, busy_end] : busy[p]) {
      double candidate = std::max(ready_time, previous_end);
      if (candidate + duration <= busy_start) return candidate;
      previous_end = std::max(previous_end, busy_end);
    }
    return std::max(ready_time, previous_end);
  };

  std::vector<int> ready;
  for (int t = 0; t < n; ++t)
    if (unplaced_preds[t] == 0) ready.push_back(t);
  while (!ready.empty()) {
    auto higher = [&](int a, int b) {
      if (!ranks_tie(rank[a], rank[b])) return rank[a] > rank[b];
      return topo_position[a] < topo_position[b];
    };
    auto picked = ready.begin();
    for (auto it = ready.begin() + 1; it != ready.end(); ++it)
      if (higher(*it, *picked)) picked = it;
    int t = *picked;
    ready.erase(picked);

    int best = -1;
    double best_value = kInfinity, best_start = 0;
    double best_duration = 0;
    for (int p = 0; p < g.n_procs; ++p) {
      double duration = g.cost[t][p];
      if (!std::isfinite(duration)) continue;
      double ready_time = 0;
      for (auto [m, comm] : pred[t]) {
        double crossing = out.proc[m] == p ? 0 : comm;
        if (g.receiver_pays_communication) {
          duration += crossing;
          crossing = 0;
        }
        ready_time = std::max(ready_time, out.finish[m] + crossing);
      }
      double start = earliest_start(p, ready_time, duration);
      out.eft[t][p] = start + duration;
      double value = out.eft[t][p] + (lookahead.empty() ? 0 : lookahead[t][p]);
      if (best < 0 || value < best_value) {
        best = p;
        best_value = value;
        best_start = start;
        best_duration = duration;
      }
    }
    out.proc[t] = best;
    out.start[t] = best_start;
    out.finish[t] = best_start + best_duration;
    out.makespan = std::max(out.makespan, out.finish[t]);
    out.order.push_back(t);
    auto& intervals = busy[best];
    intervals.insert(std::upper_bound(intervals.begin(), intervals.end(), std::make_pair(out.start[t], out.finish[t])),
                     {out.start[t], out.finish[t]});
    for (auto [s, comm] : g.succ[t])
      if (--unplaced_preds[s] == 0) ready.push_back(s);
  }
  out.rank = std::move(rank);
  out.lookahead = std::move(lookahead);
  return out;
}

double transfer_mean(double bytes, const Platform& platform, const CostModel& cost) {
  double sum = 0;
  int pairs = 0;
  for (const PlatformDevice& from : platform.devices)
    for (const PlatformDevice& to : platform.devices) {
      if (&from == &to) continue;
      double us = cost.transfer(bytes, from, to).us;
      if (!std::isfinite(us)) continue;
      sum += us;
      ++pairs;
    }
  return pairs == 0 ? 0 : sum / pairs;
}

std::string format_ms(double us) { return fmt::format("{:.3f} ms", us / 1000.0); }

}  // namespace

TaskSchedule heft(const TaskGraph& g) {
  check_task_graph(g, "heft");
  std::vector<int> topo = topological_order(g, "heft");
  std::vector<double> rank_u(g.n_tasks, 0);
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    int t = *it;
    double sum = 0;
    int runnable = 0;
    for (double c : g.cost[t])
      if (std::isfinite(c)) {
        sum += c;
        ++runnable;
      }
    double tail = 0;
    for (auto [s, comm] : g.succ[t]) tail = std::max(tail, comm + rank_u[s]);
    rank_u[t] = sum / runnable + tail;
  }
  return list_schedule(g, topo, std::move(rank_u), {});
}

TaskSchedule peft(const TaskGraph& g) {
  check_task_graph(g, "peft");
  std::vector<int> topo = topological_order(g, "peft");
  std::vector<std::vector<double>> oct(g.n_tasks, std::vector<double>(g.n_procs, 0));
  std::vector<double> rank_oct(g.n_tasks, 0);
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    int t = *it;
    for (int p = 0; p < g.n_procs; ++p) {
      double worst = 0;
      for (auto [s, comm] : g.succ[t]) {
        double best = kInfinity;
        for (int q = 0; q < g.n_procs; ++q)
          if (std::isfinite(g.cost[s][q])) best = std::min(best, oct[s][q] + g.cost[s][q] + (q == p ? 0 : comm));
        worst = std::max(worst, best);
      }
      oct[t][p] = worst;
      rank_oct[t] += worst / g.n_procs;
    }
  }
  return list_schedule(g, topo, std::move(rank_oct), std::move(oct));
}

UnitTaskGraph build_unit_task_graph(const Graph& graph, const Platform& platform, const CostModel& cost,
                                    const std::string& scheduler, std::vector<std::vector<NodeId>> units) {
  UnitTaskGraph problem;
  problem.units = units.empty() ? fusion_units(graph) : std::move(units);
  const int n_tasks = static_cast<int>(problem.units.size());
  const int n_procs = static_cast<int>(platform.devices.size());
  if (n_procs == 0) throw Error(ErrorCode::kUsage, fmt::format("scheduler '{}': the platform has no device", scheduler));
  TaskGraph& tasks = problem.tasks;
  tasks.receiver_pays_communication = true;
  tasks.n_tasks = n_tasks;
  tasks.n_procs = n_procs;
  tasks.cost.assign(n_tasks, std::vector<double>(n_procs, kInfinity));
  tasks.succ.assign(n_tasks, {});

  std::vector<int> unit_of_node(graph.nodes.size(), -1);
  for (int t = 0; t < n_tasks; ++t)
    for (NodeId id : problem.units[t]) {
      if (id < 0 || id >= static_cast<NodeId>(graph.nodes.size()) || unit_of_node[id] >= 0)
        throw Error(ErrorCode::kUsage, fmt::format("scheduler '{}': its launch units hold a node twice or an unknown "
                                                   "node ({})",
                                                   scheduler, id));
      unit_of_node[id] = t;
    }
  for (size_t id = 0; id < graph.nodes.size(); ++id)
    if (unit_of_node[id] < 0)
      throw Error(ErrorCode::kUsage, fmt::format("scheduler '{}': its launch units leave out {}", scheduler,
                                                 graph.nodes[id].label()));

  auto host_device = std::find_if(platform.devices.begin(), platform.devices.end(),
                                  [](const PlatformDevice& d) { return d.memory_space == kHostMemory; });
  auto graph_input_copy_us = [&](double bytes, const PlatformDevice& device) {
    if (device.memory_space == kHostMemory) return 0.0;
    if (host_device != platform.devices.end()) return cost.transfer(bytes, *host_device, device).us;
    const Link* link = platform.link(kHostMemory, device.memory_space);
    if (!link) return kInfinity;
    return link->latency_us + (link->bandwidth_gbps > 0 ? bytes / (link->bandwidth_gbps * 1e3) : 0);
  };
  std::vector<bool> is_graph_input(graph.values.size(), false);
  for (ValueId v : graph.inputs) is_graph_input[v] = true;

  for (int t = 0; t < n_tasks; ++t) {
    const std::vector<NodeId>& unit = problem.units[t];
    std::set<ValueId> inputs_from_host;
    for (NodeId id : unit)
      for (ValueId v : graph.nodes[id].inputs)
        if (v != kNoValue && is_graph_input[v]) inputs_from_host.insert(v);
    bool supported_somewhere = false;
    for (int p = 0; p < n_procs; ++p) {
      const PlatformDevice& device = platform.devices[p];
      bool runs = std::all_of(unit.begin(), unit.end(), [&](NodeId id) { return device.supports(graph.nodes[id]); });
      if (!runs) continue;
      supported_somewhere = true;
      tasks.cost[t][p] = cost.launch(graph, unit, device).us;
      for (ValueId v : inputs_from_host) tasks.cost[t][p] += graph_input_copy_us(graph.values[v].nbytes(), device);
    }
    if (!supported_somewhere)
      throw Error(ErrorCode::kUnsupported,
                  fmt::format("scheduler '{}': no device of this platform runs {}", scheduler,
                              graph.nodes[unit[0]].label()));
    if (std::none_of(tasks.cost[t].begin(), tasks.cost[t].end(), [](double us) { return std::isfinite(us); }))
      throw Error(ErrorCode::kUnsupported,
                  fmt::format("scheduler '{}': no device has a finite cost estimate for {} (devices not calibrated?)",
                              scheduler, graph.nodes[unit[0]].label()));
  }

  // Each value crossing from unit t to unit u is counted once per reading
  // unit, and the edge pays for every value it carries.
  std::map<std::pair<int, int>, double> comm;
  for (int t = 0; t < n_tasks; ++t)
    for (NodeId id : problem.units[t])
      for (ValueId v : graph.nodes[id].outputs) {
        if (v == kNoValue) continue;
        std::set<int> readers;
        for (NodeId consumer : graph.values[v].consumers)
          if (unit_of_node[consumer] != t) readers.insert(unit_of_node[consumer]);
        if (readers.empty()) continue;
        double us = transfer_mean(graph.values[v].nbytes(), platform, cost);
        for (int u : readers) comm[{t, u}] += us;
      }
  for (const auto& [edge, us] : comm) tasks.succ[edge.first].emplace_back(edge.second, us);
  return problem;
}

Plan plan_from_task_schedule(const Graph& graph, const Platform& platform, const UnitTaskGraph& problem,
                             const TaskSchedule& schedule, const std::string& scheduler) {
  const TaskGraph& tasks = problem.tasks;
  const int n_tasks = tasks.n_tasks;
  const std::string model_note = fmt::format(
      "{} {} units; each edge's communication time is the mean transfer time over ordered pairs of distinct "
      "devices (the list-scheduling model has one time per edge), paid on the reader's device",
      n_tasks, problem.units_note.empty() ? "fusion" : "launch");
  auto add_notes = [&](Plan& plan) {
    plan.notes.push_back(model_note);
    if (!problem.units_note.empty()) plan.notes.push_back(problem.units_note);
  };
  // Where the unit is more than a fusion unit, its reason says what it is.
  auto with_unit_note = [&](int t, std::string reason) {
    if (t < static_cast<int>(problem.unit_notes.size()) && !problem.unit_notes[t].empty())
      reason += fmt::format(" [{}]", problem.unit_notes[t]);
    return reason;
  };

  // The greedy placement can lose to one device alone (PEFT's optimistic
  // cost table ignores that the successors compete for the same device);
  // the same model says so, and then the single device's plan is better.
  int alone_device = -1;
  double alone_us = kInfinity;
  for (int p = 0; p < tasks.n_procs; ++p) {
    double sum = 0;
    for (int t = 0; t < n_tasks; ++t) sum += tasks.cost[t][p];
    if (sum < alone_us) {
      alone_us = sum;
      alone_device = p;
    }
  }
  if (alone_device >= 0 && alone_us < schedule.makespan) {
    std::string reason = fmt::format("{}: all on {}: {} alone beats the {} list schedule ({})", scheduler,
                                     platform.devices[alone_device].name, format_ms(alone_us), scheduler,
                                     format_ms(schedule.makespan));
    std::vector<LaunchAssignment> launches;
    for (int t : schedule.order)
      launches.push_back(LaunchAssignment{problem.units[t], alone_device, 0, with_unit_note(t, reason)});
    Plan plan = build_plan(graph, platform, launches, scheduler);
    plan.predicted_ms = alone_us / 1000.0;
    add_notes(plan);
    plan.notes.push_back(reason);
    return plan;
  }

  std::vector<int> order_position(n_tasks);
  for (int i = 0; i < n_tasks; ++i) order_position[schedule.order[i]] = i;
  // A successor never starts before its predecessor finishes, so start time
  // with scheduling order (topological) breaking ties is a topological order.
  std::vector<int> by_start = schedule.order;
  std::sort(by_start.begin(), by_start.end(), [&](int a, int b) {
    if (schedule.start[a] != schedule.start[b]) return schedule.start[a] < schedule.start[b];
    return order_position[a] < order_position[b];
  });

  auto outcome = [&](int t, int p) {
    if (!std::isfinite(schedule.eft[t][p])) {
      // Why, in the device's words (its ops, its precisions, a pin).
      for (NodeId id : problem.units[t])
        if (std::string why = platform.devices[p].why_not(graph.nodes[id]); !why.empty())
          return fmt::format("cannot run it: {}", why);
      return std::string("cannot run it");
    }
    if (schedule.lookahead.empty()) return fmt::format("would finish at {}", format_ms(schedule.eft[t][p]));
    return fmt::format("finish {} + remaining {}", format_ms(schedule.eft[t][p]),
                       format_ms(schedule.lookahead[t][p]));
  };
  std::vector<LaunchAssignment> launches;
  launches.reserve(n_tasks);
  for (int t : by_start) {
    int chosen = schedule.proc[t];
    std::string reason;
    if (schedule.eft.empty()) {
      // A schedule searched as a whole has no per-task choice to explain:
      // the unit is where the best schedule found puts it.
      reason = fmt::format("{}: {} to {} on {} in the least-makespan schedule found ({})", scheduler,
                           format_ms(schedule.start[t]), format_ms(schedule.finish[t]), platform.devices[chosen].name,
                           format_ms(schedule.makespan));
      launches.push_back(LaunchAssignment{problem.units[t], chosen, 0, with_unit_note(t, std::move(reason))});
      continue;
    }
    if (schedule.lookahead.empty())
      reason = fmt::format("{}: earliest finish {} on {}", scheduler, format_ms(schedule.finish[t]),
                           platform.devices[chosen].name);
    else
      reason = fmt::format("{}: least finish + optimistic remaining cost, {} + {} on {}", scheduler,
                           format_ms(schedule.finish[t]), format_ms(schedule.lookahead[t][chosen]),
                           platform.devices[chosen].name);
    std::vector<std::string> others;
    for (int p = 0; p < tasks.n_procs; ++p)
      if (p != chosen) others.push_back(fmt::format("{} {}", platform.devices[p].name, outcome(t, p)));
    if (!others.empty()) reason += fmt::format(" ({})", fmt::join(others, "; "));
    launches.push_back(LaunchAssignment{problem.units[t], chosen, 0, with_unit_note(t, std::move(reason))});
  }
  Plan plan = build_plan(graph, platform, launches, scheduler);
  plan.predicted_ms = schedule.makespan / 1000.0;
  add_notes(plan);
  return plan;
}

}  // namespace hetsched
