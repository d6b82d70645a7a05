// The roofline and combined (measured, else roofline) cost models.
#include "hetsched/cost_model.h"

#include <algorithm>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "hetsched/error.h"
#include "backends/cpu/program.h"
#include "graph/conv_merge.h"
#include "profile/profile_db.h"

namespace hetsched {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// GFLOP/s and GB/s times 1e3 give FLOP and bytes per microsecond.
constexpr double kPerMicrosecond = 1e3;

// In units of the device's peak_gflops (int8 work at its own rate).
double launch_flops(const Graph& graph, const std::vector<NodeId>& nodes, const PlatformDevice& device) {
  double flops = 0;
  for (NodeId id : nodes) flops += device.peak_equivalent_flops(graph.nodes[id]);
  return flops;
}


bool device_supports_all(const Graph& graph, const std::vector<NodeId>& nodes, const PlatformDevice& device) {
  return std::all_of(nodes.begin(), nodes.end(), [&](NodeId id) { return device.supports(graph.nodes[id]); });
}

// A launch runs as kernels: each node with the nodes the backend fuses into
// its kernel (cpu::fusion_group, cut at the launch's edge, as the CPU
// backend lowers it), and whole Conv units that IOS's operator merge joins
// (conv_merge_key: one wider convolution reading the shared input once,
// though each convolution still pays its launch overhead). Values passed
// between two kernels of one launch go through memory — written out and
// read back — unless the device's on-chip memory holds all of them at once:
// then a real core group's caches keep them, and an emulated accelerator
// runs the whole launch as one kernel (the hardware-aware partitioning of
// Zhao et al., OSDI'23, for a DSA's scratchpad or an NPU's SRAM).
struct Kernel {
  std::vector<NodeId> nodes;
  int n_overheads = 1;
};

struct LaunchShape {
  std::vector<NodeId> members;  // the launch's nodes, sorted
  std::vector<Kernel> kernels;
  bool one_kernel = false;  // an emulated accelerator holding the values between them on chip
  bool cached = false;      // a real core group whose caches hold the values between them
};

LaunchShape launch_shape(const Graph& graph, const std::vector<NodeId>& nodes, const PlatformDevice& device) {
  LaunchShape shape;
  std::vector<NodeId>& members = shape.members;
  members = nodes;
  std::sort(members.begin(), members.end());
  auto inside = [&](NodeId id) { return std::binary_search(members.begin(), members.end(), id); };
  std::map<NodeId, size_t> kernel_of;
  std::map<std::string, size_t> merged;  // conv_merge_key -> its kernel
  // Only Convs reading a value another Conv of the launch reads can merge:
  // the keys (strings) are built for those alone.
  std::map<ValueId, int> conv_readers;
  for (NodeId id : members)
    if (graph.nodes[id].op_type == "Conv" && !graph.nodes[id].inputs.empty()) ++conv_readers[graph.nodes[id].inputs[0]];
  for (NodeId id : members) {
    if (kernel_of.count(id)) continue;
    std::vector<NodeId> group = cpu::fusion_group(graph, id);
    bool whole = std::all_of(group.begin(), group.end(), [&](NodeId n) { return inside(n) && !kernel_of.count(n); });
    if (!whole) group = {id};
    const Node& head = graph.nodes[group[0]];
    bool may_merge = whole && head.op_type == "Conv" && !head.inputs.empty() && conv_readers[head.inputs[0]] > 1;
    std::string key = may_merge ? conv_merge_key(graph, group) : "";
    auto into = key.empty() ? merged.end() : merged.find(key);
    size_t k = into == merged.end() ? shape.kernels.size() : into->second;
    if (k == shape.kernels.size()) {
      shape.kernels.push_back({});
      if (!key.empty()) merged[key] = k;
    } else {
      ++shape.kernels[k].n_overheads;
    }
    for (NodeId n : group) kernel_of[n] = k;
    std::vector<NodeId>& kernel_nodes = shape.kernels[k].nodes;
    kernel_nodes.insert(kernel_nodes.end(), group.begin(), group.end());
  }
  double between = 0;
  for (NodeId id : members)
    for (ValueId v : graph.nodes[id].outputs) {
      if (v == kNoValue) continue;
      bool to_other_kernel = std::any_of(graph.values[v].consumers.begin(), graph.values[v].consumers.end(),
                                         [&](NodeId c) { return inside(c) && kernel_of[c] != kernel_of[id]; });
      if (to_other_kernel) between += graph.values[v].nbytes();
    }
  bool fits_on_chip = between > 0 && device.onchip_bytes > 0 && between <= static_cast<double>(device.onchip_bytes);
  shape.one_kernel = fits_on_chip && device.is_emulated();
  shape.cached = fits_on_chip && !device.is_emulated();
  return shape;
}

// One kernel's roofline time, without its overhead.
double kernel_us(double flops, double bytes, const PlatformDevice& device) {
  return std::max(flops / (device.peak_gflops * kPerMicrosecond), bytes / (device.bandwidth_gbps * kPerMicrosecond));
}

// What kernel `kernel` of a launch moves when the caches keep the values
// between the launch's kernels: what crosses its edge, less what it reads
// from the launch's other kernels and what it writes only for them.
double cached_kernel_bytes(const Graph& graph, const std::vector<NodeId>& kernel,
                           const std::vector<NodeId>& sorted_launch) {
  auto in_launch = [&](NodeId id) {
    return id != kNoNode && std::binary_search(sorted_launch.begin(), sorted_launch.end(), id);
  };
  auto in_kernel = [&](NodeId id) { return std::find(kernel.begin(), kernel.end(), id) != kernel.end(); };
  double bytes = launch_bytes(graph, kernel);
  std::vector<ValueId> from_launch;
  for (NodeId id : kernel) {
    for (ValueId v : graph.nodes[id].inputs)
      if (v != kNoValue && in_launch(graph.values[v].producer) && !in_kernel(graph.values[v].producer))
        from_launch.push_back(v);
    for (ValueId v : graph.nodes[id].outputs) {
      if (v == kNoValue || graph.is_graph_output(v)) continue;
      const std::vector<NodeId>& readers = graph.values[v].consumers;
      bool leaves_kernel = !std::all_of(readers.begin(), readers.end(), in_kernel);
      if (leaves_kernel && std::all_of(readers.begin(), readers.end(), in_launch)) bytes -= graph.values[v].nbytes();
    }
  }
  std::sort(from_launch.begin(), from_launch.end());
  from_launch.erase(std::unique(from_launch.begin(), from_launch.end()), from_launch.end());
  for (ValueId v : from_launch) bytes -= graph.values[v].nbytes();
  return std::max(0.0, bytes);
}

// A launch's roofline time: its kernels one after another, each its launch
// overhead(s) plus max(FLOPs / peak, bytes / bandwidth) of its own — one
// kernel's arithmetic does not hide another's memory traffic — or, for a
// launch that runs as one kernel, one overhead and one such max over all
// its nodes.
Estimate roofline_launch(const Graph& graph, const std::vector<NodeId>& nodes, const PlatformDevice& device) {
  if (!device_supports_all(graph, nodes, device)) return {kInfinity, CostSource::kRoofline};
  if (device.peak_gflops <= 0 || device.bandwidth_gbps <= 0)
    throw Error(ErrorCode::kRuntime, fmt::format("device {} has no peaks: calibrate first", device.name));
  LaunchShape shape = launch_shape(graph, nodes, device);
  if (shape.one_kernel)
    return {device.launch_overhead_us +
                kernel_us(launch_flops(graph, nodes, device), launch_bytes(graph, nodes), device),
            CostSource::kRoofline};
  double us = 0;
  for (const Kernel& kernel : shape.kernels) {
    double bytes =
        shape.cached ? cached_kernel_bytes(graph, kernel.nodes, shape.members) : launch_bytes(graph, kernel.nodes);
    us += device.launch_overhead_us * kernel.n_overheads +
          kernel_us(launch_flops(graph, kernel.nodes, device), bytes, device);
  }
  return {us, CostSource::kRoofline};
}

Estimate link_transfer(double bytes, double latency_us, double bandwidth_gbps) {
  if (bandwidth_gbps <= 0) return {bytes > 0 ? kInfinity : latency_us, CostSource::kLink};
  return {latency_us + bytes / (bandwidth_gbps * kPerMicrosecond), CostSource::kLink};
}

class RooflineCostModel : public CostModel {
 public:
  explicit RooflineCostModel(Platform platform) : platform_(std::move(platform)) {}

  Estimate launch(const Graph& graph, const std::vector<NodeId>& nodes,
                  const PlatformDevice& device) const override {
    return roofline_launch(graph, nodes, device);
  }

  Estimate transfer(double bytes, const PlatformDevice& from, const PlatformDevice& to) const override {
    if (from.name == to.name) return {0, CostSource::kFree};
    if (from.memory_space != to.memory_space) {
      const Link* link = platform_.link(from.memory_space, to.memory_space);
      if (!link) return {kInfinity, CostSource::kLink};
      return link_transfer(bytes, link->latency_us, link->bandwidth_gbps);
    }
    return same_space_handover(bytes, from, to);
  }

 protected:
  virtual Estimate same_space_handover(double bytes, const PlatformDevice& from, const PlatformDevice& to) const {
    return {0, CostSource::kFree};
  }

 private:
  Platform platform_;
};

class CombinedCostModel : public RooflineCostModel {
 public:
  CombinedCostModel(Platform platform, std::shared_ptr<const ProfileDB> db)
      : RooflineCostModel(std::move(platform)), db_(std::move(db)) {}

  Estimate launch(const Graph& graph, const std::vector<NodeId>& nodes,
                  const PlatformDevice& device) const override {
    if (!device_supports_all(graph, nodes, device)) return {kInfinity, CostSource::kRoofline};
    // Emulated devices are never profiled: no signature to build and look up.
    if (device.is_emulated()) return roofline_launch(graph, nodes, device);
    if (auto whole = measurement(device.signature, op_signature(graph, nodes)))
      return {whole->median_us, CostSource::kMeasured};
    if (nodes.size() > 1) {
      double sum = 0;
      bool all_measured = true;
      for (NodeId id : nodes) {
        auto part = measurement(device.signature, op_signature(graph, {id}));
        if (!part) {
          all_measured = false;
          break;
        }
        sum += part->median_us;
      }
      if (all_measured) return {sum, CostSource::kMeasuredSum};
    }
    return roofline_launch(graph, nodes, device);
  }

  // Only a whole launch's co-run time is used: its parts were timed next to
  // other parts, so summing them says nothing about this launch's overlap.
  std::optional<double> corun_us(const Graph& graph, const std::vector<NodeId>& nodes,
                                 const PlatformDevice& device) const override {
    if (nodes.empty() || device.is_emulated() || !device_supports_all(graph, nodes, device)) return std::nullopt;
    auto corun = measurement(device.signature, op_signature(graph, nodes) + "|corun");
    if (!corun) return std::nullopt;
    return corun->median_us;
  }

 protected:
  Estimate same_space_handover(double bytes, const PlatformDevice& from, const PlatformDevice& to) const override {
    auto fit = link_fit(from.signature, to.signature);
    if (!fit) return {0, CostSource::kFree};
    return link_transfer(bytes, fit->latency_us, fit->bandwidth_gbps);
  }

 private:
  // Schedulers ask for the same launches over and over, and the executor's
  // lanes ask from several threads: database answers are kept, under a lock.
  std::optional<ProfiledTime> measurement(const std::string& device_signature, const std::string& op) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto key = std::make_pair(device_signature, op);
    auto it = measurements_.find(key);
    if (it == measurements_.end()) it = measurements_.emplace(key, db_->find(device_signature, op)).first;
    return it->second;
  }

  std::optional<LinkFit> link_fit(const std::string& from_signature, const std::string& to_signature) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto key = std::make_pair(from_signature, to_signature);
    auto it = links_.find(key);
    if (it == links_.end()) it = links_.emplace(key, db_->link(from_signature, to_signature)).first;
    return it->second;
  }

  std::shared_ptr<const ProfileDB> db_;
  mutable std::mutex mutex_;
  mutable std::map<std::pair<std::string, std::string>, std::optional<ProfiledTime>> measurements_;
  mutable std::map<std::pair<std::string, std::string>, std::optional<LinkFit>> links_;
};

}  // namespace

double launch_bytes(const Graph& graph, const std::vector<NodeId>& nodes) {
  if (nodes.size() == 1) {
    const NodeCost& cost = graph.nodes[nodes[0]].cost;
    return cost.bytes_read + cost.bytes_written;
  }
  std::vector<NodeId> members(nodes);
  std::sort(members.begin(), members.end());
  auto inside = [&](NodeId id) { return id != kNoNode && std::binary_search(members.begin(), members.end(), id); };
  double bytes = 0;
  // A value several of the nodes read (one input feeding merged
  // convolutions) is fetched once.
  std::vector<ValueId> read;
  for (NodeId id : nodes) {
    const Node& node = graph.nodes[id];
    for (ValueId v : node.inputs)
      if (v != kNoValue && !inside(graph.values[v].producer)) read.push_back(v);
    for (ValueId v : node.outputs) {
      if (v == kNoValue) continue;
      const Value& value = graph.values[v];
      bool read_outside = graph.is_graph_output(v) ||
                          std::any_of(value.consumers.begin(), value.consumers.end(),
                                      [&](NodeId c) { return !inside(c); });
      if (read_outside) bytes += value.nbytes();
    }
  }
  std::sort(read.begin(), read.end());
  read.erase(std::unique(read.begin(), read.end()), read.end());
  for (ValueId v : read) bytes += graph.values[v].nbytes();
  return bytes;
}

const char* cost_source_name(CostSource source) {
  switch (source) {
    case CostSource::kMeasured: return "measured";
    case CostSource::kMeasuredSum: return "measured-sum";
    case CostSource::kRoofline: return "roofline";
    case CostSource::kLink: return "link";
    case CostSource::kFree: return "free";
  }
  return "unknown";
}

ResourceDemand CostModel::demand(const Graph& graph, const std::vector<NodeId>& nodes, const PlatformDevice& device,
                                 double us) const {
  // A launch that takes no time, or never ends, holds nothing anyone could share.
  if (!(us > 0) || us == kInfinity) return {};
  ResourceDemand demand;
  if (device.peak_gflops > 0)
    demand.compute =
        std::clamp(launch_flops(graph, nodes, device) / (us * device.peak_gflops * kPerMicrosecond), 0.0, 1.0);
  if (device.bandwidth_gbps > 0)
    demand.memory = std::clamp(launch_bytes(graph, nodes) / (us * device.bandwidth_gbps * kPerMicrosecond), 0.0, 1.0);
  return demand;
}

std::optional<double> CostModel::corun_us(const Graph&, const std::vector<NodeId>&, const PlatformDevice&) const {
  return std::nullopt;
}

namespace {

class MemoizingCostModel : public CostModel {
 public:
  explicit MemoizingCostModel(const CostModel& inner) : inner_(inner) {}
  Estimate launch(const Graph& graph, const std::vector<NodeId>& nodes, const PlatformDevice& device) const override {
    return find_or_add(launches_, device, nodes, [&] { return inner_.launch(graph, nodes, device); });
  }
  Estimate transfer(double bytes, const PlatformDevice& from, const PlatformDevice& to) const override {
    return inner_.transfer(bytes, from, to);
  }
  std::optional<double> corun_us(const Graph& graph, const std::vector<NodeId>& nodes,
                                 const PlatformDevice& device) const override {
    return find_or_add(coruns_, device, nodes, [&] { return inner_.corun_us(graph, nodes, device); });
  }
  ResourceDemand demand(const Graph& graph, const std::vector<NodeId>& nodes, const PlatformDevice& device,
                        double us) const override {
    // Kept with the time it was asked for: a search asks with launch()'s
    // answer, the same each time.
    auto [at_us, demand] = find_or_add(demands_, device, nodes, [&] {
      return std::pair{us, inner_.demand(graph, nodes, device, us)};
    });
    return at_us == us ? demand : inner_.demand(graph, nodes, device, us);
  }

 private:
  // Looked up by reference (a search simulates the same launches over and
  // over): the key is copied only when it is new.
  using Key = std::pair<std::string, std::vector<NodeId>>;
  using KeyView = std::pair<const std::string&, const std::vector<NodeId>&>;
  struct KeyHash {
    using is_transparent = void;
    template <typename K>
    size_t operator()(const K& key) const {
      size_t h = std::hash<std::string_view>{}(key.first);
      for (NodeId id : key.second) h = (h ^ static_cast<size_t>(id)) * 0x100000001b3ULL;
      return h;
    }
  };
  struct KeyEqual {
    using is_transparent = void;
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return a.first == b.first && a.second == b.second;
    }
  };
  template <typename Value>
  using Memo = std::unordered_map<Key, Value, KeyHash, KeyEqual>;
  template <typename Value, typename Make>
  static Value find_or_add(Memo<Value>& memo, const PlatformDevice& device, const std::vector<NodeId>& nodes,
                           Make make) {
    auto it = memo.find(KeyView{device.name, nodes});
    if (it == memo.end()) it = memo.emplace(Key{device.name, nodes}, make()).first;
    return it->second;
  }
  const CostModel& inner_;
  mutable Memo<Estimate> launches_;
  mutable Memo<std::optional<double>> coruns_;
  mutable Memo<std::pair<double, ResourceDemand>> demands_;
};

}  // namespace

std::unique_ptr<CostModel> make_memoizing_cost_model(const CostModel& inner) {
  return std::make_unique<MemoizingCostModel>(inner);
}

std::unique_ptr<CostModel> make_roofline_cost_model(const Platform& platform) {
  return std::make_unique<RooflineCostModel>(platform);
}

std::unique_ptr<CostModel> make_combined_cost_model(const Platform& platform, std::shared_ptr<const ProfileDB> db) {
  if (!db) return make_roofline_cost_model(platform);
  return std::make_unique<CombinedCostModel>(platform, std::move(db));
}

}  // namespace hetsched
