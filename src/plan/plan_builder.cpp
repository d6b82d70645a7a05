// Turns placement decisions into a valid plan (see plan_builder.h).
//
// Launches are appended to their lanes in the given order. Synchronisation
// is added on demand: when a lane needs something another lane did (a value
// it produced or copied), it waits on an event recorded right after that
// step. Each lane keeps a vector clock of what it already knows finished, so
// a Wait implied by an earlier one is never added.
#include "plan/plan_builder.h"

#include <algorithm>
#include <cassert>
#include <queue>
#include <string>

#include <fmt/format.h>

#include "backends/cpu/program.h"
#include "hetsched/error.h"

namespace hetsched {

std::vector<std::vector<NodeId>> fusion_units(const Graph& graph) {
  std::vector<bool> taken(graph.nodes.size(), false);
  std::vector<std::vector<NodeId>> units;
  for (NodeId id = 0; id < static_cast<NodeId>(graph.nodes.size()); ++id) {
    if (taken[id]) continue;
    std::vector<NodeId> group = cpu::fusion_group(graph, id);
    if (std::any_of(group.begin(), group.end(), [&](NodeId n) { return taken[n]; })) group = {id};
    for (NodeId n : group) taken[n] = true;
    units.push_back(std::move(group));
  }
  return units;
}

void move_pinned_launches(std::vector<LaunchAssignment>& launches, const Graph& graph, const Platform& platform) {
  if (platform.pinned.empty()) return;
  for (LaunchAssignment& launch : launches)
    for (NodeId id : launch.nodes) {
      auto pin = platform.pinned.find(graph.nodes[id].name);
      if (pin == platform.pinned.end()) continue;
      int device = platform.find_device(pin->second.device);
      if (device != launch.device) {
        launch.device = device;
        launch.stream = 0;
      }
      break;
    }
}

namespace {

// A step while the plan is built; its Record, if any other lane needs one,
// follows it.
struct Slot {
  PlanStep step;
  int record_after = -1;
  std::vector<int> known;  // the lane's vector clock once this step finished
};

struct BuildLane {
  int device = 0;
  int stream = 0;
  std::vector<Slot> slots;
  std::vector<int> known;  // per lane: how many of its slots are known finished here
};

// Where a value is available in a memory space: after a slot, or from the
// start (graph inputs in host memory).
struct Point {
  int lane = -1;  // -1: from the start
  int slot = 0;
};

// Where each value is available, per memory space: a table of values x
// spaces, so that the lookups of a build (thousands per plan, and auto's
// search builds thousands of plans) allocate nothing (holders() does, for
// the copies).
class Availability {
 public:
  Availability(const Graph& graph, const Platform& platform) {
    spaces_.push_back(kHostMemory);
    for (const PlatformDevice& d : platform.devices) spaces_.push_back(d.memory_space);
    std::sort(spaces_.begin(), spaces_.end());  // holders() lists them by name
    spaces_.erase(std::unique(spaces_.begin(), spaces_.end()), spaces_.end());
    points_.assign(graph.values.size() * spaces_.size(), kNowhere);
  }

  // Null when `v` is not in `space` (yet).
  const Point* find(ValueId v, const std::string& space) const {
    int s = index(space);
    if (s < 0 || points_[at(v, s)].lane == kNowhere.lane) return nullptr;
    return &points_[at(v, s)];
  }
  void set(ValueId v, const std::string& space, Point point) {
    int s = index(space);
    assert(s >= 0 && "every space a value goes to is host memory or a device's");
    points_[at(v, s)] = point;
  }
  // The spaces holding `v`, by name.
  std::vector<std::string> holders(ValueId v) const {
    std::vector<std::string> out;
    for (size_t s = 0; s < spaces_.size(); ++s)
      if (points_[at(v, static_cast<int>(s))].lane != kNowhere.lane) out.push_back(spaces_[s]);
    return out;
  }

 private:
  static constexpr Point kNowhere{-2, 0};
  int index(const std::string& space) const {
    for (size_t s = 0; s < spaces_.size(); ++s)
      if (spaces_[s] == space) return static_cast<int>(s);
    return -1;
  }
  size_t at(ValueId v, int space) const { return static_cast<size_t>(v) * spaces_.size() + static_cast<size_t>(space); }

  std::vector<std::string> spaces_;
  std::vector<Point> points_;
};

class PlanBuilder {
 public:
  PlanBuilder(const Graph& graph, const Platform& platform, const std::string& scheduler, bool stamp_identity)
      : graph_(graph),
        platform_(platform),
        scheduler_(scheduler),
        stamp_identity_(stamp_identity),
        available_(graph, platform) {}

  Plan build(const std::vector<LaunchAssignment>& launches) {
    check_cover(launches);
    launches_ = &launches;
    for (ValueId v : graph_.inputs) available_.set(v, kHostMemory, Point{});
    Plan plan;
    plan.placement.assign(graph_.nodes.size(), Placement{});
    for (size_t a = 0; a < launches.size(); ++a) add_launch(launches[a], static_cast<int>(a), plan);

    plan.scheduler = scheduler_;
    plan.model = graph_.source;
    if (stamp_identity_) {
      plan.model_hash = graph_fingerprint(graph_);
      plan.platform_signature = platform_.signature();
    }
    for (const PlatformDevice& d : platform_.devices) plan.devices.push_back(d.name);
    for (BuildLane& lane : lanes_) {
      Lane out{lane.device, lane.stream, {}};
      out.steps.reserve(lane.slots.size() * 2);
      for (Slot& slot : lane.slots) {
        out.steps.push_back(std::move(slot.step));
        if (slot.record_after >= 0) {
          PlanStep record;
          record.kind = StepKind::kRecord;
          record.event = slot.record_after;
          out.steps.push_back(record);
        }
      }
      plan.lanes.push_back(std::move(out));
    }
    plan.n_events = n_events_;
    return plan;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(ErrorCode::kUsage, fmt::format("build_plan ({}): {}", scheduler_, what));
  }

  void check_cover(const std::vector<LaunchAssignment>& launches) {
    launch_of_node_.assign(graph_.nodes.size(), -1);
    for (size_t a = 0; a < launches.size(); ++a) {
      const LaunchAssignment& launch = launches[a];
      if (launch.nodes.empty()) fail(fmt::format("launch {} has no node", a));
      if (launch.device < 0 || launch.device >= static_cast<int>(platform_.devices.size()))
        fail(fmt::format("launch {}: device index {} is not one of the platform's {} devices", a, launch.device,
                         platform_.devices.size()));
      const PlatformDevice& device = platform_.devices[launch.device];
      if (launch.stream < 0 || launch.stream >= device.n_streams)
        fail(fmt::format("launch {}: stream {} is out of range ({} has {})", a, launch.stream, device.name,
                         device.n_streams));
      for (auto [what, stream] : {std::pair{"push_stream", launch.push_stream}, {"pull_stream", launch.pull_stream}})
        if (stream < -1 || stream >= device.n_streams)
          fail(fmt::format("launch {}: {} {} is out of range ({} has {})", a, what, stream, device.name,
                           device.n_streams));
      for (NodeId id : launch.nodes) {
        if (id < 0 || id >= static_cast<NodeId>(graph_.nodes.size()))
          fail(fmt::format("launch {}: node id {} is not in the graph", a, id));
        if (launch_of_node_[id] >= 0)
          fail(fmt::format("{} is in launches {} and {}", graph_.nodes[id].label(), launch_of_node_[id], a));
        launch_of_node_[id] = static_cast<int>(a);
        if (!device.supports(graph_.nodes[id]))
          fail(fmt::format("launch {}: {} does not run {} ({})", a, device.name, graph_.nodes[id].label(),
                           device.why_not(graph_.nodes[id])));
      }
    }
    for (NodeId id = 0; id < static_cast<NodeId>(graph_.nodes.size()); ++id)
      if (launch_of_node_[id] < 0) fail(fmt::format("{} is in no launch", graph_.nodes[id].label()));
  }

  int lane_for(int device, int stream) {
    for (size_t l = 0; l < lanes_.size(); ++l)
      if (lanes_[l].device == device && lanes_[l].stream == stream) return static_cast<int>(l);
    lanes_.push_back(BuildLane{device, stream, {}, {}});
    return static_cast<int>(lanes_.size() - 1);
  }

  std::vector<int>& known(int lane) {
    lanes_[lane].known.resize(lanes_.size(), 0);
    return lanes_[lane].known;
  }

  int append(int lane, PlanStep step) {
    BuildLane& l = lanes_[lane];
    int slot = static_cast<int>(l.slots.size());
    std::vector<int>& clock = known(lane);
    clock[lane] = slot + 1;
    l.slots.push_back(Slot{std::move(step), -1, clock});
    return slot;
  }

  // Makes `point` happen before the next step of `lane`.
  void sync(int lane, Point point) {
    if (point.lane < 0 || point.lane == lane) return;
    if (known(lane)[point.lane] > point.slot) return;
    Slot& source = lanes_[point.lane].slots[point.slot];
    if (source.record_after < 0) source.record_after = n_events_++;
    PlanStep wait;
    wait.kind = StepKind::kWait;
    wait.event = source.record_after;
    std::vector<int>& clock = known(lane);
    const std::vector<int>& theirs = source.known;
    for (size_t l = 0; l < theirs.size(); ++l) clock[l] = std::max(clock[l], theirs[l]);
    append(lane, wait);
  }

  const std::string& space_of(int lane) const { return platform_.devices[lanes_[lane].device].memory_space; }

  void copy(ValueId v, int lane, const std::string& from, const std::string& to) {
    sync(lane, *available_.find(v, from));
    PlanStep step;
    step.kind = StepKind::kCopy;
    step.value = v;
    step.from_space = from;
    step.to_space = to;
    available_.set(v, to, Point{lane, append(lane, step)});
  }

  // Makes `v` available in `space` for the next step of `lane`: a Wait for
  // whoever put it there, or a Copy on this lane from a space holding it
  // (over host memory when no direct link exists).
  void make_available(ValueId v, int lane, const std::string& space) {
    if (const Point* here = available_.find(v, space)) {
      sync(lane, *here);
      return;
    }
    std::vector<std::string> holders = available_.holders(v);
    for (const std::string& from : holders)
      if (platform_.link(from, space)) {
        copy(v, lane, from, space);
        return;
      }
    if (space != kHostMemory && platform_.link(kHostMemory, space)) {
      bool host_reachable = available_.find(v, kHostMemory) != nullptr;
      for (const std::string& from : holders) host_reachable = host_reachable || platform_.link(from, kHostMemory);
      if (host_reachable) {
        make_available(v, lane, kHostMemory);
        copy(v, lane, kHostMemory, space);
        return;
      }
    }
    fail(fmt::format("no link brings '{}' from {} to memory space '{}'", graph_.values[v].name,
                     holders.empty() ? std::string("anywhere") : fmt::format("{}", fmt::join(holders, ", ")),
                     space));
  }

  void add_launch(const LaunchAssignment& launch, int index, Plan& plan) {
    int lane = lane_for(launch.device, launch.stream);
    const std::string space = space_of(lane);
    // Exclusion first: once the last launch on every overlapping device is
    // known finished, no launch sharing this lane's cores can run until this
    // one ends (each later one waits in turn), so the data waits below are
    // waits on disjoint cores only.
    for (size_t d = 0; d < last_launch_.size(); ++d)
      if (platform_.overlapping(launch.device, static_cast<int>(d))) sync(lane, last_launch_[d]);
    for (size_t k = 0; k < launch.nodes.size(); ++k) {
      const Node& node = graph_.nodes[launch.nodes[k]];
      for (ValueId v : node.inputs) {
        if (v == kNoValue || graph_.values[v].is_constant()) continue;
        NodeId producer = graph_.values[v].producer;
        if (producer != kNoNode && launch_of_node_[producer] == index) {
          auto pos = std::find(launch.nodes.begin(), launch.nodes.end(), producer) - launch.nodes.begin();
          if (static_cast<size_t>(pos) >= k)
            fail(fmt::format("launch {}: {} comes before {}, which produces its input '{}'", index, node.label(),
                             graph_.nodes[producer].label(), graph_.values[v].name));
          continue;
        }
        if (producer != kNoNode && launch_of_node_[producer] > index)
          fail(fmt::format("launch {} ({}) comes before launch {}, which produces its input '{}'", index,
                           node.label(), launch_of_node_[producer], graph_.values[v].name));
        if (launch.pull_stream >= 0 && launch.pull_stream != launch.stream && !available_.find(v, space))
          make_available(v, lane_for(launch.device, launch.pull_stream), space);
        make_available(v, lane, space);
      }
    }
    PlanStep step;
    step.kind = StepKind::kLaunch;
    step.nodes = launch.nodes;
    Point done{lane, append(lane, step)};
    if (!platform_.devices[launch.device].overlaps.empty()) {
      if (last_launch_.empty()) last_launch_.assign(platform_.devices.size(), Point{});
      last_launch_[launch.device] = done;
    }
    std::string reason = stamp_identity_ ? pinned_reason(launch) : std::string();
    for (NodeId id : launch.nodes) {
      plan.placement[id] = Placement{launch.device, lane, reason};
      for (ValueId v : graph_.nodes[id].outputs)
        if (v != kNoValue) available_.set(v, space, done);
    }
    // Copies out, on the lane the launch pushes from (created only when a
    // copy needs it; with push_spread, the next stream each time).
    int n_pushed = 0;
    auto copy_lane = [&] {
      if (launch.push_stream < 0) return lane;
      int stream = launch.push_stream;
      if (launch.push_spread) stream = (stream + n_pushed++) % platform_.devices[launch.device].n_streams;
      return lane_for(launch.device, stream);
    };
    auto push = [&](ValueId v, const std::string& to) {
      if (to != space && !available_.find(v, to)) make_available(v, copy_lane(), to);
    };
    for (NodeId id : launch.nodes)
      for (ValueId v : graph_.nodes[id].outputs) {
        if (v == kNoValue) continue;
        if (launch.push_stream >= 0)
          for (NodeId reader : graph_.values[v].consumers)
            push(v, platform_.devices[(*launches_)[static_cast<size_t>(launch_of_node_[reader])].device].memory_space);
        if (graph_.is_graph_output(v)) push(v, kHostMemory);
      }
  }

  // A launch holding a pinned node says so first: the scheduler had no
  // choice (its other nodes run fused with the pinned one).
  std::string pinned_reason(const LaunchAssignment& launch) const {
    for (NodeId id : launch.nodes) {
      auto pin = platform_.pinned.find(graph_.nodes[id].name);
      if (pin == platform_.pinned.end()) continue;
      std::string says = fmt::format("pinned by {}", pin->second.text());
      if (launch.reason.find(says) != std::string::npos) return launch.reason;  // rebuilt from a plan's launches
      return launch.reason.empty() ? says : says + "; " + launch.reason;
    }
    return launch.reason;
  }

  const Graph& graph_;
  const Platform& platform_;
  std::string scheduler_;
  bool stamp_identity_;
  std::vector<BuildLane> lanes_;
  std::vector<int> launch_of_node_;
  const std::vector<LaunchAssignment>* launches_ = nullptr;  // while build() runs
  Availability available_;
  // Per device with overlaps, its latest launch so far (lane -1: none yet);
  // empty while there is none.
  std::vector<Point> last_launch_;
  int n_events_ = 0;
};

}  // namespace

Plan one_device_plan(const Graph& graph, const Platform& platform, int device, const std::string& scheduler,
                     const std::string& reason) {
  std::vector<LaunchAssignment> launches;
  for (auto& unit : fusion_units(graph)) launches.push_back({unit, device, 0, reason});
  return build_plan(graph, platform, launches, scheduler);
}

Plan build_plan(const Graph& graph, const Platform& platform, const std::vector<LaunchAssignment>& launches,
                const std::string& scheduler, bool stamp_identity) {
  return PlanBuilder(graph, platform, scheduler, stamp_identity).build(launches);
}

std::vector<LaunchAssignment> plan_launches(const Plan& plan, const Graph& graph, const Platform& platform) {
  std::vector<LaunchAssignment> launches;
  std::vector<int> launch_of(graph.nodes.size(), -1);
  std::vector<std::vector<int>> successors;
  std::vector<int> n_predecessors;
  for (const Lane& lane : plan.lanes) {
    int device = platform.find_device(plan.devices[lane.device]);
    int previous = -1;
    for (const PlanStep& step : lane.steps) {
      if (step.kind != StepKind::kLaunch) continue;
      int index = static_cast<int>(launches.size());
      const std::string& reason = step.nodes.empty() ? std::string() : plan.placement[step.nodes.front()].reason;
      launches.push_back({step.nodes, device, lane.stream, reason});
      for (NodeId id : step.nodes) launch_of[id] = index;
      successors.emplace_back();
      n_predecessors.push_back(0);
      if (previous >= 0) {  // the lane's order
        successors[previous].push_back(index);
        ++n_predecessors[index];
      }
      previous = index;
    }
  }
  for (size_t l = 0; l < launches.size(); ++l)
    for (NodeId id : launches[l].nodes)
      for (ValueId v : graph.nodes[id].inputs) {
        if (v == kNoValue || graph.values[v].producer == kNoNode) continue;
        int from = launch_of[graph.values[v].producer];
        if (from < 0 || from == static_cast<int>(l)) continue;
        successors[from].push_back(static_cast<int>(l));
        ++n_predecessors[l];
      }
  auto first_node = [&](int l) {
    return launches[l].nodes.empty() ? NodeId{0} : *std::min_element(launches[l].nodes.begin(), launches[l].nodes.end());
  };
  using Entry = std::pair<NodeId, int>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> ready;
  for (size_t l = 0; l < launches.size(); ++l)
    if (n_predecessors[l] == 0) ready.push({first_node(static_cast<int>(l)), static_cast<int>(l)});
  std::vector<LaunchAssignment> ordered;
  while (!ready.empty()) {
    int l = ready.top().second;
    ready.pop();
    ordered.push_back(launches[l]);
    for (int s : successors[l])
      if (--n_predecessors[s] == 0) ready.push({first_node(s), s});
  }
  if (ordered.size() != launches.size())
    throw Error(ErrorCode::kInvalidFile, fmt::format("plan '{}': its launches wait on each other in a cycle",
                                                     plan.scheduler));
  return ordered;
}

}  // namespace hetsched
