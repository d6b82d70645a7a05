// Comparing schedulers on one model and platform: every scheduler's plan
// predicted by the simulator (all with the same cost model, whatever the
// scheduler itself predicted), optionally measured by running it, against
// the best single device and a lower bound. What `hetsched compare` prints.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hetsched/cost_model.h"
#include "hetsched/graph.h"
#include "hetsched/plan.h"
#include "hetsched/platform.h"
#include "hetsched/trace.h"

namespace hetsched {

struct CompareOptions {
  std::vector<std::string> schedulers;  // empty: every registered scheduler
  uint64_t seed = 0;                    // for randomised schedulers
  // Run the plans for real: `warmups` untimed runs each, then `rounds`
  // rounds in which every plan runs once timed, right after untimed runs of
  // its own (rewarm, choose.h), interleaved, in an order rotated from round
  // to round, so that a noisy period hits all alike; the median per plan is
  // reported.
  bool measure = false;
  int warmups = 2;
  int rounds = 10;
  // Keep each plan's timelines (SchedulerOutcome / SequentialBaseline
  // predicted_trace and measured_trace) for reports; off, they stay empty.
  bool keep_traces = false;
  // Called before each step (planning a scheduler, measuring round k).
  std::function<void(int done, int total, const std::string& what)> progress;
};

struct Measurement {
  double p50_ms = -1;  // -1: not measured
  double min_ms = -1, max_ms = -1;
};

// One way of running the model on a single device, one launch after another
// — the baselines every speed-up is measured against.
struct SequentialBaseline {
  std::string device;  // a platform device, or for two or more CPU core groups also their union ("cpu:0-1")
  double predicted_ms = -1;
  Measurement measured;
  // With CompareOptions::keep_traces (else empty): the simulator's timeline
  // (kind "simulated"), and with `measure` the timeline of the timed round
  // whose time is the median (with an even count of rounds, the round
  // closest to it; kind "measured", or "emulated" on emulated devices).
  Trace predicted_trace, measured_trace;
};

struct SchedulerOutcome {
  std::string name;
  std::string error;  // why it made no plan ("" when it did), e.g. a graph too large for `optimal`
  double plan_ms = 0;  // planning time
  double predicted_ms = -1;  // simulated
  Measurement measured;
  std::shared_ptr<const Plan> plan;
  // The plan's platform: the one compared, but for `auto` the one with a
  // device on all the cores of its CPU core groups added
  // (platform_with_cpu_union, choose.h), as a Session gives auto.
  std::shared_ptr<const Platform> platform;
  std::shared_ptr<const CostModel> cost;  // the cost model it was planned and simulated with
  Trace predicted_trace, measured_trace;  // as SequentialBaseline's, when there is a plan
};

struct Comparison {
  double lower_bound_ms = 0;
  double critical_path_ms = 0, capacity_ms = 0, combined_ms = 0;  // the parts of the bound (lower_bound.h)
  std::vector<SequentialBaseline> sequential;
  // The fastest baseline: measured when measured, else predicted.
  std::string best_sequential_device;
  double best_sequential_ms = 0;
  std::vector<SchedulerOutcome> schedulers;
  // Real devices alone measured more than kPredictionDriftTolerance off
  // their prediction (prediction_drift_notes): their profile entries for
  // this graph's launch units were marked stale in the database, so that the
  // next profile measures them again instead of every later plan trusting
  // them.
  std::vector<std::string> marked_stale;
};

// One device on every core of the platform's CPU core groups ("cpu:0-1"),
// when it has two or more and no node is pinned: the baseline a split across
// them has to beat. "" otherwise, and when the platform has that device
// already (cpu:0,cpu:1,cpu:0-1: it is one of the devices alone).
std::string cpu_union_device(const Platform& platform);

// Where a real device alone measured more than `tolerance` (a fraction)
// slower or faster than predicted, one line each, naming the device, both
// times, the likely causes and the remedy: its profile lacks entries (they
// are estimated by the roofline model), or the machine no longer runs as
// when it was profiled (another load on a shared machine, a changed clock);
// either way every prediction for it is off by about as much. Empty without
// measurements; emulated devices, held to their modeled times, are skipped.
// The default tolerance, also where compare_schedulers marks a device's
// profile entries stale (Comparison::marked_stale).
constexpr double kPredictionDriftTolerance = 0.2;
std::vector<std::string> prediction_drift_notes(const Comparison& comparison, const Platform& platform,
                                                double tolerance = kPredictionDriftTolerance);

// `cost` must be the model `platform` was calibrated with (open_cost_model);
// `db_path` is where the union CPU device, if any, finds its profile.
// Scheduler failures are recorded, not thrown; a bad scheduler name is
// ErrorCode::kUsage.
Comparison compare_schedulers(const Graph& graph, const Platform& platform, std::shared_ptr<const CostModel> cost,
                              const std::string& db_path, const CompareOptions& options);

}  // namespace hetsched
