// The executor (contract in executor.h).
#include "runtime/executor.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <future>
#include <mutex>
#include <new>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backends/cpu/cpu_device.h"
#include "backends/cpu/program.h"
#include "core/allocation.h"
#include "kernels/kernel.h"
#include "runtime/gpu_device.h"

namespace hetsched {

namespace {

using Clock = std::chrono::steady_clock;

// How long a CPU lane spins on a Wait before it sleeps on the condition
// variable: covers the waits of a plan's ordinary hand-overs (a few kernels
// long), not a wait on a slow emulated device.
constexpr auto kSpinBeforeSleep = std::chrono::milliseconds(5);

double us_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

// The capture of a CUDA Graph failed (not the plan's own work): under
// CudaGraphMode::kAuto the plan then runs step by step.
class CaptureFailed : public Error {
 public:
  explicit CaptureFailed(const Error& e) : Error(e.code(), e.what()) {}
};

// What one run shares between its lane workers: which events are done, and
// the first error.
struct RunState {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<char> recorded;
  bool cancelled = false;
  std::exception_ptr error;
  // Mirrors of `recorded` and `cancelled`, read without the mutex while a
  // CPU lane spins briefly before sleeping (see kSpinBeforeSleep).
  std::unique_ptr<std::atomic<bool>[]> recorded_flag;
  std::atomic<bool> cancelled_flag{false};

  explicit RunState(int n_events) : recorded(n_events, 0), recorded_flag(new std::atomic<bool>[n_events]) {
    for (int e = 0; e < n_events; ++e) recorded_flag[e] = false;
  }

  void record(int event) {
    {
      std::lock_guard lock(mutex);
      recorded[event] = 1;
      recorded_flag[event] = true;
    }
    changed.notify_all();
  }

  void fail(std::exception_ptr e) {
    {
      std::lock_guard lock(mutex);
      if (!error) error = e;
      cancelled = true;
      cancelled_flag = true;
    }
    changed.notify_all();
  }
};

// N of a CUDA device's name "cuda:N".
int cuda_ordinal(const PlatformDevice& device) {
  try {
    return std::stoi(device.name.substr(device.name.find(':') + 1));
  } catch (const std::exception&) {
    throw Error(ErrorCode::kInvalidFile, fmt::format("'{}' is not a CUDA device name (cuda:N)", device.name));
  }
}

std::string join_labels(const Graph& graph, const std::vector<NodeId>& nodes, const char* joiner, bool op_types) {
  std::string out;
  for (NodeId n : nodes) {
    if (!out.empty()) out += joiner;
    out += op_types ? graph.nodes[n].op_type : graph.nodes[n].label();
  }
  return out;
}

}  // namespace

struct Executor::Impl {
  const Graph& graph;
  Plan plan;
  Platform platform;
  std::shared_ptr<const CostModel> cost;
  ExecutionSummary summary;

  std::vector<const PlatformDevice*> devices;  // per plan device
  std::vector<std::string> spaces;             // memory spaces, host first
  std::vector<int> device_space;               // per plan device

  // Real CPU devices: their pinned worker, engine and stream (created on it).
  struct CpuRuntime {
    std::shared_ptr<CpuDevice> device;  // CpuDevice::shared: the process's worker for these cores
    std::unique_ptr<dnnl::engine> engine;
    std::unique_ptr<dnnl::stream> stream;
  };
  std::vector<CpuRuntime> cpu;  // per plan device; empty for emulated ones

  // GPUs: one per plan device of kind kCuda, null for the others.
  std::vector<std::unique_ptr<GpuDevice>> gpu;  // per plan device
  std::vector<GpuDevice*> gpu_of_space;         // per memory space: the GPU it belongs to, or null
  std::vector<int> recorder;                    // per event: the lane recording it
  CudaGraphMode cuda_graph_mode = CudaGraphMode::kAuto;
  // Every lane on one GPU and the graph wanted: run() replays one CUDA Graph
  // of the whole plan, captured at the first run.
  int graph_device = -1;  // the plan device whose GPU runs the graph, -1: none
  bool captured = false;
  std::vector<std::pair<int, int>> step_order;  // (lane, step): every step, in an order a sequential walk runs them
  // Per lane: the index its first step has when every lane's steps are
  // counted in lane order (how faults and errors number steps).
  std::vector<int> first_step_of_lane;

  struct LaneRuntime {
    std::unique_ptr<cpu::Program> program;  // CPU lanes with oneDNN
    std::vector<int> program_launch;        // per step: launch index in program, -1 otherwise
    std::vector<double> modeled_us;         // per step: emulated duration, 0 when none
    // Per step: a Wait that may spin before sleeping (see run_lane).
    std::vector<char> spin_on_wait;
    bool emulated = false;
    bool gpu = false;  // a lane of a CUDA device: its host thread drives the lane's stream
  };
  std::vector<LaneRuntime> lanes;
  std::vector<int> lane_of_node;   // per node: the lane launching it
  std::set<ValueId> keep_layout;   // values crossing CPU lanes in their producer's layout

  // Values crossing lanes or handled by reference kernels, one buffer per
  // memory space: store[value][space]; plain, except `keep_layout` values
  // (raw bytes in their producer's layout). Graph inputs alias the caller's
  // tensors and graph outputs are fresh each run. Filled by setup(): during
  // a run, lanes only read and write existing entries.
  std::vector<std::vector<Tensor>> store;
  FaultKind fault_kind = FaultKind::kKernel;
  int fault_step = -1;
  std::mutex run_mutex;

  Impl(const Graph& g, Plan p, const Platform& pf, std::shared_ptr<const CostModel> c, CudaGraphMode mode)
      : graph(g), plan(std::move(p)), platform(pf), cost(std::move(c)), cuda_graph_mode(mode) {}
  // Here rather than in ~Executor: a constructor that throws half-way (an
  // arena that cannot be allocated) must release what it built the same way.
  ~Impl();

  int space_index(const std::string& name) const {
    return static_cast<int>(std::find(spaces.begin(), spaces.end(), name) - spaces.begin());
  }

  Tensor& stored(ValueId v, int space) {
    std::vector<Tensor>& per_space = store[v];
    if (per_space.size() < spaces.size()) per_space.resize(spaces.size());
    return per_space[space];
  }

  void need(ValueId v, int space) {
    if (gpu_of_space[space]) return;  // held in the GPU's arena
    Tensor& t = stored(v, space);
    const Value& value = graph.values[v];
    if (!t.defined() && keep_layout.count(v)) {
      // Bytes in the producer's (maybe blocked, padded) layout.
      size_t bytes = lanes[lane_of_node[value.producer]].program->export_desc(v).get_size();
      t = Tensor(DType::kUInt8, {static_cast<int64_t>(bytes)});
    }
    bool per_run = space == 0 && graph.is_graph_input(v);  // the caller's tensor
    if (!t.defined() && !value.is_constant() && !per_run) {
      try {
        t = Tensor(value.dtype, value.shape);
      } catch (const Error& e) {
        throw Error(e.code(), fmt::format("value '{}' in memory space '{}': {}", value.name, spaces[space], e.what()));
      }
    }
  }

  // "step 12 (lane 1 on cpu:1, launch Conv 'c1' + Relu 'r1')": where an error
  // happened, for its message.
  std::string describe_step(int l, size_t s, int global_step) const;

  void setup();
  void compute_step_order();
  void compile_lane(int l);
  void compile_programs();
  void make_gpus();
  void choose_cuda_graph();
  void run_lane(int l, RunState& state, Clock::time_point start, RunTimeline* timeline, std::atomic<int>& overruns);
  void run_reference_launch(const PlanStep& step, int space);
  void copy_value(const PlanStep& step);
  void gpu_copy(int l, const PlanStep& step);
  void run_cuda_graph();
};

Executor::Impl::~Impl() {
  // Programs hold oneDNN primitives: release them on their devices' threads.
  for (size_t l = 0; l < lanes.size(); ++l) {
    auto& rt = lanes[l];
    if (rt.program && cpu[plan.lanes[l].device].device)
      cpu[plan.lanes[l].device].device->run([&] { rt.program.reset(); });
  }
  for (auto& dev : cpu)
    if (dev.device) dev.device->run([&] {
      dev.stream.reset();
      dev.engine.reset();
    });
}

std::string Executor::Impl::describe_step(int l, size_t s, int global_step) const {
  const Lane& lane = plan.lanes[l];
  const PlanStep& step = lane.steps[s];
  std::string what;
  switch (step.kind) {
    case StepKind::kLaunch: what = "launch " + join_labels(graph, step.nodes, " + ", false); break;
    case StepKind::kCopy:
      what = fmt::format("copy '{}' {}->{}", graph.values[step.value].name, step.from_space, step.to_space);
      break;
    case StepKind::kRecord: what = fmt::format("record e{}", step.event); break;
    case StepKind::kWait: what = fmt::format("wait e{}", step.event); break;
  }
  return fmt::format("step {} (lane {} on {}, {})", global_step, l, plan.devices[lane.device], what);
}

void Executor::Impl::setup() {
  for (const std::string& name : plan.devices) {
    int d = platform.find_device(name);
    if (d < 0) throw Error(ErrorCode::kInvalidFile, fmt::format("plan: device '{}' is not in the platform", name));
    devices.push_back(&platform.devices[d]);
  }
  spaces.push_back(kHostMemory);
  for (const PlatformDevice* d : devices) {
    if (std::find(spaces.begin(), spaces.end(), d->memory_space) == spaces.end()) spaces.push_back(d->memory_space);
    device_space.push_back(space_index(d->memory_space));
  }
  gpu_of_space.assign(spaces.size(), nullptr);
  for (const Value& v : graph.values)
    if (!v.is_constant() && !v.shape_is_static())
      throw Error(ErrorCode::kUnsupported,
                  fmt::format("running a plan needs static shapes; value '{}' has shape {} (fix input dims with "
                              "--shape)",
                              v.name, v.has_shape ? shape_to_string(v.shape) : "of unknown rank"));
  store.assign(graph.values.size(), {});
  cpu.resize(devices.size());
  lanes.resize(plan.lanes.size());

  lane_of_node.assign(graph.nodes.size(), -1);
  for (size_t l = 0; l < plan.lanes.size(); ++l)
    for (const PlanStep& step : plan.lanes[l].steps)
      if (step.kind == StepKind::kLaunch)
        for (NodeId n : step.nodes) lane_of_node[n] = static_cast<int>(l);

  // A Wait on an event an overlapping device records sleeps at once: the
  // launch it waits for runs on this lane's cores, and spinning there would
  // take one of them from it (a narrow lane waiting for a union device's
  // launch, or the union device waiting for the narrow ones'). Every other
  // Wait of a CPU lane spins first: plan_builder orders the exclusion Waits
  // before the data Waits, so nothing else runs on the lane's cores then.
  // A GPU lane's host thread only enqueues: it sleeps at once.
  recorder.assign(plan.n_events, -1);
  for (size_t l = 0; l < plan.lanes.size(); ++l)
    for (const PlanStep& step : plan.lanes[l].steps)
      if (step.kind == StepKind::kRecord) recorder[step.event] = static_cast<int>(l);
  for (size_t l = 0; l < plan.lanes.size(); ++l) {
    const Lane& lane = plan.lanes[l];
    lanes[l].spin_on_wait.assign(lane.steps.size(), 0);
    if (devices[lane.device]->kind != DeviceKind::kCpu) continue;
    int self = platform.find_device(plan.devices[lane.device]);
    for (size_t s = 0; s < lane.steps.size(); ++s) {
      if (lane.steps[s].kind != StepKind::kWait) continue;
      int other = platform.find_device(plan.devices[plan.lanes[recorder[lane.steps[s].event]].device]);
      lanes[l].spin_on_wait[s] = !platform.overlapping(self, other);
    }
  }

  std::vector<bool> used(devices.size(), false);
  for (const Lane& lane : plan.lanes) used[lane.device] = true;
  for (size_t d = 0; d < devices.size(); ++d) {
    if (!used[d] || devices[d]->kind != DeviceKind::kCpu) continue;
    DeviceSpec spec;
    spec.cores = devices[d]->cores;
    cpu[d].device = CpuDevice::shared(spec);
    CpuRuntime& rt = cpu[d];
    rt.device->run([&rt] {
      rt.engine = std::make_unique<dnnl::engine>(dnnl::engine::kind::cpu, 0);
      rt.stream = std::make_unique<dnnl::stream>(*rt.engine);
    });
  }
  // Float values crossing between CPU lanes only keep their producer's layout.
  for (ValueId v = 0; v < static_cast<ValueId>(graph.values.size()); ++v) {
    NodeId producer = graph.values[v].producer;
    if (producer == kNoNode || graph.is_graph_output(v) || graph.values[v].dtype != DType::kFloat32) continue;
    int from = lane_of_node[producer];
    bool cpu_only = devices[plan.lanes[from].device]->kind == DeviceKind::kCpu, crosses = false;
    for (NodeId c : graph.values[v].consumers) {
      int to = lane_of_node[c];
      crosses = crosses || to != from;
      cpu_only = cpu_only && devices[plan.lanes[to].device]->kind == DeviceKind::kCpu;
    }
    if (crosses && cpu_only) keep_layout.insert(v);
  }
  choose_cuda_graph();
  compute_step_order();
  compile_programs();
  make_gpus();

  // Store entries: what crosses lanes (a reader or writer on another lane,
  // a copy, a graph output) and everything reference lanes touch.
  for (size_t l = 0; l < plan.lanes.size(); ++l) {
    const Lane& lane = plan.lanes[l];
    int space = device_space[lane.device];
    LaneRuntime& rt = lanes[l];
    for (const PlanStep& step : lane.steps) {
      if (step.kind == StepKind::kCopy) {
        need(step.value, space_index(step.from_space));
        need(step.value, space_index(step.to_space));
      }
      if (step.kind != StepKind::kLaunch || rt.gpu) continue;  // a GPU's values are in its arena
      for (NodeId n : step.nodes) {
        for (ValueId v : graph.nodes[n].inputs)
          if (v != kNoValue && (!rt.program || graph.values[v].producer == kNoNode ||
                                lane_of_node[graph.values[v].producer] != static_cast<int>(l)))
            need(v, space);
        for (ValueId v : graph.nodes[n].outputs) {
          if (v == kNoValue) continue;
          bool crosses = !rt.program || graph.is_graph_output(v);
          for (NodeId c : graph.values[v].consumers) crosses = crosses || lane_of_node[c] != static_cast<int>(l);
          if (crosses) need(v, space);
        }
      }
    }
  }
  // CPU programs read and write the store in place.
  for (size_t l = 0; l < plan.lanes.size(); ++l) {
    LaneRuntime& rt = lanes[l];
    if (!rt.program) continue;
    std::vector<std::pair<ValueId, void*>> memory;
    for (ValueId v : rt.program->external_inputs())
      if (!graph.is_graph_input(v)) memory.emplace_back(v, stored(v, 0).raw());
    for (ValueId v : rt.program->exports())
      if (!graph.is_graph_output(v)) memory.emplace_back(v, stored(v, 0).raw());
    cpu[plan.lanes[l].device].device->run([&] { rt.program->bind(memory); });
  }

  // The summary.
  summary.scheduler = plan.scheduler;
  summary.n_nodes = static_cast<int>(graph.nodes.size());
  summary.n_lanes = static_cast<int>(plan.lanes.size());
  summary.n_copies = plan.n_copies();
  summary.n_events = plan.n_events;
  std::vector<std::string> names;
  for (size_t d = 0; d < devices.size(); ++d)
    if (used[d]) names.push_back(devices[d]->name);
  summary.device = fmt::format("{}", fmt::join(names, ","));
  for (const auto& g : gpu) {
    if (!g) continue;
    GpuDeviceStats stats = g->stats();
    summary.n_steps += stats.n_ops;
    summary.n_fused_nodes += stats.n_fused_nodes;
    summary.arena_bytes += stats.arena_bytes;
  }
  for (size_t l = 0; l < plan.lanes.size(); ++l) {
    const LaneRuntime& rt = lanes[l];
    summary.emulated = summary.emulated || rt.emulated;
    if (rt.gpu) continue;  // counted per GPU above
    if (!rt.program) {
      for (const PlanStep& step : plan.lanes[l].steps)
        if (step.kind == StepKind::kLaunch) summary.n_steps += static_cast<int>(step.nodes.size());
      continue;
    }
    const cpu::ProgramStats& stats = rt.program->stats();
    summary.n_steps += stats.n_steps;
    summary.n_fused_nodes += stats.n_fused_nodes;
    summary.n_reorders += stats.n_reorders;
    summary.n_fallbacks += stats.n_fallbacks;
    summary.fallbacks.insert(summary.fallbacks.end(), stats.fallbacks.begin(), stats.fallbacks.end());
    summary.arena_bytes += stats.arena_bytes;
    summary.weight_bytes += stats.constant_bytes;
  }
}

void Executor::Impl::compile_lane(int l) {
  const Lane& lane = plan.lanes[l];
  LaneRuntime& rt = lanes[l];
  const PlatformDevice& device = *devices[lane.device];
  rt.program_launch.assign(lane.steps.size(), -1);
  rt.modeled_us.assign(lane.steps.size(), 0);
  if (device.kind == DeviceKind::kCuda) {
    rt.gpu = true;  // prepared by its GPU (make_gpus)
    return;
  }
  if (device.is_emulated()) {
    rt.emulated = true;
    if (!cost) throw Error(ErrorCode::kUsage, "executor: emulated devices need a cost model for their durations");
    for (size_t s = 0; s < lane.steps.size(); ++s)
      if (lane.steps[s].kind == StepKind::kLaunch)
        rt.modeled_us[s] = cost->launch(graph, lane.steps[s].nodes, device).us;
    return;
  }
  cpu::ProgramScope scope;
  for (size_t s = 0; s < lane.steps.size(); ++s)
    if (lane.steps[s].kind == StepKind::kLaunch) {
      rt.program_launch[s] = static_cast<int>(scope.launches.size());
      scope.launches.push_back(lane.steps[s].nodes);
    }
  scope.keep_layout = keep_layout;
  scope.bfloat16 = device.precision == "bfloat16";
  scope.import_layout = [this](ValueId v) -> std::optional<dnnl::memory::desc> {
    if (!keep_layout.count(v)) return std::nullopt;
    return lanes[lane_of_node[graph.values[v].producer]].program->export_desc(v);
  };
  CpuRuntime& dev = cpu[lane.device];
  dev.device->run([&] { rt.program = cpu::Program::start(graph, *dev.engine, std::move(scope)); });
}

// The order a sequential walk of the plan runs its steps in: each lane as
// far as it goes until a Wait whose event is not recorded yet (the plan is
// deadlock-free, so the walk ends with every step).
void Executor::Impl::compute_step_order() {
  first_step_of_lane.assign(plan.lanes.size(), 0);
  for (size_t l = 1; l < plan.lanes.size(); ++l)
    first_step_of_lane[l] = first_step_of_lane[l - 1] + static_cast<int>(plan.lanes[l - 1].steps.size());
  std::vector<size_t> next(plan.lanes.size(), 0);
  std::vector<char> recorded(plan.n_events, 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t l = 0; l < plan.lanes.size(); ++l) {
      const Lane& lane = plan.lanes[l];
      for (; next[l] < lane.steps.size(); ++next[l], progress = true) {
        const PlanStep& step = lane.steps[next[l]];
        if (step.kind == StepKind::kWait && !recorded[step.event]) break;
        if (step.kind == StepKind::kRecord) recorded[step.event] = 1;
        step_order.emplace_back(static_cast<int>(l), static_cast<int>(next[l]));
      }
    }
  }
}

// CPU programs exchange values in their producers' layouts, so each launch
// is compiled after the launches it reads from: in step_order.
void Executor::Impl::compile_programs() {
  for (size_t l = 0; l < plan.lanes.size(); ++l) compile_lane(static_cast<int>(l));
  for (const auto& [l, s] : step_order) {
    const Lane& lane = plan.lanes[l];
    LaneRuntime& rt = lanes[l];
    const int launch = rt.program_launch[s];
    if (lane.steps[s].kind == StepKind::kLaunch && rt.program)
      cpu[lane.device].device->run([&] { rt.program->compile_launch(launch); });
  }
  for (size_t l = 0; l < plan.lanes.size(); ++l) {
    if (!lanes[l].program) continue;
    try {
      cpu[plan.lanes[l].device].device->run([&] { lanes[l].program->finish(); });
    } catch (const Error& e) {
      // finish() allocates the lane's arena: say which lane cannot have it.
      throw Error(e.code(), fmt::format("lane {} on {}: {}", l, plan.devices[plan.lanes[l].device], e.what()));
    }
  }
}

void Executor::Impl::make_gpus() {
  gpu.resize(devices.size());
  std::vector<bool> used(devices.size(), false);
  for (const Lane& lane : plan.lanes) used[lane.device] = true;
  for (size_t d = 0; d < devices.size(); ++d) {
    if (!used[d] || devices[d]->kind != DeviceKind::kCuda) continue;
    try {
      gpu[d] = make_gpu_device(graph, plan, static_cast<int>(d), cuda_ordinal(*devices[d]), devices[d]->n_streams);
    } catch (const Error& e) {
      throw Error(e.code(), fmt::format("{}: {}", devices[d]->name, e.what()));
    }
    gpu_of_space[device_space[d]] = gpu[d].get();
  }
}

// A CUDA Graph needs every lane on one GPU: the capture follows one
// context's streams, and a CPU lane's work cannot join it.
void Executor::Impl::choose_cuda_graph() {
  std::set<int> lane_devices;
  for (const Lane& lane : plan.lanes) lane_devices.insert(lane.device);
  bool one_gpu = lane_devices.size() == 1 && devices[*lane_devices.begin()]->kind == DeviceKind::kCuda;
  if (cuda_graph_mode == CudaGraphMode::kOn && !one_gpu) {
    std::vector<std::string> names;
    for (int d : lane_devices) names.push_back(plan.devices[d]);
    throw Error(ErrorCode::kUsage, fmt::format("--cuda-graph on needs every lane of the plan on one GPU; this plan "
                                               "runs on {} (use --cuda-graph off)",
                                               fmt::join(names, ", ")));
  }
  graph_device = one_gpu && cuda_graph_mode != CudaGraphMode::kOff ? *lane_devices.begin() : -1;
  bool any_gpu = std::any_of(lane_devices.begin(), lane_devices.end(),
                             [&](int d) { return devices[d]->kind == DeviceKind::kCuda; });
  summary.cuda_graph = graph_device >= 0 ? "on" : any_gpu ? "off" : "";
}

void Executor::Impl::run_reference_launch(const PlanStep& step, int space) {
  for (NodeId n : step.nodes) {
    const Node& node = graph.nodes[n];
    const kernels::ReferenceKernel* kernel = kernels::find_reference_kernel(node.op_type);
    if (!kernel) throw Error(ErrorCode::kUnsupported, node.label() + ": no reference kernel");
    std::vector<const Tensor*> args;
    for (ValueId v : node.inputs) {
      if (v == kNoValue) {
        args.push_back(nullptr);
        continue;
      }
      const Value& value = graph.values[v];
      args.push_back(value.is_constant() ? &*value.initializer : &stored(v, space));
    }
    std::vector<Tensor> results = kernel->compute(node, args);
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      ValueId v = node.outputs[o];
      if (v == kNoValue) continue;
      Tensor& dst = stored(v, space);
      const Tensor& r = results.at(o);
      if (r.dtype() != dst.dtype() || r.shape() != dst.shape())
        throw Error(ErrorCode::kRuntime, fmt::format("{}: produced {} where the graph says {}", node.label(),
                                                     r.description(), dst.description()));
      std::memcpy(dst.raw(), r.raw(), r.nbytes());
    }
  }
}

void Executor::Impl::copy_value(const PlanStep& step) {
  const Tensor& from = stored(step.value, space_index(step.from_space));
  Tensor& to = stored(step.value, space_index(step.to_space));
  std::memcpy(to.raw(), from.raw(), from.nbytes());
}

// A Copy to or from a GPU (the other side is host memory: make_gpu_device
// refuses anything else). On a lane of that GPU it goes through the lane's
// stream: host -> GPU is enqueued (the host's bytes are staged at once), GPU
// -> host waits for the stream, so that the host copy is complete when the
// lane's next Record tells other lanes. Any other lane has waited for the
// value on the host already (run_lane's Wait) and copies blocking.
void Executor::Impl::gpu_copy(int l, const PlanStep& step) {
  const Lane& lane = plan.lanes[l];
  GpuDevice* own = gpu[lane.device].get();
  int from = space_index(step.from_space), to = space_index(step.to_space);
  ValueId v = step.value;
  if (GpuDevice* dst = gpu_of_space[to]) {
    const void* host = stored(v, from).raw();
    if (dst == own) {
      own->stage_in(v, host);
      own->enqueue_to_device(lane.stream, v);
    } else {
      dst->upload(v, host);
    }
    return;
  }
  GpuDevice* src = gpu_of_space[from];
  void* host = stored(v, to).raw();
  if (src == own) {
    own->enqueue_to_host(lane.stream, v);
    own->synchronize(lane.stream);
    own->stage_out(v, host);
  } else {
    src->download(v, host);
  }
}

void Executor::Impl::run_lane(int l, RunState& state, Clock::time_point start, RunTimeline* timeline,
                              std::atomic<int>& overruns) {
  const Lane& lane = plan.lanes[l];
  const int first_global_step = first_step_of_lane[l];
  LaneRuntime& rt = lanes[l];
  int space = device_space[lane.device];
  CpuRuntime* dev = rt.program ? &cpu[lane.device] : nullptr;
  GpuDevice* own_gpu = gpu[lane.device].get();
  std::vector<RunTimeline::StepTime> times;
  size_t s = 0;
  try {
    for (; s < lane.steps.size(); ++s) {
      const PlanStep& step = lane.steps[s];
      auto step_start = Clock::now();
      // A GPU step's time starts here, as a CPU lane's does: a Wait's host
      // side counts.
      if (own_gpu && timeline) own_gpu->mark(l, static_cast<int>(s), false);
      if (step.kind == StepKind::kWait && rt.spin_on_wait[s]) {
        // A CPU lane owns its cores while it waits on a device not sharing
        // them: spinning a little there steals from no kernel, and a vCPU
        // that never idles keeps its caches and needs no wake-up from the
        // hypervisor.
        auto until = step_start + kSpinBeforeSleep;
        while (!state.recorded_flag[step.event] && !state.cancelled_flag && Clock::now() < until) {
        }
      }
      {
        std::unique_lock lock(state.mutex);
        if (step.kind == StepKind::kWait)
          state.changed.wait(lock, [&] { return state.cancelled || state.recorded[step.event]; });
        if (state.cancelled) return;
      }
      if (first_global_step + static_cast<int>(s) == fault_step) {
        switch (fault_kind) {
          case FaultKind::kKernel: throw Error(ErrorCode::kRuntime, "injected kernel fault");
          case FaultKind::kCopy: throw Error(ErrorCode::kRuntime, "injected copy fault: the transfer failed");
          case FaultKind::kCapture: break;  // only a capture fails
          case FaultKind::kAllocation: {
            // The step's output buffer, allocated as a failing allocation
            // would be: the error comes from the allocator itself.
            ValueId v = graph.nodes[step.nodes.back()].outputs.at(0);
            const Value& value = graph.values[v];
            fail_next_allocation_for_testing();
            try {
              Tensor output(value.dtype, value.shape);
            } catch (const Error& e) {
              throw Error(e.code(), fmt::format("output '{}': {}", value.name, e.what()));
            }
            break;
          }
        }
      }
      switch (step.kind) {
        case StepKind::kLaunch:
          if (own_gpu) own_gpu->launch(l, static_cast<int>(s));
          else if (rt.program) rt.program->run_launch(rt.program_launch[s], *dev->stream);
          else run_reference_launch(step, space);
          break;
        case StepKind::kCopy: {
          if (gpu_of_space[space_index(step.from_space)] || gpu_of_space[space_index(step.to_space)]) {
            gpu_copy(l, step);
            break;
          }
          // Every other memory space but host belongs to an emulated device:
          // the bytes really move, and the copy is held to the link's model.
          copy_value(step);
          const Link* link = platform.link(step.from_space, step.to_space);
          double bytes = static_cast<double>(stored(step.value, space_index(step.to_space)).nbytes());
          double us = link ? link->latency_us + bytes / (link->bandwidth_gbps * 1e3) : 0;
          std::this_thread::sleep_until(step_start + std::chrono::nanoseconds(static_cast<int64_t>(us * 1e3)));
          break;
        }
        case StepKind::kRecord:
          if (own_gpu) own_gpu->record(lane.stream, step.event);
          state.record(step.event);
          break;
        case StepKind::kWait: {
          // The recording lane has passed its Record; on a GPU that means
          // enqueued it. A lane of the same GPU has its stream wait (the
          // host goes on enqueueing); any other waits on the host.
          GpuDevice* from = gpu[plan.lanes[recorder[step.event]].device].get();
          if (from && from == own_gpu) own_gpu->wait(lane.stream, step.event);
          else if (from) from->host_wait(step.event);
          break;
        }
      }
      if (own_gpu && timeline) own_gpu->mark(l, static_cast<int>(s), true);
      if (rt.emulated && rt.modeled_us[s] > 0) {
        auto until = step_start + std::chrono::nanoseconds(static_cast<int64_t>(rt.modeled_us[s] * 1e3));
        if (Clock::now() > until) ++overruns;
        std::this_thread::sleep_until(until);
      }
      if (timeline) times.push_back({l, static_cast<int>(s), us_between(start, step_start), us_between(start, Clock::now())});
    }
  } catch (const Error& e) {
    state.fail(std::make_exception_ptr(
        Error(e.code(), fmt::format("{}: {}", describe_step(l, s, first_global_step + static_cast<int>(s)), e.what()))));
  } catch (const std::bad_alloc&) {
    state.fail(std::make_exception_ptr(
        Error(ErrorCode::kResource, fmt::format("{}: out of memory (std::bad_alloc)",
                                                describe_step(l, s, first_global_step + static_cast<int>(s))))));
  } catch (...) {
    state.fail(std::current_exception());
  }
  if (timeline) {
    std::lock_guard lock(state.mutex);
    timeline->steps.insert(timeline->steps.end(), times.begin(), times.end());
  }
}

Executor::Executor(const Graph& graph, Plan plan, const Platform& platform, std::shared_ptr<const CostModel> cost,
                   CudaGraphMode cuda_graph)
    : impl_(std::make_unique<Impl>(graph, std::move(plan), platform, std::move(cost), cuda_graph)) {
  validate_plan(impl_->plan, graph, platform);
  impl_->setup();
}

Executor::~Executor() = default;

const Plan& Executor::plan() const { return impl_->plan; }
const ExecutionSummary& Executor::summary() const { return impl_->summary; }
void Executor::inject_fault_for_testing(FaultKind kind, int step) {
  Impl& m = *impl_;
  std::lock_guard run_lock(m.run_mutex);  // never while a run reads it
  if (step < 0) {
    m.fault_step = -1;
    return;
  }
  int first = 0;
  for (const Lane& lane : m.plan.lanes) {
    int n = static_cast<int>(lane.steps.size());
    if (step < first + n) {
      StepKind step_kind = lane.steps[step - first].kind;
      StepKind wanted = kind == FaultKind::kCopy ? StepKind::kCopy : StepKind::kLaunch;
      if (step_kind != wanted)
        throw Error(ErrorCode::kUsage, fmt::format("inject_fault_for_testing: step {} is not a {}", step,
                                                   kind == FaultKind::kCopy ? "copy" : "launch"));
      m.fault_kind = kind;
      m.fault_step = step;
      return;
    }
    first += n;
  }
  throw Error(ErrorCode::kUsage,
              fmt::format("inject_fault_for_testing: step {} is beyond the plan's {} steps", step, first));
}

TensorMap Executor::run(const TensorMap& inputs, RunTimeline* timeline) {
  Impl& m = *impl_;
  std::lock_guard run_lock(m.run_mutex);
  // Other executors share these workers (CpuDevice::shared): one run at a
  // time on them, or lanes of two runs could wait on each other.
  std::vector<CpuDevice*> workers;
  for (const auto& rt : m.cpu)
    if (rt.device) workers.push_back(rt.device.get());
  auto worker_locks = lock_exclusive(workers);
  const Graph& graph = m.graph;

  // Per run: graph inputs alias the caller's tensors, graph outputs are new.
  for (ValueId v : graph.inputs) {
    Tensor& t = m.stored(v, 0);
    t = inputs.at(graph.values[v].name);
  }
  TensorMap outputs;
  std::vector<std::vector<std::pair<ValueId, void*>>> lane_memory(m.lanes.size());
  for (ValueId v : graph.outputs) {
    const Value& value = graph.values[v];
    if (value.is_constant()) {
      outputs[value.name] = value.initializer->clone();
    } else if (graph.is_graph_input(v)) {
      outputs[value.name] = inputs.at(value.name).clone();
    } else {
      Tensor& t = m.stored(v, 0);
      try {
        t = Tensor(value.dtype, value.shape);
      } catch (const Error& e) {
        throw Error(e.code(), fmt::format("graph output '{}': {}", value.name, e.what()));
      }
      outputs[value.name] = t;
    }
  }
  for (size_t l = 0; l < m.lanes.size(); ++l) {
    auto& rt = m.lanes[l];
    if (!rt.program) continue;
    for (ValueId v : rt.program->external_inputs())
      if (graph.is_graph_input(v) || graph.is_graph_output(v))
        lane_memory[l].emplace_back(v, m.stored(v, 0).raw());
    for (ValueId v : rt.program->exports())
      if (graph.is_graph_output(v)) lane_memory[l].emplace_back(v, m.stored(v, 0).raw());
  }

  if (timeline) *timeline = RunTimeline{};
  auto start = Clock::now();
  // Injected faults hit one step on its lane's thread: the direct path.
  if (m.graph_device >= 0 && (m.fault_step < 0 || m.fault_kind == FaultKind::kCapture)) {
    try {
      m.run_cuda_graph();
      if (timeline) timeline->makespan_us = us_between(start, Clock::now());
      return outputs;
    } catch (const CaptureFailed& e) {
      // A capture that fails (a call it does not permit) leaves the plan
      // runnable step by step: under kAuto it runs so from now on.
      if (m.cuda_graph_mode != CudaGraphMode::kAuto)
        throw Error(e.code(), fmt::format("CUDA Graph capture: {}", e.what()));
      m.graph_device = -1;
      m.summary.cuda_graph = fmt::format("off: the capture failed ({})", e.what());
      start = Clock::now();
    }
  }
  RunState state(m.plan.n_events);
  // A GPU lane's host thread only enqueues: its steps' times come from the
  // GPU (GpuDevice::start_timing), placed on the host clock at the origin.
  std::vector<double> gpu_origin_us(m.gpu.size(), 0);
  if (timeline)
    for (size_t d = 0; d < m.gpu.size(); ++d)
      if (m.gpu[d]) {
        m.gpu[d]->start_timing();
        gpu_origin_us[d] = us_between(start, Clock::now());
      }
  std::atomic<int> overruns{0};
  std::vector<std::future<void>> done;
  try {
    for (size_t l = 0; l < m.lanes.size(); ++l) {
      auto task = [&m, &state, &lane_memory, start, timeline, &overruns, l] {
        auto& rt = m.lanes[l];
        if (rt.program) {
          try {
            rt.program->bind(lane_memory[l]);
          } catch (...) {
            state.fail(std::current_exception());
            return;
          }
        }
        m.run_lane(static_cast<int>(l), state, start, timeline, overruns);
      };
      if (m.lanes[l].gpu && m.lanes.size() == 1) task();  // the only lane: no thread to start
      else if (m.lanes[l].emulated || m.lanes[l].gpu) done.push_back(std::async(std::launch::async, task));
      else done.push_back(m.cpu[m.plan.lanes[l].device].device->submit(task));
    }
  } catch (...) {
    // A lane could not be started (no thread to be had): the started ones
    // read `state` and `lane_memory`, so cancel them and wait before leaving.
    state.fail(std::current_exception());
  }
  for (auto& f : done) f.get();
  // GPU lanes return once they have enqueued; the run ends when their work
  // has (after a failure too: nothing may still use the run's memory).
  for (const auto& g : m.gpu) {
    if (!g) continue;
    try {
      g->synchronize();
    } catch (...) {
      state.fail(std::current_exception());
    }
  }
  if (timeline && !state.error) {
    for (RunTimeline::StepTime& t : timeline->steps) {
      int d = m.plan.lanes[t.lane].device;
      if (!m.gpu[d]) continue;
      try {
        auto [begin_us, end_us] = m.gpu[d]->step_time_us(t.lane, t.step);
        t.start_us = gpu_origin_us[d] + begin_us;
        t.end_us = gpu_origin_us[d] + end_us;
      } catch (...) {
        state.fail(std::current_exception());
        break;
      }
    }
  }
  if (timeline) timeline->makespan_us = us_between(start, Clock::now());
  m.summary.n_emulation_overruns = overruns;
  if (state.error) std::rethrow_exception(state.error);
  return outputs;
}

// The whole plan as one CUDA Graph on one GPU, captured at the first run:
// every lane's steps enqueued in step_order (Records before their Waits),
// Record / Wait as CUDA events between the streams. Copies from the host
// read the pinned staging buffers, filled before each replay; copies to the
// host fill them, read after it.
void Executor::Impl::run_cuda_graph() {
  GpuDevice& g = *gpu[graph_device];
  for (auto [l, s] : step_order) {
    const PlanStep& step = plan.lanes[l].steps[s];
    if (step.kind == StepKind::kCopy && step.from_space == kHostMemory)
      g.stage_in(step.value, stored(step.value, 0).raw());
  }
  if (!captured) {
    auto enqueue = [&](bool capturing) {
      for (auto [l, s] : step_order) {
        const PlanStep& step = plan.lanes[l].steps[s];
        int stream = plan.lanes[l].stream;
        if (capturing && fault_kind == FaultKind::kCapture && first_step_of_lane[l] + s == fault_step)
          throw Error(ErrorCode::kRuntime, fmt::format("injected capture fault at step {}", fault_step));
        switch (step.kind) {
          case StepKind::kLaunch: g.launch(l, s); break;
          case StepKind::kCopy:
            if (step.to_space == kHostMemory) g.enqueue_to_host(stream, step.value);
            else g.enqueue_to_device(stream, step.value);
            break;
          case StepKind::kRecord: g.record(stream, step.event); break;
          case StepKind::kWait: g.wait(stream, step.event); break;
        }
      }
    };
    // Once for real first, on this run's inputs: whatever a library sets up
    // at its first call (module loading, lazy allocations) must not happen
    // inside the capture, where it is not permitted. A failure here is the
    // plan's own and fails the run.
    enqueue(false);
    g.synchronize();
    try {
      g.capture([&] { enqueue(true); });
    } catch (const Error& e) {
      throw CaptureFailed(e);
    }
    captured = true;
  }
  g.replay();
  g.synchronize();
  for (auto [l, s] : step_order) {
    const PlanStep& step = plan.lanes[l].steps[s];
    if (step.kind == StepKind::kCopy && step.to_space == kHostMemory)
      g.stage_out(step.value, stored(step.value, 0).raw());
  }
}

Trace timeline_trace(const RunTimeline& timeline, const Plan& plan, const Graph& graph, const Platform& platform) {
  Trace trace;
  for (const std::string& name : plan.devices) {
    int d = platform.find_device(name);
    bool emulated = d >= 0 && platform.devices[d].is_emulated();
    trace.devices.push_back(emulated ? name + " (emulated)" : name);
    if (emulated) trace.kind = "emulated";
  }
  for (const auto& t : timeline.steps) {
    const Lane& lane = plan.lanes[t.lane];
    const PlanStep& step = lane.steps[t.step];
    if (step.kind == StepKind::kRecord) continue;
    TraceEvent e;
    e.start_us = t.start_us;
    e.duration_us = t.end_us - t.start_us;
    e.device = lane.device;
    e.stream = lane.stream;
    e.provider = plan.devices[lane.device];
    if (step.kind == StepKind::kLaunch) {
      e.name = join_labels(graph, step.nodes, " + ", false);
      e.category = "launch";
      e.op_name = join_labels(graph, step.nodes, "+", true);
      e.node_index = step.nodes.front();
    } else if (step.kind == StepKind::kCopy) {
      e.name = fmt::format("copy '{}' {}->{}", graph.values[step.value].name, step.from_space, step.to_space);
      e.category = "copy";
      e.op_name = "Copy";
    } else {
      e.name = fmt::format("wait e{}", step.event);
      e.category = "wait";
      e.op_name = "Wait";
    }
    trace.events.push_back(std::move(e));
  }
  std::sort(trace.events.begin(), trace.events.end(),
            [](const TraceEvent& a, const TraceEvent& b) { return a.start_us < b.start_us; });
  trace.makespan_us = timeline.makespan_us;
  return trace;
}

}  // namespace hetsched
