#include "profile/profiler.h"

#include "hetsched/session.h"

#include <omp.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <future>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <latch>
#include <thread>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>

#include <dnnl.hpp>
#include <fmt/format.h>

#include "backends/cpu/cpu_device.h"
#include "plan/plan_builder.h"
#include "profile/calibrate.h"
#include "profile/interference.h"
#include "runtime/executor.h"

namespace hetsched {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Linear interpolation between order statistics, p in [0, 1].
double percentile(const std::vector<double>& sorted, double p) {
  double rank = p * static_cast<double>(sorted.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(rank));
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - static_cast<double>(lo));
}

ProfiledTime summarise(std::vector<double> samples_us) {
  std::sort(samples_us.begin(), samples_us.end());
  ProfiledTime m;
  m.median_us = percentile(samples_us, 0.5);
  m.spread_us = (percentile(samples_us, 0.9) - percentile(samples_us, 0.1)) / 2;
  m.n_repeats = static_cast<int>(samples_us.size());
  return m;
}


// Orders `units` (a partition of the graph's nodes) so that each comes after
// the units producing its inputs. Empty when no such order exists (a unit
// that is not convex, or two units that need each other).
std::vector<std::vector<NodeId>> topological_units(const Graph& graph, std::vector<std::vector<NodeId>> units) {
  std::vector<int> unit_of(graph.nodes.size(), -1);
  for (size_t u = 0; u < units.size(); ++u) {
    std::sort(units[u].begin(), units[u].end());  // node ids follow the graph's topological order
    for (NodeId n : units[u]) unit_of[static_cast<size_t>(n)] = static_cast<int>(u);
  }
  std::vector<std::set<int>> successors(units.size());
  std::vector<int> n_predecessors(units.size(), 0);
  for (size_t u = 0; u < units.size(); ++u)
    for (NodeId n : units[u])
      for (ValueId in : graph.nodes[static_cast<size_t>(n)].inputs) {
        if (in == kNoValue) continue;
        NodeId producer = graph.values[static_cast<size_t>(in)].producer;
        if (producer == kNoNode) continue;
        int from = unit_of[static_cast<size_t>(producer)];
        if (from != static_cast<int>(u) && successors[static_cast<size_t>(from)].insert(static_cast<int>(u)).second)
          ++n_predecessors[u];
      }
  // Ready units by their first node, so the order stays close to the graph's.
  std::set<std::pair<NodeId, int>> ready;
  for (size_t u = 0; u < units.size(); ++u)
    if (n_predecessors[u] == 0) ready.insert({units[u].front(), static_cast<int>(u)});
  std::vector<std::vector<NodeId>> ordered;
  while (!ready.empty()) {
    int u = ready.begin()->second;
    ready.erase(ready.begin());
    ordered.push_back(units[static_cast<size_t>(u)]);
    for (int v : successors[static_cast<size_t>(u)])
      if (--n_predecessors[static_cast<size_t>(v)] == 0) ready.insert({units[static_cast<size_t>(v)].front(), v});
  }
  if (ordered.size() != units.size()) return {};
  return ordered;
}

// `chosen` as launches, every other node alone, in a topological order.
std::vector<std::vector<NodeId>> with_singletons(const Graph& graph, const std::vector<std::vector<NodeId>>& chosen) {
  std::vector<bool> covered(graph.nodes.size(), false);
  std::vector<std::vector<NodeId>> units = chosen;
  for (const auto& unit : chosen)
    for (NodeId n : unit) covered[static_cast<size_t>(n)] = true;
  for (size_t n = 0; n < graph.nodes.size(); ++n)
    if (!covered[n]) units.push_back({static_cast<NodeId>(n)});
  return topological_units(graph, std::move(units));
}

// A GPU's launches are timed step by step: a CUDA Graph's replay has no steps.
constexpr CudaGraphMode kStepByStep = CudaGraphMode::kOff;

// One sequential run configuration: `launches` cover the graph; `timed`
// says which of them are the pass's units.
struct Pass {
  std::string what;
  std::vector<std::vector<NodeId>> launches;
  std::vector<bool> timed;
};

struct UnitInfo {
  std::string signature;
  std::string description;
};

struct DeviceWork {
  int device = 0;
  std::vector<Pass> passes;  // those that have something to measure
  std::set<std::string> all_signatures;
  std::set<std::string> to_store;  // measured now and stored
};

void check_extra_units(const Graph& graph, const std::vector<std::vector<NodeId>>& extra) {
  for (size_t u = 0; u < extra.size(); ++u) {
    if (extra[u].empty()) throw Error(ErrorCode::kUsage, fmt::format("extra profile unit {} is empty", u));
    std::set<NodeId> seen;
    for (NodeId n : extra[u]) {
      if (n < 0 || static_cast<size_t>(n) >= graph.nodes.size())
        throw Error(ErrorCode::kUsage, fmt::format("extra profile unit {}: node id {} is not in the graph", u, n));
      if (!seen.insert(n).second)
        throw Error(ErrorCode::kUsage, fmt::format("extra profile unit {}: node {} listed twice", u, n));
    }
  }
}

// A run or an entry is quiet when its threads waited less than max_wait; a
// max_wait of 1 (or more) takes everything as quiet.
bool quiet(double waited, double max_wait) { return max_wait >= 1 || waited < max_wait; }

// An entry the profiler keeps: taken on a quiet machine and not marked
// stale since. Any other is measured again.
bool trusted(const std::optional<ProfiledTime>& m, const ProfileOptions& options) {
  return m && !m->stale && quiet(m->waited, options.max_wait);
}

// Decides, before anything runs, which passes each device needs: a pass
// runs when one of its units is neither trusted in the database nor
// measured by an earlier pass (or always with `force`).
DeviceWork plan_device_work(const Graph& graph, const PlatformDevice& device, int device_index, const ProfileDB& db,
                            const ProfileOptions& options, ProfileReport::Device* report) {
  DeviceWork work;
  work.device = device_index;
  std::map<std::string, bool> in_db;
  auto wanted = [&](const std::string& signature) {
    work.all_signatures.insert(signature);
    if (options.force) return !work.to_store.count(signature);
    auto it = in_db.find(signature);
    if (it == in_db.end()) it = in_db.emplace(signature, trusted(db.find(device.signature, signature), options)).first;
    return !it->second && !work.to_store.count(signature);
  };
  // A pass whose timed launches add nothing new is not run.
  auto add_pass = [&](Pass pass) {
    std::vector<std::string> fresh;
    for (size_t l = 0; l < pass.launches.size(); ++l) {
      if (!pass.timed[l]) continue;
      std::string sig = op_signature(graph, pass.launches[l]);
      if (wanted(sig)) fresh.push_back(sig);
    }
    if (fresh.empty()) return;
    work.to_store.insert(fresh.begin(), fresh.end());
    work.passes.push_back(std::move(pass));
  };

  std::vector<std::vector<NodeId>> fused = fusion_units(graph);
  add_pass(Pass{device.name + ": fusion units", fused, std::vector<bool>(fused.size(), true)});
  std::vector<std::vector<NodeId>> singles;
  for (size_t n = 0; n < graph.nodes.size(); ++n) singles.push_back({static_cast<NodeId>(n)});
  add_pass(Pass{device.name + ": single nodes", singles, std::vector<bool>(singles.size(), true)});

  // Extra units share a run when they are disjoint and can be ordered
  // together; otherwise they start another run.
  std::vector<std::vector<NodeId>> batch;
  std::set<NodeId> batch_nodes;
  auto close_batch = [&] {
    if (batch.empty()) return;
    std::vector<std::vector<NodeId>> launches = with_singletons(graph, batch);
    std::set<std::vector<NodeId>> extras;
    for (auto unit : batch) {
      std::sort(unit.begin(), unit.end());
      extras.insert(unit);
    }
    Pass pass{device.name + ": extra units", launches, {}};
    for (const auto& l : launches) pass.timed.push_back(extras.count(l) > 0);
    add_pass(std::move(pass));
    batch.clear();
    batch_nodes.clear();
  };
  std::set<std::string> extra_seen;
  for (size_t u = 0; u < options.extra_units.size(); ++u) {
    std::vector<NodeId> unit = options.extra_units[u];
    std::sort(unit.begin(), unit.end());
    std::string sig = op_signature(graph, unit);
    if (!extra_seen.insert(sig).second) continue;
    bool new_here = !work.to_store.count(sig) && (options.force || !trusted(db.find(device.signature, sig), options));
    if (!new_here) {
      work.all_signatures.insert(sig);
      continue;
    }
    if (with_singletons(graph, {unit}).empty())
      throw Error(ErrorCode::kUsage,
                  fmt::format("extra profile unit {} ({}) cannot run as one launch: a path leaves it and comes back",
                              u, launch_description(graph, unit)));
    bool disjoint = std::none_of(unit.begin(), unit.end(), [&](NodeId n) { return batch_nodes.count(n); });
    std::vector<std::vector<NodeId>> candidate = batch;
    candidate.push_back(unit);
    if (!disjoint || with_singletons(graph, candidate).empty()) close_batch();
    batch.push_back(unit);
    batch_nodes.insert(unit.begin(), unit.end());
  }
  close_batch();

  report->n_measured = static_cast<int>(work.to_store.size());
  report->n_reused = static_cast<int>(work.all_signatures.size() - work.to_store.size());
  return work;
}

// The platform reduced to one device, so a profiling run never touches the
// other devices (and needs no cost model for emulated ones), with the links
// between host memory and the device's own (a GPU's inputs and outputs).
Platform single_device_platform(const Platform& platform, int device) {
  Platform one;
  one.name = platform.name;
  one.devices.push_back(platform.devices[static_cast<size_t>(device)]);
  // A sequential pass uses one stream; a GPU's others would only cost handles
  // and scratch in every pass's context (profiles do not depend on the count).
  one.devices[0].n_streams = 1;
  one.resources = platform.resources;
  const std::string& space = one.devices[0].memory_space;
  for (const Link& link : platform.links)
    if ((link.from_space == kHostMemory && link.to_space == space) ||
        (link.from_space == space && link.to_space == kHostMemory))
      one.links.push_back(link);
  return one;
}

Plan sequential_plan(const Graph& graph, const Platform& one_device, const Pass& pass) {
  std::vector<LaunchAssignment> assignments;
  for (const auto& nodes : pass.launches) assignments.push_back(LaunchAssignment{nodes, 0, 0, "profiling"});
  return build_plan(graph, one_device, assignments, "profile");
}

// Finds a pass's timed launches among an executed plan's steps (by their
// first node: the executor may reorder a plan's steps but not split them).
class PassTimer {
 public:
  PassTimer(const Graph& graph, const Pass& pass, std::map<std::string, std::string>* descriptions)
      : pass_(pass), signature_(pass.launches.size()) {
    for (size_t l = 0; l < pass.launches.size(); ++l) {
      launch_of_first_node_[*std::min_element(pass.launches[l].begin(), pass.launches[l].end())] = l;
      if (!pass.timed[l]) continue;
      signature_[l] = op_signature(graph, pass.launches[l]);
      (*descriptions)[signature_[l]] = launch_description(graph, pass.launches[l]);
    }
  }

  // Appends each timed launch's duration (µs) to `samples` by signature.
  void collect(const Plan& executed, const RunTimeline& timeline,
               std::map<std::string, std::vector<double>>* samples) const {
    for (const RunTimeline::StepTime& t : timeline.steps) {
      const PlanStep& step = executed.lanes[static_cast<size_t>(t.lane)].steps[static_cast<size_t>(t.step)];
      if (step.kind != StepKind::kLaunch || step.nodes.empty()) continue;
      auto it = launch_of_first_node_.find(*std::min_element(step.nodes.begin(), step.nodes.end()));
      if (it == launch_of_first_node_.end() || !pass_.timed[it->second]) continue;
      (*samples)[signature_[it->second]].push_back(t.end_us - t.start_us);
    }
  }

 private:
  const Pass& pass_;
  std::map<NodeId, size_t> launch_of_first_node_;
  std::vector<std::string> signature_;  // per launch; empty when not timed
};

using Samples = std::map<std::string, std::vector<double>>;  // launch durations (µs) by signature

// The timed runs of one pass: each run's samples and its share of waiting
// (interference.h).
struct TimedRuns {
  std::vector<std::vector<Samples>> samples;  // per run, per device (one; several in a co-run pass)
  std::vector<double> waited;                 // per run
  int n_quiet(double max_wait) const {
    return static_cast<int>(std::count_if(waited.begin(), waited.end(), [&](double w) { return quiet(w, max_wait); }));
  }
};

// Runs `run_once` (which runs the pass once and returns its wall time in µs,
// collecting samples when told to) for the warm-ups, then until `repeats`
// runs were quiet or 2 x `repeats` were timed: a run during which another
// process held the cores is repeated. `after_run` is called for the first
// warmups + repeats runs (the progress counts those).
TimedRuns time_runs(const ProfileOptions& options, int cores, size_t n_devices,
                    const std::function<double(std::vector<Samples>*)>& run_once,
                    const std::function<void()>& after_run) {
  TimedRuns runs;
  auto more_needed = [&] {
    return runs.n_quiet(options.max_wait) < options.repeats &&
           static_cast<int>(runs.waited.size()) < 2 * options.repeats;
  };
  for (int run = 0; run < options.warmups + options.repeats || more_needed(); ++run) {
    bool timed = run >= options.warmups;
    std::vector<Samples> samples(n_devices);
    double before_ns = process_wait_ns();
    double wall_us = run_once(timed ? &samples : nullptr);
    if (timed) {
      runs.waited.push_back(waited_share(before_ns, wall_us, cores));
      runs.samples.push_back(std::move(samples));
    }
    if (run < options.warmups + options.repeats) after_run();
  }
  return runs;
}

// The samples a pass keeps, per device, set in `samples`: its quiet runs
// when at least half the repeats were quiet (the load they were taken
// under: their median share of waiting), else every timed run, stored with
// the share they waited so that the next profile measures them again.
// Returns that share, and counts the runs in `load`.
double keep_quiet_runs(const TimedRuns& runs, const ProfileOptions& options, std::vector<Samples>* samples,
                       ProfileReport::Device* load) {
  bool quiet_enough = 2 * runs.n_quiet(options.max_wait) >= options.repeats;
  std::vector<double> kept_waited;
  samples->assign(runs.samples.empty() ? 0 : runs.samples.front().size(), {});
  for (size_t r = 0; r < runs.samples.size(); ++r) {
    if (quiet_enough && !quiet(runs.waited[r], options.max_wait)) continue;
    kept_waited.push_back(runs.waited[r]);
    for (size_t d = 0; d < runs.samples[r].size(); ++d)
      for (const auto& [sig, s] : runs.samples[r][d])
        (*samples)[d][sig].insert((*samples)[d][sig].end(), s.begin(), s.end());
  }
  if (load) {
    load->n_timed_runs += static_cast<int>(runs.waited.size());
    load->n_disturbed_runs += static_cast<int>(runs.waited.size()) - runs.n_quiet(options.max_wait);
    load->stored_under_load = load->stored_under_load || !quiet_enough;
  }
  std::sort(kept_waited.begin(), kept_waited.end());
  return kept_waited.empty() ? 0 : kept_waited[kept_waited.size() / 2];
}

// One run of `executor`, its steps' times in `timeline`; its wall time (µs).
double run_timed(Executor& executor, const TensorMap& inputs, RunTimeline* timeline) {
  auto start = Clock::now();
  executor.run(inputs, timeline);
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

// Runs one pass (time_runs); sets `samples` to each timed launch's
// durations (µs) in the runs it keeps, by signature, and returns their share
// of waiting (keep_quiet_runs).
double run_pass(const Graph& graph, const Platform& one_device, const Pass& pass, const TensorMap& inputs,
                const ProfileOptions& options, Samples* samples,
                std::map<std::string, std::string>* descriptions, const std::function<void()>& after_run,
                ProfileReport::Device* load) {
  PassTimer timer(graph, pass, descriptions);
  Executor executor(graph, sequential_plan(graph, one_device, pass), one_device, nullptr, kStepByStep);
  int cores = std::max<int>(1, static_cast<int>(one_device.devices[0].cores.size()));
  TimedRuns runs = time_runs(
      options, cores, 1,
      [&](std::vector<Samples>* run_samples) {
        RunTimeline timeline;
        double wall_us = run_timed(executor, inputs, &timeline);
        if (run_samples) timer.collect(executor.plan(), timeline, &run_samples->front());
        return wall_us;
      },
      after_run);
  std::vector<Samples> kept;
  double waited = keep_quiet_runs(runs, options, &kept, load);
  *samples = std::move(kept.front());
  return waited;
}

// --- co-run: the devices of one shared resource busy at once

constexpr const char* kCorunSuffix = "|corun";  // the op signature's key under co-run (cost_model.h)

struct CorunGroup {
  std::vector<int> devices;  // platform indices, two or more
  std::vector<std::set<std::string>> to_store;  // per member: op signatures (without the suffix) measured now
};

// Real CPU devices grouped by the shared resource they name; a group is
// measured when one of its members lacks a fusion unit's co-run time (or
// always with `force`). A union device (one overlapping a device with fewer
// cores) is left out: it never runs at once with the devices it is the
// union of, and running all of them together would put two threads on a
// core.
std::vector<CorunGroup> plan_corun_work(const Graph& graph, const Platform& platform, const ProfileDB& db,
                                        const ProfileOptions& options, ProfileReport* report) {
  std::map<std::string, std::vector<int>> members_by_resource;
  for (size_t d = 0; d < platform.devices.size(); ++d) {
    const PlatformDevice& device = platform.devices[d];
    bool is_union = std::any_of(device.overlaps.begin(), device.overlaps.end(), [&](const std::string& name) {
      return platform.devices[static_cast<size_t>(platform.find_device(name))].cores.size() < device.cores.size();
    });
    if (device.kind == DeviceKind::kCpu && !device.is_emulated() && !device.shared_resource.empty() && !is_union)
      members_by_resource[device.shared_resource].push_back(static_cast<int>(d));
  }
  std::set<std::string> unit_signatures;
  std::vector<CorunGroup> groups;
  for (auto& [resource, members] : members_by_resource) {
    if (members.size() < 2) continue;
    if (unit_signatures.empty())
      for (const auto& unit : fusion_units(graph)) unit_signatures.insert(op_signature(graph, unit));
    CorunGroup group{members, std::vector<std::set<std::string>>(members.size())};
    bool any = false;
    for (size_t m = 0; m < members.size(); ++m) {
      const PlatformDevice& device = platform.devices[static_cast<size_t>(members[m])];
      for (const std::string& sig : unit_signatures)
        if (options.force || !trusted(db.find(device.signature, sig + kCorunSuffix), options))
          group.to_store[m].insert(sig);
      for (ProfileReport::Device& entry : report->devices)
        if (entry.name == device.name) {
          entry.n_corun_measured = static_cast<int>(group.to_store[m].size());
          entry.n_corun_reused = static_cast<int>(unit_signatures.size() - group.to_store[m].size());
        }
      any = any || !group.to_store[m].empty();
    }
    if (any) groups.push_back(std::move(group));
  }
  return groups;
}

// Runs `pass` on every one-device platform at once (time_runs), each run
// started together on all of them; sets each device's timed launch
// durations (µs) of the runs kept in its `samples` by signature, and
// returns their share of waiting (keep_quiet_runs).
double run_corun_pass(const Graph& graph, const std::vector<Platform>& one_device_platforms, const Pass& pass,
                      const TensorMap& inputs, const ProfileOptions& options, std::vector<Samples>* samples,
                      std::map<std::string, std::string>* descriptions, const std::function<void()>& after_run,
                      ProfileReport::Device* load) {
  PassTimer timer(graph, pass, descriptions);
  std::vector<std::unique_ptr<Executor>> executors;
  int cores = 0;
  for (const Platform& one_device : one_device_platforms) {
    executors.push_back(
        std::make_unique<Executor>(graph, sequential_plan(graph, one_device, pass), one_device, nullptr, kStepByStep));
    cores += static_cast<int>(one_device.devices[0].cores.size());
  }
  const size_t n = executors.size();
  TimedRuns runs = time_runs(
      options, std::max(cores, 1), n,
      [&](std::vector<Samples>* run_samples) {
        std::vector<RunTimeline> timelines(n);
        std::vector<std::exception_ptr> errors(n);
        std::latch start(static_cast<std::ptrdiff_t>(n));
        std::vector<std::thread> runners;
        auto begin = Clock::now();
        for (size_t e = 0; e < n; ++e)
          runners.emplace_back([&, e] {
            start.arrive_and_wait();
            try {
              executors[e]->run(inputs, &timelines[e]);
            } catch (...) {
              errors[e] = std::current_exception();
            }
          });
        for (std::thread& runner : runners) runner.join();
        double wall_us = std::chrono::duration<double, std::micro>(Clock::now() - begin).count();
        for (const std::exception_ptr& error : errors)
          if (error) std::rethrow_exception(error);
        if (run_samples)
          for (size_t e = 0; e < n; ++e) timer.collect(executors[e]->plan(), timelines[e], &(*run_samples)[e]);
        return wall_us;
      },
      after_run);
  return keep_quiet_runs(runs, options, samples, load);
}

// --- hand-over between two CPU devices of one memory space

struct FreeDeleter {
  void operator()(char* p) const { std::free(p); }
};


constexpr int kLinkSizes = 6;  // 16 KiB .. 16 MiB, x4
constexpr int kLinkRepeats = 9;

// latency + bytes / bandwidth by least squares over (bytes, µs) points.
LinkFit fit_link(const std::vector<std::pair<double, double>>& points) {
  double n = static_cast<double>(points.size()), sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (auto [x, y] : points) {
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  double slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);  // µs per byte
  double intercept = (sy - slope * sx) / n;
  LinkFit fit;
  fit.latency_us = std::max(0.0, intercept);
  if (slope > 0) {
    fit.bandwidth_gbps = 1.0 / slope / 1e3;  // bytes/µs -> GB/s
  } else {
    // Flat within noise: the largest transfer's own rate is a safe bound.
    auto [x, y] = points.back();
    fit.bandwidth_gbps = x / std::max(y, 1e-3) / 1e3;
  }
  return fit;
}

// What the executor pays when a launch on `to` reads a value a launch on
// `from` just wrote (values cross CPU lanes in their producer's layout, so
// there is no reorder): the reader's wake-up after the writer's signal, plus
// reading the bytes out of the other core's caches instead of its own.
// Measured per size as wake-up + (remote read - local read), the reader
// waiting as an executor lane does on a Wait: spinning on its core, or, when
// the two devices overlap (share cores), asleep on a condition variable.
LinkFit measure_handover(const PlatformDevice& from, const PlatformDevice& to, bool overlapping) {
  CpuDevice producer(DeviceSpec{DeviceKind::kCpu, from.cores, ""});
  CpuDevice consumer(DeviceSpec{DeviceKind::kCpu, to.cores, ""});
  std::vector<std::pair<double, double>> points;
  for (int k = 0; k < kLinkSizes; ++k) {
    size_t bytes = (size_t{16} << 10) << (2 * k);
    std::unique_ptr<char, FreeDeleter> buffer(static_cast<char*>(std::aligned_alloc(64, bytes)));
    std::unique_ptr<char, FreeDeleter> copy(static_cast<char*>(std::aligned_alloc(64, bytes)));
    if (!buffer || !copy)
      throw Error(ErrorCode::kRuntime, fmt::format("link measurement: cannot allocate {} bytes", bytes));
    auto read = [&] {
      auto start = Clock::now();
      std::memcpy(copy.get(), buffer.get(), bytes);
      return seconds_since(start) * 1e6;
    };
    std::vector<double> handover_us;
    // The first round touches the pages.
    for (int r = 0; r < kLinkRepeats + 1; ++r) {
      double local_us = 0, remote_us = 0, wake_us = 0;
      consumer.run([&] {
        parallel_fill(buffer.get(), bytes, r & 1);
        local_us = read();
      });
      std::atomic<int64_t> signalled_ns{0};
      std::mutex mutex;
      std::condition_variable signalled;
      std::future<void> reader = consumer.submit([&] {
        if (overlapping) {
          std::unique_lock lock(mutex);
          signalled.wait(lock, [&] { return signalled_ns.load() != 0; });
        }
        while (signalled_ns.load() == 0) {
        }
        wake_us = static_cast<double>(Clock::now().time_since_epoch().count() - signalled_ns.load()) / 1e3;
        remote_us = read();
      });
      producer.run([&] {
        parallel_fill(buffer.get(), bytes, (r + 1) & 1);
        {
          std::lock_guard lock(mutex);
          signalled_ns = Clock::now().time_since_epoch().count();
        }
        signalled.notify_one();
      });
      reader.get();
      if (r > 0) handover_us.push_back(wake_us + std::max(0.0, remote_us - local_us));
    }
    std::sort(handover_us.begin(), handover_us.end());
    points.emplace_back(static_cast<double>(bytes), percentile(handover_us, 0.5));
  }
  return fit_link(points);
}

// --- hand-over in context: the graph's fusion units alternating between two devices

// Launches reading another device's values needed per direction for a fit
// in context; fewer (a small graph) fall back to measure_handover.
constexpr int kMinHandoverLaunches = 8;

// The pass below runs the graph's fusion units in topological order, unit
// u on the pair's device u % 2. Per unit: the values it reads from units on
// the other device, once each.
std::vector<std::set<ValueId>> alternating_reads(const Graph& graph, const std::vector<std::vector<NodeId>>& units) {
  std::vector<size_t> unit_of(graph.nodes.size(), 0);
  for (size_t u = 0; u < units.size(); ++u)
    for (NodeId n : units[u]) unit_of[static_cast<size_t>(n)] = u;
  std::vector<std::set<ValueId>> reads(units.size());
  for (size_t u = 0; u < units.size(); ++u)
    for (NodeId n : units[u])
      for (ValueId v : graph.nodes[static_cast<size_t>(n)].inputs) {
        if (v == kNoValue) continue;
        NodeId producer = graph.values[static_cast<size_t>(v)].producer;
        if (producer != kNoNode && unit_of[static_cast<size_t>(producer)] % 2 != u % 2) reads[u].insert(v);
      }
  return reads;
}

// What a launch pays for reading values another device just wrote, measured
// as the executor runs it: `units` (fusion_units) alternating between
// devices `a` and `b`, timed like a profiling pass; each launch that read
// values from the other device (`reads`), and ran while the other device
// was idle (so co-run slowdown is not taken for hand-over), gives a point:
// its time over its time alone (the database's fusion-unit entry). Besides
// the reader's wake-up this holds what a microbenchmark misses: the kernel
// reading its input from the other core's caches in its own access pattern
// and writing where the other core last wrote, and a union device's team
// leaving the cores to a narrow device. Returns the points per direction:
// [0] a -> b, [1] b -> a.
std::array<std::vector<HandoverPoint>, 2> run_handover_pass(const Graph& graph, const Platform& platform, int a,
                                                            int b, const std::vector<std::vector<NodeId>>& units,
                                                            const std::vector<std::set<ValueId>>& reads,
                                                            const ProfileDB& db, const TensorMap& inputs,
                                                            const ProfileOptions& options,
                                                            const std::function<void()>& after_run,
                                                            ProfileReport::Device* load) {
  Platform two;
  two.name = platform.name;
  two.devices = {platform.devices[static_cast<size_t>(a)], platform.devices[static_cast<size_t>(b)]};
  two.resources = platform.resources;
  two.links = platform.links;
  for (PlatformDevice& d : two.devices) d.n_streams = 1;
  std::vector<LaunchAssignment> assignments;
  std::map<NodeId, size_t> unit_of_first_node;
  for (size_t u = 0; u < units.size(); ++u) {
    assignments.push_back(LaunchAssignment{units[u], static_cast<int>(u % 2), 0, "profiling the hand-over"});
    unit_of_first_node[*std::min_element(units[u].begin(), units[u].end())] = u;
  }
  Executor executor(graph, build_plan(graph, two, assignments, "profile"), two, nullptr, kStepByStep);

  std::set<int> all_cores(two.devices[0].cores.begin(), two.devices[0].cores.end());
  all_cores.insert(two.devices[1].cores.begin(), two.devices[1].cores.end());
  // Devices sharing cores wait for each other's threads to leave a core at
  // every switch (a union's OpenMP team spinning, then the narrow device's
  // woken thread): that wait is the cost measured here, not another process,
  // so such a pass is not judged by its waiting (a profile under load still
  // marks the devices' own entries, and measuring them again refits this).
  ProfileOptions pass_options = options;
  if (platform.overlapping(a, b)) pass_options.max_wait = 1;
  // Samples by unit index: a unit's duration in each run where it ran with
  // the other device idle.
  TimedRuns runs = time_runs(
      pass_options, static_cast<int>(all_cores.size()), 1,
      [&](std::vector<Samples>* timed) {
        RunTimeline timeline;
        double wall_us = run_timed(executor, inputs, &timeline);
        if (!timed) return wall_us;
        struct Span {
          size_t unit;
          int device;
          double start, end;
        };
        std::vector<Span> spans;
        const Plan& executed = executor.plan();
        for (const RunTimeline::StepTime& t : timeline.steps) {
          const Lane& lane = executed.lanes[static_cast<size_t>(t.lane)];
          const PlanStep& step = lane.steps[static_cast<size_t>(t.step)];
          if (step.kind != StepKind::kLaunch || step.nodes.empty()) continue;
          auto it = unit_of_first_node.find(*std::min_element(step.nodes.begin(), step.nodes.end()));
          if (it != unit_of_first_node.end()) spans.push_back({it->second, lane.device, t.start_us, t.end_us});
        }
        for (const Span& s : spans) {
          bool alone = std::none_of(spans.begin(), spans.end(), [&](const Span& o) {
            return o.device != s.device && o.start < s.end && s.start < o.end;
          });
          if (alone) timed->front()[std::to_string(s.unit)].push_back(s.end - s.start);
        }
        return wall_us;
      },
      after_run);
  std::vector<Samples> kept;
  keep_quiet_runs(runs, pass_options, &kept, load);

  std::array<std::vector<HandoverPoint>, 2> points;
  for (size_t u = 0; u < units.size(); ++u) {
    size_t device = u % 2;
    std::vector<double> times = kept.front()[std::to_string(u)];
    std::optional<ProfiledTime> alone = db.find(two.devices[device].signature, op_signature(graph, units[u]));
    if (reads[u].empty() || times.empty() || !alone) continue;
    HandoverPoint point;
    point.n_values = static_cast<double>(reads[u].size());
    for (ValueId v : reads[u]) point.bytes += graph.values[static_cast<size_t>(v)].nbytes();
    std::sort(times.begin(), times.end());
    point.extra_us = percentile(times, 0.5) - alone->median_us;
    // A unit on b (index 1) read from a: direction a -> b.
    points[device == 1 ? 0 : 1].push_back(point);
  }
  return points;
}

}  // namespace

// A fit without a per-byte part: bytes cost nothing measurable.
constexpr double kUnlimitedGbps = 1e6;

LinkFit fit_handover(const std::vector<HandoverPoint>& points) {
  double kk = 0, kb = 0, bb = 0, ke = 0, be = 0;
  for (const HandoverPoint& p : points) {
    kk += p.n_values * p.n_values;
    kb += p.n_values * p.bytes;
    bb += p.bytes * p.bytes;
    ke += p.n_values * p.extra_us;
    be += p.bytes * p.extra_us;
  }
  double det = kk * bb - kb * kb;
  double latency = det > 0 ? (ke * bb - kb * be) / det : -1;
  double per_byte = det > 0 ? (kk * be - kb * ke) / det : -1;
  if (latency < 0 || per_byte < 0) {
    // One part alone: the one that explains more of the extra time.
    double latency_only = kk > 0 ? std::max(0.0, ke / kk) : 0;
    double per_byte_only = bb > 0 ? std::max(0.0, be / bb) : 0;
    double residual_latency = 0, residual_bytes = 0;
    for (const HandoverPoint& p : points) {
      residual_latency += std::pow(p.extra_us - latency_only * p.n_values, 2);
      residual_bytes += std::pow(p.extra_us - per_byte_only * p.bytes, 2);
    }
    bool by_latency = residual_latency <= residual_bytes;
    latency = by_latency ? latency_only : 0;
    per_byte = by_latency ? 0 : per_byte_only;
  }
  LinkFit fit;
  fit.latency_us = latency;
  fit.bandwidth_gbps = per_byte > 0 ? 1.0 / per_byte / 1e3 : kUnlimitedGbps;
  return fit;
}

ProfileReport profile_graph(const Graph& graph, const Platform& platform, ProfileDB& db,
                            const ProfileOptions& options) {
  auto start = Clock::now();
  if (options.warmups < 0 || options.repeats < 1)
    throw Error(ErrorCode::kUsage,
                fmt::format("profile: need warm-ups >= 0 and repeats >= 1 (got {} and {})", options.warmups,
                            options.repeats));
  check_extra_units(graph, options.extra_units);
  ProfileReport report;
  std::vector<DeviceWork> work;
  for (size_t d = 0; d < platform.devices.size(); ++d) {
    const PlatformDevice& device = platform.devices[d];
    ProfileReport::Device entry;
    entry.name = device.name;
    if (device.is_emulated()) {
      entry.skipped = true;
    } else {
      if (device.signature.empty())
        throw Error(ErrorCode::kUsage, fmt::format("device '{}' has no signature to store profiles under", device.name));
      if (!device.supports_all(graph))
        throw Error(ErrorCode::kUnsupported,
                    fmt::format("device '{}' cannot be profiled alone: {}", device.name, device.first_refusal(graph)));
      work.push_back(plan_device_work(graph, device, static_cast<int>(d), db, options, &entry));
    }
    report.devices.push_back(entry);
  }

  // Pairs of real CPU devices of one memory space (a < b): their hand-over
  // is fitted again when a link between them is missing, with `force`, or
  // when this profile measures either device (a graph new to the database:
  // the fit follows the graphs being profiled). In context when enough of
  // the graph's launches read from the other device as they alternate;
  // else a microbenchmark stands in where a link is missing.
  std::vector<std::vector<NodeId>> units = fusion_units(graph);
  std::vector<std::set<ValueId>> reads = alternating_reads(graph, units);
  std::array<int, 2> n_reading{0, 0};  // a -> b (units on b), b -> a
  for (size_t u = 0; u < units.size(); ++u)
    if (!reads[u].empty()) ++n_reading[u % 2 == 1 ? 0 : 1];
  bool in_context = std::max(n_reading[0], n_reading[1]) >= kMinHandoverLaunches;
  std::vector<std::pair<int, int>> pairs;
  for (size_t a = 0; a < platform.devices.size(); ++a)
    for (size_t b = a + 1; b < platform.devices.size(); ++b) {
      const PlatformDevice& da = platform.devices[a];
      const PlatformDevice& db_ = platform.devices[b];
      if (da.is_emulated() || db_.is_emulated() || da.kind != DeviceKind::kCpu || db_.kind != DeviceKind::kCpu ||
          da.memory_space != db_.memory_space)
        continue;
      bool measured_now = std::any_of(work.begin(), work.end(), [&](const DeviceWork& w) {
        return !w.passes.empty() && (w.device == static_cast<int>(a) || w.device == static_cast<int>(b));
      });
      bool missing = !db.link(da.signature, db_.signature) || !db.link(db_.signature, da.signature);
      if (options.force || missing || (in_context && measured_now))
        pairs.emplace_back(static_cast<int>(a), static_cast<int>(b));
    }

  std::vector<CorunGroup> corun_groups = plan_corun_work(graph, platform, db, options, &report);

  int total = in_context ? static_cast<int>(pairs.size()) * (options.warmups + options.repeats)
                         : static_cast<int>(pairs.size());
  for (const DeviceWork& w : work) total += static_cast<int>(w.passes.size()) * (options.warmups + options.repeats);
  total += static_cast<int>(corun_groups.size()) * (options.warmups + options.repeats);
  int done = 0;
  auto progress = [&](const std::string& what) {
    if (options.progress) options.progress(done, total, what);
  };

  TensorMap inputs;
  if (!work.empty() || !corun_groups.empty() || (in_context && !pairs.empty())) inputs = random_inputs(graph, 0);
  for (const DeviceWork& w : work) {
    auto device_start = Clock::now();
    const PlatformDevice& device = platform.devices[static_cast<size_t>(w.device)];
    Platform one_device = single_device_platform(platform, w.device);
    ProfileReport::Device* entry = nullptr;
    for (ProfileReport::Device& d : report.devices)
      if (d.name == device.name) entry = &d;
    std::map<std::string, std::vector<double>> samples;
    std::map<std::string, double> waited;  // by signature: the load of the pass that timed it
    std::map<std::string, std::string> descriptions;
    for (const Pass& pass : w.passes) {
      progress(pass.what);
      std::map<std::string, std::vector<double>> pass_samples;
      double pass_waited = run_pass(
          graph, one_device, pass, inputs, options, &pass_samples, &descriptions,
          [&] {
            ++done;
            progress(pass.what);
          },
          entry);
      // A unit timed by an earlier pass keeps that pass's context.
      for (auto& [sig, s] : pass_samples)
        if (!samples.count(sig)) {
          samples[sig] = std::move(s);
          waited[sig] = pass_waited;
        }
    }
    std::vector<ProfileDB::Entry> entries;
    for (const std::string& sig : w.to_store) {
      auto it = samples.find(sig);
      if (it == samples.end() || it->second.empty())
        throw Error(ErrorCode::kRuntime,
                    fmt::format("profiling on '{}': launch {} never ran as one step", device.name, descriptions[sig]));
      ProfiledTime m = summarise(it->second);
      m.waited = waited[sig];
      entry->waited = std::max(entry->waited, m.waited);
      entries.push_back(ProfileDB::Entry{sig, descriptions[sig], m});
    }
    db.put(device.signature, entries);
    entry->seconds = seconds_since(device_start);
  }

  if (!corun_groups.empty()) {
    std::vector<std::vector<NodeId>> fused = fusion_units(graph);
    for (const CorunGroup& group : corun_groups) {
      std::vector<Platform> one_device_platforms;
      std::string names;
      for (int d : group.devices) {
        one_device_platforms.push_back(single_device_platform(platform, d));
        names += (names.empty() ? "" : "+") + platform.devices[static_cast<size_t>(d)].name;
      }
      Pass pass{"co-run " + names + ": fusion units", fused, std::vector<bool>(fused.size(), true)};
      progress(pass.what);
      std::vector<Samples> samples;
      std::map<std::string, std::string> descriptions;
      ProfileReport::Device load;
      double waited = run_corun_pass(
          graph, one_device_platforms, pass, inputs, options, &samples, &descriptions,
          [&] {
            ++done;
            progress(pass.what);
          },
          &load);
      for (size_t m = 0; m < group.devices.size(); ++m) {
        const PlatformDevice& device = platform.devices[static_cast<size_t>(group.devices[m])];
        for (ProfileReport::Device& d : report.devices)
          if (d.name == device.name) {
            d.n_timed_runs += load.n_timed_runs;
            d.n_disturbed_runs += load.n_disturbed_runs;
            d.waited = std::max(d.waited, waited);
            d.stored_under_load = d.stored_under_load || load.stored_under_load;
          }
        std::vector<ProfileDB::Entry> entries;
        for (const std::string& sig : group.to_store[m]) {
          auto it = samples[m].find(sig);
          if (it == samples[m].end() || it->second.empty())
            throw Error(ErrorCode::kRuntime, fmt::format("co-run profiling on '{}': launch {} never ran as one step",
                                                         device.name, descriptions[sig]));
          ProfiledTime corun = summarise(it->second);
          corun.waited = waited;
          entries.push_back(ProfileDB::Entry{sig + kCorunSuffix, descriptions[sig] + " (co-run)", corun});
        }
        db.put(device.signature, entries);
      }
    }
  }

  for (auto [a, b] : pairs) {
    const PlatformDevice& da = platform.devices[static_cast<size_t>(a)];
    const PlatformDevice& db_ = platform.devices[static_cast<size_t>(b)];
    std::string what = fmt::format("hand-over {} <-> {}", da.name, db_.name);
    progress(what);
    auto after_run = [&] {
      ++done;
      progress(what);
    };
    ProfileReport::Device load;
    std::array<std::vector<HandoverPoint>, 2> points;
    if (in_context) points = run_handover_pass(graph, platform, a, b, units, reads, db, inputs, options, after_run, &load);
    for (int direction = 0; direction < 2; ++direction) {
      const PlatformDevice& from = direction == 0 ? da : db_;
      const PlatformDevice& to = direction == 0 ? db_ : da;
      if (!load.stored_under_load && static_cast<int>(points[direction].size()) >= kMinHandoverLaunches) {
        db.put_link(from.signature, to.signature, fit_handover(points[direction]));
        ++report.n_links_in_context;
      } else if (options.force || !db.link(from.signature, to.signature)) {
        // Too few launches cross in this graph (or another process held the
        // cores): a microbenchmark of the reader's wake-up and remote read
        // stands in until a larger graph is profiled.
        db.put_link(from.signature, to.signature, measure_handover(from, to, platform.overlapping(a, b)));
      } else {
        continue;
      }
      ++report.n_links_measured;
    }
    if (!in_context) after_run();
  }
  report.seconds = seconds_since(start);
  return report;
}

}  // namespace hetsched
