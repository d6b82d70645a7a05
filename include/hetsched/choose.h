// Choosing a plan by measurement: the one place where the engine runs its
// candidate plans for real and keeps the fastest, so that it never keeps a
// plan measured slower than a device alone. A Session running `auto` on real
// devices and `hetsched demo` call it.
//
//   std::vector<PlanCandidate> candidates = ...;  // plans, and devices alone
//   MeasuredChoice choice = choose_by_measurement(graph, candidates, inputs);
//   const PlanCandidate& winner = candidates[choice.chosen];
//
// How it measures: every candidate gets its own executor and `warmups`
// untimed runs; then rounds in which each runs a burst, in an order rotated
// from round to round (a plan is not always the one that runs after the
// same other plan, with its OpenMP threads as that one left them). A noisy
// period hits all alike. A burst is rewarm() (untimed runs that bring the
// candidate's weights and buffers back into the caches), then `burst` timed
// runs back to back, as a session runs; the round's time is their median.
// Timed right after another plan instead, every candidate ran 15-25%
// slower than alone (resnet18 on cpu:0-1: 10.6-11.7 ms against 9.2), and
// that cold start favoured a plan that was 5% slower warm.
//
// How it decides: the fastest candidate on one device (median) is the
// baseline. The fastest multi-device candidate replaces it only when it is
// at least `min_gain` faster by the median of the per-round ratios (each
// round's two times were taken seconds apart at most) AND faster in at
// least two rounds of three; a plan within the noise of the baseline loses
// to it: one device needs no copies, events or extra threads. Where the
// ratio is within `undecided` of the threshold after `rounds` rounds, more
// rounds run, up to `max_rounds`.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hetsched/compare.h"
#include "hetsched/cost_model.h"
#include "hetsched/graph.h"
#include "hetsched/plan.h"
#include "hetsched/platform.h"
#include "hetsched/session.h"
#include "hetsched/throughput.h"

namespace hetsched {

class Executor;     // src/runtime/executor.h
class RequestPool;  // src/runtime/request_pool.h

struct PlanCandidate {
  std::string name;  // what the reason names: "auto", "cpu:0-1 alone"
  std::shared_ptr<const Plan> plan;
  std::shared_ptr<const Platform> platform;  // the plan's platform
  std::shared_ptr<const CostModel> cost;     // its cost model (the executor's emulated devices read it)
  bool one_device = false;                   // a device alone: the baseline the others must beat
};

struct ChoiceOptions {
  int warmups = 2;
  int rounds = 9;
  int max_rounds = 27;
  int burst = 2;  // timed runs per candidate and round
  double min_gain = 0.02;   // fraction of the baseline's time
  double undecided = 0.03;  // see the header
  CudaGraphMode cuda_graph = CudaGraphMode::kAuto;  // for the candidates' executors
};

struct MeasuredChoice {
  size_t chosen = 0;                   // index into the candidates
  std::vector<Measurement> measured;   // per candidate: p50, min, max over the rounds
  int rounds = 0;                      // rounds run
  double ratio = 1;                    // median per-round time of the best plan over the baseline's
  std::string reason;                  // one line: what was measured and why the winner won
  // The winner's executor, warm from its measurement: what was measured is
  // what runs, rather than another executor built again.
  std::shared_ptr<Executor> executor;
};

// The rule of the header: a plan beats the baseline when the median of its
// per-round time ratios (plan / baseline) is at most 1 - min_gain and it
// was faster (ratio < 1) in at least two rounds of three.
bool plan_beats_baseline(const std::vector<double>& per_round_ratios, double min_gain);

// At least one candidate must be one_device. Inputs: every graph input
// (random_inputs).
MeasuredChoice choose_by_measurement(const Graph& graph, const std::vector<PlanCandidate>& candidates,
                                     const TensorMap& inputs, const ChoiceOptions& options = {});

// Brings a plan back to the state a session's back-to-back runs keep it in,
// after other work (another plan measured, an idle pause): runs it untimed
// until 20 ms of its runs have passed, at least once. On a VM, mobilenet_v2
// on one core ran 22% slower than back to back in the first run after
// another plan, 17% in the second, 7% in the sixth; plans taking 20 ms or
// more recover in one run. compare and choose_by_measurement time a plan
// only after this.
void rewarm(Executor& executor, const TensorMap& inputs);

// The platform with one more device on every core of its CPU core groups
// (cpu_union_device, compare.h), so that plans may run serial stretches on
// all cores and branches on the groups: cpu:0,cpu:1 -> cpu:0,cpu:1,cpu:0-1.
// The platform itself when there is no such union, or when it holds devices
// other than real CPU core groups.
Platform platform_with_cpu_union(const Platform& platform);

// Choosing a throughput flow (throughput.h) by measurement, as a plan is
// chosen above, with requests per second in place of a run's time: every
// flow's workers get `warmups` untimed runs each; then rounds in which each
// flow, in a rotated order, is rewarmed (every worker at once) and serves a
// closed loop of requests, `in_flight` at a time, for about `window_ms`
// (at least `min_requests` per worker), and its round's figure is its rate.
// The fastest one-worker flow by median rate is the baseline; the fastest
// flow of several workers replaces it only when plan_beats_baseline holds
// for its per-round ratios of time per request (baseline rate / its rate).
struct FlowChoiceOptions {
  int warmups = 2;
  int rounds = 5;
  int max_rounds = 15;
  double window_ms = 150;
  int min_requests = 4;  // per worker and round
  int in_flight = 0;     // requests kept in flight; 0 = each flow's worker count
  double min_gain = 0.02;
  double undecided = 0.03;
  CudaGraphMode cuda_graph = CudaGraphMode::kAuto;
};

struct MeasuredFlowChoice {
  size_t chosen = 0;           // index into the flows
  std::vector<double> per_s;   // per flow: median requests per second over the rounds
  std::vector<double> p50_ms;  // per flow: median request latency over every round's requests
  int rounds = 0;
  double ratio = 1;            // median per-round time per request, best flow of several workers / baseline
  std::string reason;          // one line: what was measured and why the winner won
  std::shared_ptr<RequestPool> pool;  // the winner's workers, warm from their measurement
};

// At least one flow must have one worker. Request i gets inputs[i % size].
// A single flow is not measured: its workers are warmed up and kept, its
// rate and latency those of the warm-up's last run.
MeasuredFlowChoice choose_flow_by_measurement(const Graph& graph, const std::vector<RequestFlow>& flows,
                                              const std::vector<TensorMap>& inputs,
                                              const FlowChoiceOptions& options = {});

}  // namespace hetsched
