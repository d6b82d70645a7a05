// Loading a model and running it.
//
//   hetsched::Session s = hetsched::Session::load("model.onnx");
//   auto outputs = s.run({{"input", tensor}});
//
// A model is an .onnx path or "zoo:NAME" (see zoo.h). Loading parses the file
// with ONNX's own protobuf library, runs ONNX's checker and shape inference,
// imports the graph, checks every node against the kernels (an unknown op or
// an unsupported attribute is an Error at load, never at run), then applies
// the load-time optimisations: constant folding, Identity/Dropout removal and
// BatchNormalization folded into a preceding Conv.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "hetsched/graph.h"
#include "hetsched/plan.h"
#include "hetsched/trace.h"

namespace hetsched {

using TensorMap = std::map<std::string, Tensor>;

struct LoadOptions {
  // Fixes free (symbolic or unknown) dims of graph inputs, e.g.
  // {"input", {1, 3, 224, 224}}; a fixed dim that disagrees is an error.
  std::map<std::string, Shape> input_shapes;
  bool optimize = true;
  // Model parameters for zoo models, e.g. {"layers", "2"} for zoo:bert.
  std::map<std::string, std::string> zoo_params;
};

// Loads and checks a model; throws hetsched::Error.
Graph load_model(const std::string& model, const LoadOptions& options = {});

// Serialized ONNX ModelProto of `model` as given (zoo models are built; files
// are read and checked), without hetsched's own optimisations.
std::string model_to_onnx_bytes(const std::string& model, const LoadOptions& options = {});

// Parses "input=1x3x224x224" into (name, shape); throws kUsage when malformed.
std::pair<std::string, Shape> parse_shape_override(const std::string& text);

// CUDA Graphs for plans on a GPU (docs/cuda.md): kAuto captures the run into
// one graph when every lane of the plan is on one GPU and enqueues step by
// step otherwise; kOn is the same but an error for a plan not on one GPU;
// kOff always enqueues step by step.
enum class CudaGraphMode { kAuto, kOn, kOff };

// kLatency: one request at a time over the devices, as fast as the plan
// makes it. kThroughput: many requests at once, each on a device of its own
// (a RequestFlow, throughput.h), chosen by measurement among the flows over
// the devices: run() may be called from several threads and serves them
// side by side.
enum class RunMode { kLatency, kThroughput };

struct SessionOptions {
  SessionOptions() = default;
  explicit SessionOptions(std::string devices_spec, bool reference_kernels = false)
      : devices(std::move(devices_spec)), reference(reference_kernels) {}

  // Where to run (see device.h, platform.h): CPU core groups, CUDA GPUs and
  // emulated devices of the platform file.
  std::string devices = "cpu";
  // Run every node with the plain C++ reference kernels instead (the ground
  // truth other backends are checked against), on the calling thread.
  bool reference = false;
  std::string platform;  // platform file; "" = this machine only
  // How to spread the graph over the devices: a scheduler's name
  // (scheduler.h), or a plan file made earlier (`hetsched plan`), which wins.
  // "sequential" on one device needs no cost model; anything else opens the
  // profile database and calibrates the devices first.
  std::string scheduler = "sequential";
  std::string plan;
  std::string profile_db;  // profile database for cost models; "" = the default path
  // Placement overrides "NODE_OR_OP=DEVICE" (platform.h, apply_pins), e.g.
  // "Conv=cpu:0": honoured by every scheduler; a plan file must agree.
  std::vector<std::string> pins;
  // With scheduler "auto" on real devices only: choose by measurement
  // (choose.h). auto plans on the platform with, for two or more CPU core
  // groups, one device on all their cores added; its plan, two runners-up
  // and each device alone run in interleaved rounds on random inputs; a plan
  // is kept only when measured clearly faster than the fastest device alone
  // (ExecutionSummary::choice says what was measured). false: trust the
  // prediction.
  bool verify_auto = true;
  // With scheduler "auto" on real devices: first profile what the database
  // lacks or no longer trusts (profile.h: entries taken under load, or
  // marked stale) on every device auto may use, so that its plans rest on
  // measurements. The first session of a model pays the profile (seconds);
  // the next ones find it in the database.
  bool profile_first = true;
  // With scheduler "auto" measured as above: the choice is kept in the
  // profile database, under the graph's structure, the devices (their
  // signatures: CPU model, cores, library versions), the pins and the CUDA
  // Graph mode; a later session with the same runs the kept plan at once
  // (ExecutionSummary::choice says when it was measured), unless profiling
  // first measured something anew. true: measure again (and keep that).
  bool remeasure = false;
  // Called as the session's own work proceeds (profiling, measuring auto's
  // candidates): done, total, what.
  std::function<void(int, int, const std::string&)> progress;
  CudaGraphMode cuda_graph = CudaGraphMode::kAuto;
  RunMode mode = RunMode::kLatency;
  // kThroughput: the requests callers keep in flight, for choosing the flow
  // (its measured rate); 0 = as many as the flow has workers. The
  // scheduler must be "sequential" (each worker runs its device's sequential
  // plan) and no pins: a request runs on one device.
  int concurrency = 0;
  // Free dims: the sets of input shapes kept compiled at once; running a
  // new one past that drops the least recently run (counted in
  // ExecutionSummary::shapes).
  int max_shapes = 8;
  // "float32", or "bfloat16": the CPU devices compute float32 convolutions
  // and matrix products in bfloat16 where the CPU has bfloat16 instructions
  // (faster, less exact; set_precision in platform.h). Opt-in.
  std::string precision = "float32";
};

// A session whose inputs have free dims (a dynamic batch, a sequence
// length) compiles the graph for each new set of input shapes at its first
// run: the shapes made static, then kernels, plan and workers as for a
// model loaded with those shapes (LoadOptions::input_shapes); it keeps the
// SessionOptions::max_shapes most recently run. With `progress`, the
// profiling or measuring such a compile may do is not reported.
struct ShapeSpecializations {
  bool free_dims = false;         // some input has a free dim
  std::vector<std::string> kept;  // compiled now, most recently run first: "x=4x3x160x160"
  int64_t n_hits = 0;             // runs that found their shapes compiled
  int64_t n_compiles = 0;         // runs that compiled theirs
  int64_t n_evictions = 0;        // compiled shapes dropped for newer ones
  double compile_ms = 0;          // all compiles together
  double last_compile_ms = 0;
};

// A worker of a session's flow: its device, and what it served since the
// session was made.
struct WorkerLoad {
  std::string device;
  int64_t n_requests = 0;
  int64_t n_failed = 0;
  double busy_s = 0;  // time running requests
};

// How one run went: how long it waited for a free worker, then ran on it.
struct RunTiming {
  double queue_s = 0;
  double compute_s = 0;
  std::string worker;  // the worker's device
};

// A flow of requests (throughput.h) that a throughput session measured
// before choosing (ExecutionSummary::flows).
struct FlowOutcome {
  std::string name;  // "side by side on cpu:0, cpu:1"
  std::vector<std::string> workers;
  double predicted_per_s = 0;  // from the cost model
  double measured_per_s = 0;   // median over the interleaved rounds
  double measured_p50_ms = 0;  // request latency, one request per worker in flight
  bool chosen = false;
};

// What a session runs and how: kernels, fusion, fallbacks, memory.
struct ExecutionSummary {
  std::string device;         // "cpu:0-1", "cpu:0,cpu:1", or "reference"
  int n_nodes = 0;
  int n_steps = 0;
  int n_fused_nodes = 0;      // nodes run inside another node's kernel
  int n_reorders = 0;         // layout conversions per run
  int n_fallbacks = 0;        // nodes run with reference kernels
  std::vector<std::string> fallbacks;  // "<node>: <why>"
  // Quantized chains of the model computed in float32 (Graph::float_chains).
  std::vector<std::string> float_chains;
  size_t arena_bytes = 0;     // peak memory of intermediate values
  size_t weight_bytes = 0;    // weights as the kernels hold them
  std::string note;           // why the whole graph runs on reference kernels, if it does
  // The plan: who made it, its lanes (device, stream), copies between memory
  // spaces and events between lanes.
  std::string scheduler;
  int n_lanes = 0;
  int n_copies = 0;
  int n_events = 0;
  bool emulated = false;      // some device is emulated: its timings are modeled
  int n_emulation_overruns = 0;  // emulated steps whose real compute outlasted the model (last run)
  std::string choice;  // how `auto`'s choice (or the throughput flow) was checked by measurement, when it was
  // RunMode::kThroughput: the flow ("side by side on cpu:0, cpu:1") and its
  // workers' devices, fastest first; the other fields describe the first
  // worker's plan.
  std::string flow;
  std::vector<std::string> workers;
  std::vector<FlowOutcome> flows;  // the flows measured for the choice, the chosen one marked
  // With a GPU in the plan: "on" (captured into one CUDA Graph and replayed),
  // "off", or "off: the capture failed (<why>)" (run step by step instead).
  std::string cuda_graph;
  // The profile database's warnings when the session opened it (a broken
  // file moved aside and rebuilt).
  std::vector<std::string> warnings;
  // Free dims: the input shapes compiled. The fields above describe the
  // most recently run shapes' compile (before the first run: none, and
  // `note` says so).
  ShapeSpecializations shapes;
};

class Session {
 public:
  explicit Session(Graph graph, const SessionOptions& options = {});
  static Session load(const std::string& model, const LoadOptions& options = {},
                      const SessionOptions& session_options = {});
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;
  ~Session();

  // The graph as loaded (with its free dims, if any).
  const Graph& graph() const { return *graph_; }
  ExecutionSummary summary() const;
  // The plan it runs, and the graph that plan was made for: with free dims,
  // those of the most recently run input shapes (nullptr and graph() before
  // the first run), valid until a later run compiles other shapes. nullptr
  // on reference kernels.
  const Plan* plan() const;
  const Graph& plan_graph() const;
  const Platform& platform() const;

  // Runs the graph once. Every graph input must be given, with a dtype and a
  // shape matching the graph's (free dims match any size, the same in every
  // input that names them alike); an extra or missing input is an
  // ErrorCode::kInvalidInput naming it. The first run of new input shapes
  // compiles the graph for them (ShapeSpecializations). Returns every
  // graph output by name. Concurrent calls run side by side on the workers
  // of a throughput session (each on the worker that would finish it
  // first) and are serialised otherwise. With `trace`, also the run's timeline (one lane per device
  // stream; see trace.h); with `timing`, its queue and compute time.
  TensorMap run(const TensorMap& inputs, Trace* trace = nullptr, RunTiming* timing = nullptr) const;
  // The checks run() makes on its inputs, alone: lets a caller that reads
  // inputs from files name the file of a wrong one before anything runs.
  void check_inputs(const TensorMap& inputs) const;

  // Deterministic random inputs for every graph input (free dims set to 1):
  // floats uniform in [-1, 1), integers in [0, 10), bools alternating.
  TensorMap random_inputs(uint64_t seed = 0) const;

  // Per worker of the flow (one in latency mode): requests served, failed
  // and time busy since the session was made. Empty on reference kernels.
  std::vector<WorkerLoad> loads() const;

 private:
  struct Backend;
  struct State;
  static std::shared_ptr<Backend> compile(std::shared_ptr<const Graph> graph, const SessionOptions& options,
                                          Platform platform);
  // Free dims: the backend compiled for these input shapes, compiled now if new.
  std::shared_ptr<Backend> backend_for(const std::vector<Shape>& shapes) const;
  static std::shared_ptr<Backend> compile_staged(std::shared_ptr<Backend> backend, const SessionOptions& options,
                                                 Platform platform);  // shapes that depend on data
  static TensorMap run_on(const Backend& backend, const TensorMap& inputs, Trace* trace, RunTiming* timing);
  static TensorMap run_staged(const Backend& backend, const TensorMap& inputs, Trace* trace, RunTiming* timing);
  static void describe_stages(const Backend& backend, ExecutionSummary& summary);
  std::shared_ptr<Backend> latest() const;  // null before a free-dim session's first run
  std::shared_ptr<const Graph> graph_;
  std::unique_ptr<State> state_;
};

// Deterministic random inputs for every graph input (see
// Session::random_inputs).
TensorMap random_inputs(const Graph& graph, uint64_t seed = 0);

// The checks Session::run makes on its inputs, on the graph alone (before
// a session is made): every input given, none extra, dtypes and static
// dims as the graph's, free dims named alike given alike. ErrorCode::kInvalidInput
// naming the input.
void check_inputs(const Graph& graph, const TensorMap& inputs);

// Runs `graph` once with the reference kernels, sequentially, on the calling
// thread (inputs are not checked; see Session::run).
TensorMap run_reference(const Graph& graph, const TensorMap& inputs);

}  // namespace hetsched
