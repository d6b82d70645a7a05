// The makespan lower bound (see lower_bound.h).
#include "sched/lower_bound.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <vector>

#include <ClpSimplex.hpp>
#include <CoinPackedMatrix.hpp>
#include <fmt/format.h>

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
  double compute_busy_us = 0;     // FLOPs at peak
  double memory_busy_us = 0;      // bytes that count in its launch's demand, at bandwidth
  // memory_us without the values between fusion units, which the critical
  // path charges on its edges instead
  double chain_memory_us = kInfinity;
  bool roofline = false;  // costed by the roofline (else measured)
  bool runs() const { return std::isfinite(compute_us); }
  double mixed_us(double lambda, bool edges_carry_values) const {
    return lambda * compute_us + (1 - lambda) * (edges_carry_values ? chain_memory_us : memory_us);
  }
};

constexpr double kPerMicrosecond = 1e3;  // GFLOP/s and GB/s to per-microsecond

// min T subject to: every node split over the devices that run it
// (sum_d x[n][d] = 1, x >= 0), and every resource busy at most T:
//   streams of d:     sum_n x[n][d] compute_us[n][d] + copies(d) <= n_streams(d) T
//                     sum_n x[n][d] memory_us[n][d] + copies(d)  <= n_streams(d) T
//   compute of d:     sum_n x[n][d] compute_busy_us[n][d]        <= T
//   bandwidth of d:   sum_n x[n][d] memory_busy_us[n][d] + traffic(d) <= T
//   shared resource:  sum over its devices of the bandwidth terms * share <= T
// where, for each value v produced by p and read by nodes c:
//   sent[v][d] >= x[p][d] - x[c][d], received[v][d] >= x[c][d] - x[p][d]
// (for a whole plan: 1 when v leaves d for another device, or reaches d
// from one). Such a value is an output of its producer's launch and an
// input of its reader's, so it loads both devices' bandwidth:
//   traffic(d) = sum_v (sent[v][d] + received[v][d]) bytes(v) / bandwidth(d)
// on devices costed by the roofline (a measured launch's demand may be
// less). Between memory spaces build_plan copies a value once per space, on
// the lane of its first reader there, and a graph output made outside host
// memory right after its launch, on its producer's lane. So where a memory
// space holds one device d, a value reaching d from another device is a
// copy on d's lanes — but for a graph output reaching host memory (its
// producer copied it), and for any value reaching host memory where two
// other spaces lack a link (a copy between them goes through host memory,
// on the reader's lane):
//   copies(d) = sum_v received[v][d] copy_us(v, d) + sum_outputs x[p][d] copy_us(v, d -> host)
// with received[v][d] >= x[c][d] for a graph input (it starts in host memory).
double capacity_bound(const Graph& graph, const std::vector<std::vector<Floor>>& floor, const Platform& platform,
                      const CostModel& cost) {
  size_t n_nodes = floor.size(), n_devices = platform.devices.size();
  ResourceSharing sharing = resource_sharing(platform);
  // Columns: T, then x[n][d] where the device runs the node, then the
  // traffic and copy columns.
  std::vector<double> col_lower{0}, col_upper{COIN_DBL_MAX}, objective{1};
  auto add_column = [&] {
    col_lower.push_back(0);
    col_upper.push_back(1);
    objective.push_back(0);
    return static_cast<int>(col_lower.size()) - 1;
  };
  std::vector<std::vector<int>> column(n_nodes, std::vector<int>(n_devices, -1));
  for (size_t n = 0; n < n_nodes; ++n)
    for (size_t d = 0; d < n_devices; ++d)
      if (floor[n][d].runs()) column[n][d] = add_column();

  std::vector<double> row_lower, row_upper;
  std::vector<std::vector<std::pair<int, double>>> row_terms;
  auto add_row = [&](std::vector<std::pair<int, double>> terms, double lower, double upper) {
    row_terms.push_back(std::move(terms));
    row_lower.push_back(lower);
    row_upper.push_back(upper);
  };
  for (size_t n = 0; n < n_nodes; ++n) {
    std::vector<std::pair<int, double>> terms;
    for (size_t d = 0; d < n_devices; ++d)
      if (column[n][d] >= 0) terms.emplace_back(column[n][d], 1.0);
    add_row(terms, 1, 1);
  }

  // Busy time terms per device: on its streams (both views), on its
  // bandwidth.
  std::vector<std::vector<std::pair<int, double>>> compute_streams(n_devices), memory_streams(n_devices),
      compute(n_devices), memory(n_devices);
  for (size_t d = 0; d < n_devices; ++d)
    for (size_t n = 0; n < n_nodes; ++n) {
      int col = column[n][d];
      if (col < 0) continue;
      const Floor& f = floor[n][d];
      compute_streams[d].emplace_back(col, f.compute_us);
      memory_streams[d].emplace_back(col, f.memory_us);
      compute[d].emplace_back(col, f.compute_busy_us);
      memory[d].emplace_back(col, f.memory_busy_us);
    }

  // The values between devices.
  std::vector<bool> roofline(n_devices, true);
  std::map<std::string, int> devices_in_space;
  for (size_t d = 0; d < n_devices; ++d) {
    ++devices_in_space[platform.devices[d].memory_space];
    for (size_t n = 0; n < n_nodes; ++n)
      roofline[d] = roofline[d] && (!floor[n][d].runs() || floor[n][d].roofline);
  }
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
        if (copied >= 0) {
          compute_streams[d].emplace_back(copied, copy_us);
          memory_streams[d].emplace_back(copied, copy_us);
        }
        continue;
      }
      // Graph outputs made here go to host memory on the producer's lane.
      if (graph.is_graph_output(v) && x(p, d) >= 0 && device.memory_space != kHostMemory && host >= 0) {
        double copy_us = cost.transfer(bytes, device, platform.devices[static_cast<size_t>(host)]).us;
        if (std::isfinite(copy_us)) {
          compute_streams[d].emplace_back(x(p, d), copy_us);
          memory_streams[d].emplace_back(x(p, d), copy_us);
        }
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
        double copy_us = copy_in_us(bytes, d);
        compute_streams[d].emplace_back(received, copy_us);
        memory_streams[d].emplace_back(received, copy_us);
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
    add_capacity_row(platform.devices[d].n_streams, compute_streams[d]);
    add_capacity_row(platform.devices[d].n_streams, memory_streams[d]);
    add_capacity_row(1, compute[d]);
    add_capacity_row(1, memory[d]);
    if (sharing.resource_of[d] >= 0)
      for (const auto& [col, busy] : memory[d])
        shared[static_cast<size_t>(sharing.resource_of[d])].emplace_back(col, busy * sharing.share[d]);
  }
  for (const auto& terms : shared) add_capacity_row(1, terms);

  CoinPackedMatrix rows(false, 0, 0);
  rows.setDimensions(0, static_cast<int>(col_lower.size()));
  for (const auto& terms : row_terms) {
    std::vector<int> index;
    std::vector<double> element;
    for (const auto& [col, coefficient] : terms) {
      index.push_back(col);
      element.push_back(coefficient);
    }
    rows.appendRow(static_cast<int>(index.size()), index.data(), element.data());
  }
  ClpSimplex lp;
  lp.setLogLevel(0);
  lp.loadProblem(rows, col_lower.data(), col_upper.data(), objective.data(), row_lower.data(), row_upper.data());
  lp.dual();
  if (!lp.isProvenOptimal())
    throw Error(ErrorCode::kRuntime, fmt::format("lower bound: the capacity LP did not solve (Clp status {})",
                                                 lp.status()));
  return lp.objectiveValue();
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
    floor.compute_busy_us = own.flops / (device.peak_gflops * kPerMicrosecond);
    // Spilled bytes take time but are no part of a launch's demand, and a
    // value between launches may be spilled in another plan: only the
    // external bytes surely load the device's bandwidth.
    floor.memory_busy_us = external_us;
    floor.roofline = true;
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
        flops += graph.nodes[n].cost.flops;
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

  // Critical path: finish[n][d], the earliest node n could end on device d
  // if every device were free: after each predecessor ends, on whichever
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
  int host = -1;
  for (size_t d = 0; d < n_devices && host < 0; ++d)
    if (platform.devices[d].memory_space == kHostMemory) host = static_cast<int>(d);
  auto transfer_us = [&](double bytes, size_t from, size_t to) {
    if (from == to || bytes <= 0) return 0.0;
    return cost.transfer(bytes, platform.devices[from], platform.devices[to]).us;
  };
  auto per_byte_us = [&](size_t d) { return 1 / (platform.devices[d].bandwidth_gbps * kPerMicrosecond); };
  struct Edge {
    NodeId from = kNoNode;
    std::vector<double> write_us, read_us;  // per device, at its bandwidth (0 where measured)
    std::vector<double> same_memory_us;     // per device: write and read between fusion units
    std::vector<double> same_chip_us;       // per device: the overhead share on chip (+infinity elsewhere)
    std::vector<std::vector<double>> transfer_us;  // [from][to]
  };
  std::vector<std::vector<Edge>> edges_into(n_nodes);
  std::vector<double> input_bytes(n_nodes, 0), output_bytes(n_nodes, 0);
  for (size_t n = 0; n < n_nodes; ++n) {
    const Node& node = graph.nodes[n];
    std::vector<ValueId> inputs;
    for (ValueId v : node.inputs)
      if (v != kNoValue && std::find(inputs.begin(), inputs.end(), v) == inputs.end()) inputs.push_back(v);
    std::map<NodeId, std::vector<ValueId>> values_from;
    for (ValueId v : inputs) {
      NodeId producer = graph.values[v].producer;
      if (producer == kNoNode) {
        if (!graph.values[v].initializer) input_bytes[n] += graph.values[v].nbytes();
      } else if (producer != static_cast<NodeId>(n)) {
        values_from[producer].push_back(v);
      }
    }
    for (ValueId v : node.outputs)
      if (v != kNoValue && graph.is_graph_output(v)) output_bytes[n] += graph.values[v].nbytes();
    for (const auto& [p, values] : values_from) {
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
      edges_into[n].push_back(std::move(edge));
    }
  }
  // Each device may take its own mix; every combination of the mixes below
  // is tried while there are few devices, one common mix for all otherwise.
  const std::vector<double> kMixes{0.0, 0.25, 0.5, 0.75, 1.0};
  constexpr size_t kMaxCombinedDevices = 3;
  size_t n_combinations = 1;
  if (n_devices <= kMaxCombinedDevices)
    for (size_t d = 0; d < n_devices; ++d) n_combinations *= kMixes.size();
  else
    n_combinations = kMixes.size();
  MakespanLowerBound bound;
  std::vector<std::vector<double>> finish(n_nodes, std::vector<double>(n_devices, kInfinity));
  std::vector<double> lambda(n_devices);
  for (size_t combination = 0; combination < 2 * n_combinations; ++combination) {
    bool edges_carry_values = combination >= n_combinations;
    for (size_t d = 0, rest = combination % n_combinations; d < n_devices; ++d) {
      lambda[d] = kMixes[rest % kMixes.size()];
      if (n_devices <= kMaxCombinedDevices) rest /= kMixes.size();
    }
    double longest = 0;
    for (size_t n = 0; n < n_nodes; ++n) {
      double best_end = kInfinity;
      for (size_t d = 0; d < n_devices; ++d) {
        finish[n][d] = kInfinity;
        if (!floor[n][d].runs()) continue;
        double ready = host >= 0 ? transfer_us(input_bytes[n], static_cast<size_t>(host), d) : 0;
        for (const Edge& edge : edges_into[n]) {
          double earliest = kInfinity;
          const std::vector<double>& before = finish[static_cast<size_t>(edge.from)];
          for (size_t from = 0; from < n_devices; ++from) {
            double edge_us = from == d ? 0 : edge.transfer_us[from][d];
            if (edges_carry_values)
              edge_us += from == d ? std::min(edge.same_chip_us[d], (1 - lambda[d]) * edge.same_memory_us[d])
                                   : (1 - lambda[from]) * edge.write_us[from] + (1 - lambda[d]) * edge.read_us[d];
            earliest = std::min(earliest, before[from] + edge_us);
          }
          ready = std::max(ready, earliest);
        }
        finish[n][d] = ready + floor[n][d].mixed_us(lambda[d], edges_carry_values);
        double out = host >= 0 ? transfer_us(output_bytes[n], d, static_cast<size_t>(host)) : 0;
        best_end = std::min(best_end, finish[n][d] + out);
      }
      longest = std::max(longest, best_end);
    }
    bound.critical_path_us = std::max(bound.critical_path_us, longest);
  }
  bound.capacity_us = capacity_bound(graph, floor, platform, cost);
  bound.us = std::max(bound.critical_path_us, bound.capacity_us);
  return bound;
}

}  // namespace hetsched
