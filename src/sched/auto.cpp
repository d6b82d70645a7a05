// "auto": hetsched's own scheduler. It does not guess which algorithm suits
// the model and the platform; it asks them all:
//   1. every device that runs the whole graph, alone (the sequential plans),
//      and every other registered scheduler (but the slow exact ones, see
//      below) make a plan; the simulator predicts each with one cost model;
//   2. coarse candidates: the plans of step 1 within 1.5x of the best, their
//      launches coarsened (coarsen() below: each launch joins the previous
//      one on its lane when the cost model says one launch is no slower
//      than two and the join can delay nothing on another lane), and for
//      each device that does not run every node, the plan giving it every
//      fusion unit it runs, coarsened; and that plan and each near-best
//      candidate's placement with such a device's units grouped by phase
//      (group_by_phase(): joined across the ops the device lacks);
//   2b. on a platform with a union device (cpu:0-1 listed with cpu:0 and
//      cpu:1), wide launches: serial stretches on the union device, the
//      branches of fork-join regions on the narrow ones (add_wide_candidates);
//   3. a local search improves the best plain and the best coarse candidate
//      (run() and schedule() say why both): move a launch, or a branch of
//      launches, to another device, put a launch on another stream, or its
//      copies between memory spaces on a stream of its device, join a
//      launch with the next one on its lane, split one in two, run it
//      before the launch ahead of it on its lane, or swap the devices of
//      two nearby launches — each change kept only when the simulated
//      makespan drops — until a whole pass finds nothing or the budget is
//      spent. The search runs first on the devices its start uses, then on
//      every device; a device its start left idle must make the plan 1%
//      faster to be kept, and so must the extra devices of one search's
//      result over the other's (kMinDeviceGain; a CPU beside a GPU gets
//      work only where it helps).
// Steps 2 and 3 change how nodes are grouped into launches, not only where
// launches go: the schedulers of step 1 launch fusion units (or their own
// partitions) one by one, each paying its device's launch overhead. The
// roofline cost model runs a launch on an emulated accelerator whose
// on-chip memory holds the values between its kernels as one kernel: one
// overhead and one max(FLOPs / peak, bytes / bandwidth) over the whole
// launch (the emulated device's executor holds the launch to that time).
// Elsewhere a launch's kernels run one after another, and a join saves
// only what the caches keep and the events between launches (on a real
// CPU device the combined model sums the nodes' measurements, so joins
// gain nothing there unless measured). On cpu-dsa this took RandWire from
// 0.563 to 0.204 ms (simulated).
// So the plan is never predicted slower than any scheduler it ran nor than
// the best single device. (Checking the choice by measurement needs the real
// devices: Session does that, see session.h.)
//
// Parameters: schedulers=a;b;c (default: every registered one but auto and
// optimal, which searches exhaustively and is run only when named),
// coarsen=on|off (step 2, default on), max_evals=N (plans simulated by the
// local search, default 4000) and budget_ms=T (wall-clock cap on steps 2
// and 3, default 700; it makes the result depend on the machine's speed
// only when reached).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "hetsched/error.h"
#include "hetsched/scheduler.h"
#include "plan/plan_builder.h"
#include "sched/auto.h"
#include "sched/branches.h"
#include "sim/simulator.h"

namespace hetsched {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
const std::set<std::string> kKnownParams = {"schedulers", "max_evals", "budget_ms", "coarsen"};
const std::set<std::string> kNotByDefault = {"auto", "optimal"};
// Step 3: a device the search's start left idle must save at least this
// fraction of the makespan to be used. Below it the prediction's error is
// larger than the gain, and the device's copies, events and host threads
// are a cost the plan need not pay.
constexpr double kMinDeviceGain = 0.01;

int int_param(const ScheduleOptions& options, const std::string& name, int fallback, int min_value) {
  auto it = options.params.find(name);
  if (it == options.params.end()) return fallback;
  try {
    size_t used = 0;
    int value = std::stoi(it->second, &used);
    if (used == it->second.size() && value >= min_value) return value;
  } catch (const std::exception&) {
  }
  throw Error(ErrorCode::kUsage, fmt::format("scheduler 'auto': parameter {}='{}': expected an integer >= {}", name,
                                             it->second, min_value));
}

std::vector<std::string> candidate_schedulers(const ScheduleOptions& options) {
  std::vector<std::string> names;
  auto it = options.params.find("schedulers");
  if (it == options.params.end()) {
    for (const auto& [name, summary] : scheduler_names())
      if (!kNotByDefault.count(name)) names.push_back(name);
    return names;
  }
  std::stringstream list(it->second);
  std::string name;
  while (std::getline(list, name, ';')) {
    if (name == "auto") throw Error(ErrorCode::kUsage, "scheduler 'auto': parameter schedulers cannot name auto");
    make_scheduler(name);  // an unknown name is a usage error listing the known ones
    names.push_back(name);
  }
  return names;
}

struct Candidate {
  std::string name;
  double makespan_us = kInfinity;
  std::vector<LaunchAssignment> launches;
};

// Lane of a launch: (device, stream).
bool same_lane(const LaunchAssignment& a, const LaunchAssignment& b) {
  return a.device == b.device && a.stream == b.stream;
}

// A launch holding a pinned node is left as the pin made it: build_plan says
// "pinned by" for each node of such a launch, true only of the pinned node
// and the nodes fused with it.
bool holds_pinned(const Graph& graph, const Platform& platform, const std::vector<NodeId>& nodes) {
  if (platform.pinned.empty()) return false;
  return std::any_of(nodes.begin(), nodes.end(),
                     [&](NodeId id) { return platform.pinned.count(graph.nodes[id].name) > 0; });
}

// Nodes of two launches as one, ascending: node ids are a topological order
// (Graph::finalize), so the merged launch lists its nodes in one too.
std::vector<NodeId> merged_nodes(const std::vector<NodeId>& a, const std::vector<NodeId>& b) {
  std::vector<NodeId> nodes;
  nodes.reserve(a.size() + b.size());
  std::merge(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(nodes));
  return nodes;
}

// The coarsening pass: `launches` (a topological order, as build_plan takes
// them) walked in order, each joining the open launch of its lane (the last
// one there) when the cost model says the joined launch is no slower than
// the two apart. That is where one launch of many kernels pays: on a device
// with on-chip memory it runs as one kernel with one launch overhead while
// the values between its kernels fit (onchip_partition.h), and the roofline
// charges a launch max(its FLOPs / peak, its bytes / bandwidth), so work
// bound by compute and work bound by memory overlap inside one launch.
//
// What the cost model does not see is the timing around the launch, so a
// join is also refused when it could delay anything:
//   - the open launch is read on another lane: that reader would wait for
//     the whole joined launch;
//   - the new launch reads, on another lane, a launch the open one does not
//     read: the joined launch would wait for it, where the open launch ran
//     meanwhile.
// Everything else the new launch reads is on its own lane, hence before the
// open launch, so the joined launch in the open one's place keeps the
// order topological (and the launch graph acyclic). Only the open launch's
// own-lane readers wait longer, and they ran after the new launch anyway.
// The result is one more candidate, kept only when the simulator says so;
// the local search (which simulates) makes the joins this pass refuses
// where they pay.
std::vector<LaunchAssignment> coarsen(const Graph& graph, const Platform& platform, const CostModel& cost,
                                      const std::vector<LaunchAssignment>& launches) {
  struct Open {
    LaunchAssignment launch;
    bool read_elsewhere = false;  // a launch on another lane reads from it
    std::set<int> waits_for;      // the launches (out indices) on other lanes it reads from
    double us = 0;
  };
  std::vector<int> given_of(graph.nodes.size(), -1);  // node -> index into launches
  for (size_t l = 0; l < launches.size(); ++l)
    for (NodeId id : launches[l].nodes) given_of[id] = static_cast<int>(l);
  auto read_on_other_lane = [&](const LaunchAssignment& launch) {
    for (NodeId id : launch.nodes)
      for (ValueId v : graph.nodes[id].outputs) {
        if (v == kNoValue) continue;
        for (NodeId reader : graph.values[v].consumers)
          if (!same_lane(launches[given_of[reader]], launch)) return true;
      }
    return false;
  };
  std::vector<Open> out;
  std::vector<int> out_of(graph.nodes.size(), -1);  // node -> index into out
  std::map<std::pair<int, int>, int> open_on_lane;   // (device, stream) -> index into out
  for (const LaunchAssignment& launch : launches) {
    std::set<int> reads;  // out indices on other lanes this launch reads from
    for (NodeId id : launch.nodes)
      for (ValueId v : graph.nodes[id].inputs) {
        if (v == kNoValue || graph.values[v].producer == kNoNode) continue;
        int from = out_of[graph.values[v].producer];
        if (from >= 0 && !same_lane(out[from].launch, launch)) reads.insert(from);
      }
    const PlatformDevice& device = platform.devices[launch.device];
    double us = cost.launch(graph, launch.nodes, device).us;
    auto lane = open_on_lane.find({launch.device, launch.stream});
    if (lane != open_on_lane.end()) {
      Open& open = out[lane->second];
      bool waits_for_no_more = std::includes(open.waits_for.begin(), open.waits_for.end(), reads.begin(), reads.end());
      if (!open.read_elsewhere && waits_for_no_more && !holds_pinned(graph, platform, launch.nodes) &&
          !holds_pinned(graph, platform, open.launch.nodes)) {
        std::vector<NodeId> nodes = merged_nodes(open.launch.nodes, launch.nodes);
        double joined_us = cost.launch(graph, nodes, device).us;
        if (joined_us <= (open.us + us) * (1 + 1e-9)) {
          open.launch.nodes = std::move(nodes);
          open.us = joined_us;
          open.read_elsewhere = read_on_other_lane(launch);
          for (NodeId id : launch.nodes) out_of[id] = lane->second;
          continue;
        }
      }
    }
    out.push_back({launch, read_on_other_lane(launch), std::move(reads), us});
    open_on_lane[{launch.device, launch.stream}] = static_cast<int>(out.size()) - 1;
    for (NodeId id : launch.nodes) out_of[id] = static_cast<int>(out.size()) - 1;
  }
  std::vector<LaunchAssignment> result;
  for (Open& o : out) result.push_back(std::move(o.launch));
  return result;
}

// Hill climbing over launch assignments; every step rebuilds the plan and
// simulates it, so what it optimises is exactly what `simulate` predicts.
class LocalSearch {
 public:
  LocalSearch(const Graph& graph, const Platform& platform, const CostModel& cost, std::vector<LaunchAssignment> start,
              int max_evals, int budget_ms)
      : graph_(graph),
        platform_(platform),
        cost_(cost),
        launches_(std::move(start)),
        max_evals_(max_evals),
        deadline_(std::chrono::steady_clock::now() + std::chrono::milliseconds(budget_ms)) {
    size_t n = launches_.size();
    order_.resize(n);
    for (size_t i = 0; i < n; ++i) order_[i] = static_cast<int>(i);
    why_.assign(n, "");
    unit_of_.assign(graph_.nodes.size(), -1);
    std::vector<std::vector<NodeId>> units = fusion_units(graph_);
    for (size_t u = 0; u < units.size(); ++u)
      for (NodeId id : units[u]) unit_of_[id] = static_cast<int>(u);
    index_dependencies();
    best_ = evaluate();
    start_us_ = best_.makespan_us;
  }

  // First on the devices the start uses, with half the budget; then on
  // every device, the result of which is kept unless it took a device the
  // start left idle and is less than `min_gain` faster: such a device must
  // pay its way (a CPU beside a GPU would otherwise pick up side branches for
  // a sliver of the makespan, and cost the search the budget it needed on
  // the GPU alone).
  void run(double min_gain) {
    try_copy_streams_everywhere();
    std::vector<bool> used = devices_in_use();
    if (std::find(used.begin(), used.end(), false) == used.end()) return climb();

    int all_evals = max_evals_;
    auto all_deadline = deadline_;
    max_evals_ = evals_ + (max_evals_ - evals_) / 2;
    auto now = std::chrono::steady_clock::now();
    deadline_ = std::max(now, now + (deadline_ - now) / 2);
    may_use_ = used;
    climb();
    State on_start_devices{launches_, order_, why_, best_, accepted_};
    max_evals_ = all_evals, deadline_ = all_deadline;
    may_use_.assign(platform_.devices.size(), true);
    climb();
    // Kept where it took no other device (it is then no slower), or where
    // the device it took pays.
    std::vector<bool> now_used = devices_in_use();
    bool took_another = false;
    for (size_t d = 0; d < used.size(); ++d) took_another = took_another || (now_used[d] && !used[d]);
    if (!took_another || best_.makespan_us < on_start_devices.best.makespan_us * (1 - min_gain)) return;
    notes_.push_back(fmt::format("auto: the search on every device reached {:.3f} ms, less than {:.0f}% faster than "
                                 "{:.3f} ms on the devices of its start: kept the latter",
                                 best_.makespan_us / 1e3, 100 * min_gain, on_start_devices.best.makespan_us / 1e3));
    launches_ = std::move(on_start_devices.launches), order_ = std::move(on_start_devices.order);
    why_ = std::move(on_start_devices.why), best_ = on_start_devices.best, accepted_ = on_start_devices.accepted;
    index_dependencies();
  }

  std::vector<LaunchAssignment> result() const {
    std::vector<LaunchAssignment> out;
    for (int id : order_) out.push_back(launches_[id]);
    return out;
  }
  // Why the search changed each launch ("" when it did not), in result() order.
  std::vector<std::string> changes() const {
    std::vector<std::string> out;
    for (int id : order_) out.push_back(why_[id]);
    return out;
  }
  double best_us() const { return best_.makespan_us; }
  double start_us() const { return start_us_; }
  int evals() const { return evals_; }
  int accepted() const { return accepted_; }
  bool budget_reached() const { return out_of_budget(); }

  // Remarks for the plan's notes.
  const std::vector<std::string>& notes() const { return notes_; }
  int n_devices_used() const {
    std::vector<bool> used = devices_in_use();
    return static_cast<int>(std::count(used.begin(), used.end(), true));
  }

 private:
  // Two phases: first the moves that keep each launch's nodes, to a local
  // optimum; then with joins and splits too. Joins taken early can block
  // the moves and swaps that would pay more (auto on small random DAGs came
  // within 4.6% of optimal instead of matching it), and the second phase
  // only keeps what improves on the first.
  void climb() {
    for (bool regroup : {false, true}) {
      bool improved = true;
      while (improved && !out_of_budget()) {
        improved = false;
        for (size_t i = 0; i < order_.size() && !out_of_budget(); ++i) improved |= try_moves(order_[i]);
        for (size_t i = 0; i < order_.size() && !out_of_budget(); ++i) improved |= try_chain_moves(order_[i]);
        for (size_t i = 0; i < order_.size() && !out_of_budget(); ++i) improved |= try_streams(order_[i]);
        for (size_t i = 0; i < order_.size() && !out_of_budget(); ++i) improved |= try_copy_streams(order_[i]);
        for (size_t p = 0; regroup && p < order_.size() && !out_of_budget(); ++p) improved |= try_merge(p);
        for (size_t p = 0; regroup && p < order_.size() && !out_of_budget(); ++p) improved |= try_split(p);
        for (size_t p = 1; p < order_.size() && !out_of_budget(); ++p) improved |= try_earlier(p);
        for (size_t p = 0; p < order_.size() && !out_of_budget(); ++p) improved |= try_swaps(p);
      }
    }
  }

  // By device: whether a launch of the plan runs there (launches_ also
  // holds the emptied ones that joins leave behind, not in order_).
  std::vector<bool> devices_in_use() const {
    std::vector<bool> used(platform_.devices.size(), false);
    for (int l : order_) used[launches_[l].device] = true;
    return used;
  }

  void index_dependencies() {
    std::vector<int> launch_of(graph_.nodes.size(), -1);
    for (size_t l = 0; l < launches_.size(); ++l)
      for (NodeId id : launches_[l].nodes) launch_of[id] = static_cast<int>(l);
    predecessors_.assign(launches_.size(), {});
    successors_.assign(launches_.size(), {});
    for (size_t l = 0; l < launches_.size(); ++l)
      for (NodeId id : launches_[l].nodes)
        for (ValueId v : graph_.nodes[id].inputs) {
          if (v == kNoValue || graph_.values[v].producer == kNoNode) continue;
          int from = launch_of[graph_.values[v].producer];
          if (from >= 0 && from != static_cast<int>(l)) predecessors_[l].insert(from);
        }
    for (size_t l = 0; l < launches_.size(); ++l)
      for (int p : predecessors_[l]) successors_[p].insert(static_cast<int>(l));
    sole_successor_.assign(launches_.size(), -1);
    for (size_t l = 0; l < launches_.size(); ++l)
      if (successors_[l].size() == 1) sole_successor_[l] = *successors_[l].begin();
  }

  bool out_of_budget() const { return evals_ >= max_evals_ || std::chrono::steady_clock::now() >= deadline_; }

  bool runs(int launch, int device) const {
    if (!may_use_.empty() && !may_use_[device]) return false;
    const PlatformDevice& d = platform_.devices[device];
    return std::all_of(launches_[launch].nodes.begin(), launches_[launch].nodes.end(),
                       [&](NodeId id) { return d.supports(graph_.nodes[id]); });
  }

  // (makespan, sum of launch end times), compared in that order: moves that
  // leave the makespan as it is but end launches sooner are kept too, so
  // the search crosses the plateaus a makespan alone would stop it on.
  struct Score {
    double makespan_us = kInfinity;
    double end_sum_us = kInfinity;
    bool better_than(const Score& other) const {
      if (makespan_us < other.makespan_us * (1 - 1e-9)) return true;
      return makespan_us <= other.makespan_us && end_sum_us < other.end_sum_us * (1 - 1e-9);
    }
  };

  // What run() may go back to.
  struct State {
    std::vector<LaunchAssignment> launches;
    std::vector<int> order;
    std::vector<std::string> why;
    Score best;
    int accepted = 0;
  };

  Score evaluate() {
    ++evals_;
    // result() into a buffer kept between calls: assigning a launch reuses
    // the memory of its nodes and reason.
    ordered_.resize(order_.size());
    for (size_t i = 0; i < order_.size(); ++i) ordered_[i] = launches_[order_[i]];
    try {
      Plan plan = build_plan(graph_, platform_, ordered_, "auto", /*stamp_identity=*/false);
      SimOptions options;
      options.trace = false;
      SimResult sim = simulate(plan, graph_, platform_, cost_, options);
      return {sim.makespan_us, sim.launch_end_sum_us};
    } catch (const Error&) {
      return {};  // e.g. no link between two memory spaces
    }
  }

  // Evaluates the current state; keeps it if better, else calls undo.
  template <typename Undo>
  bool keep_if_better(int launch, const std::string& what, Undo undo) {
    Score score = evaluate();
    if (score.better_than(best_)) {
      why_[launch] = fmt::format("auto: local search {} (makespan {:.3f} -> {:.3f} ms)", what, best_.makespan_us / 1e3,
                                 score.makespan_us / 1e3);
      best_ = score;
      ++accepted_;
      return true;
    }
    undo();
    return false;
  }

  std::string where(int device, int stream) const {
    return platform_.devices[device].n_streams > 1 ? fmt::format("{} stream {}", platform_.devices[device].name, stream)
                                                   : platform_.devices[device].name;
  }

  // On a multi-stream device a moved launch follows a predecessor's stream
  // there, if one is, else takes stream 0.
  int stream_on(int launch, int device) const {
    for (int p : predecessors_[launch])
      if (launches_[p].device == device) return launches_[p].stream;
    return 0;
  }

  bool try_moves(int l) {
    LaunchAssignment& a = launches_[l];
    for (int d = 0; d < static_cast<int>(platform_.devices.size()) && !out_of_budget(); ++d) {
      if (d == a.device || !runs(l, d)) continue;
      int old_device = a.device, old_stream = a.stream;
      a.device = d;
      a.stream = stream_on(l, d);
      std::string what = fmt::format("moved it from {} to {}", where(old_device, old_stream), where(d, a.stream));
      if (keep_if_better(l, what, [&] { a.device = old_device, a.stream = old_stream; })) return true;
    }
    return false;
  }

  // A branch moves as a whole: the chain of launches from `l` on, each the
  // only reader of the one before and reading nothing else, so that one
  // hand-over at each end replaces one per launch.
  bool try_chain_moves(int l) {
    std::vector<int> chain{l};
    for (int next = sole_successor_[l]; next >= 0 && predecessors_[next].size() == 1; next = sole_successor_[next])
      chain.push_back(next);
    if (chain.size() < 2) return false;
    for (int d = 0; d < static_cast<int>(platform_.devices.size()) && !out_of_budget(); ++d) {
      bool all_there = true, all_run = true;
      for (int c : chain) {
        all_there = all_there && launches_[c].device == d;
        all_run = all_run && runs(c, d);
      }
      if (all_there || !all_run) continue;
      std::vector<LaunchAssignment> saved;
      for (int c : chain) saved.push_back(launches_[c]);
      int stream = stream_on(l, d);
      for (int c : chain) launches_[c].device = d, launches_[c].stream = stream;
      std::string what = fmt::format("moved the branch of {} launches from here on to {}", chain.size(), where(d, stream));
      if (keep_if_better(l, what, [&] {
            for (size_t k = 0; k < chain.size(); ++k) launches_[chain[k]] = saved[k];
          })) {
        for (int c : chain) why_[c] = why_[l];
        return true;
      }
    }
    return false;
  }

  bool try_streams(int l) {
    LaunchAssignment& a = launches_[l];
    int n_streams = platform_.devices[a.device].n_streams;
    for (int s = 0; s < n_streams && !out_of_budget(); ++s) {
      if (s == a.stream) continue;
      int old_stream = a.stream;
      a.stream = s;
      std::string what = fmt::format("moved it from stream {} to stream {}", old_stream, s);
      if (keep_if_better(l, what, [&] { a.stream = old_stream; })) return true;
    }
    return false;
  }

  // Copies between memory spaces: build_plan puts each on the reading
  // lane; a launch may instead push its outputs out, or pull its inputs in,
  // on a stream of its own device (LaunchAssignment::push_stream and
  // pull_stream). On cpu-dsa that frees the CPU of the copies back from the
  // accelerator and overlaps them with the accelerator's work.
  bool crosses_spaces(int l, bool outputs) const {
    const std::string& space = platform_.devices[launches_[l].device].memory_space;
    for (NodeId id : launches_[l].nodes)
      for (ValueId v : outputs ? graph_.nodes[id].outputs : graph_.nodes[id].inputs) {
        if (v == kNoValue || graph_.values[v].is_constant() || space == kHostMemory) continue;
        // A graph output leaves for host memory, a graph input comes from there.
        if (outputs ? graph_.is_graph_output(v) : graph_.values[v].producer == kNoNode) return true;
      }
    for (int other : outputs ? successors_[l] : predecessors_[l])
      if (platform_.devices[launches_[other].device].memory_space != space) return true;
    return false;
  }

  // Where a launch's copies may go: (stream, spread) pairs, stream -1 for
  // the reading lanes; spread (push only) on a device of several streams.
  std::vector<std::pair<int, bool>> copy_placements(int device, bool push) const {
    std::vector<std::pair<int, bool>> placements{{-1, false}};
    int n_streams = platform_.devices[device].n_streams;
    for (int s = 0; s < n_streams; ++s) {
      placements.emplace_back(s, false);
      if (push && n_streams > 1) placements.emplace_back(s, true);
    }
    return placements;
  }

  std::string copy_placement_text(int device, bool push, std::pair<int, bool> placement) const {
    auto [stream, spread] = placement;
    if (stream < 0) return "the reading lanes";
    if (spread) return fmt::format("{}'s streams in turn from stream {}", platform_.devices[device].name, stream);
    return where(device, stream);
  }

  bool try_copy_streams(int l) {
    LaunchAssignment& a = launches_[l];
    for (bool push : {true, false}) {
      if (!crosses_spaces(l, push)) continue;
      std::pair<int, bool> now{push ? a.push_stream : a.pull_stream, push && a.push_spread};
      for (std::pair<int, bool> placement : copy_placements(a.device, push)) {
        if (out_of_budget()) return false;
        if (placement == now || (placement.first < 0 && now.first < 0)) continue;
        if (!push && placement.first == a.stream && now.first < 0) continue;  // pulled on its own lane: as it is
        LaunchAssignment old = a;
        (push ? a.push_stream : a.pull_stream) = placement.first;
        if (push) a.push_spread = placement.second;
        std::string what = fmt::format("{} its {} on {}", push ? "pushed" : "pulled", push ? "outputs" : "inputs",
                                       copy_placement_text(a.device, push, placement));
        if (keep_if_better(l, what, [&] { a = old; })) return true;
      }
    }
    return false;
  }

  // The same for every launch of a device at once: one evaluation per
  // device, direction and stream before the launch-by-launch passes.
  void try_copy_streams_everywhere() {
    for (int d = 0; d < static_cast<int>(platform_.devices.size()); ++d)
      for (bool push : {true, false})
        for (std::pair<int, bool> placement : copy_placements(d, push)) {
          if (placement.first < 0) continue;
          if (out_of_budget()) return;
          std::vector<LaunchAssignment> saved = launches_;
          std::vector<int> changed;
          for (size_t l = 0; l < launches_.size(); ++l) {
            if (launches_[l].device != d || !crosses_spaces(static_cast<int>(l), push)) continue;
            (push ? launches_[l].push_stream : launches_[l].pull_stream) = placement.first;
            if (push) launches_[l].push_spread = placement.second;
            changed.push_back(static_cast<int>(l));
          }
          if (changed.empty()) continue;
          std::string what = fmt::format("{} every {} launch's {} on {}", push ? "pushed" : "pulled",
                                         platform_.devices[d].name, push ? "outputs" : "inputs",
                                         copy_placement_text(d, push, placement));
          if (keep_if_better(changed.front(), what, [&] { launches_ = saved; }))
            for (int l : changed) why_[l] = why_[changed.front()];
        }
  }

  // Runs the launch at order_[p] before the previous launch on its lane,
  // when nothing in between is one of its ancestors.
  bool try_earlier(size_t p) {
    int l = order_[p];
    const LaunchAssignment& a = launches_[l];
    size_t q = p;
    do {
      if (q == 0) return false;  // first on its lane
      --q;
    } while (launches_[order_[q]].device != a.device || launches_[order_[q]].stream != a.stream);
    // Any ancestor in between would put one of its direct predecessors in
    // between too (the order is topological), so those are all to check.
    for (size_t k = q; k < p; ++k)
      if (predecessors_[l].count(order_[k])) return false;
    std::vector<int> saved = order_;
    order_.erase(order_.begin() + static_cast<long>(p));
    order_.insert(order_.begin() + static_cast<long>(q), l);
    return keep_if_better(l, "ran it earlier on its lane", [&] { order_ = saved; });
  }

  bool try_swaps(size_t p) {
    constexpr size_t kWindow = 6;  // swaps of neighbours in the order: launches that could overlap
    int l = order_[p];
    for (size_t k = p + 1; k < order_.size() && k <= p + kWindow && !out_of_budget(); ++k) {
      int m = order_[k];
      LaunchAssignment &a = launches_[l], &b = launches_[m];
      if (a.device == b.device || !runs(l, b.device) || !runs(m, a.device)) continue;
      LaunchAssignment old_a = a, old_b = b;
      std::swap(a.device, b.device);
      a.stream = std::min(a.stream, platform_.devices[a.device].n_streams - 1);
      b.stream = std::min(b.stream, platform_.devices[b.device].n_streams - 1);
      std::string what = fmt::format("swapped its device with {}'s", graph_.nodes[b.nodes.front()].name);
      if (keep_if_better(l, what, [&] { a = old_a, b = old_b; })) {
        why_[m] = why_[l];
        return true;
      }
    }
    return false;
  }

  // Joins the launch at order_[p] and the next launch on its lane into one
  // (see coarsen() for why one launch can be faster than two). The joined
  // launch takes the first one's place when none of the second's direct
  // predecessors lies between them, else the second's place when none of
  // the first's direct successors does (any path between the two through a
  // third launch would put one of each in between: the order is
  // topological); otherwise it is not tried.
  bool try_merge(size_t p) {
    int l = order_[p];
    size_t q = p + 1;
    while (q < order_.size() && !same_lane(launches_[order_[q]], launches_[l])) ++q;
    if (q == order_.size()) return false;  // last on its lane
    int m = order_[q];
    bool first_place = true, second_place = true;
    for (size_t k = p + 1; k < q; ++k) {
      first_place = first_place && !predecessors_[m].count(order_[k]);
      second_place = second_place && !successors_[l].count(order_[k]);
    }
    if (!first_place && !second_place) return false;
    if (holds_pinned(graph_, platform_, launches_[l].nodes) || holds_pinned(graph_, platform_, launches_[m].nodes))
      return false;
    for (NodeId id : launches_[m].nodes)
      if (!platform_.devices[launches_[l].device].supports(graph_.nodes[id])) return false;
    LaunchAssignment old_l = launches_[l], old_m = launches_[m];
    std::vector<int> saved = order_;
    launches_[l].nodes = merged_nodes(old_l.nodes, old_m.nodes);
    launches_[m].nodes.clear();
    order_.erase(order_.begin() + static_cast<long>(q));
    if (!first_place) {
      order_.erase(order_.begin() + static_cast<long>(p));
      order_.insert(order_.begin() + static_cast<long>(q - 1), l);
    }
    index_dependencies();
    std::string what = fmt::format("joined the next launch on its lane ({}) into it",
                                   graph_.nodes[old_m.nodes.front()].name);
    return keep_if_better(l, what, [&] {
      launches_[l] = old_l, launches_[m] = old_m, order_ = saved;
      index_dependencies();
    });
  }

  // Splits the launch at order_[p] in two on its lane, at the fusion-unit
  // boundary nearest its middle (the halves may split again on the next
  // pass): the undoing of a join, coarsen()'s or a candidate's, that made
  // readers on other lanes wait for the whole launch. Its nodes ascend, and
  // node ids are a topological order, so the first half never reads the
  // second.
  bool try_split(size_t p) {
    int l = order_[p];
    const std::vector<NodeId>& nodes = launches_[l].nodes;
    size_t middle = nodes.size() / 2, cut = 0;
    for (size_t k = 1; k < nodes.size(); ++k) {
      if (unit_of_[nodes[k]] == unit_of_[nodes[k - 1]]) continue;
      auto distance = [&](size_t x) { return x > middle ? x - middle : middle - x; };
      if (cut == 0 || distance(k) < distance(cut)) cut = k;
    }
    if (cut == 0 || holds_pinned(graph_, platform_, nodes)) return false;  // one fusion unit, or pinned
    LaunchAssignment old_l = launches_[l];
    std::vector<int> saved = order_;
    LaunchAssignment second = old_l;
    second.nodes.assign(old_l.nodes.begin() + static_cast<long>(cut), old_l.nodes.end());
    launches_[l].nodes.resize(cut);
    int m = static_cast<int>(launches_.size());
    launches_.push_back(std::move(second));
    why_.push_back("");
    order_.insert(order_.begin() + static_cast<long>(p) + 1, m);
    index_dependencies();
    std::string what = fmt::format("split it in two ({} nodes and {})", cut, old_l.nodes.size() - cut);
    if (keep_if_better(l, what, [&] {
          launches_.pop_back(), why_.pop_back();
          launches_[l] = old_l, order_ = saved;
          index_dependencies();
        })) {
      why_[m] = why_[l];
      return true;
    }
    return false;
  }

  const Graph& graph_;
  const Platform& platform_;
  const CostModel& cost_;
  std::vector<LaunchAssignment> launches_;  // by launch id
  std::vector<int> order_;                  // launch ids in plan order (topological)
  std::vector<std::string> why_;            // by launch id
  std::vector<std::set<int>> predecessors_;  // by launch id: launches it reads from
  std::vector<std::set<int>> successors_;    // by launch id: launches reading from it
  std::vector<int> sole_successor_;          // by launch id: its only reader launch, or -1
  std::vector<int> unit_of_;                 // by node: its fusion unit
  int max_evals_;
  std::chrono::steady_clock::time_point deadline_;
  std::vector<LaunchAssignment> ordered_;  // evaluate()'s result(), kept for its memory
  std::vector<bool> may_use_;  // by device: where moves may go (empty: anywhere)
  std::vector<std::string> notes_;
  Score best_;
  double start_us_ = kInfinity;
  int evals_ = 0, accepted_ = 0;
};

// The launches of a plan placing fusion unit u on device_of[u], with the
// units of device d grouped by phase instead of one by one: a unit's phase
// is the number of device changes on the longest path of units reaching it
// (graph inputs: phase 0). coarsen() cannot join d's launches across a unit
// d lacks that a later launch there reads (a Concat on the CPU between two
// DSA stretches): the join would wait for it. A phase joins them anyway:
// every path between two units of d in one phase stays on d, through units
// of that phase (leaving d, or passing a pinned unit, would raise the
// phase), so joining them creates no cycle, and units of different
// connected groups of one phase have no path between them at all. The
// groups of a phase are spread over d's streams, largest first onto the
// least loaded; `per_stream` joins the groups of one phase on one stream
// into one launch (one overhead on a device whose on-chip memory holds the
// values between them), else each group is a launch. A launch holding a
// pinned node stays its own unit. Other devices' units stay one launch
// each, on stream_of_unit. Returned in a topological order taking the
// lowest phase first (then the lowest first node), so that each lane runs
// its phases in turn.
std::vector<LaunchAssignment> group_by_phase(const Graph& graph, const Platform& platform, const CostModel& cost,
                                             const UnitDag& dag, const std::vector<int>& device_of,
                                             const std::vector<int>& stream_of_unit, int d, bool per_stream) {
  const int n = static_cast<int>(dag.units.size());
  std::vector<bool> pinned(n);
  for (int u = 0; u < n; ++u) pinned[u] = holds_pinned(graph, platform, dag.units[u]);
  auto groupable = [&](int u) { return device_of[u] == d && !pinned[u]; };
  // A pinned unit on d counts as leaving d: a path through it must raise the
  // phase too, or a group on both sides of it would wait for itself.
  std::vector<int> phase(n, 0);
  for (int u = 0; u < n; ++u)
    for (int p : dag.preds[u]) {
      bool changes = device_of[p] != device_of[u] || groupable(p) != groupable(u);
      phase[u] = std::max(phase[u], phase[p] + (changes ? 1 : 0));
    }
  // Connected groups of d's units within a phase (union-find over the
  // edges between them).
  std::vector<int> parent(n);
  for (int u = 0; u < n; ++u) parent[u] = u;
  std::function<int(int)> root = [&](int u) { return parent[u] == u ? u : parent[u] = root(parent[u]); };
  for (int u = 0; u < n; ++u)
    if (groupable(u))
      for (int v : dag.succs[u])
        if (groupable(v) && phase[v] == phase[u]) parent[root(v)] = root(u);
  std::map<int, std::vector<int>> members;  // root -> units, ascending
  for (int u = 0; u < n; ++u)
    if (groupable(u)) members[root(u)].push_back(u);
  auto nodes_of = [&](const std::vector<int>& units) {
    std::vector<NodeId> nodes;
    for (int u : units) nodes.insert(nodes.end(), dag.units[u].begin(), dag.units[u].end());
    std::sort(nodes.begin(), nodes.end());
    return nodes;
  };
  // Per phase, its groups largest first onto the least loaded stream.
  const PlatformDevice& device = platform.devices[d];
  std::map<int, std::vector<std::pair<double, int>>> groups_of_phase;  // phase -> (us, root)
  for (const auto& [r, units] : members)
    groups_of_phase[phase[r]].emplace_back(cost.launch(graph, nodes_of(units), device).us, r);
  std::vector<std::vector<NodeId>> subgraphs;
  std::vector<int> stream_of;     // per subgraph
  std::vector<double> phase_of;   // per subgraph: the order's first key
  for (auto& [ph, groups] : groups_of_phase) {
    std::sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    std::vector<double> load(std::max(1, device.n_streams), 0);
    std::vector<std::vector<int>> on_stream(load.size());
    for (const auto& [us, r] : groups) {
      size_t s = std::min_element(load.begin(), load.end()) - load.begin();
      load[s] += us;
      if (per_stream) {
        on_stream[s].insert(on_stream[s].end(), members[r].begin(), members[r].end());
      } else {
        subgraphs.push_back(nodes_of(members[r]));
        stream_of.push_back(static_cast<int>(s));
        phase_of.push_back(ph);
      }
    }
    for (size_t s = 0; per_stream && s < on_stream.size(); ++s) {
      if (on_stream[s].empty()) continue;
      subgraphs.push_back(nodes_of(on_stream[s]));
      stream_of.push_back(static_cast<int>(s));
      phase_of.push_back(ph);
    }
  }
  std::vector<int> device_of_subgraph(subgraphs.size(), d);
  for (int u = 0; u < n; ++u)
    if (!groupable(u)) {
      subgraphs.push_back(dag.units[u]);
      stream_of.push_back(stream_of_unit[u]);
      phase_of.push_back(phase[u]);
      device_of_subgraph.push_back(device_of[u]);
    }
  std::vector<int> subgraph_of(graph.nodes.size(), -1);
  for (size_t g = 0; g < subgraphs.size(); ++g)
    for (NodeId id : subgraphs[g]) subgraph_of[id] = static_cast<int>(g);
  std::vector<LaunchAssignment> launches;
  for (int g : subgraph_topological_order(graph, subgraphs, subgraph_of, "auto", phase_of))
    launches.push_back({subgraphs[g], device_of_subgraph[g], stream_of[g],
                        fmt::format("{}'s fusion units joined by phase between the units it lacks", device.name)});
  return launches;
}

// Step 2 of the header: each candidate's launches coarsened; and for each
// device that does not run every node, the plan giving it every fusion unit
// it runs (the rest each on the device that runs it fastest alone),
// coarsened -- the plan that leaves an accelerator's launches as large as
// its on-chip memory allows, which no partitioning scheduler aims at; and
// that plan and each near-best candidate's placement with the units of each
// device that does not run every node grouped by phase.
void add_coarse_candidates(const Graph& graph, const Platform& platform, const CostModel& cost,
                           std::vector<Candidate>& candidates) {
  auto consider = [&](const std::string& label, const std::vector<LaunchAssignment>& launches) {
    try {
      Plan plan = build_plan(graph, platform, launches, "auto", /*stamp_identity=*/false);
      SimOptions options;
      options.trace = false;
      double makespan = simulate(plan, graph, platform, cost, options).makespan_us;
      candidates.push_back({label, makespan, launches});
    } catch (const Error&) {
      // e.g. no link between two memory spaces: not a candidate
    }
  };
  // Coarsening keeps each lane's work where it is: it turns a plan into a
  // somewhat faster one, not a poor one into the best; and it costs the
  // cost model on ever larger launches. Only the plans within
  // kCoarsenWithin of the best are coarsened.
  constexpr double kCoarsenWithin = 1.5;
  size_t n_given = candidates.size();
  double best_us = kInfinity;
  for (const Candidate& c : candidates) best_us = std::min(best_us, c.makespan_us);
  UnitDag dag = build_unit_dag(graph);
  const std::vector<std::vector<NodeId>>& units = dag.units;
  for (size_t c = 0; c < n_given; ++c) {
    if (candidates[c].makespan_us > kCoarsenWithin * best_us) continue;
    std::vector<LaunchAssignment> coarse = coarsen(graph, platform, cost, candidates[c].launches);
    if (coarse.size() < candidates[c].launches.size()) {
      for (LaunchAssignment& launch : coarse)
        launch.reason = fmt::format("{}'s launches coarsened: {}", candidates[c].name, launch.reason);
      consider(candidates[c].name + ", coarsened", coarse);
    }
    // The candidate's placement with each partly supported device's units
    // grouped by phase: where a scheduler chose better than "every unit it
    // runs" below, its choice keeps the joins too. Only for a candidate
    // placing whole fusion units (a partition may split one).
    std::vector<int> device_of_node(graph.nodes.size(), -1), stream_of_node(graph.nodes.size(), 0);
    for (const LaunchAssignment& launch : candidates[c].launches)
      for (NodeId id : launch.nodes) {
        device_of_node[id] = launch.device;
        stream_of_node[id] = launch.stream;
      }
    std::vector<int> device_of, stream_of;
    for (const std::vector<NodeId>& unit : units) {
      int dev = device_of_node[unit.front()];
      bool whole = std::all_of(unit.begin(), unit.end(), [&](NodeId id) { return device_of_node[id] == dev; });
      if (!whole) break;
      device_of.push_back(dev);
      stream_of.push_back(stream_of_node[unit.front()]);
    }
    if (device_of.size() != units.size()) continue;
    for (size_t d = 0; d < platform.devices.size(); ++d) {
      if (platform.devices[d].supports_all_unpinned(graph)) continue;
      if (std::count(device_of.begin(), device_of.end(), static_cast<int>(d)) < 2) continue;
      std::vector<LaunchAssignment> phased =
          group_by_phase(graph, platform, cost, dag, device_of, stream_of, static_cast<int>(d), /*per_stream=*/false);
      std::string label = fmt::format("{}, {} by phase and group", candidates[c].name, platform.devices[d].name);
      consider(label, phased);
      consider(label + ", coarsened", coarsen(graph, platform, cost, phased));
    }
  }
  for (size_t d = 0; d < platform.devices.size(); ++d) {
    const PlatformDevice& device = platform.devices[d];
    if (device.supports_all_unpinned(graph)) continue;
    std::vector<LaunchAssignment> launches;
    bool placed_all = true;
    for (const std::vector<NodeId>& unit : units) {
      LaunchAssignment launch;
      launch.nodes = unit;
      launch.device = -1;
      if (cost.launch(graph, unit, device).us < kInfinity) {
        launch.device = static_cast<int>(d);
      } else {
        double best_us = kInfinity;
        for (size_t e = 0; e < platform.devices.size(); ++e) {
          double us = cost.launch(graph, unit, platform.devices[e]).us;
          if (us < best_us) best_us = us, launch.device = static_cast<int>(e);
        }
      }
      if (launch.device < 0) {
        placed_all = false;
        break;
      }
      launch.reason = fmt::format("{} runs every fusion unit it can, the rest where fastest", device.name);
      launches.push_back(std::move(launch));
    }
    if (!placed_all) continue;
    consider(device.name + " first, coarsened", coarsen(graph, platform, cost, launches));
    std::vector<int> device_of;
    for (const LaunchAssignment& launch : launches) device_of.push_back(launch.device);
    for (bool per_stream : {true, false}) {
      std::vector<LaunchAssignment> phased =
          group_by_phase(graph, platform, cost, dag, device_of, std::vector<int>(units.size(), 0), static_cast<int>(d),
                         per_stream);
      std::string label = device.name + (per_stream ? " first, by phase and stream" : " first, by phase and group");
      consider(label, phased);
      consider(label + ", coarsened", coarsen(graph, platform, cost, phased));
    }
  }
}

// Step 2b of the header, on a platform with a union device (cpu:0-1 listed
// with cpu:0 and cpu:1, PlatformDevice::overlaps): wide launches. No
// scheduler of step 1 aims at a plan mixing the union device with the
// devices it is the union of, and the local search cannot reach one by single
// moves: one branch moved to a narrow device only runs alone, at one core's
// speed, because build_plan keeps launches on overlapping devices apart.
// This candidate moves whole fork-join regions at once: along the fusion
// units in topological order, a unit no value edge jumps over (a cut: the
// stem, a Concat join, a pool between blocks) runs on the union device;
// between two cuts the weakly connected groups of units (googlenet's
// inception branches) go to the narrow devices, largest first onto the least
// loaded (each group's time on that device), when the busiest narrow device
// then finishes before the union device would run the whole region.
void add_wide_candidates(const Graph& graph, const Platform& platform, const CostModel& cost,
                         std::vector<Candidate>& candidates) {
  if (!platform.has_overlaps()) return;
  UnitDag dag = build_unit_dag(graph);
  int n_units = static_cast<int>(dag.units.size());
  // Pass 1: the cuts. Units are topologically ordered; an edge u -> v with
  // v > u + 1 jumps over every unit between them.
  std::vector<int> jumped(n_units + 1, 0);
  for (int u = 0; u < n_units; ++u)
    for (int v : dag.succs[u])
      if (v > u + 1) ++jumped[u + 1], --jumped[v];
  std::vector<bool> cut(n_units);
  for (int u = 0, open = 0; u < n_units; ++u) cut[u] = (open += jumped[u]) == 0;
  auto unit_us = [&](int u, const PlatformDevice& device) { return cost.launch(graph, dag.units[u], device).us; };

  for (size_t w = 0; w < platform.devices.size(); ++w) {
    const PlatformDevice& wide = platform.devices[w];
    std::vector<int> narrow;
    for (const std::string& name : wide.overlaps) {
      int d = platform.find_device(name);
      if (platform.devices[d].cores.size() < wide.cores.size()) narrow.push_back(d);
    }
    if (narrow.size() < 2 || narrow.size() != wide.overlaps.size()) continue;  // not a union device
    // Per region split: its units' narrow devices, and whether the busiest
    // narrow device is predicted to finish before the union device would.
    struct Split {
      std::vector<std::pair<int, int>> unit_device;
      bool predicted_faster = false;
    };
    std::vector<Split> splits;
    for (int first = 0; first < n_units;) {
      if (cut[first]) {
        ++first;
        continue;
      }
      int end = first;
      while (end < n_units && !cut[end]) ++end;
      // Pass 2: the region's groups (union-find over its inner edges).
      std::vector<int> parent(end - first);
      for (int i = 0; i < end - first; ++i) parent[i] = i;
      std::function<int(int)> root = [&](int i) { return parent[i] == i ? i : parent[i] = root(parent[i]); };
      for (int u = first; u < end; ++u)
        for (int v : dag.succs[u])
          if (v < end) parent[root(u - first)] = root(v - first);
      std::map<int, std::vector<int>> groups;
      for (int u = first; u < end; ++u) groups[root(u - first)].push_back(u);
      first = end;
      if (groups.size() < 2) continue;
      // Pass 3: largest group first onto the narrow device it ends soonest on.
      std::vector<std::pair<double, std::vector<int>>> by_size;
      double wide_us = 0;
      for (auto& [r, members] : groups) {
        double us = 0;
        for (int u : members) us += unit_us(u, platform.devices[narrow[0]]), wide_us += unit_us(u, wide);
        by_size.emplace_back(us, members);
      }
      std::sort(by_size.begin(), by_size.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
      std::vector<double> load(narrow.size(), 0);
      Split split;
      for (const auto& [us, members] : by_size) {
        size_t best = 0;
        double best_end = kInfinity;
        for (size_t n = 0; n < narrow.size(); ++n) {
          double end_us = load[n];
          for (int u : members) end_us += unit_us(u, platform.devices[narrow[n]]);
          if (end_us < best_end) best_end = end_us, best = n;
        }
        load[best] = best_end;
        for (int u : members) split.unit_device.emplace_back(u, narrow[best]);
      }
      split.predicted_faster = *std::max_element(load.begin(), load.end()) < wide_us;
      splits.push_back(std::move(split));
    }
    // Two candidates: the regions predicted faster split, and every region
    // split (the prediction of one region alone misses the hand-overs and
    // the launches the narrow devices overlap across regions).
    auto consider = [&](const std::string& name, const std::vector<LaunchAssignment>& l) {
      try {
        Plan plan = build_plan(graph, platform, l, "auto", /*stamp_identity=*/false);
        SimOptions options;
        options.trace = false;
        candidates.push_back({name, simulate(plan, graph, platform, cost, options).makespan_us, l});
      } catch (const Error&) {
        // a pinned node on a device the region's split does not allow: not a candidate
      }
    };
    auto n_faster = std::count_if(splits.begin(), splits.end(), [](const Split& x) { return x.predicted_faster; });
    for (bool every : {false, true}) {
      if (every ? n_faster == static_cast<long>(splits.size()) : n_faster == 0) continue;  // nothing new to split
      std::vector<int> device_of(n_units, static_cast<int>(w));
      int n_regions = 0;
      for (const Split& split : splits) {
        if (!every && !split.predicted_faster) continue;
        ++n_regions;
        for (auto [u, d] : split.unit_device) device_of[u] = d;
      }
      std::vector<LaunchAssignment> launches;
      for (int u = 0; u < n_units; ++u)
        launches.push_back({dag.units[u], device_of[u], 0,
                            fmt::format("serial stretches on {}, the branches of {} regions on the devices it is "
                                        "the union of",
                                        wide.name, n_regions)});
      std::string label = fmt::format("wide on {}{}", wide.name, every ? ", every region" : "");
      consider(label, launches);
      consider(label + ", coarsened", coarsen(graph, platform, cost, launches));
    }
  }
}

// Whether auto keeps search `a`'s result over `b`'s: the faster, but a
// result on more devices must be kMinDeviceGain faster than one on fewer
// (run() holds each search to that; this holds the two to it), and no
// result slower than `ceiling_us` (the best candidate's) is kept.
bool prefer(const LocalSearch& a, const LocalSearch& b, double ceiling_us) {
  if (a.best_us() > ceiling_us) return false;
  if (a.n_devices_used() > b.n_devices_used()) return a.best_us() < b.best_us() * (1 - kMinDeviceGain);
  if (a.n_devices_used() < b.n_devices_used()) return !(b.best_us() < a.best_us() * (1 - kMinDeviceGain));
  return a.best_us() < b.best_us();
}

// A candidate's placement as text: what tells two candidates apart.
std::string placement_key(const std::vector<LaunchAssignment>& launches) {
  std::string key;
  for (const LaunchAssignment& a : launches)
    key += fmt::format("{}.{}:{};", a.device, a.stream, fmt::join(a.nodes, ","));
  return key;
}

bool on_several_devices(const std::vector<LaunchAssignment>& launches) {
  return std::any_of(launches.begin(), launches.end(),
                     [&](const LaunchAssignment& a) { return a.device != launches.front().device; });
}

}  // namespace

std::vector<Plan> auto_plans(const Graph& graph, const Platform& platform, const CostModel& given_cost,
                             const ScheduleOptions& options, size_t n_plans) {
  // Every candidate and every step of the search asks about the same
  // launches again.
  std::unique_ptr<CostModel> memo = make_memoizing_cost_model(given_cost);
  const CostModel& cost = *memo;
  for (const auto& [key, value] : options.params)
    if (!kKnownParams.count(key))
      throw Error(ErrorCode::kUsage, fmt::format("scheduler 'auto': unknown parameter '{}' (known: budget_ms, "
                                                 "coarsen, max_evals, schedulers)",
                                                 key));
  int max_evals = int_param(options, "max_evals", 4000, 0);
  int budget_ms = int_param(options, "budget_ms", 700, 0);
  bool coarse_candidates = true;
  if (auto it = options.params.find("coarsen"); it != options.params.end()) {
    if (it->second != "on" && it->second != "off")
      throw Error(ErrorCode::kUsage,
                  fmt::format("scheduler 'auto': parameter coarsen='{}': expected on or off", it->second));
    coarse_candidates = it->second == "on";
  }
  std::vector<std::string> names = candidate_schedulers(options);

  std::vector<Candidate> candidates;
  std::vector<std::string> failures;
  auto consider = [&](const std::string& label, const std::string& scheduler, const ScheduleOptions& o) {
    try {
      Plan plan = make_scheduler(scheduler)->schedule(graph, platform, cost, o);
      double makespan = simulate(plan, graph, platform, cost).makespan_us;
      candidates.push_back({label, makespan, plan_launches(plan, graph, platform)});
    } catch (const Error& e) {
      failures.push_back(fmt::format("{}: {}", label, e.what()));
    }
  };
  for (const PlatformDevice& device : platform.devices) {
    if (!device.supports_all_unpinned(graph)) continue;
    ScheduleOptions on_device;
    on_device.params["device"] = device.name;
    consider("sequential on " + device.name, "sequential", on_device);
  }
  for (const std::string& name : names) {
    if (name == "sequential") continue;  // done per device above
    ScheduleOptions o;
    o.seed = options.seed;
    consider(name, name, o);
  }
  if (candidates.empty())
    throw Error(ErrorCode::kUnsupported, fmt::format("scheduler 'auto': no scheduler made a plan ({})",
                                                     failures.empty() ? "none ran" : failures.front()));
  // The coarse candidates count against the search's wall-clock budget:
  // they are the first steps of the same search.
  auto search_start = std::chrono::steady_clock::now();
  size_t n_plain = candidates.size();
  if (coarse_candidates) add_coarse_candidates(graph, platform, cost, candidates);
  add_wide_candidates(graph, platform, cost, candidates);
  auto elapsed_ms = [&] {
    return static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - search_start)
            .count());
  };
  auto faster = [](const Candidate& a, const Candidate& b) { return a.makespan_us < b.makespan_us; };
  auto best_plain = std::min_element(candidates.begin(), candidates.begin() + static_cast<long>(n_plain), faster);
  auto best_coarse = std::min_element(candidates.begin() + static_cast<long>(n_plain), candidates.end(), faster);

  // The search starts from the best plan, and then from the best of the
  // other kind (plain or coarse), each with half the budget (the second
  // with what the first left): a coarse start is faster at first but can
  // lead to a poorer local optimum than the plain one (on small random
  // DAGs, 4.6% above optimal instead of at it), and the reverse holds on an
  // accelerator with on-chip memory. The better result wins (prefer()).
  std::vector<const Candidate*> starts{&*best_plain};
  if (best_coarse != candidates.end()) {
    if (faster(*best_coarse, *best_plain)) starts.insert(starts.begin(), &*best_coarse);
    else starts.push_back(&*best_coarse);
  }
  std::unique_ptr<LocalSearch> search;
  const Candidate* best = nullptr;
  int evals_used = 0;
  std::string fewer_devices_kept;
  for (size_t s = 0; s < starts.size(); ++s) {
    size_t left = starts.size() - s;
    int evals = (max_evals - evals_used) / static_cast<int>(left);
    int ms = std::max(0, budget_ms - elapsed_ms()) / static_cast<int>(left);
    auto tried = std::make_unique<LocalSearch>(graph, platform, cost, starts[s]->launches, evals, ms);
    tried->run(kMinDeviceGain);
    evals_used += tried->evals();
    bool keep = !search || prefer(*tried, *search, starts.front()->makespan_us);
    if (search) {
      const LocalSearch& kept = keep ? *tried : *search;
      const LocalSearch& other = keep ? *search : *tried;
      if (kept.best_us() > other.best_us())
        fewer_devices_kept = fmt::format(
            "auto: kept the search from {}'s plan ({:.3f} ms on {} devices) over the one from {}'s ({:.3f} ms on "
            "{}): less than {:.0f}% faster on more devices",
            (keep ? starts[s] : best)->name, kept.best_us() / 1e3, kept.n_devices_used(),
            (keep ? best : starts[s])->name, other.best_us() / 1e3, other.n_devices_used(), 100 * kMinDeviceGain);
    }
    if (keep) search = std::move(tried), best = starts[s];
  }
  std::vector<LaunchAssignment> launches = search->result();
  std::vector<std::string> changes = search->changes();
  for (size_t i = 0; i < launches.size(); ++i)
    launches[i].reason = !changes[i].empty() ? changes[i]
                                             : fmt::format("auto: as {} placed it ({:.3f} ms, the best of {} plans): {}",
                                                           best->name, best->makespan_us / 1e3, candidates.size(),
                                                           launches[i].reason);
  Plan plan = build_plan(graph, platform, launches, "auto");
  plan.predicted_ms = search->best_us() / 1e3;

  std::vector<std::string> tried;
  for (const Candidate& c : candidates) tried.push_back(fmt::format("{} {:.3f} ms", c.name, c.makespan_us / 1e3));
  plan.notes.push_back(fmt::format("auto: simulated {}", fmt::join(tried, ", ")));
  for (const std::string& f : failures) plan.notes.push_back("auto: no plan from " + f);
  plan.notes.push_back(fmt::format("auto: local search from {}'s plan: {} of {} changes kept, {:.3f} -> {:.3f} ms{}",
                                   best->name, search->accepted(), search->evals() - 1, search->start_us() / 1e3,
                                   search->best_us() / 1e3, search->budget_reached() ? " (budget reached)" : ""));
  plan.notes.insert(plan.notes.end(), search->notes().begin(), search->notes().end());
  if (!fewer_devices_kept.empty()) plan.notes.push_back(fewer_devices_kept);

  // The runners-up: the fastest other candidates on several devices.
  std::vector<Plan> plans{std::move(plan)};
  std::set<std::string> seen{placement_key(launches)};
  std::vector<const Candidate*> order;
  for (const Candidate& c : candidates) order.push_back(&c);
  std::stable_sort(order.begin(), order.end(), [&](const Candidate* a, const Candidate* b) { return faster(*a, *b); });
  for (const Candidate* c : order) {
    if (plans.size() >= n_plans) break;
    if (!on_several_devices(c->launches) || !seen.insert(placement_key(c->launches)).second) continue;
    std::vector<LaunchAssignment> runner_up = c->launches;
    for (LaunchAssignment& a : runner_up)
      a.reason =
          fmt::format("auto: runner-up, as {} placed it ({:.3f} ms): {}", c->name, c->makespan_us / 1e3, a.reason);
    Plan alternative = build_plan(graph, platform, runner_up, "auto");
    alternative.predicted_ms = c->makespan_us / 1e3;
    alternative.notes.push_back(
        fmt::format("auto: the runner-up {} ({:.3f} ms simulated)", c->name, c->makespan_us / 1e3));
    plans.push_back(std::move(alternative));
  }
  return plans;
}

namespace {

class AutoScheduler : public Scheduler {
 public:
  Plan schedule(const Graph& graph, const Platform& platform, const CostModel& cost,
                const ScheduleOptions& options) const override {
    return std::move(auto_plans(graph, platform, cost, options, 1).front());
  }
};

}  // namespace

HETSCHED_SCHEDULER("auto",
                   "ours: every scheduler's plan simulated, the best improved by local search (move, branch move, "
                   "re-stream, reorder, swap); never predicted slower than any of them or than the best single device",
                   AutoScheduler);

}  // namespace hetsched
