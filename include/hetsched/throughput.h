// Throughput: serving a stream of requests over the devices, several at once.
//
// A latency plan splits one request over devices; a throughput plan (a
// RequestFlow) says how many requests flow over them. Its workers each hold
// a device of their own (devices of one flow never share cores) and run one
// request at a time with a one-device plan; a request goes to the worker
// that would finish it first (runtime/request_pool.h), so a faster device
// takes a larger share of the requests by itself and a slow one takes a
// request only when that finishes it sooner. The shapes:
//   one device      one worker: the latency baseline, one request at a time
//   side by side    one worker per device of the given spec (cpu:0,cpu:1;
//                   a GPU beside CPU core groups)
//   streams         one CPU device split into equal core groups, a worker
//                   each (OpenVINO's streams): cpu on 16 cores as 2x8, 4x4...
// Pipeline stages (a request passing from device to device) are not built
// yet.
//
//   SessionOptions options("cpu:0,cpu:1");
//   options.mode = RunMode::kThroughput;       // session.h
//   Session s = Session::load("model.onnx", {}, options);
//   // s.run() from several threads at once: each on its own worker
//   LoadResult r = run_closed_loop(200, 4, [&](int i) { s.run(inputs[i % 8]); });
//
// How a Session picks its flow: every candidate (flow_candidates) is
// predicted (predict_flow), and the best few are measured (choose.h,
// choose_flow_by_measurement); a flow of several workers is kept only when
// measured clearly faster than the fastest device alone.
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

namespace hetsched {

struct FlowWorker {
  std::string device;               // a device of the flow's platform
  std::shared_ptr<const Plan> plan;  // the whole graph on that device
};

struct RequestFlow {
  std::string name;  // "cpu:0-1 alone", "side by side on cpu:0, cpu:1", "2 streams of 1 core"
  // Workers in order of preference (fastest predicted first): between
  // workers that would finish a request at the same time, the first.
  std::vector<FlowWorker> workers;
  std::shared_ptr<const Platform> platform;  // holds every worker's device
  std::shared_ptr<const CostModel> cost;     // predictions; the executor's emulated devices read it
  bool one_device() const { return workers.size() == 1; }
};

// The flows worth considering for `platform` (the user's devices):
//   - each device that runs the whole graph, alone; for two or more CPU core
//     groups also their union (cpu_union_device, compare.h);
//   - side by side on the platform's devices, when two or more of them run
//     the whole graph and none overlaps another;
//   - for a platform of one CPU device of n >= 2 cores, streams: the
//     device split into n / t groups of t consecutive cores, for each t < n
//     dividing n (t = 1, 2, 4, ... on 16 cores: at most five splits).
// Each flow's platform holds its own devices (the given ones and their
// union share one); `open_cost` gives each platform its cost model and may
// calibrate its devices (open_cost_model). Flows are not yet ordered:
// predict_flow ranks them.
using CostOpener = std::function<std::shared_ptr<const CostModel>(Platform&)>;
std::vector<RequestFlow> flow_candidates(const Graph& graph, const Platform& platform, const CostOpener& open_cost);

// A flow's steady state with `in_flight` requests kept in flight (a closed
// loop: each finished request is replaced at once).
struct FlowPrediction {
  double per_s = 0;      // requests per second
  double latency_ms = 0;  // mean request latency, queueing included (Little's law: in_flight / per_s)
  // Per worker: its request's time alone, and beside the others (where the
  // profile measured the units while every device of the shared resource
  // ran at once, CostModel::corun_us; elsewhere its time alone).
  std::vector<double> alone_ms, corun_ms;
  int n_corun_measured = 0, n_units = 0;  // units whose co-run time is measured, of all the workers' units
};

// Predicts from the flow's cost model: each worker serves 1 / corun_ms
// requests per ms when every worker is busy (the fastest min(in_flight,
// workers) ones are). `in_flight` 0 = one per worker.
FlowPrediction predict_flow(const Graph& graph, const RequestFlow& flow, int in_flight = 0);

// What a closed loop of requests measured.
struct LoadResult {
  int n_requests = 0;
  int in_flight = 0;
  double seconds = 0;   // from the first request's start to the last one's end
  double per_s = 0;     // n_requests / seconds
  std::vector<double> latencies_ms;  // per request, in order of completion
  double p50_ms = 0, p90_ms = 0, p99_ms = 0;
};

// Runs requests 0..n-1, `in_flight` at a time: that many client threads
// each take the next request number and call `request(i)` until n were
// taken. The first exception a request throws stops the loop (no new
// request starts) and is rethrown once every thread has joined.
LoadResult run_closed_loop(int n, int in_flight, const std::function<void(int)>& request);

// The p-th percentile (0..100) by linear interpolation between the nearest
// ranks; 0 for no values.
double percentile(std::vector<double> values, double p);

}  // namespace hetsched
