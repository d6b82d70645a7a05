// "nimble": Nimble's stream assignment (Kwon et al., NeurIPS 2020) for one
// device with several streams. The fusion units' DAG is reduced to its
// transitive reduction (so that an edge implied by a longer path never forces
// a synchronisation of its own), and a minimum path cover of that reduction,
// found as a maximum bipartite matching, gives the chains: each chain runs on
// one stream, so every edge inside a chain needs no event and the number of
// chains is the concurrency the graph allows along the reduction.
//
// Parameter: device=DEVICE (default: stream_device.h's choice). When the device has fewer streams than there are
// chains, chain k goes to stream k mod n_streams.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <queue>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "hetsched/error.h"
#include "hetsched/scheduler.h"
#include "plan/plan_builder.h"
#include "sched/stream_device.h"

namespace hetsched {

namespace {

// Rows of bits, one per unit, in one allocation.
class BitMatrix {
 public:
  BitMatrix(size_t n_rows, size_t n_bits) : words_per_row_((n_bits + 63) / 64), words_(n_rows * words_per_row_, 0) {}
  void set(size_t row, size_t bit) { words_[row * words_per_row_ + bit / 64] |= uint64_t{1} << (bit % 64); }
  bool test(size_t row, size_t bit) const { return (words_[row * words_per_row_ + bit / 64] >> (bit % 64)) & 1; }
  // row |= other's row `from`
  void merge_row(size_t row, const BitMatrix& other, size_t from) {
    for (size_t w = 0; w < words_per_row_; ++w) words_[row * words_per_row_ + w] |= other.words_[from * words_per_row_ + w];
  }
  void clear_row(size_t row) {
    std::fill_n(words_.begin() + static_cast<std::ptrdiff_t>(row * words_per_row_), words_per_row_, 0);
  }

 private:
  size_t words_per_row_;
  std::vector<uint64_t> words_;
};

// Successor lists of the units' DAG; units come in a topological order, so
// every edge goes from a lower index to a higher one.
std::vector<std::vector<int>> unit_dag(const Graph& graph, const std::vector<std::vector<NodeId>>& units) {
  std::vector<int> unit_of(graph.nodes.size(), -1);
  for (size_t u = 0; u < units.size(); ++u)
    for (NodeId id : units[u]) unit_of[id] = static_cast<int>(u);
  std::vector<std::vector<int>> succ(units.size());
  for (size_t u = 0; u < units.size(); ++u) {
    for (NodeId id : units[u])
      for (ValueId out : graph.nodes[id].outputs) {
        if (out == kNoValue) continue;
        for (NodeId consumer : graph.values[out].consumers)
          if (unit_of[consumer] != static_cast<int>(u)) succ[u].push_back(unit_of[consumer]);
      }
    std::sort(succ[u].begin(), succ[u].end());
    succ[u].erase(std::unique(succ[u].begin(), succ[u].end()), succ[u].end());
  }
  return succ;
}

// Drops u -> v when v is also reachable through another successor of u.
std::vector<std::vector<int>> transitive_reduction(const std::vector<std::vector<int>>& succ) {
  size_t n = succ.size();
  BitMatrix descendants(n, n);
  for (size_t u = n; u-- > 0;)
    for (int v : succ[u]) {
      descendants.set(u, v);
      descendants.merge_row(u, descendants, v);
    }
  std::vector<std::vector<int>> reduced(n);
  BitMatrix through_others(1, n);
  for (size_t u = 0; u < n; ++u) {
    through_others.clear_row(0);
    for (int w : succ[u]) through_others.merge_row(0, descendants, w);
    for (int v : succ[u])
      if (!through_others.test(0, v)) reduced[u].push_back(v);
  }
  return reduced;
}

// Hopcroft-Karp on the bipartite graph (left copy u) -> (right copy v) for
// each edge u -> v. Returns match_of_left: the successor u is matched to, -1
// when none.
std::vector<int> maximum_matching(const std::vector<std::vector<int>>& edges) {
  const int n = static_cast<int>(edges.size());
  constexpr int kUnreached = std::numeric_limits<int>::max();
  std::vector<int> match_left(n, -1), match_right(n, -1), layer(n);

  auto layered_search = [&] {
    std::queue<int> frontier;
    for (int u = 0; u < n; ++u) {
      layer[u] = match_left[u] < 0 ? 0 : kUnreached;
      if (match_left[u] < 0) frontier.push(u);
    }
    bool found_free = false;
    while (!frontier.empty()) {
      int u = frontier.front();
      frontier.pop();
      for (int v : edges[u]) {
        int next = match_right[v];
        if (next < 0) {
          found_free = true;
        } else if (layer[next] == kUnreached) {
          layer[next] = layer[u] + 1;
          frontier.push(next);
        }
      }
    }
    return found_free;
  };

  // Iterative augmenting search along the layers (recursion could nest as
  // deep as the number of units).
  std::vector<size_t> next_edge(n);
  auto augment_from = [&](int root) {
    std::vector<int> path{root};
    while (!path.empty()) {
      int u = path.back();
      if (next_edge[u] == edges[u].size()) {
        layer[u] = kUnreached;  // dead end for the rest of this phase
        path.pop_back();
        continue;
      }
      int v = edges[u][next_edge[u]++];
      int next = match_right[v];
      if (next < 0) {
        // Flip the matching along the path: each left vertex takes the right
        // vertex it stepped through.
        for (size_t i = path.size(); i-- > 0;) {
          int left = path[i];
          int right = edges[left][next_edge[left] - 1];
          match_right[right] = left;
          match_left[left] = right;
        }
        return true;
      }
      if (layer[next] == layer[u] + 1) path.push_back(next);
    }
    return false;
  };

  while (layered_search()) {
    std::fill(next_edge.begin(), next_edge.end(), 0);
    for (int u = 0; u < n; ++u)
      if (match_left[u] < 0) augment_from(u);
  }
  return match_left;
}

class NimbleScheduler : public Scheduler {
 public:
  Plan schedule(const Graph& graph, const Platform& platform, const CostModel&,
                const ScheduleOptions& options) const override {
    for (const auto& [key, value] : options.params)
      if (key != "device")
        throw Error(ErrorCode::kUsage,
                    fmt::format("scheduler 'nimble': unknown parameter '{}' (known: device)", key));
    int device_index = pick_stream_device(graph, platform, options, "nimble");
    const PlatformDevice& device = platform.devices[device_index];

    std::vector<std::vector<NodeId>> units = fusion_units(graph);
    std::vector<int> successor_in_chain = maximum_matching(transitive_reduction(unit_dag(graph, units)));

    // Chains start at units nothing is matched into; numbering them by their
    // head's topological position makes chain 0 start at the first unit.
    std::vector<bool> has_predecessor(units.size(), false);
    for (int next : successor_in_chain)
      if (next >= 0) has_predecessor[next] = true;
    std::vector<int> chain_of(units.size(), -1);
    int n_chains = 0;
    for (size_t head = 0; head < units.size(); ++head) {
      if (has_predecessor[head]) continue;
      for (int u = static_cast<int>(head); u >= 0; u = successor_in_chain[u]) chain_of[u] = n_chains;
      ++n_chains;
    }

    const int n_streams = std::max(1, device.n_streams);
    std::vector<LaunchAssignment> launches;
    for (size_t u = 0; u < units.size(); ++u) {
      int stream = chain_of[u] % n_streams;
      launches.push_back(LaunchAssignment{
          std::move(units[u]), device_index, stream,
          fmt::format("nimble: chain {} of {} on stream {}", chain_of[u] + 1, n_chains, stream)});
    }
    move_pinned_launches(launches, graph, platform);
    Plan plan = build_plan(graph, platform, launches, "nimble");
    plan.notes.push_back(fmt::format("{} chains (minimum path cover of the transitive reduction) on {} ({} streams)",
                                     n_chains, device.name, device.n_streams));
    if (n_chains > n_streams)
      plan.notes.push_back(fmt::format("more chains than streams: chain k runs on stream k mod {}", n_streams));
    return plan;
  }
};

}  // namespace

HETSCHED_SCHEDULER("nimble",
                   "Nimble's stream assignment on one device: a minimum path cover of the units' transitive "
                   "reduction, one chain per stream (param device)",
                   NimbleScheduler);

}  // namespace hetsched
