// The makespan lower bound (see lower_bound.h).
#include "sched/lower_bound.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <ClpSimplex.hpp>
#include <ClpSolve.hpp>
#include <fmt/format.h>

#include "backends/cpu/program.h"
#include "graph/conv_merge.h"
#include "hetsched/error.h"
#include "plan/plan_builder.h"
#include "sim/simulator.h"

namespace hetsched {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// What a node costs at least on a device, within any launch (lower_bound.h).
// A roofline launch takes max(compute, memory) plus its overheads, so each
// of the two views alone is a lower bound on its duration, and so is any
// mix of them; the busy times are what it holds of the device's compute and
// bandwidth (the simulator's resources).
struct Floor {
  double compute_us = kInfinity;  // overhead share + FLOPs at peak
  double memory_us = kInfinity;   // overhead share + bytes it moves at bandwidth
  // The launch overhead share in both views: a kernel's overhead shared by
  // the nodes of its fusion unit the device runs (0 where measured or one
  // overhead serves a whole launch).
  double overhead_share_us = 0;
  double compute_busy_us = 0;     // FLOPs at peak
  double memory_busy_us = 0;      // bytes that count in its launch's demand, at bandwidth
  // memory_us without the values between fusion units, which the critical
  // path charges on its edges instead
  double chain_memory_us = kInfinity;
  bool roofline = false;  // costed by the roofline (else measured)
  // Always a kernel of its own (KernelClasses, below): it lasts at least
  // the longer of its two views, whatever the view of the rest.
  bool own_kernel = false;
  bool runs() const { return std::isfinite(compute_us); }
  // Its floor in the view lambda. With edges carrying the values (which
  // they count in the memory view only), the mix even for a kernel of its
  // own: the longer view could be compute, while the edge adds traffic
  // (Chains::kernel_us counts such a kernel whole, values included).
  double mixed_us(double lambda, bool edges_carry_values) const {
    if (own_kernel && !edges_carry_values) return std::max(compute_us, memory_us);
    return lambda * compute_us + (1 - lambda) * (edges_carry_values ? chain_memory_us : memory_us);
  }
};

constexpr double kPerMicrosecond = 1e3;  // GFLOP/s and GB/s to per-microsecond
// The most CPU time the combined LP may take (lower_bound.h); the zoo's
// largest graphs take about 3 s.
constexpr double kCombinedSeconds = 10;
// Up to so many devices, the critical path and the combined LP's chains try
// every combination of a view per device; beyond, one common view.
constexpr size_t kMaxCombinedDevices = 3;
// The largest graph whose combined LP also counts each edge with the
// values it passes (add_chains); that LP takes about twice as long.
constexpr size_t kMaxCarryingNodes = 500;

// A linear program under construction: column 0 is T, the objective
// (minimised); every other column costs nothing.
class LinearProgram {
 public:
  using Terms = std::vector<std::pair<int, double>>;

  LinearProgram() { add_column(0, COIN_DBL_MAX); }

  int add_column(double lower, double upper) {
    col_lower_.push_back(lower);
    col_upper_.push_back(upper);
    return static_cast<int>(col_lower_.size()) - 1;
  }
  void add_row(Terms terms, double lower, double upper) {
    row_terms_.push_back(std::move(terms));
    row_lower_.push_back(lower);
    row_upper_.push_back(upper);
  }

  // The least T, by Clp; a later call adds the columns and rows added
  // since. Throws ErrorCode::kRuntime naming `what` when Clp proves no
  // optimum; with `seconds` (CPU time) set, returns nullopt instead when
  // they pass first. The dual simplex starts from the last solution's
  // basis; the barrier (interior point, then a crossover to a basis) does
  // not, but on the combined LP it takes a few dozen iterations where the
  // dual simplex took tens of thousands (randwire on cpu-dsa: 19 s against
  // 3 s).
  enum class Method { kDualSimplex, kBarrier };
  std::optional<double> solve(const char* what, Method method, std::optional<double> seconds = std::nullopt) {
    int n_columns = static_cast<int>(col_lower_.size()), n_rows = static_cast<int>(row_lower_.size());
    std::vector<CoinBigIndex> starts{0};
    std::vector<int> index;
    std::vector<double> element;
    for (int r = loaded_rows_; r < n_rows; ++r) {
      for (const auto& [col, coefficient] : row_terms_[static_cast<size_t>(r)]) {
        index.push_back(col);
        element.push_back(coefficient);
      }
      starts.push_back(static_cast<CoinBigIndex>(index.size()));
    }
    if (loaded_columns_ == 0) {
      std::vector<double> objective(col_lower_.size(), 0);
      objective[0] = 1;
      std::vector<CoinBigIndex> no_entries(col_lower_.size() + 1, 0);
      lp_.setLogLevel(0);
      lp_.loadProblem(n_columns, 0, no_entries.data(), nullptr, nullptr, col_lower_.data(), col_upper_.data(),
                      objective.data(), nullptr, nullptr);
    } else {
      std::vector<double> objective(static_cast<size_t>(n_columns - loaded_columns_), 0);
      std::vector<CoinBigIndex> no_entries(objective.size() + 1, 0);
      lp_.addColumns(n_columns - loaded_columns_, col_lower_.data() + loaded_columns_,
                     col_upper_.data() + loaded_columns_, objective.data(), no_entries.data(), nullptr, nullptr);
    }
    lp_.addRows(n_rows - loaded_rows_, row_lower_.data() + loaded_rows_, row_upper_.data() + loaded_rows_,
                starts.data(), index.data(), element.data());
    loaded_columns_ = n_columns;
    loaded_rows_ = n_rows;
    lp_.setMaximumSeconds(seconds ? *seconds : -1);
    if (method == Method::kBarrier) {
      ClpSolve options;
      options.setSolveType(ClpSolve::useBarrier);
      lp_.initialSolve(options);
    } else {
      lp_.dual();
    }
    constexpr int kStoppedOnLimits = 3;  // Clp's status
    if (!lp_.isProvenOptimal() && seconds && lp_.status() == kStoppedOnLimits) return std::nullopt;
    if (!lp_.isProvenOptimal())
      throw Error(ErrorCode::kRuntime, fmt::format("lower bound: the {} LP did not solve (Clp status {})", what,
                                                   lp_.status()));
    return lp_.objectiveValue();
  }

 private:
  std::vector<double> col_lower_, col_upper_, row_lower_, row_upper_;
  std::vector<Terms> row_terms_;
  ClpSimplex lp_;
  int loaded_columns_ = 0, loaded_rows_ = 0;
};

// Kernel by kernel: a roofline device that never runs a launch as one
// kernel (no on-chip memory, or a real core group's caches) runs each
// launch's kernels one after another, each lasting its overheads plus the
// larger of its compute and memory floors; and a kernel holds nodes of one
// merge class only: a fusion unit, or the Conv units IOS's merge joins
// (conv_merge_key, which the cost model also runs as one kernel).
struct KernelClasses {
  std::vector<std::vector<NodeId>> classes;
  std::vector<bool> by_kernel;  // per device
};

KernelClasses kernel_classes(const Graph& graph, const std::vector<std::vector<NodeId>>& fusion,
                             const std::vector<std::vector<Floor>>& floor, const Platform& platform) {
  KernelClasses kernels;
  std::map<std::string, size_t> class_of_key;
  for (const std::vector<NodeId>& unit : fusion) {
    std::string key = conv_merge_key(graph, unit);
    auto found = key.empty() ? class_of_key.end() : class_of_key.find(key);
    size_t c = found == class_of_key.end() ? kernels.classes.size() : found->second;
    if (c == kernels.classes.size()) {
      if (!key.empty()) class_of_key[key] = c;
      kernels.classes.emplace_back();
    }
    kernels.classes[c].insert(kernels.classes[c].end(), unit.begin(), unit.end());
  }
  for (size_t d = 0; d < platform.devices.size(); ++d) {
    const PlatformDevice& device = platform.devices[d];
    bool by_kernel = !(device.onchip_bytes > 0 && device.is_emulated());
    for (size_t n = 0; n < floor.size() && by_kernel; ++n) by_kernel = !floor[n][d].runs() || floor[n][d].roofline;
    kernels.by_kernel.push_back(by_kernel);
  }
  return kernels;
}

// The graph cut at its cut nodes: a node every other node is an ancestor
// or a descendant of (a Concat closing an inception block, a residual Add,
// a LayerNorm between two transformer layers). Returns a segment per node,
// in order: the nodes before the first cut node, that cut node, the nodes
// between it and the next, and so on. No launch holds nodes of two
// segments without the cut node between them (one of them would wait for
// the other), so the launches holding only one segment's nodes run in that
// segment's own window of time, and those windows and the launches holding
// cut nodes never overlap.
std::vector<int> cut_segments(const Graph& graph) {
  size_t n_nodes = graph.nodes.size(), words = n_nodes / 64 + 1;
  auto has = [](const std::vector<uint64_t>& set, size_t n) { return (set[n / 64] >> (n % 64) & 1u) != 0; };
  auto add = [](std::vector<uint64_t>& set, size_t n) { set[n / 64] |= uint64_t{1} << (n % 64); };
  auto size_of = [](const std::vector<uint64_t>& set) {
    size_t count = 0;
    for (uint64_t word : set) count += static_cast<size_t>(__builtin_popcountll(word));
    return count;
  };
  // Node ids are a topological order.
  std::vector<std::vector<uint64_t>> ancestors(n_nodes, std::vector<uint64_t>(words, 0));
  std::vector<size_t> n_descendants(n_nodes, 0);
  for (size_t n = 0; n < n_nodes; ++n)
    for (ValueId v : graph.nodes[n].inputs) {
      if (v == kNoValue || graph.values[v].producer == kNoNode) continue;
      auto p = static_cast<size_t>(graph.values[v].producer);
      add(ancestors[n], p);
      for (size_t w = 0; w < words; ++w) ancestors[n][w] |= ancestors[p][w];
    }
  for (size_t n = 0; n < n_nodes; ++n)
    for (size_t a = 0; a < n_nodes; ++a)
      if (has(ancestors[n], a)) ++n_descendants[a];
  std::vector<size_t> cuts;
  for (size_t n = 0; n < n_nodes; ++n)
    if (size_of(ancestors[n]) + n_descendants[n] + 1 == n_nodes) cuts.push_back(n);
  std::vector<int> segment(n_nodes, 0);
  for (size_t n = 0; n < n_nodes; ++n)
    for (size_t i = 0; i < cuts.size(); ++i) {
      if (cuts[i] == n) {
        segment[n] = static_cast<int>(2 * i + 1);
        break;
      }
      if (has(ancestors[n], cuts[i])) segment[n] = static_cast<int>(2 * i + 2);
    }
  return segment;
}

// What no one-kernel launch can hold on an on-chip device: a launch
// holding two cut nodes holds every node between them (any node left out
// would both wait for the launch and be waited for by it), so it keeps on
// chip at least the values passed between different kernels among those
// nodes. Where those exceed the device's on-chip memory, the two cut nodes
// are in different launches there (or in one launch run kernel by kernel,
// each kernel paying the overhead).
struct CutSpans {
  std::vector<NodeId> cuts;               // the cut nodes, in order
  std::vector<int> cut_index;             // per node: its index in `cuts`, or -1
  std::vector<std::vector<double>> bytes;  // [j][k], j < k: the values kept between c_j and c_k
};

CutSpans cut_spans(const Graph& graph, const std::vector<int>& segment) {
  CutSpans spans;
  size_t n_nodes = graph.nodes.size();
  spans.cut_index.assign(n_nodes, -1);
  for (size_t n = 0; n < n_nodes; ++n)
    if (segment[n] % 2 == 1) {
      spans.cut_index[n] = static_cast<int>(spans.cuts.size());
      spans.cuts.push_back(static_cast<NodeId>(n));
    }
  size_t n_cuts = spans.cuts.size();
  if (n_cuts < 2) return spans;
  // Two nodes share a kernel only within a fusion group (a launch's kernels
  // are fusion groups or single nodes; IOS's merges join Convs that do not
  // read each other).
  std::vector<std::set<NodeId>> kernel_mates(n_nodes);
  for (size_t h = 0; h < n_nodes; ++h) {
    std::vector<NodeId> group = cpu::fusion_group(graph, static_cast<NodeId>(h));
    for (NodeId a : group) kernel_mates[static_cast<size_t>(a)].insert(group.begin(), group.end());
  }
  // Node n lies between c_j and c_k (both included) when 2j+1 <= segment <=
  // 2k+1. A value passed between kernels from segment s_p to segment s_c
  // counts for every j <= (s_p - 1) / 2 and k >= s_c / 2 (rounded down).
  std::vector<std::vector<double>> at(n_cuts, std::vector<double>(n_cuts, 0));
  for (const Value& value : graph.values) {
    if (value.producer == kNoNode || value.is_constant()) continue;
    int s_p = segment[static_cast<size_t>(value.producer)];
    if (s_p < 1) continue;
    int first_reader = -1;
    for (NodeId c : value.consumers)
      if (!kernel_mates[static_cast<size_t>(value.producer)].count(c)) {
        int s_c = segment[static_cast<size_t>(c)];
        if (first_reader < 0 || s_c < first_reader) first_reader = s_c;
      }
    if (first_reader < 0 || first_reader > 2 * static_cast<int>(n_cuts) - 1) continue;
    at[static_cast<size_t>((s_p - 1) / 2)][static_cast<size_t>(first_reader / 2)] += value.nbytes();
  }
  spans.bytes.assign(n_cuts, std::vector<double>(n_cuts, 0));
  for (size_t j = n_cuts; j-- > 0;)
    for (size_t k = 0; k < n_cuts; ++k)
      spans.bytes[j][k] = at[j][k] + (j + 1 < n_cuts ? spans.bytes[j + 1][k] : 0) + (k > 0 ? spans.bytes[j][k - 1] : 0) -
                          (j + 1 < n_cuts && k > 0 ? spans.bytes[j + 1][k - 1] : 0);
  return spans;
}

// min T subject to: every node split over the devices that run it
// (sum_d x[n][d] = 1, x >= 0), and every resource busy at most T:
//   streams of d:     sum_n x[n][d] (compute_us[n][d] - share[n][d]) + overheads(d) + copies(d) <= n_streams(d) T
//                     sum_n x[n][d] (memory_us[n][d] - share[n][d]) + overheads(d) + copies(d)  <= n_streams(d) T
//   compute of d:     sum_n x[n][d] compute_busy_us[n][d]        <= T
//   bandwidth of d:   sum_n x[n][d] memory_busy_us[n][d] + traffic(d) <= T
//   shared resource:  sum over its devices of the bandwidth terms * share <= T
// where share[n][d] is the overhead share in n's floors, and each fusion
// unit u whose kernels pay an overhead on d (Floor::overhead_share_us) pays
// it whole as soon as any of its nodes runs there — a kernel holds at most
// one unit, and a node of u on d is in one:
//   overheads(d) = sum_u used[u][d] overhead(d),  used[u][d] >= x[n][d] for each n in u
// (shares alone would let a unit's Relu move elsewhere and take half its
// Conv's overhead with it). And for each value v produced by p and read by
// nodes c:
//   sent[v][d] >= x[p][d] - x[c][d], received[v][d] >= x[c][d] - x[p][d]
// (for a whole plan: 1 when v leaves d for another device, or reaches d
// from one). Such a value is an output of its producer's launch and an
// input of its reader's, so it loads both devices' bandwidth:
//   traffic(d) = sum_v (sent[v][d] + received[v][d]) bytes(v) / bandwidth(d)
// on devices costed by the roofline (a measured launch's demand may be
// less). Between memory spaces build_plan copies a value once per space, on
// the lane of its first reader there or another stream of the reader's
// device (pull_stream), or on a stream of the producer's device (its
// launch's push_stream), and a graph output made outside host memory right
// after its launch, on its producer's device. So where a memory space holds
// one device d, a value reaching d from another device is a copy on d's
// lanes or on the producer's device's — but for a graph output reaching
// host memory (its producer copied it), and for any value reaching host
// memory where two other spaces lack a link (a copy between them goes
// through host memory):
//   copies(d) = sum_v on[v][d] copy_us(v, d) + sum_v,r pushed[v][d][r] copy_us(v, r)
//               + sum_outputs x[p][d] copy_us(v, d -> host)
// where the copy of v into r is on r's lanes or pushed by a device e of
// another space running its producer:
//   on[v][r] + sum_e pushed[v][e][r] >= received[v][r],  pushed[v][e][r] <= x[p][e],
// and received[v][d] >= x[c][d] for a graph input (it starts in host memory,
// and no launch pushes it).
//
// Adds those columns and rows to `lp`; returns the columns x[n][d] (-1
// where d does not run n).
std::vector<std::vector<int>> add_capacity(LinearProgram& lp, const Graph& graph,
                                           const std::vector<std::vector<Floor>>& floor,
                                           const std::vector<std::vector<NodeId>>& fusion,
                                           const KernelClasses& kernels, const std::vector<int>& segment,
                                           const Platform& platform, const CostModel& cost) {
  size_t n_nodes = floor.size(), n_devices = platform.devices.size();
  ResourceSharing sharing = resource_sharing(platform);
  auto add_column = [&] { return lp.add_column(0, 1); };
  auto add_row = [&](LinearProgram::Terms terms, double lower, double upper) {
    lp.add_row(std::move(terms), lower, upper);
  };
  std::vector<std::vector<int>> column(n_nodes, std::vector<int>(n_devices, -1));
  for (size_t n = 0; n < n_nodes; ++n)
    for (size_t d = 0; d < n_devices; ++d)
      if (floor[n][d].runs()) column[n][d] = add_column();

  for (size_t n = 0; n < n_nodes; ++n) {
    std::vector<std::pair<int, double>> terms;
    for (size_t d = 0; d < n_devices; ++d)
      if (column[n][d] >= 0) terms.emplace_back(column[n][d], 1.0);
    add_row(terms, 1, 1);
  }

  // Busy time terms per device: on its streams (both views, and what
  // both views share: overheads and copies), on its bandwidth.
  std::vector<std::vector<std::pair<int, double>>> compute_streams(n_devices), memory_streams(n_devices),
      common_streams(n_devices), compute(n_devices), memory(n_devices);
  for (size_t d = 0; d < n_devices; ++d)
    for (size_t n = 0; n < n_nodes; ++n) {
      int col = column[n][d];
      if (col < 0) continue;
      const Floor& f = floor[n][d];
      compute_streams[d].emplace_back(col, std::max(0.0, f.compute_us - f.overhead_share_us));
      memory_streams[d].emplace_back(col, std::max(0.0, f.memory_us - f.overhead_share_us));
      compute[d].emplace_back(col, f.compute_busy_us);
      memory[d].emplace_back(col, f.memory_busy_us);
    }
  // Each unit's overhead on d, whole, once any of its nodes is there.
  struct UnitOverhead {
    size_t device;
    int used;  // column
    double us;
  };
  std::vector<std::vector<UnitOverhead>> unit_overheads(fusion.size());
  for (size_t u = 0; u < fusion.size(); ++u)
    for (size_t d = 0; d < n_devices; ++d) {
      const std::vector<NodeId>& unit = fusion[u];
      double overhead_us = 0;
      std::vector<int> here;
      for (NodeId n : unit)
        if (column[n][d] >= 0) {
          overhead_us += floor[n][d].overhead_share_us;
          here.push_back(column[n][d]);
        }
      if (!(overhead_us > 0)) continue;
      int used = here.front();
      if (here.size() > 1) {
        used = add_column();
        for (int col : here) add_row({{col, 1.0}, {used, -1.0}}, -COIN_DBL_MAX, 0);
      }
      common_streams[d].emplace_back(used, overhead_us);
      unit_overheads[u].push_back({d, used, overhead_us});
    }

  std::vector<bool> roofline(n_devices, true);
  std::map<std::string, int> devices_in_space;
  for (size_t d = 0; d < n_devices; ++d) {
    ++devices_in_space[platform.devices[d].memory_space];
    for (size_t n = 0; n < n_nodes; ++n)
      roofline[d] = roofline[d] && (!floor[n][d].runs() || floor[n][d].roofline);
  }

  // Kernel by kernel (see KernelClasses): a class's nodes on d take at
  // least the larger of their two views summed, so with
  //   busy[c][d] >= sum_{n in c} x[n][d] (compute_us - share), and the same with memory_us,
  //   sum_c busy[c][d] + overheads(d) + copies(d) <= n_streams(d) T
  // (a class of one node needs no busy column: x[n][d] max(...)).
  std::vector<std::vector<std::pair<int, double>>> kernel_streams(n_devices);
  for (size_t d = 0; d < n_devices; ++d) {
    if (!kernels.by_kernel[d]) continue;
    for (const std::vector<NodeId>& members : kernels.classes) {
      if (members.size() == 1) {
        NodeId n = members[0];
        const Floor& f = floor[n][d];
        if (column[n][d] >= 0)
          kernel_streams[d].emplace_back(column[n][d],
                                         std::max(0.0, std::max(f.compute_us, f.memory_us) - f.overhead_share_us));
        continue;
      }
      LinearProgram::Terms compute_terms, memory_terms;
      for (NodeId n : members) {
        int col = column[n][d];
        if (col < 0) continue;
        const Floor& f = floor[n][d];
        compute_terms.emplace_back(col, std::max(0.0, f.compute_us - f.overhead_share_us));
        memory_terms.emplace_back(col, std::max(0.0, f.memory_us - f.overhead_share_us));
      }
      if (compute_terms.empty()) continue;
      int busy = lp.add_column(0, COIN_DBL_MAX);
      for (LinearProgram::Terms* terms : {&compute_terms, &memory_terms}) {
        terms->emplace_back(busy, -1.0);
        add_row(std::move(*terms), -COIN_DBL_MAX, 0);
      }
      kernel_streams[d].emplace_back(busy, 1.0);
    }
  }

  // The values between devices.
  int host = -1;
  for (size_t d = 0; d < n_devices && host < 0; ++d)
    if (platform.devices[d].memory_space == kHostMemory) host = static_cast<int>(d);
  bool host_relays = false;
  for (const auto& [a, n_a] : devices_in_space)
    for (const auto& [b, n_b] : devices_in_space)
      if (a != b && a != kHostMemory && b != kHostMemory && !platform.link(a, b)) host_relays = true;
  // The shortest copy of `bytes` into device `to` from any device of
  // another memory space (+infinity when none links to it).
  auto copy_in_us = [&](double bytes, size_t to) {
    double best = kInfinity;
    for (size_t from = 0; from < n_devices; ++from)
      if (platform.devices[from].memory_space != platform.devices[to].memory_space)
        best = std::min(best, cost.transfer(bytes, platform.devices[from], platform.devices[to]).us);
    return best;
  };
  auto x = [&](NodeId n, size_t d) { return column[static_cast<size_t>(n)][d]; };
  for (ValueId v = 0; v < static_cast<ValueId>(graph.values.size()); ++v) {
    const Value& value = graph.values[v];
    double bytes = value.nbytes();
    if (value.is_constant() || bytes <= 0) continue;
    std::vector<NodeId> readers(value.consumers);
    std::sort(readers.begin(), readers.end());
    readers.erase(std::unique(readers.begin(), readers.end()), readers.end());
    NodeId p = value.producer;
    for (size_t d = 0; d < n_devices; ++d) {
      const PlatformDevice& device = platform.devices[d];
      // Alone in its memory space, a device receives a value from any other
      // device by a copy on its own lane.
      bool alone_in_space = devices_in_space[device.memory_space] == 1;
      if (p == kNoNode) {
        // A graph input starts in host memory.
        if (!alone_in_space || device.memory_space == kHostMemory) continue;
        double copy_us = host >= 0 ? cost.transfer(bytes, platform.devices[static_cast<size_t>(host)], device).us
                                   : kInfinity;
        if (!std::isfinite(copy_us)) continue;
        int copied = -1;
        for (NodeId c : readers) {
          if (x(c, d) < 0) continue;
          if (copied < 0) copied = add_column();
          add_row({{x(c, d), 1.0}, {copied, -1.0}}, -COIN_DBL_MAX, 0);
        }
        if (copied >= 0) common_streams[d].emplace_back(copied, copy_us);
        continue;
      }
      // Graph outputs made here go to host memory on the producer's lane.
      if (graph.is_graph_output(v) && x(p, d) >= 0 && device.memory_space != kHostMemory && host >= 0) {
        double copy_us = cost.transfer(bytes, device, platform.devices[static_cast<size_t>(host)]).us;
        if (std::isfinite(copy_us)) common_streams[d].emplace_back(x(p, d), copy_us);
      }
      double per_byte_us = device.bandwidth_gbps > 0 ? 1 / (device.bandwidth_gbps * kPerMicrosecond) : 0;
      bool traffic = roofline[d] && per_byte_us > 0;
      int sent = -1, received = -1;
      // sent >= x[p][d] - x[c][d]: the write is counted once, and a graph
      // output's is already among the external bytes.
      if (traffic && x(p, d) >= 0 && !graph.is_graph_output(v))
        for (NodeId c : readers) {
          if (sent < 0) sent = add_column();
          std::vector<std::pair<int, double>> terms{{x(p, d), 1.0}, {sent, -1.0}};
          if (x(c, d) >= 0) terms.emplace_back(x(c, d), -1.0);
          add_row(terms, -COIN_DBL_MAX, 0);
        }
      bool copies = alone_in_space && std::isfinite(copy_in_us(bytes, d));
      if (device.memory_space == kHostMemory && (graph.is_graph_output(v) || host_relays)) copies = false;
      if (traffic || copies)
        for (NodeId c : readers) {
          if (x(c, d) < 0) continue;
          if (received < 0) received = add_column();
          std::vector<std::pair<int, double>> terms{{x(c, d), 1.0}, {received, -1.0}};
          if (x(p, d) >= 0) terms.emplace_back(x(p, d), -1.0);
          add_row(terms, -COIN_DBL_MAX, 0);
        }
      if (traffic) {
        for (int col : {sent, received})
          if (col >= 0) memory[d].emplace_back(col, bytes * per_byte_us);
      }
      if (copies && received >= 0) {
        // On d's lanes, or pushed out on the lanes of the producer's device
        // e (LaunchAssignment::push_stream): on_d + sum_e pushed[e] >=
        // received with pushed[e] <= x[p][e], at the shortest copy's cost.
        double copy_us = copy_in_us(bytes, d);
        LinearProgram::Terms split{{received, -1.0}};
        int on_d = add_column();
        split.emplace_back(on_d, 1.0);
        common_streams[d].emplace_back(on_d, copy_us);
        for (size_t e = 0; e < n_devices; ++e) {
          if (x(p, e) < 0 || platform.devices[e].memory_space == device.memory_space) continue;
          int pushed = add_column();
          add_row({{pushed, 1.0}, {x(p, e), -1.0}}, -COIN_DBL_MAX, 0);
          split.emplace_back(pushed, 1.0);
          common_streams[e].emplace_back(pushed, copy_us);
        }
        add_row(std::move(split), 0, COIN_DBL_MAX);
      }
    }
  }

  // One row per resource: -capacity * T + sum of busy time <= 0.
  auto add_capacity_row = [&](double capacity, const std::vector<std::pair<int, double>>& terms) {
    std::vector<std::pair<int, double>> row{{0, -capacity}};
    for (const auto& term : terms)
      if (term.second > 0) row.push_back(term);
    if (row.size() > 1) add_row(row, -COIN_DBL_MAX, 0);
  };
  std::vector<std::vector<std::pair<int, double>>> shared(static_cast<size_t>(sharing.n_resources));
  for (size_t d = 0; d < n_devices; ++d) {
    for (auto* streams : {&compute_streams[d], &memory_streams[d], &kernel_streams[d]}) {
      if (streams->empty()) continue;
      streams->insert(streams->end(), common_streams[d].begin(), common_streams[d].end());
      add_capacity_row(platform.devices[d].n_streams, *streams);
    }
    add_capacity_row(1, compute[d]);
    add_capacity_row(1, memory[d]);
    if (sharing.resource_of[d] >= 0)
      for (const auto& [col, busy] : memory[d])
        shared[static_cast<size_t>(sharing.resource_of[d])].emplace_back(col, busy * sharing.share[d]);
  }
  for (const auto& terms : shared) add_capacity_row(1, terms);

  // Segment by segment (cut_segments): T is at least the sum over the
  // segments of each one's window, and a segment's window holds its
  // launches on each device's streams. A launch holding a cut node may hold
  // nodes of the segments beside it too; its duration, also part of T,
  // covers their share, wherever it is counted. Counted in one view for
  // all segments (each node's floor in lambda, or the longer of the two
  // for a kernel of its own), since one launch may hold nodes of three:
  //   window[k] n_streams(d) >= sum_{n in k} x[n][d] (floor_lambda - share) + overheads of k's units on d
  //   T >= sum_k window[k]
  // A unit's overhead counts in the segment of its nodes that are not cut
  // nodes (in a fusion unit, a chain, the nodes after a cut node are cut
  // nodes too), and is left out where they lie in two.
  size_t n_segments = segment.empty() ? 0 : 1 + static_cast<size_t>(*std::max_element(segment.begin(), segment.end()));
  // Each unit's home: the one segment of its nodes that are not cut nodes
  // (the segment of its head where all are), -1 where they lie in two.
  std::vector<int> unit_home(fusion.size(), -1), unit_of(n_nodes, -1);
  for (size_t u = 0; u < fusion.size(); ++u) {
    bool one_home = true;
    for (NodeId n : fusion[u]) {
      unit_of[n] = static_cast<int>(u);
      if (segment[n] % 2 == 1) continue;  // a cut node
      one_home = one_home && (unit_home[u] < 0 || unit_home[u] == segment[n]);
      unit_home[u] = segment[n];
    }
    if (unit_home[u] < 0) unit_home[u] = segment[fusion[u].front()];
    if (!one_home) unit_home[u] = -1;
  }
  if (n_segments > 1)
    for (double lambda : {0.0, 1.0}) {
      std::vector<std::vector<LinearProgram::Terms>> busy(n_segments, std::vector<LinearProgram::Terms>(n_devices));
      for (size_t n = 0; n < n_nodes; ++n)
        for (size_t d = 0; d < n_devices; ++d) {
          const Floor& f = floor[n][d];
          if (column[n][d] >= 0)
            busy[segment[n]][d].emplace_back(column[n][d],
                                             std::max(0.0, f.mixed_us(lambda, false) - f.overhead_share_us));
        }
      for (size_t u = 0; u < fusion.size(); ++u)
        for (const UnitOverhead& o : unit_overheads[u])
          if (unit_home[u] >= 0) busy[unit_home[u]][o.device].emplace_back(o.used, o.us);
      std::vector<int> window(n_segments);
      LinearProgram::Terms total{{0, -1.0}};
      for (size_t k = 0; k < n_segments; ++k) {
        window[k] = lp.add_column(0, COIN_DBL_MAX);
        total.emplace_back(window[k], 1.0);
        for (size_t d = 0; d < n_devices; ++d) {
          if (busy[k][d].empty()) continue;
          busy[k][d].emplace_back(window[k], -static_cast<double>(platform.devices[d].n_streams));
          add_row(std::move(busy[k][d]), -COIN_DBL_MAX, 0);
        }
      }
      add_row(std::move(total), -COIN_DBL_MAX, 0);
      // And each node alone: its launch lies in its segment's window, or,
      // holding a cut node, counts among the share above — its floor less
      // its overhead share, and its unit's overheads where they count in
      // its segment (a unit is a chain, so its kernels on several devices
      // run one after another).
      for (size_t n = 0; n < n_nodes; ++n) {
        LinearProgram::Terms terms{{window[segment[n]], -1.0}};
        for (size_t d = 0; d < n_devices; ++d) {
          const Floor& f = floor[n][d];
          if (column[n][d] >= 0)
            terms.emplace_back(column[n][d], std::max(0.0, f.mixed_us(lambda, false) - f.overhead_share_us));
        }
        if (unit_home[unit_of[n]] == segment[n])
          for (const UnitOverhead& o : unit_overheads[unit_of[n]]) terms.emplace_back(o.used, o.us);
        add_row(std::move(terms), -COIN_DBL_MAX, 0);
      }
    }
  return column;
}

// Bytes each node moves in any launch that holds it, shared so that the
// nodes of one launch never add up to more than the launch moves
// (launch_bytes, plus the values spilled between its kernels):
//  - `external`: weights and graph inputs (every launch reads them from
//    outside; one read by several nodes is fetched once, so each reader
//    takes its share) and graph outputs (always written out);
//  - `crossing`: values passed between fusion units. A launch's kernels
//    are whole fusion units or single nodes, so such a value leaves its
//    producer's kernel: it is written once (an output of the launch, or
//    spilled) and read at least once in each launch holding a reader (from
//    outside, or spilled), the readers sharing that read. Devices without
//    on-chip memory pay it in full, emulated ones with it at a rate their
//    chip allows (node_floor), real ones (whose caches may keep it) not at
//    all; and only as time: spilled bytes are no part of a launch's
//    bandwidth demand.
struct NodeBytes {
  double external = 0;
  double crossing = 0;
};

std::vector<NodeBytes> node_bytes(const Graph& graph, const std::vector<int>& fusion_unit_of) {
  std::vector<NodeBytes> bytes(graph.nodes.size());
  for (ValueId v = 0; v < static_cast<ValueId>(graph.values.size()); ++v) {
    const Value& value = graph.values[v];
    double size = value.nbytes();
    std::vector<NodeId> readers(value.consumers);
    std::sort(readers.begin(), readers.end());
    readers.erase(std::unique(readers.begin(), readers.end()), readers.end());
    if (value.producer == kNoNode) {
      for (NodeId r : readers) bytes[r].external += size / static_cast<double>(readers.size());
      continue;
    }
    std::vector<NodeId> outside;
    for (NodeId r : readers)
      if (fusion_unit_of[r] != fusion_unit_of[value.producer]) outside.push_back(r);
    // A graph output's write is counted once, as external: when its readers
    // are in other launches, that write is the only one.
    if (graph.is_graph_output(v))
      bytes[value.producer].external += size;
    else if (!outside.empty())
      bytes[value.producer].crossing += size;
    for (NodeId r : outside) bytes[r].crossing += size / static_cast<double>(outside.size());
  }
  return bytes;
}

// The least node `id` (of fusion unit `unit`) can take on `device` inside
// any launch; see lower_bound.h.
Floor node_floor(const Graph& graph, NodeId id, const std::vector<NodeId>& unit, const NodeBytes& moved,
                 const PlatformDevice& device, const CostModel& cost) {
  Floor floor;
  if (!device.supports(graph.nodes[id])) return floor;
  Estimate alone = cost.launch(graph, {id}, device);
  bool peaks = device.peak_gflops > 0 && device.bandwidth_gbps > 0;
  bool whole_unit = std::all_of(unit.begin(), unit.end(), [&](NodeId n) { return device.supports(graph.nodes[n]); });
  std::vector<NodeId> group = whole_unit ? unit : std::vector<NodeId>{id};
  Estimate estimate = cost.launch(graph, group, device);
  if (peaks && (estimate.source == CostSource::kRoofline || (device.onchip_bytes > 0 && device.is_emulated()))) {
    // The roofline: a launch takes an overhead per kernel plus
    // max(FLOPs / peak, bytes / bandwidth) over all its nodes, where its
    // bytes are launch_bytes and the values spilled between its kernels.
    double per_byte_us = 1 / (device.bandwidth_gbps * kPerMicrosecond);
    const NodeCost& own = graph.nodes[id].cost;
    // Alone, a node moves what its cost annotation says, which is never less
    // than its shares; kept as a cap all the same.
    double own_bytes = own.bytes_read + own.bytes_written;
    double external_us = std::min(moved.external, own_bytes) * per_byte_us;
    double overhead_us = 0, crossing_us = 0;
    if (device.onchip_bytes > 0 && device.is_emulated()) {
      // A launch whose values between kernels fit on chip runs as one
      // kernel: one overhead for any number of nodes, but those values are
      // at most onchip_bytes, so each byte of them costs at least
      // overhead / onchip_bytes. A value that stays between launches is
      // written and read through memory instead, and one in a launch that
      // does not fit is spilled (written and read). Either way a byte
      // passed between fusion units costs min(overhead / onchip_bytes,
      // 2 / bandwidth), half of it charged to its write and half to its
      // reads.
      double per_crossing_byte_us =
          std::min(device.launch_overhead_us / static_cast<double>(device.onchip_bytes), 2 * per_byte_us) / 2;
      crossing_us = moved.crossing * per_crossing_byte_us;
    } else {
      // Each kernel pays an overhead, and a kernel is at most a fusion unit:
      // the unit's nodes that the device runs share it.
      auto n_here = std::count_if(unit.begin(), unit.end(), [&](NodeId n) { return device.supports(graph.nodes[n]); });
      overhead_us = device.launch_overhead_us / static_cast<double>(n_here);
      // Without on-chip memory a value between fusion units goes through
      // memory, written and read; with it (a real core group's caches) it
      // may stay there.
      if (device.onchip_bytes <= 0) crossing_us = moved.crossing * per_byte_us;
    }
    floor.compute_busy_us = device.peak_equivalent_flops(graph.nodes[id]) / (device.peak_gflops * kPerMicrosecond);
    // Spilled bytes take time but are no part of a launch's demand, and a
    // value between launches may be spilled in another plan: only the
    // external bytes surely load the device's bandwidth.
    floor.memory_busy_us = external_us;
    floor.roofline = true;
    floor.overhead_share_us = overhead_us;
    floor.compute_us = std::min(alone.us, overhead_us + floor.compute_busy_us);
    floor.memory_us = std::min(alone.us, overhead_us + std::min(external_us + crossing_us, own_bytes * per_byte_us));
    floor.chain_memory_us = std::min(alone.us, overhead_us + external_us);
    return floor;
  }
  // A measured device: its fusion unit's measured time, shared over the
  // unit's nodes by their own work — a launch measured as one could, in
  // principle, take less.
  double us = estimate.us;
  if (group.size() > 1) {
    auto work = [&](const std::vector<NodeId>& nodes) {
      double flops = 0, weights = 0;
      for (NodeId n : nodes) {
        flops += device.peak_equivalent_flops(graph.nodes[n]);
        for (ValueId v : graph.nodes[n].inputs)
          if (v != kNoValue && graph.values[v].is_constant()) weights += graph.values[v].nbytes();
      }
      return flops / (device.peak_gflops * kPerMicrosecond) + weights / (device.bandwidth_gbps * kPerMicrosecond);
    };
    double mine = peaks ? work({id}) : 0, all = peaks ? work(group) : 0;
    us *= all > 0 ? mine / all : 1.0 / static_cast<double>(group.size());
  }
  us = std::min(alone.us, us);
  ResourceDemand demand = cost.demand(graph, {id}, device, us);
  floor.compute_us = floor.memory_us = floor.chain_memory_us = us;
  floor.compute_busy_us = us * demand.compute;
  floor.memory_busy_us = us * demand.memory;
  return floor;
}

// The chains between nodes: each edge p -> n (all the values p passes n
// at once) with what it costs at least, and each node's graph inputs and
// outputs, which start and end in host memory.
struct Edge {
  NodeId from = kNoNode;
  std::vector<double> write_us, read_us;  // per device, at its bandwidth (0 where measured)
  std::vector<double> same_memory_us;     // per device: write and read between fusion units
  std::vector<double> same_chip_us;       // per device: the overhead share on chip (+infinity elsewhere)
  std::vector<std::vector<double>> transfer_us;  // [from][to]: the copy or hand-over (0 when from == to)
};

struct Chains {
  std::vector<std::vector<Edge>> edges_into;  // per node, in a topological order of the nodes
  std::vector<bool> has_successor;
  std::vector<std::vector<double>> in_us, out_us;  // [n][d]: its graph inputs from, its outputs to host memory
  // [d]: the launch overhead of a device whose launches may each be one
  // kernel (an emulated one with on-chip memory: its floors carry none),
  // which every launch a chain enters there pays once; 0 elsewhere.
  std::vector<double> entry_us;
  std::vector<double> onchip_bytes;  // [d]: where entry_us > 0, what its chip holds
  std::vector<int> streams;           // [d]: its lanes
  // [n][d]: where n is a kernel of its own (Floor::own_kernel) on a
  // roofline device without on-chip memory, that kernel's floor whole:
  // max(compute, memory with the values it reads and writes), which the
  // carried counts take instead of the mix (critical_path_us); 0 elsewhere.
  std::vector<std::vector<double>> kernel_us;
};

// The three ways a chain is counted (critical_path_us says why each holds).
enum class ChainCount {
  kFloors,   // nodes at their floors, edges their copies and hand-overs
  kCarried,  // nodes without the values between fusion units, edges with them
  kEntries,  // kCarried, but on-chip devices paid per launch entered
};

// What edge p -> n costs at least with p on device a (in view lambda_a)
// and n on b (lambda_b), besides the nodes' floors. Where the chain counts
// p's kernel whole (writer_kernel: Chains::kernel_us, which holds the
// values p writes) the edge leaves p's write out, and likewise n's read
// (reader_kernel).
double edge_cost_us(const Edge& edge, const Chains& chains, size_t a, size_t b, double lambda_a, double lambda_b,
                    ChainCount count, bool writer_kernel = false, bool reader_kernel = false) {
  double us = edge.transfer_us[a][b];
  if (count == ChainCount::kFloors) return us;
  double write = writer_kernel ? 0 : (1 - lambda_a) * edge.write_us[a];
  double read = reader_kernel ? 0 : (1 - lambda_b) * edge.read_us[b];
  double entry_us = count == ChainCount::kEntries ? chains.entry_us[b] : 0;
  if (a != b) return us + write + read + entry_us;
  if (entry_us > 0) return us;
  // Between fusion units on one device (same_memory_us, where both are
  // costed by the roofline: the write and the read), or a chip's share.
  return us + std::min(edge.same_chip_us[a], edge.same_memory_us[a] > 0 ? write + read : 0.0);
}

// Whether a chain in this count takes n's kernel on d whole (Chains::kernel_us).
bool counts_kernel(const Chains& chains, size_t n, size_t d, ChainCount count) {
  return count != ChainCount::kFloors && chains.kernel_us[n][d] > 0;
}

// Where a chain may start on device d: after n's graph inputs reach it,
// and for kEntries, with d's launch overhead paid.
double start_us(const Chains& chains, size_t n, size_t d, ChainCount count) {
  return chains.in_us[n][d] + (count == ChainCount::kEntries ? chains.entry_us[d] : 0);
}

Chains chains(const Graph& graph, const std::vector<std::vector<Floor>>& floor, const std::vector<int>& fusion_unit_of,
              const Platform& platform, const CostModel& cost) {
  size_t n_nodes = graph.nodes.size(), n_devices = platform.devices.size();
  int host = -1;
  for (size_t d = 0; d < n_devices && host < 0; ++d)
    if (platform.devices[d].memory_space == kHostMemory) host = static_cast<int>(d);
  auto transfer_us = [&](double bytes, size_t from, size_t to) {
    if (from == to || bytes <= 0) return 0.0;
    return cost.transfer(bytes, platform.devices[from], platform.devices[to]).us;
  };
  auto per_byte_us = [&](size_t d) { return 1 / (platform.devices[d].bandwidth_gbps * kPerMicrosecond); };
  Chains chains;
  chains.edges_into.resize(n_nodes);
  chains.has_successor.assign(n_nodes, false);
  chains.in_us.assign(n_nodes, std::vector<double>(n_devices, 0));
  chains.out_us.assign(n_nodes, std::vector<double>(n_devices, 0));
  for (const PlatformDevice& device : platform.devices) {
    chains.entry_us.push_back(device.onchip_bytes > 0 && device.is_emulated() ? device.launch_overhead_us : 0.0);
    chains.onchip_bytes.push_back(static_cast<double>(device.onchip_bytes));
    chains.streams.push_back(std::max(1, device.n_streams));
  }
  for (size_t n = 0; n < n_nodes; ++n) {
    const Node& node = graph.nodes[n];
    std::vector<ValueId> inputs;
    for (ValueId v : node.inputs)
      if (v != kNoValue && std::find(inputs.begin(), inputs.end(), v) == inputs.end()) inputs.push_back(v);
    std::map<NodeId, std::vector<ValueId>> values_from;
    double input_bytes = 0, output_bytes = 0;
    for (ValueId v : inputs) {
      NodeId producer = graph.values[v].producer;
      if (producer == kNoNode) {
        if (!graph.values[v].initializer) input_bytes += graph.values[v].nbytes();
      } else if (producer != static_cast<NodeId>(n)) {
        values_from[producer].push_back(v);
      }
    }
    for (ValueId v : node.outputs)
      if (v != kNoValue && graph.is_graph_output(v)) output_bytes += graph.values[v].nbytes();
    if (host >= 0)
      for (size_t d = 0; d < n_devices; ++d) {
        chains.in_us[n][d] = transfer_us(input_bytes, static_cast<size_t>(host), d);
        chains.out_us[n][d] = transfer_us(output_bytes, d, static_cast<size_t>(host));
      }
    for (const auto& [p, values] : values_from) {
      chains.has_successor[static_cast<size_t>(p)] = true;
      Edge edge;
      edge.from = p;
      edge.write_us.assign(n_devices, 0);
      edge.read_us.assign(n_devices, 0);
      edge.same_memory_us.assign(n_devices, 0);
      edge.same_chip_us.assign(n_devices, kInfinity);
      double bytes = 0;
      bool same_unit = fusion_unit_of[p] == fusion_unit_of[n];
      for (size_t d = 0; d < n_devices; ++d) {
        const PlatformDevice& device = platform.devices[d];
        bool roofline = floor[n][d].roofline && floor[static_cast<size_t>(p)][d].roofline;
        bool chip = device.onchip_bytes > 0 && device.is_emulated();
        if (chip) edge.same_chip_us[d] = 0;
        for (ValueId v : values) {
          double size = graph.values[v].nbytes();
          double write = graph.is_graph_output(v) ? 0 : size;
          if (floor[static_cast<size_t>(p)][d].roofline) edge.write_us[d] += write * per_byte_us(d);
          if (floor[n][d].roofline) edge.read_us[d] += size * per_byte_us(d);
          if (same_unit || !roofline || (device.onchip_bytes > 0 && !chip)) continue;
          edge.same_memory_us[d] += (write + size) * per_byte_us(d);
          if (chip)
            edge.same_chip_us[d] += size * device.launch_overhead_us / static_cast<double>(device.onchip_bytes);
        }
      }
      for (ValueId v : values) bytes += graph.values[v].nbytes();
      edge.transfer_us.assign(n_devices, std::vector<double>(n_devices, 0));
      for (size_t from = 0; from < n_devices; ++from)
        for (size_t to = 0; to < n_devices; ++to) edge.transfer_us[from][to] = transfer_us(bytes, from, to);
      chains.edges_into[n].push_back(std::move(edge));
    }
  }
  // A kernel holding n alone reads every value n reads from other nodes
  // and writes every value other nodes read (graph outputs are among its
  // external bytes already): its floor is at least the larger of its
  // compute and its memory with those values.
  chains.kernel_us.assign(n_nodes, std::vector<double>(n_devices, 0));
  for (size_t n = 0; n < n_nodes; ++n)
    for (size_t d = 0; d < n_devices; ++d) {
      const Floor& f = floor[n][d];
      if (!f.own_kernel || !f.roofline || platform.devices[d].onchip_bytes > 0) continue;
      double memory_us = f.chain_memory_us;
      for (const Edge& edge : chains.edges_into[n]) memory_us += edge.read_us[d];
      for (ValueId v : graph.nodes[n].outputs)
        if (v != kNoValue && !graph.is_graph_output(v) && !graph.values[v].consumers.empty())
          memory_us += graph.values[v].nbytes() * per_byte_us(d);
      chains.kernel_us[n][d] = std::max(f.compute_us, memory_us);
    }
  return chains;
}

// For critical_path_us: per cut node c_j that begins a span too large for
// some on-chip device's chip, and per device e running c_j, the longest
// chain from the end of c_j on e to the end of each node n on each device
// d ([j][e][n][d]; -infinity where n does not descend from c_j, +infinity
// where d does not run n), counted as the third count but with no entry
// overhead when e is an on-chip device (critical_path_us adds that one);
// empty for the other cut nodes.
std::vector<std::vector<std::vector<std::vector<double>>>> span_chains(const std::vector<std::vector<Floor>>& floor,
                                                                       const Chains& chains, const CutSpans& spans,
                                                                       const std::vector<double>& lambda) {
  size_t n_nodes = floor.size(), n_devices = lambda.size(), n_cuts = spans.cuts.size();
  std::vector<std::vector<std::vector<std::vector<double>>>> from_cut(n_cuts);
  for (size_t j = 0; j < n_cuts; ++j) {
    bool too_large = false;
    for (size_t k = j + 1; k < n_cuts; ++k)
      for (size_t d = 0; d < n_devices; ++d)
        too_large = too_large || (chains.entry_us[d] > 0 && spans.bytes[j][k] > chains.onchip_bytes[d]);
    if (!too_large) continue;
    size_t c_j = static_cast<size_t>(spans.cuts[j]);
    from_cut[j].assign(n_devices, {});
    for (size_t e = 0; e < n_devices; ++e) {
      if (!floor[c_j][e].runs()) continue;
      // From an on-chip device, no entry is paid on the way (critical_path_us
      // adds one overhead for the span instead); from any other, every
      // entry is, as in the third count.
      bool entries = chains.entry_us[e] == 0;
      std::vector<std::vector<double>>& end = from_cut[j][e];
      end.assign(n_nodes, std::vector<double>(n_devices, -kInfinity));
      for (size_t d = 0; d < n_devices; ++d) end[c_j][d] = d == e ? 0 : kInfinity;
      for (size_t n = c_j + 1; n < n_nodes; ++n) {
        for (size_t d = 0; d < n_devices; ++d) {
          if (!floor[n][d].runs()) {
            end[n][d] = kInfinity;
            continue;
          }
          double ready = -kInfinity;
          for (const Edge& edge : chains.edges_into[n]) {
            const std::vector<double>& before = end[static_cast<size_t>(edge.from)];
            double earliest = kInfinity;
            bool reached = false;
            for (size_t from = 0; from < n_devices; ++from) {
              if (before[from] == -kInfinity) continue;
              reached = true;
              // Without the entries: as kCarried, but nothing within an
              // on-chip device (as kEntries).
              double cost = entries || from != d || chains.entry_us[d] == 0
                                ? edge_cost_us(edge, chains, from, d, lambda[from], lambda[d],
                                               entries ? ChainCount::kEntries : ChainCount::kCarried,
                                               counts_kernel(chains, edge.from, from, ChainCount::kCarried))
                                : edge.transfer_us[from][d];
              earliest = std::min(earliest, before[from] + cost);
            }
            if (reached) ready = std::max(ready, earliest);
          }
          end[n][d] = ready == -kInfinity ? -kInfinity : ready + floor[n][d].mixed_us(lambda[d], true);
        }
      }
    }
  }
  return from_cut;
}

// For critical_path_us: where node n on device d starts at the earliest,
// counting the lanes its latest ancestors need. Each ancestor q on device
// x holds a lane of x for at least its own floor, from no sooner than its
// release (finish[q][x] less that floor: q's part of its launch lasts at
// least the floor and ends no sooner than finish) until n starts; and n starts
// no sooner than q's end on x plus the chains from q to n (dist). Take
// the k ancestors with the latest releases on their best devices, all
// released at r0 or later (any set would do; these crowd the lanes
// most): whichever device each takes, n starts at T with
//  - T >= finish[q][x_q] + dist[q][x_q] for each of them,
//  - T >= r0 + (their floors on x) / lanes(x) for each device x, and
//    r0 + (all their floors) / (all lanes);
// and T is the least that any choice of devices allows — relaxed so: a
// device x is open to q when finish[q][x] + dist[q][x] <= T, the floors of
// those with one open device count on it, everyone's least open floor in
// the total. Per path the critical path puts every branch of a block on
// the device that finishes it soonest; here those branches share its
// lanes, or pay the way to another device (a CPU-only Concat whose
// branches the CPU ends soonest: they queue on its one lane, or take the
// accelerator with a copy each way). With `whole`, n counts its kernel
// whole (Chains::kernel_us), reads included: the edges into it leave
// them out.
double late_load_start_us(size_t n, size_t d, const std::vector<std::vector<Floor>>& floor, const Chains& chains,
                          const std::vector<std::vector<double>>& finish, const std::vector<double>& lambda,
                          ChainCount count, bool whole) {
  constexpr size_t kLateAncestors = 16;  // more adds nothing on the zoo's graphs
  size_t n_devices = lambda.size();
  auto own_us = [&](size_t q, size_t x) { return floor[q][x].mixed_us(lambda[x], count != ChainCount::kFloors); };
  auto release_us = [&](size_t q) {
    double us = kInfinity;
    for (size_t x = 0; x < n_devices; ++x)
      if (std::isfinite(finish[q][x])) us = std::min(us, finish[q][x] - own_us(q, x));
    return us;
  };
  // The latest ancestors: best first from n's predecessors (an ancestor is
  // released no later than its descendants).
  std::vector<std::pair<double, size_t>> frontier;  // a max-heap on the release
  std::vector<size_t> seen, late;
  std::vector<double> released_by;  // [i]: the least release among late[0..i]
  auto reach = [&](size_t q) {
    if (std::find(seen.begin(), seen.end(), q) != seen.end()) return;
    seen.push_back(q);
    frontier.emplace_back(release_us(q), q);
    std::push_heap(frontier.begin(), frontier.end());
  };
  for (const Edge& edge : chains.edges_into[n]) reach(static_cast<size_t>(edge.from));
  while (!frontier.empty() && late.size() < kLateAncestors) {
    std::pop_heap(frontier.begin(), frontier.end());
    auto [release, q] = frontier.back();
    frontier.pop_back();
    late.push_back(q);
    released_by.push_back(released_by.empty() ? release : std::min(released_by.back(), release));
    for (const Edge& edge : chains.edges_into[q]) reach(static_cast<size_t>(edge.from));
  }
  size_t m = late.size();
  if (m < 2) return 0;
  // dist[i][x]: how long after late[i] ends on x n starts at least, over
  // the paths through the late ancestors (at least 0: n descends from it).
  // Members in reverse topological order, so that each one's successors
  // among them are done.
  std::vector<size_t> reverse(m);
  for (size_t i = 0; i < m; ++i) reverse[i] = i;
  std::sort(reverse.begin(), reverse.end(), [&](size_t a, size_t b) { return late[a] > late[b]; });
  std::vector<std::vector<double>> dist(m, std::vector<double>(n_devices, 0));
  for (size_t i : reverse) {
    size_t q = late[i];
    for (size_t x = 0; x < n_devices; ++x) {
      if (!std::isfinite(finish[q][x])) continue;
      double longest = 0;
      for (const Edge& edge : chains.edges_into[n])
        if (static_cast<size_t>(edge.from) == q)
          longest = std::max(longest, edge_cost_us(edge, chains, x, d, lambda[x], lambda[d], count,
                                                   counts_kernel(chains, q, x, count), whole));
      for (size_t j = 0; j < m; ++j)
        for (const Edge& edge : chains.edges_into[late[j]]) {
          if (static_cast<size_t>(edge.from) != q) continue;
          size_t s = late[j];
          double shortest = kInfinity;
          for (size_t y = 0; y < n_devices; ++y)
            if (std::isfinite(finish[s][y]))
              shortest = std::min(shortest, edge_cost_us(edge, chains, x, y, lambda[x], lambda[y], count,
                                                         counts_kernel(chains, q, x, count)) +
                                                own_us(s, y) + dist[j][y]);
          longest = std::max(longest, shortest);
        }
      dist[i][x] = longest;
    }
  }
  auto arrival_us = [&](size_t i, size_t x) {
    return std::isfinite(finish[late[i]][x]) ? finish[late[i]][x] + dist[i][x] : kInfinity;
  };
  int all_lanes = 0;
  for (int lanes : chains.streams) all_lanes += lanes;
  double start = 0;
  std::vector<double> steps;  // the arrivals, where the open devices change
  std::vector<double> one_device(n_devices);
  for (size_t k = 2; k <= m; ++k) {
    double r0 = released_by[k - 1];
    if (!std::isfinite(r0)) break;
    // T from the earliest every member allows, up through the arrivals.
    steps.clear();
    double t = 0;
    for (size_t i = 0; i < k; ++i) {
      double earliest = kInfinity;
      for (size_t x = 0; x < n_devices; ++x)
        if (std::isfinite(arrival_us(i, x))) {
          steps.push_back(arrival_us(i, x));
          earliest = std::min(earliest, arrival_us(i, x));
        }
      t = std::max(t, earliest);
    }
    std::sort(steps.begin(), steps.end());
    for (;;) {
      std::fill(one_device.begin(), one_device.end(), 0.0);
      double least_total = 0;
      for (size_t i = 0; i < k; ++i) {
        size_t open = 0, last = 0;
        double least = kInfinity;
        for (size_t x = 0; x < n_devices; ++x)
          if (arrival_us(i, x) <= t) {
            ++open;
            last = x;
            least = std::min(least, own_us(late[i], x));
          }
        if (open == 1) one_device[last] += least;
        least_total += least;
      }
      double need = std::max(t, r0 + least_total / all_lanes);
      for (size_t x = 0; x < n_devices; ++x) need = std::max(need, r0 + one_device[x] / chains.streams[x]);
      auto next = std::upper_bound(steps.begin(), steps.end(), t);
      if (next == steps.end() || need < *next) {
        start = std::max(start, need);
        break;
      }
      t = *next;
    }
  }
  return start;
}

// The critical path: finish[n][d], the earliest node n could end on device
// d if every device were free: after each predecessor ends, on whichever
// device is best for it, plus what the values between them cost at least
// (below). Graph inputs start in host memory and graph outputs end there.
// Nodes come in a topological order, so predecessors are done when a node
// is reached.
//
// A chain's launches follow one another, and each lasts at least its
// overheads plus any mix lambda FLOPs/peak + (1 - lambda) bytes/bandwidth
// of the chain's part in it. That part is counted in two ways, and the
// longer path of the two wins: either each node brings its floor
// (memory_us: its shares of every value it writes and reads, crossing
// edges of the chain or not) and the edges only their copies and
// hand-overs; or each node brings its floor without the values between
// fusion units (chain_memory_us) and each edge of the chain the values
// it passes, all of them, since one chain passes a value once:
//  - between devices: the copy or hand-over, plus the value's write in
//    the producer's launch (unless a graph output, already among its
//    external bytes) and its read in the reader's;
//  - on one device, between fusion units: the write and the read, or,
//    within one launch, the spill (written and read) — or, on an emulated
//    device with on-chip memory, a share of the launch's one overhead,
//    since the values it keeps on chip are at most onchip_bytes;
//  - within a fusion unit (maybe one kernel), or on a device whose
//    caches may keep it, nothing.
// And a third count, as the second but for the on-chip devices (emulated,
// with on-chip memory, whose floors carry no overhead): the chain pays such
// a device's launch overhead where it starts there or enters it from
// another device, and nothing on its edges within the device. A launch the
// chain enters cannot start before the value it enters with is there, and
// lasts at least its overhead plus the chain's floors inside it; the
// on-chip shares the second count charges within it are at most that
// overhead, so either count alone holds, not both added.
//
// And with the third count, across the spans no one-kernel launch holds
// (CutSpans): cut node c_k on on-chip device d finishes no sooner than
// c_j, an earlier cut node, on whichever device e it is, plus the longest
// chain from c_j on e to c_k on d (span_chains) — and, where e is d and
// the span between them does not fit on d's chip, plus d's overhead: c_k
// is then in another launch than c_j (or its launch runs kernel by kernel),
// so every chain between them starts a launch on d after c_j, or enters d
// from another device. That chain is counted as the third count, but
// without the entries' overheads, so the one added is not counted twice.
double critical_path_us(const std::vector<std::vector<Floor>>& floor, const Chains& chains, const CutSpans& spans) {
  size_t n_nodes = floor.size(), n_devices = n_nodes > 0 ? floor[0].size() : 0;
  // Each device may take its own mix; every combination of the mixes below
  // is tried while there are few devices, one common mix for all otherwise.
  const std::vector<double> kMixes{0.0, 0.25, 0.5, 0.75, 1.0};
  size_t n_combinations = 1;
  if (n_devices <= kMaxCombinedDevices)
    for (size_t d = 0; d < n_devices; ++d) n_combinations *= kMixes.size();
  else
    n_combinations = kMixes.size();
  double critical_path = 0;
  std::vector<std::vector<double>> finish(n_nodes, std::vector<double>(n_devices, kInfinity));
  std::vector<double> lambda(n_devices);
  for (size_t combination = 0; combination < 3 * n_combinations; ++combination) {
    auto count = static_cast<ChainCount>(combination / n_combinations);
    for (size_t d = 0, rest = combination % n_combinations; d < n_devices; ++d) {
      lambda[d] = kMixes[rest % kMixes.size()];
      if (n_devices <= kMaxCombinedDevices) rest /= kMixes.size();
    }
    double longest = 0;
    // [j][e][n][d]: the longest chain from the end of cut node c_j on e to
    // the end of n on d, for the spans that do not fit on a chip.
    std::vector<std::vector<std::vector<std::vector<double>>>> from_cut;
    if (count == ChainCount::kEntries) from_cut = span_chains(floor, chains, spans, lambda);
    for (size_t n = 0; n < n_nodes; ++n) {
      double best_end = kInfinity;
      for (size_t d = 0; d < n_devices; ++d) {
        finish[n][d] = kInfinity;
        if (!floor[n][d].runs()) continue;
        // A kernel of its own counted whole takes the values it reads and
        // writes in its floor, so its edges leave them out.
        bool whole = counts_kernel(chains, n, d, count);
        double ready = start_us(chains, n, d, count);
        for (const Edge& edge : chains.edges_into[n]) {
          double earliest = kInfinity;
          const std::vector<double>& before = finish[static_cast<size_t>(edge.from)];
          for (size_t from = 0; from < n_devices; ++from)
            earliest = std::min(earliest,
                                before[from] + edge_cost_us(edge, chains, from, d, lambda[from], lambda[d], count,
                                                            counts_kernel(chains, edge.from, from, count), whole));
          ready = std::max(ready, earliest);
        }
        ready = std::max(ready, late_load_start_us(n, d, floor, chains, finish, lambda, count, whole));
        double own_us = whole ? chains.kernel_us[n][d] : floor[n][d].mixed_us(lambda[d], count != ChainCount::kFloors);
        double end = ready + own_us;
        int k = from_cut.empty() ? -1 : spans.cut_index[n];
        for (size_t j = 0; k > 0 && chains.entry_us[d] > 0 && j < static_cast<size_t>(k); ++j) {
          if (!(spans.bytes[j][static_cast<size_t>(k)] > chains.onchip_bytes[d]) || from_cut[j].empty()) continue;
          size_t c_j = static_cast<size_t>(spans.cuts[j]);
          // (that chain ends with n's own floor, as the span's chains count it)
          double earliest = kInfinity;
          for (size_t e = 0; e < n_devices; ++e)
            if (std::isfinite(finish[c_j][e]))
              earliest = std::min(earliest,
                                  finish[c_j][e] + from_cut[j][e][n][d] + (e == d ? chains.entry_us[d] : 0.0));
          end = std::max(end, earliest);
        }
        finish[n][d] = end;
        best_end = std::min(best_end, finish[n][d] + chains.out_us[n][d]);
      }
      longest = std::max(longest, best_end);
    }
    critical_path = std::max(critical_path, longest);
  }
  return critical_path;
}

// The views the combined LP's chains take, each a lambda per device (a mix
// of the compute and memory floors, lower_bound.h): every combination of
// the two pure views while there are few devices, else one common view.
std::vector<std::vector<double>> chain_views(size_t n_devices) {
  std::vector<std::vector<double>> views;
  if (n_devices <= kMaxCombinedDevices) {
    for (unsigned bits = 0; bits < 1u << n_devices; ++bits) {
      std::vector<double> lambda(n_devices);
      for (size_t d = 0; d < n_devices; ++d) lambda[d] = bits >> d & 1u;
      views.push_back(lambda);
    }
  } else {
    views = {std::vector<double>(n_devices, 0.0), std::vector<double>(n_devices, 1.0)};
  }
  return views;
}

// Adds the chains to the capacity LP, on its assignment x (lower_bound.h):
// for each view (a lambda per device), start times s[n] >= 0 with
//   s[n] >= sum_d x[n][d] in_us[n][d]                            graph inputs
//   s[n] >= s[p] + sum_d x[p][d] floor[p][d] + delay[e]          each edge e = p -> n
//   T >= s[n] + sum_d x[n][d] (floor[n][d] + out_us[n][d])       n without successors, or with graph outputs
// where floor[n][d] = lambda[d] compute_us + (1 - lambda[d]) memory_us,
// and the edge's copy or hand-over, between devices only, is linearised
// (shared by the views):
//   delay[e] >= sum_a sent[e][a] leave_us[e][a],  sent[e][a] >= x[p][a] - x[n][a]
//   delay[e] >= sum_b received[e][b] reach_us[e][b],  received[e][b] >= x[n][b] - x[p][b]
// leave_us[e][a]: the least transfer from a to any other device that runs
// n; reach_us[e][b]: the least into b from any other device that runs p.
// With p on a and n on b != a, sent[e][a] = received[e][b] = 1 and both
// are at most transfer_us[a][b]; with both on one device, all are 0.
//
// With ChainCount::kCarried, the views count each edge with the values it
// passes instead (critical_path_us's second count): floors without the values
// between fusion units (chain_memory_us), and an edge's delay at least its
// least cost on either side, cost[a][b] with p on a and n on b as the
// critical path counts it:
//   delay[e] >= sum_a x[p][a] least[a] + sum_a sent[e][a] (least_other[a] - least[a])
// least[a] = min_b cost[a][b], least_other[a] = min_{b != a} cost[a][b]
// (for a plan, least[a] or least_other[a]: at most cost[a][b]); and the
// same with the reader's device. ChainCount::kEntries counts as the
// critical path's third count: as kCarried, with an on-chip device's
// launch overhead in each edge entering it from another device (none on
// its edges within it) and in the start of each node there.
void add_chains(LinearProgram& lp, const std::vector<std::vector<int>>& x,
                const std::vector<std::vector<Floor>>& floor, const Chains& chains, ChainCount count) {
  bool carry = count != ChainCount::kFloors;
  size_t n_nodes = floor.size(), n_devices = n_nodes > 0 ? floor[0].size() : 0;
  const double kUnbounded = COIN_DBL_MAX;
  // Each edge's delay column (-1 where it is never more than 0).
  std::vector<std::vector<int>> delay(n_nodes);
  for (size_t n = 0; n < n_nodes && !carry; ++n)
    for (const Edge& edge : chains.edges_into[n]) {
      size_t p = static_cast<size_t>(edge.from);
      std::vector<double> leave_us(n_devices, kInfinity), reach_us(n_devices, kInfinity);
      for (size_t a = 0; a < n_devices; ++a)
        for (size_t b = 0; b < n_devices; ++b) {
          if (a == b || x[p][a] < 0 || x[n][b] < 0) continue;
          leave_us[a] = std::min(leave_us[a], edge.transfer_us[a][b]);
          reach_us[b] = std::min(reach_us[b], edge.transfer_us[a][b]);
        }
      int column = -1;
      // One row for each side: sum over devices of the side's indicator
      // (x[p][a] - x[n][a] or the reverse, at least 0) times its delay.
      auto add_side = [&](const std::vector<double>& side_us, const std::vector<int>& from,
                          const std::vector<int>& to) {
        LinearProgram::Terms terms;
        for (size_t d = 0; d < n_devices; ++d) {
          if (from[d] < 0 || !(side_us[d] > 0) || !std::isfinite(side_us[d])) continue;
          int indicator = from[d];
          if (to[d] >= 0) {
            // indicator >= x_from - x_to
            indicator = lp.add_column(0, 1);
            lp.add_row({{from[d], 1.0}, {to[d], -1.0}, {indicator, -1.0}}, -kUnbounded, 0);
          }
          terms.emplace_back(indicator, side_us[d]);
        }
        if (terms.empty()) return;
        if (column < 0) column = lp.add_column(0, kUnbounded);
        terms.emplace_back(column, -1.0);
        lp.add_row(std::move(terms), -kUnbounded, 0);
      };
      add_side(leave_us, x[p], x[n]);
      add_side(reach_us, x[n], x[p]);
      delay[n].push_back(column);
    }

  // Indicator columns, per edge and device, made once and shared by the
  // views that count each edge with the values it passes:
  // sent[e][a] >= x[p][a] - x[n][a] and received[e][b] >= x[n][b] - x[p][b].
  std::vector<std::vector<std::vector<int>>> sent(n_nodes), received(n_nodes);
  for (size_t n = 0; n < n_nodes; ++n) {
    sent[n].assign(chains.edges_into[n].size(), std::vector<int>(n_devices, -2));
    received[n] = sent[n];
  }
  auto indicator = [&](int& column, int from, int to) {
    if (column == -2) {
      column = from;
      if (to >= 0) {
        column = lp.add_column(0, 1);
        lp.add_row({{from, 1.0}, {to, -1.0}, {column, -1.0}}, -kUnbounded, 0);
      }
    }
    return column;
  };
  for (const std::vector<double>& lambda : chain_views(n_devices)) {
    // What edge e = p -> n costs at least with p on a and n on b.
    auto edge_cost = [&](const Edge& edge, size_t a, size_t b) {
      return edge_cost_us(edge, chains, a, b, lambda[a], lambda[b], count);
    };
    // For each side (the producer's device, or the reader's): the delay is
    // at least sum_a x[p][a] least_a + sum_a sent[e][a] (least_other_a -
    // least_a), least_a the least cost with p on a, least_other_a with n
    // elsewhere.
    auto carried = [&](size_t n, size_t e) {
      const Edge& edge = chains.edges_into[n][e];
      size_t p = static_cast<size_t>(edge.from);
      int column = -1;
      for (int side = 0; side < 2; ++side) {
        LinearProgram::Terms terms;
        for (size_t a = 0; a < n_devices; ++a) {
          const std::vector<int>& mine = side == 0 ? x[p] : x[n];
          const std::vector<int>& other = side == 0 ? x[n] : x[p];
          if (mine[a] < 0) continue;
          double least = kInfinity, least_other = kInfinity;
          for (size_t b = 0; b < n_devices; ++b) {
            if (other[b] < 0) continue;
            double us = side == 0 ? edge_cost(edge, a, b) : edge_cost(edge, b, a);
            least = std::min(least, us);
            if (b != a) least_other = std::min(least_other, us);
          }
          if (!std::isfinite(least)) continue;
          if (least > 0) terms.emplace_back(mine[a], least);
          if (std::isfinite(least_other) && least_other > least) {
            int& slot = side == 0 ? sent[n][e][a] : received[n][e][a];
            terms.emplace_back(indicator(slot, mine[a], other[a]), least_other - least);
          }
        }
        if (terms.empty()) continue;
        if (column < 0) column = lp.add_column(0, kUnbounded);
        terms.emplace_back(column, -1.0);
        lp.add_row(std::move(terms), -kUnbounded, 0);
      }
      return column;
    };
    std::vector<int> start(n_nodes);
    for (size_t n = 0; n < n_nodes; ++n) start[n] = lp.add_column(0, kUnbounded);
    // sum_d x[n][d] floor[n][d], with `sign`, plus `extra`[d] per device
    // (left out where infinite, with no link: a weaker row, still valid).
    auto finite_or_0 = [](const std::vector<double>* extra, size_t d) {
      return extra && std::isfinite((*extra)[d]) ? (*extra)[d] : 0.0;
    };
    auto duration = [&](size_t n, double sign, const std::vector<double>* extra) {
      LinearProgram::Terms terms;
      for (size_t d = 0; d < n_devices; ++d)
        if (x[n][d] >= 0)
          terms.emplace_back(x[n][d], sign * (floor[n][d].mixed_us(lambda[d], carry) + finite_or_0(extra, d)));
      return terms;
    };
    for (size_t n = 0; n < n_nodes; ++n) {
      LinearProgram::Terms ready{{start[n], 1.0}};
      for (size_t d = 0; d < n_devices; ++d) {
        double us = start_us(chains, n, d, count);
        if (x[n][d] >= 0 && us > 0 && std::isfinite(us)) ready.emplace_back(x[n][d], -us);
      }
      if (ready.size() > 1) lp.add_row(std::move(ready), 0, kUnbounded);
      for (size_t e = 0; e < chains.edges_into[n].size(); ++e) {
        size_t p = static_cast<size_t>(chains.edges_into[n][e].from);
        LinearProgram::Terms terms = duration(p, -1.0, nullptr);
        terms.emplace_back(start[n], 1.0);
        terms.emplace_back(start[p], -1.0);
        int edge_delay = carry ? carried(n, e) : delay[n][e];
        if (edge_delay >= 0) terms.emplace_back(edge_delay, -1.0);
        lp.add_row(std::move(terms), 0, kUnbounded);
      }
      bool has_outputs =
          std::any_of(chains.out_us[n].begin(), chains.out_us[n].end(), [](double us) { return us > 0; });
      if (chains.has_successor[n] && !has_outputs) continue;
      LinearProgram::Terms end = duration(n, -1.0, &chains.out_us[n]);
      end.emplace_back(0, 1.0);
      end.emplace_back(start[n], -1.0);
      lp.add_row(std::move(end), 0, kUnbounded);
    }
  }
}

}  // namespace

MakespanLowerBound makespan_lower_bound(const Graph& graph, const Platform& platform, const CostModel& cost) {
  // Nodes, not fusion units: a plan may launch any grouping of them.
  std::vector<std::vector<NodeId>> fusion = fusion_units(graph);
  std::vector<int> fusion_unit_of(graph.nodes.size(), -1);
  for (size_t f = 0; f < fusion.size(); ++f)
    for (NodeId id : fusion[f]) fusion_unit_of[id] = static_cast<int>(f);
  std::vector<NodeBytes> moved = node_bytes(graph, fusion_unit_of);
  size_t n_nodes = graph.nodes.size(), n_devices = platform.devices.size();

  std::vector<std::vector<Floor>> floor(n_nodes, std::vector<Floor>(n_devices));
  for (size_t n = 0; n < n_nodes; ++n) {
    NodeId id = static_cast<NodeId>(n);
    bool runs = false;
    for (size_t d = 0; d < n_devices; ++d) {
      floor[n][d] = node_floor(graph, id, fusion[fusion_unit_of[id]], moved[n], platform.devices[d], cost);
      runs = runs || floor[n][d].runs();
    }
    if (!runs)
      throw Error(ErrorCode::kUnsupported, fmt::format("lower bound: no device of platform '{}' runs node '{}' ({})",
                                                       platform.name, graph.nodes[n].name, graph.nodes[n].op_type));
  }

  KernelClasses kernels = kernel_classes(graph, fusion, floor, platform);
  for (const std::vector<NodeId>& members : kernels.classes)
    if (members.size() == 1)
      for (size_t d = 0; d < n_devices; ++d) floor[members[0]][d].own_kernel = kernels.by_kernel[d];

  MakespanLowerBound bound;
  Chains chain_graph = chains(graph, floor, fusion_unit_of, platform, cost);
  std::vector<int> segment = cut_segments(graph);
  bound.critical_path_us = critical_path_us(floor, chain_graph, cut_spans(graph, segment));
  LinearProgram lp;
  std::vector<std::vector<int>> x = add_capacity(lp, graph, floor, fusion, kernels, segment, platform, cost);
  bound.capacity_us = *lp.solve("capacity", LinearProgram::Method::kDualSimplex);
  add_chains(lp, x, floor, chain_graph, ChainCount::kFloors);
  // The combined LP holds the capacity rows, so the capacity bound stands
  // in for it where Clp takes too long (a valid bound, only looser).
  std::optional<double> combined = lp.solve("combined", LinearProgram::Method::kBarrier, kCombinedSeconds);
  bound.combined_us = combined.value_or(bound.capacity_us);
  // Then again with each edge counted with the values it passes, where
  // the graph is small enough (bert, 399 nodes: 2 s more; nasnet, 723
  // nodes: 8 s); it holds the rows above, so it is never less.
  if (combined && n_nodes <= kMaxCarryingNodes) {
    add_chains(lp, x, floor, chain_graph, ChainCount::kCarried);
    std::optional<double> carrying = lp.solve("combined", LinearProgram::Method::kBarrier, kCombinedSeconds);
    if (carrying) bound.combined_us = std::max(bound.combined_us, *carrying);
    // And with the on-chip devices' launches paid as the chains enter them,
    // where there are such devices.
    bool on_chip = std::any_of(chain_graph.entry_us.begin(), chain_graph.entry_us.end(), [](double us) { return us > 0; });
    if (carrying && on_chip) {
      add_chains(lp, x, floor, chain_graph, ChainCount::kEntries);
      std::optional<double> entering = lp.solve("combined", LinearProgram::Method::kBarrier, kCombinedSeconds);
      if (entering) bound.combined_us = std::max(bound.combined_us, *entering);
    }
  }
  bound.us = std::max({bound.critical_path_us, bound.capacity_us, bound.combined_us});
  return bound;
}

}  // namespace hetsched
