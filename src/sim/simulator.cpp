// Discrete-event simulation of a plan with fluid co-run interference.
#include "sim/simulator.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "hetsched/error.h"

namespace hetsched {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
constexpr int kNoResource = -1;

// What a Launch or Copy costs when it runs alone, fixed before the run.
struct StepWork {
  double alone_us = 0;
  ResourceDemand demand;  // launches only; copies load no shared resource
  // Measured co-run time over time alone (>= 1), applied while another
  // device of the shared resource runs a launch; 0 when not measured.
  double corun_slowdown = 0;
};

struct BusyInterval {
  double start = 0, end = 0;
};

class Simulation {
 public:
  Simulation(const Plan& plan, const Graph& graph, const Platform& platform, const CostModel& cost,
             const SimOptions& options)
      : plan_(plan), graph_(graph), platform_(platform), cost_(cost), options_(options) {}

  SimResult run() {
    resolve_devices();
    index_shared_resources();
    estimate_steps();
    walk_plan();
    return finish_result();
  }

 private:
  // ------------------------------------------------------------ set-up

  void resolve_devices() {
    for (const std::string& name : plan_.devices) {
      int index = platform_.find_device(name);
      if (index < 0)
        throw Error(ErrorCode::kInvalidFile,
                    fmt::format("plan: device '{}' is not in platform '{}'", name, platform_.name));
      platform_device_of_.push_back(index);
    }
    for (size_t l = 0; l < plan_.lanes.size(); ++l) {
      int device = plan_.lanes[l].device;
      if (device < 0 || device >= static_cast<int>(plan_.devices.size()))
        throw Error(ErrorCode::kInvalidFile, fmt::format("plan: lane {} names device {}, the plan has {}", l,
                                                         device, plan_.devices.size()));
      lane_device_.push_back(platform_device_of_[device]);
    }
  }

  const PlatformDevice& lane_device(size_t lane) const { return platform_.devices[lane_device_[lane]]; }

  void index_shared_resources() {
    ResourceSharing sharing = resource_sharing(platform_);
    resource_of_ = std::move(sharing.resource_of);
    share_of_resource_ = std::move(sharing.share);
    n_resources_ = sharing.n_resources;
  }

  void count(CostSource source) { ++result_.n_estimates[static_cast<int>(source)]; }

  void estimate_steps() {
    std::vector<int> producer_lane(graph_.values.size(), -1);
    for (size_t l = 0; l < plan_.lanes.size(); ++l)
      for (const PlanStep& step : plan_.lanes[l].steps)
        if (step.kind == StepKind::kLaunch)
          for (NodeId id : step.nodes)
            for (ValueId v : graph_.nodes[id].outputs)
              if (v != kNoValue) producer_lane[v] = static_cast<int>(l);

    work_.resize(plan_.lanes.size());
    for (size_t l = 0; l < plan_.lanes.size(); ++l) {
      const auto& steps = plan_.lanes[l].steps;
      work_[l].resize(steps.size());
      for (size_t s = 0; s < steps.size(); ++s) {
        if (steps[s].kind == StepKind::kLaunch) work_[l][s] = launch_work(l, s, steps[s], producer_lane);
        if (steps[s].kind == StepKind::kCopy) work_[l][s] = copy_work(l, s, steps[s]);
      }
    }
  }

  StepWork launch_work(size_t lane, size_t index, const PlanStep& step, const std::vector<int>& producer_lane) {
    const PlatformDevice& device = lane_device(lane);
    Estimate estimate = cost_.launch(graph_, step.nodes, device);
    count(estimate.source);
    if (!std::isfinite(estimate.us))
      throw Error(ErrorCode::kInvalidFile, fmt::format("plan: lane {} step {}: {} has no finite cost on {}", lane,
                                                       index, launch_name(step.nodes), device.name));
    StepWork work;
    work.alone_us = estimate.us;
    work.demand = cost_.demand(graph_, step.nodes, device, estimate.us);
    if (estimate.us > 0)
      if (std::optional<double> corun = cost_.corun_us(graph_, step.nodes, device); corun && std::isfinite(*corun))
        work.corun_slowdown = std::max(1.0, *corun / estimate.us);

    // Values produced on another lane of this memory space arrive without a
    // Copy: the reader pays the hand-over (its wake-up, the bytes pulled
    // from the other device's caches) once per value it reads.
    std::vector<ValueId> handed_over;
    for (NodeId id : step.nodes)
      for (ValueId v : graph_.nodes[id].inputs) {
        if (v == kNoValue || producer_lane[v] < 0 || producer_lane[v] == static_cast<int>(lane)) continue;
        if (std::find(handed_over.begin(), handed_over.end(), v) != handed_over.end()) continue;
        const PlatformDevice& producer = lane_device(producer_lane[v]);
        if (producer.memory_space != device.memory_space) continue;
        handed_over.push_back(v);
        Estimate handover = cost_.transfer(graph_.values[v].nbytes(), producer, device);
        count(handover.source);
        work.alone_us += handover.us;
      }
    return work;
  }

  // A device of `space`, preferring the plan's own devices; -1 when none.
  int device_in_space(const std::string& space) const {
    for (int d : platform_device_of_)
      if (platform_.devices[d].memory_space == space) return d;
    for (size_t d = 0; d < platform_.devices.size(); ++d)
      if (platform_.devices[d].memory_space == space) return static_cast<int>(d);
    return -1;
  }

  StepWork copy_work(size_t lane, size_t index, const PlanStep& step) {
    if (step.value < 0 || step.value >= static_cast<ValueId>(graph_.values.size()))
      throw Error(ErrorCode::kInvalidFile, fmt::format("plan: lane {} step {}: copy of an unknown value", lane, index));
    double bytes = graph_.values[step.value].nbytes();
    // The copy runs on the lane's device: it is the endpoint in its own
    // space; any device of the other space stands for the other end.
    int own = lane_device_[lane];
    const std::string& own_space = platform_.devices[own].memory_space;
    int from = own_space == step.from_space ? own : device_in_space(step.from_space);
    int to = own_space == step.to_space && from != own ? own : device_in_space(step.to_space);
    Estimate estimate;
    if (from >= 0 && to >= 0) {
      estimate = cost_.transfer(bytes, platform_.devices[from], platform_.devices[to]);
    } else if (const Link* link = platform_.link(step.from_space, step.to_space)) {
      estimate.source = CostSource::kLink;
      estimate.us = link->latency_us + (link->bandwidth_gbps > 0 ? bytes / (link->bandwidth_gbps * 1e3) : 0);
    } else {
      estimate = {kInfinity, CostSource::kLink};
    }
    count(estimate.source);
    if (!std::isfinite(estimate.us))
      throw Error(ErrorCode::kInvalidFile,
                  fmt::format("plan: lane {} step {}: no link moves '{}' from {} to {}", lane, index,
                              graph_.values[step.value].name, step.from_space, step.to_space));
    return {estimate.us, {}};
  }

  // ------------------------------------------------------------ the walk

  // Runs every lane as far as it can at `now_`: Records fire, satisfied
  // Waits pass, and the first Launch or Copy starts.
  void advance(size_t lane) {
    const auto& steps = plan_.lanes[lane].steps;
    size_t& i = next_step_[lane];
    while (i < steps.size()) {
      const PlanStep& step = steps[i];
      if (step.kind == StepKind::kRecord) {
        check_event(lane, step.event);
        event_time_[step.event] = now_;
        for (size_t waiter : waiters_[step.event]) ready_.push_back(waiter);
        waiters_[step.event].clear();
        ++i;
      } else if (step.kind == StepKind::kWait) {
        check_event(lane, step.event);
        if (waiting_since_[lane] < 0) waiting_since_[lane] = now_;
        if (event_time_[step.event] < 0) {
          waiters_[step.event].push_back(lane);
          return;
        }
        add_event(lane, fmt::format("wait e{}", step.event), "wait", waiting_since_[lane], "", -1);
        waiting_since_[lane] = -1;
        ++i;
      } else {
        started_at_[lane] = now_;
        remaining_us_[lane] = work_[lane][i].alone_us;
        slowdown_[lane] = 1;
        running_.push_back(lane);
        rates_stale_ = true;
        return;
      }
    }
    if (!finished_[lane]) {
      finished_[lane] = true;
      makespan_ = std::max(makespan_, now_);
    }
  }

  void check_event(size_t lane, int event) const {
    if (event < 0 || event >= plan_.n_events)
      throw Error(ErrorCode::kInvalidFile,
                  fmt::format("plan: lane {} uses event {}, the plan has {}", lane, event, plan_.n_events));
  }

  // Fluid model: each shared resource's load is the sum of its running
  // launches' demands; a launch runs at 1 / (the largest load above 1 among
  // its device's compute, its device's bandwidth and the shared resource).
  // The demands come from roofline peaks and miss how much two busy core
  // groups slow each other on a real machine (shared caches, the host's
  // scheduling of virtual cores), so a
  // measured co-run slowdown overrides a smaller fluid one while another
  // device of the resource runs a launch.
  void update_rates() {
    rates_stale_ = false;
    if (!options_.interference) return;
    std::fill(compute_load_.begin(), compute_load_.end(), 0.0);
    std::fill(memory_load_.begin(), memory_load_.end(), 0.0);
    std::fill(resource_load_.begin(), resource_load_.end(), 0.0);
    for (size_t lane : running_) {
      if (!is_launch(lane)) continue;
      int d = lane_device_[lane];
      const ResourceDemand& demand = work_[lane][next_step_[lane]].demand;
      compute_load_[d] += demand.compute;
      memory_load_[d] += demand.memory;
      if (resource_of_[d] != kNoResource) resource_load_[resource_of_[d]] += demand.memory * share_of_resource_[d];
    }
    for (size_t lane : running_) {
      if (!is_launch(lane)) continue;
      int d = lane_device_[lane];
      double load = std::max({1.0, compute_load_[d], memory_load_[d]});
      if (resource_of_[d] != kNoResource) load = std::max(load, resource_load_[resource_of_[d]]);
      double corun = work_[lane][next_step_[lane]].corun_slowdown;
      if (corun > load && another_device_of_the_resource_runs_a_launch(lane)) load = corun;
      slowdown_[lane] = load;
    }
  }

  bool another_device_of_the_resource_runs_a_launch(size_t lane) const {
    int d = lane_device_[lane];
    if (resource_of_[d] == kNoResource) return false;
    return std::any_of(running_.begin(), running_.end(), [&](size_t other) {
      int od = lane_device_[other];
      return od != d && resource_of_[od] == resource_of_[d] && is_launch(other);
    });
  }

  bool is_launch(size_t lane) const { return plan_.lanes[lane].steps[next_step_[lane]].kind == StepKind::kLaunch; }

  void walk_plan() {
    size_t n_lanes = plan_.lanes.size();
    next_step_.assign(n_lanes, 0);
    finished_.assign(n_lanes, false);
    waiting_since_.assign(n_lanes, -1);
    started_at_.assign(n_lanes, 0);
    remaining_us_.assign(n_lanes, 0);
    slowdown_.assign(n_lanes, 1);
    event_time_.assign(std::max(plan_.n_events, 0), -1);
    waiters_.assign(std::max(plan_.n_events, 0), {});
    compute_load_.assign(platform_.devices.size(), 0);
    memory_load_.assign(platform_.devices.size(), 0);
    resource_load_.assign(n_resources_, 0);
    busy_.assign(plan_.devices.size(), {});

    for (size_t l = 0; l < n_lanes; ++l) ready_.push_back(l);
    while (true) {
      while (!ready_.empty()) {
        size_t lane = ready_.back();
        ready_.pop_back();
        advance(lane);
      }
      if (running_.empty()) break;
      if (rates_stale_) update_rates();

      size_t first = running_[0];
      double next = kInfinity;
      for (size_t lane : running_) {
        double end = now_ + remaining_us_[lane] * slowdown_[lane];
        if (end < next) {
          next = end;
          first = lane;
        }
      }
      double elapsed = next - now_;
      for (size_t lane : running_) remaining_us_[lane] -= elapsed / slowdown_[lane];
      now_ = next;
      remaining_us_[first] = 0;

      std::vector<size_t> still_running;
      for (size_t lane : running_) {
        double tolerance = 1e-9 * (1.0 + work_[lane][next_step_[lane]].alone_us);
        if (remaining_us_[lane] <= tolerance) {
          end_step(lane);
          ready_.push_back(lane);
        } else {
          still_running.push_back(lane);
        }
      }
      running_ = std::move(still_running);
      rates_stale_ = true;
    }

    for (size_t l = 0; l < n_lanes; ++l)
      if (!finished_[l]) {
        const PlanStep& step = plan_.lanes[l].steps[next_step_[l]];
        throw Error(ErrorCode::kInvalidFile, fmt::format("plan cannot finish: lane {} step {} waits on event {}, "
                                                         "which is never recorded",
                                                         l, next_step_[l], step.event));
      }
  }

  void end_step(size_t lane) {
    const PlanStep& step = plan_.lanes[lane].steps[next_step_[lane]];
    if (step.kind == StepKind::kLaunch) result_.launch_end_sum_us += now_;
    if (!options_.trace) {
      // No events: only the busy intervals below.
    } else if (step.kind == StepKind::kLaunch) {
      std::string op_types;
      for (NodeId id : step.nodes) op_types += (op_types.empty() ? "" : "+") + graph_.nodes[id].op_type;
      add_event(lane, launch_name(step.nodes), "launch", started_at_[lane], op_types,
                step.nodes.empty() ? -1 : step.nodes[0]);
    } else {
      add_event(lane,
                fmt::format("copy '{}' {}->{}", graph_.values[step.value].name, step.from_space, step.to_space),
                "copy", started_at_[lane], "", -1);
    }
    busy_[plan_.lanes[lane].device].push_back({started_at_[lane], now_});
    ++next_step_[lane];
  }

  void add_event(size_t lane, std::string name, const char* category, double start, std::string op_name,
                 int node_index) {
    TraceEvent event;
    event.name = std::move(name);
    event.category = category;
    event.start_us = start;
    event.duration_us = now_ - start;
    event.device = plan_.lanes[lane].device;
    event.stream = plan_.lanes[lane].stream;
    event.op_name = std::move(op_name);
    event.provider = plan_.devices[event.device];
    event.node_index = node_index;
    result_.trace.events.push_back(std::move(event));
  }

  // "Conv 'c1' + Relu 'r1'"; a long launch names its first nodes and a count.
  std::string launch_name(const std::vector<NodeId>& nodes) const {
    constexpr size_t kNamed = 3;
    std::string name;
    for (size_t i = 0; i < nodes.size() && i < kNamed; ++i)
      name += (i ? " + " : "") + graph_.nodes[nodes[i]].label();
    if (nodes.size() > kNamed) name += fmt::format(" + {} more", nodes.size() - kNamed);
    return name;
  }

  // ------------------------------------------------------------ result

  // Busy time is the union of a device's intervals: its streams' overlapping
  // work counts once, so utilisation stays within [0, 1].
  static double union_length(std::vector<BusyInterval> intervals) {
    std::sort(intervals.begin(), intervals.end(),
              [](const BusyInterval& a, const BusyInterval& b) { return a.start < b.start; });
    double total = 0, covered_until = -kInfinity;
    for (const auto& interval : intervals) {
      double start = std::max(interval.start, covered_until);
      if (interval.end > start) total += interval.end - start;
      covered_until = std::max(covered_until, interval.end);
    }
    return total;
  }

  SimResult finish_result() {
    result_.makespan_us = makespan_;
    result_.trace.kind = "simulated";
    result_.trace.devices = plan_.devices;
    result_.trace.makespan_us = makespan_;
    for (const auto& intervals : busy_) {
      double busy = union_length(intervals);
      result_.busy_us.push_back(busy);
      result_.utilisation.push_back(makespan_ > 0 ? busy / makespan_ : 0);
    }
    return std::move(result_);
  }

  const Plan& plan_;
  const Graph& graph_;
  const Platform& platform_;
  const CostModel& cost_;
  const SimOptions& options_;

  std::vector<int> platform_device_of_;  // per plan device
  std::vector<int> lane_device_;         // per lane: platform device index
  std::vector<int> resource_of_;         // per platform device: shared resource or kNoResource
  std::vector<double> share_of_resource_;  // per platform device: its bandwidth / the resource's
  int n_resources_ = 0;
  std::vector<std::vector<StepWork>> work_;  // per lane, per step

  double now_ = 0;
  double makespan_ = 0;
  std::vector<size_t> next_step_;
  std::vector<bool> finished_;
  std::vector<double> waiting_since_;  // -1 when the lane is not held by a Wait
  std::vector<double> started_at_;
  std::vector<double> remaining_us_;   // of the running step, in alone-microseconds
  std::vector<double> slowdown_;
  std::vector<double> event_time_;     // -1 until recorded
  std::vector<std::vector<size_t>> waiters_;
  std::vector<size_t> ready_;
  std::vector<size_t> running_;
  bool rates_stale_ = false;
  std::vector<double> compute_load_, memory_load_, resource_load_;
  std::vector<std::vector<BusyInterval>> busy_;  // per plan device
  SimResult result_;
};

}  // namespace

ResourceSharing resource_sharing(const Platform& platform) {
  const auto& devices = platform.devices;
  ResourceSharing sharing;
  sharing.resource_of.assign(devices.size(), kNoResource);
  std::vector<std::string> names;
  for (size_t d = 0; d < devices.size(); ++d) {
    const std::string& name = devices[d].shared_resource;
    if (name.empty()) continue;
    auto it = std::find(names.begin(), names.end(), name);
    sharing.resource_of[d] = static_cast<int>(it - names.begin());
    if (it == names.end()) names.push_back(name);
  }
  std::vector<double> capacity(names.size(), 0);
  for (size_t r = 0; r < names.size(); ++r) {
    const SharedResource* resource = platform.resource(names[r]);
    if (resource && resource->bandwidth_gbps > 0) capacity[r] = resource->bandwidth_gbps;
  }
  // Unknown capacity: the fastest member alone saturates it.
  for (size_t d = 0; d < devices.size(); ++d) {
    int r = sharing.resource_of[d];
    if (r != kNoResource && !(platform.resource(names[r]) && platform.resource(names[r])->bandwidth_gbps > 0))
      capacity[r] = std::max(capacity[r], devices[d].bandwidth_gbps);
  }
  sharing.share.assign(devices.size(), 0);
  for (size_t d = 0; d < devices.size(); ++d) {
    int r = sharing.resource_of[d];
    if (r != kNoResource && capacity[r] > 0) sharing.share[d] = devices[d].bandwidth_gbps / capacity[r];
  }
  sharing.n_resources = static_cast<int>(names.size());
  return sharing;
}

SimResult simulate(const Plan& plan, const Graph& graph, const Platform& platform, const CostModel& cost,
                   const SimOptions& options) {
  return Simulation(plan, graph, platform, cost, options).run();
}

}  // namespace hetsched
