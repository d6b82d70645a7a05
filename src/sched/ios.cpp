// "ios": IOS, the Inter-Operator Scheduler (Ding, Zhu, Jia, Pekhimenko &
// Han, "IOS: Inter-Operator Scheduler for CNN Acceleration", MLSys 2021), on
// one device with several streams.
//
// The schedule is a sequence of stages (see sched/ios.h): a concurrent stage
// runs groups of units side by side, one stream each; a merge stage runs
// same-input convolutions as one launch (IOS builds one wider convolution;
// here they stay separate kernels reading the shared input once). IOS finds the sequence with the
// least summed stage latency by dynamic programming over the graph's
// "endings", pruned to at most r units per group and s groups per stage. IOS
// measures each stage on the GPU; here a stage's latency comes from the cost
// model through the simulator's fluid interference model (streams of one
// device share its compute and bandwidth), computed directly rather than by
// simulating a plan per stage, and memoised per stage. Like IOS, which
// splits a network into blocks, the search runs block by block between cut
// units — which loses nothing (ios.h says why) and is what makes inception_v3
// tractable; a block whose endings exceed max_states is scheduled greedily
// instead, and the notes say so.
//
// The plan puts each group on its own stream of the device, stages in order;
// build_plan synchronises on data only, so a group may start before the
// previous stage has wholly finished where its inputs allow it (IOS's runtime
// waits for the whole stage). predicted_ms is the search's optimum.
//
// Parameters: device=NAME (default: the device with the most streams among
// those running every op, the first on ties), r (default 3), s (default 8),
// max_states (default 500000).
#include "sched/ios.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <numeric>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "graph/conv_merge.h"
#include "hetsched/error.h"
#include "plan/plan_builder.h"
#include "sched/stream_device.h"

namespace hetsched {

namespace ios {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
const char* const kKnownParams = "device, r, s, max_states";

int64_t positive_integer(const std::string& key, const std::string& text, int64_t most, const char* meaning) {
  const char* begin = text.c_str();
  char* end = nullptr;
  errno = 0;
  long long value = std::strtoll(begin, &end, 10);
  bool whole = !text.empty() && end == begin + text.size() && errno == 0;
  if (!whole || value < 1 || value > most)
    throw Error(ErrorCode::kUsage, fmt::format("scheduler 'ios': parameter {}='{}': expected an integer from 1 to {} "
                                               "({})",
                                               key, text, most, meaning));
  return value;
}

std::vector<NodeId> merged_nodes(const Problem& problem, const std::vector<int>& units) {
  std::vector<NodeId> nodes;
  for (int u : units) nodes.insert(nodes.end(), problem.units[u].begin(), problem.units[u].end());
  std::sort(nodes.begin(), nodes.end());  // node ids are topological
  return nodes;
}

// Union-find over unit indices whose unions can be undone, for the
// components of a stage while its units are enumerated.
class Components {
 public:
  explicit Components(size_t n) : parent_(n), size_(n, 0) {}
  int find(int x) const {
    while (parent_[x] != x) x = parent_[x];
    return x;
  }
  void add(int x) {
    parent_[x] = x;
    size_[x] = 1;
    ++count_;
    undo_.push_back({x, -1});
  }
  void unite(int a, int b) {
    a = find(a);
    b = find(b);
    if (a == b) return;
    if (size_[a] < size_[b]) std::swap(a, b);
    parent_[b] = a;
    size_[a] += size_[b];
    --count_;
    undo_.push_back({b, a});
  }
  int size_of(int x) const { return size_[find(x)]; }
  int count() const { return count_; }
  size_t mark() const { return undo_.size(); }
  void rollback(size_t mark) {
    while (undo_.size() > mark) {
      auto [child, root] = undo_.back();
      undo_.pop_back();
      if (root < 0) {
        --count_;  // undo add(child)
      } else {
        parent_[child] = child;
        size_[root] -= size_[child];
        ++count_;
      }
    }
  }

 private:
  std::vector<int> parent_, size_;
  int count_ = 0;
  std::vector<std::pair<int, int>> undo_;  // (child, root) of a union; (x, -1) of an add
};

// Sets of a block's units as bit strings: std::string hashes out of the box
// and keeps blocks of up to 120 units without a heap allocation.
using Bits = std::string;
Bits empty_bits(int n) { return Bits(static_cast<size_t>((n + 7) / 8), '\0'); }
bool test(const Bits& b, int i) { return (static_cast<unsigned char>(b[i >> 3]) >> (i & 7)) & 1; }
void set_bit(Bits& b, int i) { b[i >> 3] = static_cast<char>(static_cast<unsigned char>(b[i >> 3]) | (1u << (i & 7))); }
void reset_bit(Bits& b, int i) {
  b[i >> 3] = static_cast<char>(static_cast<unsigned char>(b[i >> 3]) & ~(1u << (i & 7)));
}
bool none(const Bits& b) {
  return std::all_of(b.begin(), b.end(), [](char c) { return c == 0; });
}

// The dynamic program on one block: units [begin, end) of the problem, all
// of which run after everything before `begin` and before everything from
// `end` on. Counts into `result`.
class BlockSearch {
 public:
  BlockSearch(const Problem& problem, int begin, int end, SearchResult& result)
      : problem_(problem), begin_(begin), n_(end - begin), result_(result), components_(end - begin) {
    preds_.resize(n_);
    succs_.resize(n_);
    for (int i = 0; i < n_; ++i) {
      for (int p : problem.preds[begin + i])
        if (p >= begin && p < end) preds_[i].push_back(p - begin);
      for (int s : problem.succs[begin + i])
        if (s >= begin && s < end) succs_[i].push_back(s - begin);
    }
    long long most = static_cast<long long>(problem.options.r) * problem.options.s;
    max_stage_units_ = static_cast<int>(std::min<long long>(most, n_));
  }

  // The optimal stages of the block, in order; false when the block has more
  // endings than max_states allows.
  bool run(std::vector<Stage>* stages) {
    Bits all = empty_bits(n_);
    for (int i = 0; i < n_; ++i) set_bit(all, i);
    solve(all);
    if (over_budget_) return false;
    std::vector<Stage> reversed;
    for (Bits left = all; !none(left);) {
      const Bits& last = memo_.at(left).last;
      reversed.push_back(best_stage(problem_, global_units(last)));
      for (int i = 0; i < n_; ++i)
        if (test(last, i)) reset_bit(left, i);
    }
    stages->insert(stages->end(), reversed.rbegin(), reversed.rend());
    return true;
  }

  // Forward greedy stages for a block too large to search: each time, among
  // the units whose predecessors have run, either the k with the longest
  // remaining path (k up to max_groups, one group each) or a merge of units
  // with one merge key, whichever saves most over running them one by one.
  void greedy(std::vector<Stage>* stages) {
    std::vector<double> rank(n_, 0);
    for (int i = n_ - 1; i >= 0; --i) {
      double longest = 0;
      for (int s : succs_[i]) longest = std::max(longest, rank[s]);
      rank[i] = problem_.alone_us[begin_ + i] + longest;
    }
    std::vector<bool> done(n_, false);
    for (int left = n_; left > 0;) {
      std::vector<int> ready;
      for (int i = 0; i < n_; ++i)
        if (!done[i] && std::all_of(preds_[i].begin(), preds_[i].end(), [&](int p) { return done[p]; }))
          ready.push_back(i);
      std::stable_sort(ready.begin(), ready.end(), [&](int a, int b) { return rank[a] > rank[b]; });
      std::vector<std::vector<int>> candidates;
      for (size_t k = 1; k <= ready.size() && static_cast<int>(k) <= problem_.max_groups; ++k)
        candidates.emplace_back(ready.begin(), ready.begin() + static_cast<std::ptrdiff_t>(k));
      std::map<std::string, std::vector<int>> by_key;
      for (int i : ready)
        if (!problem_.merge_key[begin_ + i].empty()) {
          auto& same = by_key[problem_.merge_key[begin_ + i]];
          if (static_cast<int>(same.size()) < problem_.options.s) same.push_back(i);
        }
      for (auto& [key, same] : by_key)
        if (same.size() >= 2) candidates.push_back(same);
      Stage chosen;
      double chosen_saving = -kInfinity;
      std::vector<int> chosen_local;
      for (const auto& local : candidates) {
        std::vector<int> units = to_global(local);
        Stage stage = best_stage(problem_, units);
        ++result_.n_candidates;
        ++result_.n_evaluated;
        if (!std::isfinite(stage.us)) continue;
        double alone = 0;
        for (int u : units) alone += problem_.alone_us[u];
        if (alone - stage.us > chosen_saving) {
          chosen_saving = alone - stage.us;
          chosen = std::move(stage);
          chosen_local = local;
        }
      }
      for (int i : chosen_local) done[i] = true;
      left -= static_cast<int>(chosen_local.size());
      stages->push_back(std::move(chosen));
    }
  }

 private:
  struct Entry {
    double cost = kInfinity;
    Bits last;  // the best last stage of this state
  };

  std::vector<int> to_global(const std::vector<int>& local) const {
    std::vector<int> units;
    for (int i : local) units.push_back(begin_ + i);
    return units;
  }

  std::vector<int> global_units(const Bits& set) const {
    std::vector<int> units;
    for (int i = 0; i < n_; ++i)
      if (test(set, i)) units.push_back(begin_ + i);
    return units;
  }

  bool spend() {
    if (++spent_ > problem_.options.max_states) over_budget_ = true;
    return !over_budget_;
  }

  // cost[S]: the least summed latency of stages running exactly the units of
  // S, a set closed under predecessors within the block.
  double solve(const Bits& state) {
    if (none(state)) return 0;
    if (auto it = memo_.find(state); it != memo_.end()) return it->second.cost;
    if (!spend()) return kInfinity;
    ++result_.n_states;
    std::vector<Bits> endings;
    Bits ending = empty_bits(n_);
    enumerate_endings(state, n_, 0, ending, &endings);
    if (over_budget_) return kInfinity;
    Entry best;
    for (const Bits& last : endings) {
      double stage = stage_us(last);
      if (!std::isfinite(stage)) continue;
      Bits before = state;
      for (int i = 0; i < n_; ++i)
        if (test(last, i)) reset_bit(before, i);
      double total = solve(before);
      if (over_budget_) return kInfinity;
      total += stage;
      if (total < best.cost) {
        best.cost = total;
        best.last = last;
      }
    }
    double cost = best.cost;
    memo_.emplace(state, std::move(best));
    return cost;
  }

  // Every non-empty ending of `state` within the pruning limits, each built
  // once: units are added in decreasing index order, a unit only once its
  // successors in `state` are in (so the set stays closed under successors
  // within the state at every step). A unit joins its successors'
  // components, and components only grow, so one larger than r ends that
  // branch; more than s components may still join up through a common
  // predecessor added later, so such a set is skipped but extended.
  void enumerate_endings(const Bits& state, int below, int size, Bits& ending, std::vector<Bits>* out) {
    if (size >= max_stage_units_) return;
    for (int i = below - 1; i >= 0 && !over_budget_; --i) {
      if (!test(state, i) || test(ending, i)) continue;
      bool closed = std::all_of(succs_[i].begin(), succs_[i].end(),
                                [&](int s) { return !test(state, s) || test(ending, s); });
      if (!closed) continue;
      size_t mark = components_.mark();
      components_.add(i);
      for (int s : succs_[i])
        if (test(state, s)) components_.unite(i, s);
      if (components_.size_of(i) <= problem_.options.r) {
        set_bit(ending, i);
        ++result_.n_candidates;
        if (spend()) {
          if (components_.count() <= problem_.options.s) out->push_back(ending);
          enumerate_endings(state, i, size + 1, ending, out);
        }
        reset_bit(ending, i);
      }
      components_.rollback(mark);
    }
  }

  double stage_us(const Bits& stage) {
    if (auto it = stage_memo_.find(stage); it != stage_memo_.end()) return it->second;
    ++result_.n_evaluated;
    double us = best_stage(problem_, global_units(stage)).us;
    stage_memo_.emplace(stage, us);
    return us;
  }

  const Problem& problem_;
  int begin_ = 0;
  int n_ = 0;
  SearchResult& result_;
  std::vector<std::vector<int>> preds_, succs_;  // within the block, local indices
  int max_stage_units_ = 0;
  Components components_;
  std::unordered_map<Bits, Entry> memo_;
  std::unordered_map<Bits, double> stage_memo_;
  int64_t spent_ = 0;
  bool over_budget_ = false;
};

}  // namespace

Options parse_options(const ScheduleOptions& options) {
  Options parsed;
  for (const auto& [key, value] : options.params) {
    if (key == "device")
      continue;  // read by pick_stream_device
    else if (key == "r")
      parsed.r = static_cast<int>(positive_integer(key, value, 1000, "the most units in one group"));
    else if (key == "s")
      parsed.s = static_cast<int>(positive_integer(key, value, 1000, "the most groups in one stage"));
    else if (key == "max_states")
      parsed.max_states = positive_integer(key, value, std::numeric_limits<int64_t>::max(),
                                           "the most endings searched in one block");
    else
      throw Error(ErrorCode::kUsage,
                  fmt::format("scheduler 'ios': unknown parameter '{}' (known: {})", key, kKnownParams));
  }
  return parsed;
}

Problem make_problem(const Graph& graph, const Platform& platform, int device, const CostModel& cost,
                     const Options& options) {
  Problem problem;
  problem.graph = &graph;
  problem.platform = &platform;
  problem.device = device;
  problem.cost = &cost;
  problem.options = options;
  const PlatformDevice& dev = platform.devices[device];
  problem.max_groups = std::max(1, std::min(options.s, dev.n_streams));

  problem.units = fusion_units(graph);
  const size_t n = problem.units.size();
  std::vector<int> unit_of(graph.nodes.size(), -1);
  for (size_t u = 0; u < n; ++u)
    for (NodeId id : problem.units[u]) unit_of[id] = static_cast<int>(u);
  problem.preds.resize(n);
  problem.succs.resize(n);
  for (size_t u = 0; u < n; ++u)
    for (NodeId id : problem.units[u])
      for (ValueId v : graph.nodes[id].inputs) {
        if (v == kNoValue || graph.values[v].producer == kNoNode) continue;
        int p = unit_of[graph.values[v].producer];
        if (p != static_cast<int>(u)) {
          problem.preds[u].push_back(p);
          problem.succs[p].push_back(static_cast<int>(u));
        }
      }
  for (auto* lists : {&problem.preds, &problem.succs})
    for (auto& list : *lists) {
      std::sort(list.begin(), list.end());
      list.erase(std::unique(list.begin(), list.end()), list.end());
    }

  for (size_t u = 0; u < n; ++u) {
    const auto& nodes = problem.units[u];
    // A unit pinned to another device (--pin) runs there, costed there, and
    // is never merged with units of this one.
    const PlatformDevice* runs = &dev;
    for (NodeId id : nodes) {
      auto pin = platform.pinned.find(graph.nodes[id].name);
      if (pin != platform.pinned.end() && pin->second.device != dev.name)
        runs = &platform.devices[platform.find_device(pin->second.device)];
    }
    Estimate estimate = cost.launch(graph, nodes, *runs);
    if (!std::isfinite(estimate.us))
      throw Error(ErrorCode::kUnsupported, fmt::format("scheduler 'ios': {} has no finite cost on {}",
                                                       graph.nodes[nodes[0]].label(), runs->name));
    problem.alone_us.push_back(estimate.us);
    problem.demand.push_back(cost.demand(graph, nodes, *runs, estimate.us));
    problem.merge_key.push_back(runs == &dev ? conv_merge_key(graph, nodes) : "");
  }

  // As the simulator does: the device's bandwidth over the resource's, whose
  // capacity, when the platform does not give it, is its fastest member's.
  if (!dev.shared_resource.empty()) {
    const SharedResource* resource = platform.resource(dev.shared_resource);
    double capacity = resource && resource->bandwidth_gbps > 0 ? resource->bandwidth_gbps : 0;
    if (capacity <= 0)
      for (const PlatformDevice& other : platform.devices)
        if (other.shared_resource == dev.shared_resource) capacity = std::max(capacity, other.bandwidth_gbps);
    if (capacity > 0) problem.resource_share = dev.bandwidth_gbps / capacity;
  }
  return problem;
}

double concurrent_us(const Problem& problem, const std::vector<std::vector<int>>& groups) {
  const size_t n = groups.size();
  std::vector<size_t> next(n, 0);
  std::vector<double> remaining(n, 0);  // of the running launch, in microseconds alone
  // A launch taking no time ends as it starts and loads nothing.
  auto start = [&](size_t g) {
    for (; next[g] < groups[g].size(); ++next[g]) {
      remaining[g] = problem.alone_us[groups[g][next[g]]];
      if (remaining[g] > 0) return;
    }
  };
  for (size_t g = 0; g < n; ++g) start(g);
  double now = 0;
  while (true) {
    double compute = 0, memory = 0;
    size_t first = n;
    for (size_t g = 0; g < n; ++g) {
      if (next[g] >= groups[g].size()) continue;
      const ResourceDemand& demand = problem.demand[groups[g][next[g]]];
      compute += demand.compute;
      memory += demand.memory;
      if (first == n || remaining[g] < remaining[first]) first = g;
    }
    if (first == n) break;
    // One device: every running launch sees the same oversubscription.
    double slowdown = std::max({1.0, compute, memory, memory * problem.resource_share});
    double elapsed = remaining[first] * slowdown;
    now += elapsed;
    for (size_t g = 0; g < n; ++g) {
      if (next[g] >= groups[g].size()) continue;
      remaining[g] = g == first ? 0 : remaining[g] - elapsed / slowdown;
      if (remaining[g] <= 1e-9 * (1.0 + problem.alone_us[groups[g][next[g]]])) {
        ++next[g];
        start(g);
      }
    }
  }
  return now;
}

double merged_us(const Problem& problem, const std::vector<int>& units) {
  return problem.cost->launch(*problem.graph, merged_nodes(problem, units), problem.platform_device()).us;
}

Stage best_stage(const Problem& problem, std::vector<int> units) {
  std::sort(units.begin(), units.end());
  units.erase(std::unique(units.begin(), units.end()), units.end());
  const size_t n = units.size();
  // Components of the stage's own subgraph.
  std::vector<int> root(n);
  std::iota(root.begin(), root.end(), 0);
  auto find = [&](int i) {
    while (root[i] != i) i = root[i] = root[root[i]];
    return i;
  };
  for (size_t i = 0; i < n; ++i)
    for (int s : problem.succs[units[i]]) {
      auto at = std::lower_bound(units.begin(), units.end(), s);
      if (at != units.end() && *at == s) root[find(static_cast<int>(i))] = find(static_cast<int>(at - units.begin()));
    }
  // Each group lists its units in topological order; groups come by first unit.
  std::vector<std::vector<int>> groups;
  std::vector<int> group_of_root(n, -1);
  for (size_t i = 0; i < n; ++i) {
    int r = find(static_cast<int>(i));
    if (group_of_root[r] < 0) {
      group_of_root[r] = static_cast<int>(groups.size());
      groups.emplace_back();
    }
    groups[group_of_root[r]].push_back(units[i]);
  }

  Stage stage;
  stage.us = kInfinity;
  bool concurrent_allowed = static_cast<int>(groups.size()) <= problem.max_groups &&
                            std::all_of(groups.begin(), groups.end(), [&](const std::vector<int>& g) {
                              return static_cast<int>(g.size()) <= problem.options.r;
                            });
  if (concurrent_allowed) {
    stage.groups = groups;
    stage.us = concurrent_us(problem, groups);
  }
  bool merge_allowed = n >= 2 && static_cast<int>(n) <= problem.options.s && groups.size() == n &&
                       !problem.merge_key[units[0]].empty() &&
                       std::all_of(units.begin(), units.end(),
                                   [&](int u) { return problem.merge_key[u] == problem.merge_key[units[0]]; });
  if (merge_allowed) {
    double merged = merged_us(problem, units);
    // Merging must win outright: on a tie the units keep their own kernels.
    if (merged < stage.us) {
      stage.separate_us = stage.us;
      stage.kind = StageKind::kMerge;
      stage.groups = {units};
      stage.us = merged;
    }
  }
  return stage;
}

std::vector<int> cut_units(const Problem& problem) {
  const size_t n = problem.units.size();
  const size_t words = (n + 63) / 64;
  std::vector<uint64_t> below(n * words, 0), above(n * words, 0);  // descendants, ancestors
  auto set = [&](std::vector<uint64_t>& rows, size_t row, size_t bit) {
    rows[row * words + bit / 64] |= uint64_t{1} << (bit % 64);
  };
  auto merge = [&](std::vector<uint64_t>& rows, size_t row, size_t from) {
    for (size_t w = 0; w < words; ++w) rows[row * words + w] |= rows[from * words + w];
  };
  for (size_t u = n; u-- > 0;)
    for (int s : problem.succs[u]) {
      set(below, u, s);
      merge(below, u, s);
    }
  for (size_t u = 0; u < n; ++u)
    for (int p : problem.preds[u]) {
      set(above, u, p);
      merge(above, u, p);
    }
  std::vector<int> cuts;
  for (size_t u = 0; u < n; ++u) {
    size_t related = 0;
    for (size_t w = 0; w < words; ++w)
      related += static_cast<size_t>(__builtin_popcountll(below[u * words + w]) +
                                     __builtin_popcountll(above[u * words + w]));
    if (related + 1 == n) cuts.push_back(static_cast<int>(u));
  }
  return cuts;
}

SearchResult search(const Problem& problem) {
  auto started = std::chrono::steady_clock::now();
  SearchResult result;
  const int n = static_cast<int>(problem.units.size());
  for (double us : problem.alone_us) result.one_stream_us += us;
  std::vector<int> cuts = cut_units(problem);
  result.n_cut_units = static_cast<int>(cuts.size());
  cuts.push_back(n);  // sentinel: the end of the last block

  auto add = [&](std::vector<Stage> stages, bool greedy) {
    for (Stage& stage : stages) {
      result.total_us += stage.us;
      result.stages.push_back(std::move(stage));
      result.greedy_stage.push_back(greedy);
    }
  };
  int begin = 0;
  for (int cut : cuts) {
    // Units [begin, cut) lie between two cut units: every one of them runs
    // after the previous cut and before `cut` (ios.h).
    if (cut - begin == 1) {
      add({best_stage(problem, {begin})}, false);
    } else if (cut - begin > 1) {
      ++result.n_blocks;
      BlockSearch block(problem, begin, cut, result);
      std::vector<Stage> stages;
      if (block.run(&stages)) {
        add(std::move(stages), false);
      } else {
        ++result.n_greedy_blocks;
        result.greedy_blocks.push_back(fmt::format("units {}..{} ({} units)", begin, cut - 1, cut - begin));
        block.greedy(&stages);
        add(std::move(stages), true);
      }
    }
    if (cut < n) add({best_stage(problem, {cut})}, false);
    begin = cut + 1;
  }
  result.search_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  return result;
}

}  // namespace ios

namespace {

std::string ms(double us) { return fmt::format("{:.3f} ms", us / 1000.0); }

// A group continues the stream of the predecessor its first unit waits for
// last (no event needed on that edge) when no other group of the stage has
// taken it; otherwise the lowest free stream.
int pick_stream(const ios::Problem& problem, const std::vector<int>& group, const std::vector<int>& stream_of_unit,
                const std::vector<bool>& taken) {
  const auto& preds = problem.preds[group.front()];
  for (auto p = preds.rbegin(); p != preds.rend(); ++p)
    if (stream_of_unit[*p] >= 0 && !taken[stream_of_unit[*p]]) return stream_of_unit[*p];
  for (size_t s = 0; s < taken.size(); ++s)
    if (!taken[s]) return static_cast<int>(s);
  throw Error(ErrorCode::kRuntime, "scheduler 'ios': a stage has more groups than the device has streams");
}

class IosScheduler : public Scheduler {
 public:
  Plan schedule(const Graph& graph, const Platform& platform, const CostModel& cost,
                const ScheduleOptions& options) const override {
    ios::Options parsed = ios::parse_options(options);
    int device = pick_stream_device(graph, platform, options, "ios");
    const PlatformDevice& dev = platform.devices[device];
    ios::Problem problem = ios::make_problem(graph, platform, device, cost, parsed);
    ios::SearchResult found = ios::search(problem);

    std::vector<std::string> notes;
    notes.push_back(fmt::format("search: {:.1f} ms; {} blocks between {} cut units, {} states and {} candidate "
                                "stages examined, {} stages evaluated",
                                found.search_ms, found.n_blocks, found.n_cut_units, found.n_states,
                                found.n_candidates, found.n_evaluated));
    if (found.n_greedy_blocks > 0)
      notes.push_back(fmt::format("{} block(s) with more than max_states={} endings scheduled greedily (each stage the "
                                  "ready units with the longest remaining path, or a merge, whichever saves most): {}",
                                  found.n_greedy_blocks, parsed.max_states, fmt::join(found.greedy_blocks, "; ")));

    std::vector<LaunchAssignment> launches;
    // The search never loses to one stream (stages of one unit are always
    // allowed) unless a greedy block does; a tie keeps the simpler plan.
    if (!(found.total_us < found.one_stream_us)) {
      notes.insert(notes.begin(),
                   fmt::format("the stage search found nothing faster than one stream of {} ({} vs {}): every unit "
                               "in topological order on stream 0",
                               dev.name, ms(found.total_us), ms(found.one_stream_us)));
      std::string reason = fmt::format("ios: one stream of {} (no stage schedule beats its {})", dev.name,
                                       ms(found.one_stream_us));
      for (const auto& unit : problem.units) launches.push_back(LaunchAssignment{unit, device, 0, reason});
      move_pinned_launches(launches, graph, platform);
      Plan plan = build_plan(graph, platform, launches, "ios");
      plan.predicted_ms = found.one_stream_us / 1000.0;
      plan.notes = std::move(notes);
      return plan;
    }

    int n_merges = 0, n_merged_units = 0;
    std::vector<int> stream_of_unit(problem.units.size(), -1);
    const size_t n_stages = found.stages.size();
    for (size_t k = 0; k < n_stages; ++k) {
      const ios::Stage& stage = found.stages[k];
      std::vector<bool> taken(std::max(1, dev.n_streams), false);
      std::string where = fmt::format("ios: stage {} of {}{}", k + 1, n_stages, found.greedy_stage[k] ? " (greedy)" : "");
      for (size_t g = 0; g < stage.groups.size(); ++g) {
        const std::vector<int>& group = stage.groups[g];
        int stream = pick_stream(problem, group, stream_of_unit, taken);
        taken[stream] = true;
        for (int u : group) stream_of_unit[u] = stream;
        if (stage.kind == ios::StageKind::kMerge) {
          ++n_merges;
          n_merged_units += static_cast<int>(group.size());
          std::string unmerged = std::isfinite(stage.separate_us) ? fmt::format("; {} as separate launches",
                                                                                ms(stage.separate_us))
                                                                  : "";
          std::string reason = fmt::format("{}, {} Conv units merged into one launch on stream {} (stage {}{})", where,
                                           group.size(), stream, ms(stage.us), unmerged);
          launches.push_back(LaunchAssignment{ios::merged_nodes(problem, group), device, stream, reason});
        } else {
          std::string reason = fmt::format("{}, group {} of {} on stream {} (stage {})", where, g + 1,
                                           stage.groups.size(), stream, ms(stage.us));
          for (int u : group) launches.push_back(LaunchAssignment{problem.units[u], device, stream, reason});
        }
      }
    }
    std::string merges =
        n_merges == 0 ? "" : fmt::format("; {} merged launch(es) of {} Conv units", n_merges, n_merged_units);
    notes.insert(notes.begin(), fmt::format("{} stages on {} ({} streams, r={}, s={}): {} predicted vs {} on one "
                                            "stream{}",
                                            n_stages, dev.name, dev.n_streams, parsed.r, parsed.s,
                                            ms(found.total_us), ms(found.one_stream_us), merges));
    move_pinned_launches(launches, graph, platform);
    Plan plan = build_plan(graph, platform, launches, "ios");
    plan.predicted_ms = found.total_us / 1000.0;
    plan.notes = std::move(notes);
    return plan;
  }

  // The merged launches the search may ask the cost model about: every set
  // of two or more units sharing a merge key (up to the default s of them).
  std::vector<std::vector<NodeId>> profile_units(const Graph& graph, const Platform&) const override {
    constexpr size_t kMostMerged = 8;
    std::vector<std::vector<NodeId>> units = fusion_units(graph);
    std::map<std::string, std::vector<int>> by_key;
    std::vector<std::string> order;
    for (size_t u = 0; u < units.size(); ++u) {
      std::string key = conv_merge_key(graph, units[u]);
      if (key.empty()) continue;
      auto& same = by_key[key];
      if (same.empty()) order.push_back(key);
      if (same.size() < kMostMerged) same.push_back(static_cast<int>(u));
    }
    std::vector<std::vector<NodeId>> merged;
    for (const std::string& key : order) {
      const std::vector<int>& same = by_key[key];
      for (uint32_t mask = 0; mask < (1u << same.size()); ++mask) {
        if (__builtin_popcount(mask) < 2) continue;
        std::vector<NodeId> nodes;
        for (size_t i = 0; i < same.size(); ++i)
          if (mask & (1u << i)) nodes.insert(nodes.end(), units[same[i]].begin(), units[same[i]].end());
        std::sort(nodes.begin(), nodes.end());
        merged.push_back(std::move(nodes));
      }
    }
    return merged;
  }
};

}  // namespace

HETSCHED_SCHEDULER("ios",
                   "IOS: one multi-stream device; dynamic programming over stages of concurrent groups or merged "
                   "same-input convolutions (params device, r=3 units per group, s=8 groups per stage, max_states)",
                   IosScheduler);

}  // namespace hetsched
