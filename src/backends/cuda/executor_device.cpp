// The CUDA backend's GpuDevice: one GPU of a plan as the executor's GPU
// lanes drive it (contract in runtime/gpu_device.h; the calls it makes are
// docs/cuda.md's "Executor integration").
#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "backends/cuda/check.h"
#include "backends/cuda/gpu_op.h"
#include "backends/cuda/graph_capture.h"
#include "backends/cuda/runtime.h"
#include "hetsched/error.h"
#include "runtime/gpu_device.h"

namespace hetsched {
namespace {

size_t value_bytes(const Graph& graph, ValueId v) {
  const Value& value = graph.values[v];
  return static_cast<size_t>(shape_numel(value.shape)) * dtype_size(value.dtype);
}

class CudaGpuDevice final : public GpuDevice {
 public:
  CudaGpuDevice(const Graph& graph, const Plan& plan, int plan_device, int ordinal, int n_streams)
      : graph_(graph), context_(ordinal, n_streams) {
    const std::string& space = plan.devices.at(plan_device);  // a GPU's memory space is its name
    steps_.resize(plan.lanes.size());
    stream_of_lane_.assign(plan.lanes.size(), -1);
    std::vector<std::vector<std::vector<ValueId>>> lane_values;
    std::set<ValueId> copied;
    std::vector<ValueId> alias(graph.values.size(), kNoValue);
    size_t workspace = 0;
    for (size_t l = 0; l < plan.lanes.size(); ++l) {
      const Lane& lane = plan.lanes[l];
      for (const PlanStep& step : lane.steps)
        if (step.kind == StepKind::kCopy && (step.from_space == space || step.to_space == space)) {
          if (step.from_space != kHostMemory && step.to_space != kHostMemory)
            throw Error(ErrorCode::kUnsupported,
                        fmt::format("copy '{}' {}->{}: GPUs exchange values through host memory only",
                                    graph.values[step.value].name, step.from_space, step.to_space));
          copied.insert(step.value);
        }
      if (lane.device != plan_device) continue;
      stream_of_lane_[l] = lane.stream;
      steps_[l].resize(lane.steps.size());
      lane_values.emplace_back(lane.steps.size());
      for (size_t s = 0; s < lane.steps.size(); ++s) {
        const PlanStep& step = lane.steps[s];
        std::vector<ValueId>& touched = lane_values.back()[s];
        if (step.kind == StepKind::kCopy) touched.push_back(step.value);
        if (step.kind != StepKind::kLaunch) continue;
        for (std::unique_ptr<cuda::GpuOp>& op : prepare_launch(step.nodes)) {
          workspace = std::max(workspace, op->workspace_bytes());
          touched.insert(touched.end(), op->inputs().begin(), op->inputs().end());
          touched.insert(touched.end(), op->outputs().begin(), op->outputs().end());
          // A view shares its input's memory and then costs nothing.
          if (op->is_view() && !op->inputs().empty() && !op->outputs().empty())
            alias[op->outputs()[0]] = op->inputs()[0];
          stats_.n_ops += 1;
          stats_.n_fused_nodes += static_cast<int>(op->nodes().size()) - 1;
          steps_[l][s].push_back(Bound{std::move(op), {}, {}});
        }
      }
    }
    context_.reserve_workspace(workspace);

    GpuMemoryLayout layout = plan_gpu_memory(graph, lane_values, copied, alias, cuda::DeviceArena::kAlignment);
    context_.make_current();
    arena_ = cuda::DeviceArena(layout.bytes);
    stats_.arena_bytes = layout.bytes;
    address_.assign(graph.values.size(), nullptr);
    for (size_t v = 0; v < graph.values.size(); ++v)
      if (layout.offset[v] >= 0)
        address_[v] = static_cast<char*>(arena_.at(static_cast<size_t>(layout.offset[v]),
                                                   std::max<size_t>(value_bytes(graph, static_cast<ValueId>(v)), 1)));
    for (auto& lane : steps_)
      for (auto& ops : lane)
        for (Bound& b : ops) {
          for (ValueId v : b.op->inputs()) b.in.push_back(at(v));
          for (ValueId v : b.op->outputs()) b.out.push_back(at(v));
        }
    for (ValueId v : copied) {
      staging_.emplace(v, cuda::PinnedBuffer(std::max<size_t>(value_bytes(graph, v), 1)));
      stats_.staging_bytes += value_bytes(graph, v);
    }
    // Beside lanes of devices other than GPUs (CPU lanes' kernels want every
    // core), the host threads waiting for this GPU sleep instead of spinning.
    bool blocking = std::any_of(plan.lanes.begin(), plan.lanes.end(), [&](const Lane& lane) {
      return plan.devices.at(lane.device).rfind("cuda:", 0) != 0;
    });
    context_.set_blocking_waits(blocking);
    for (size_t l = 0; l < plan.lanes.size(); ++l)
      if (plan.lanes[l].device == plan_device)
        for (const PlanStep& step : plan.lanes[l].steps)
          if (step.kind == StepKind::kRecord) events_.emplace(step.event, cuda::Event(false, blocking));
  }

  ~CudaGpuDevice() override {
    // Nothing may still run on memory about to be freed (a failed run).
    try {
      context_.synchronize();
    } catch (...) {
    }
  }

  void launch(int lane, int step) override {
    context_.make_current();
    const cuda::GpuStream& stream = context_.stream(stream_of_lane_.at(lane));
    for (const Bound& b : steps_.at(lane).at(step)) b.op->enqueue(stream, b.in.data(), b.out.data());
  }

  void stage_in(ValueId v, const void* host) override {
    std::memcpy(staging(v).get(), host, value_bytes(graph_, v));
  }
  void enqueue_to_device(int stream, ValueId v) override {
    context_.copy_to_device(at(v), staging(v).get(), value_bytes(graph_, v), stream);
  }
  void enqueue_to_host(int stream, ValueId v) override {
    context_.copy_to_host(staging(v).get(), at(v), value_bytes(graph_, v), stream);
  }
  void stage_out(ValueId v, void* host) override { std::memcpy(host, staging(v).get(), value_bytes(graph_, v)); }

  void upload(ValueId v, const void* host) override {
    context_.make_current();
    cuda::upload_bytes(at(v), host, value_bytes(graph_, v));
  }
  void download(ValueId v, void* host) override {
    context_.make_current();
    cuda::download_bytes(host, at(v), value_bytes(graph_, v));
  }

  void record(int stream, int event) override {
    context_.make_current();
    this->event(event).record(context_.stream(stream).stream);
  }
  void wait(int stream, int event) override {
    context_.make_current();
    this->event(event).wait_on(context_.stream(stream).stream);
  }
  void host_wait(int event) override {
    context_.make_current();
    this->event(event).synchronize();
  }
  void synchronize() override { context_.synchronize(); }
  void synchronize(int stream) override { context_.synchronize(stream); }

  void capture(const std::function<void()>& enqueue) override {
    graph_exec_ = cuda::CudaGraph();
    graph_exec_ = cuda::capture_graph(context_, enqueue);
  }
  void replay() override {
    if (!graph_exec_.valid()) throw Error(ErrorCode::kRuntime, "replay: nothing has been captured");
    graph_exec_.replay(context_);
  }

  void start_timing() override {
    context_.make_current();
    if (!origin_) {
      // Created at the first timed run: untimed runs need none.
      origin_.emplace(true);
      marks_.resize(steps_.size());
      for (size_t l = 0; l < steps_.size(); ++l)
        for (size_t k = 0; k < 2 * steps_[l].size(); ++k) marks_[l].emplace_back(true);
    }
    origin_->record(context_.stream(0).stream);
  }
  void mark(int lane, int step, bool end) override {
    context_.make_current();
    timing_event(lane, step, end).record(context_.stream(stream_of_lane_.at(lane)).stream);
  }
  std::pair<double, double> step_time_us(int lane, int step) override {
    context_.make_current();
    return {1e3 * cuda::Event::elapsed_ms(*origin_, timing_event(lane, step, false)),
            1e3 * cuda::Event::elapsed_ms(*origin_, timing_event(lane, step, true))};
  }

  GpuDeviceStats stats() const override { return stats_; }

 private:
  struct Bound {
    std::unique_ptr<cuda::GpuOp> op;
    std::vector<const void*> in;
    std::vector<void*> out;
  };

  // The launch's nodes as GPU ops, in the launch's order (gpu_launch_groups).
  std::vector<std::unique_ptr<cuda::GpuOp>> prepare_launch(const std::vector<NodeId>& nodes) {
    std::vector<std::unique_ptr<cuda::GpuOp>> ops;
    for (const std::vector<NodeId>& group : cuda::gpu_launch_groups(graph_, nodes))
      ops.push_back(cuda::prepare_gpu_op(context_, graph_, group));
    return ops;
  }

  void* at(ValueId v) const {
    void* p = address_.at(v);
    if (!p)
      throw Error(ErrorCode::kRuntime,
                  fmt::format("value '{}' has no memory on cuda:{}", graph_.values[v].name, context_.ordinal()));
    return p;
  }
  const cuda::PinnedBuffer& staging(ValueId v) const {
    auto it = staging_.find(v);
    if (it == staging_.end())
      throw Error(ErrorCode::kRuntime, fmt::format("value '{}' is not copied to or from cuda:{} by the plan",
                                                   graph_.values[v].name, context_.ordinal()));
    return it->second;
  }
  cuda::Event& event(int e) {
    auto it = events_.find(e);
    if (it == events_.end())
      throw Error(ErrorCode::kRuntime, fmt::format("event e{} is not recorded on cuda:{}", e, context_.ordinal()));
    return it->second;
  }

  cuda::Event& timing_event(int lane, int step, bool end) {
    if (!origin_) throw Error(ErrorCode::kRuntime, "step timing: start_timing() was not called");
    return marks_.at(lane).at(2 * static_cast<size_t>(step) + (end ? 1 : 0));
  }

  const Graph& graph_;
  cuda::CudaContext context_;
  std::vector<std::vector<std::vector<Bound>>> steps_;  // [lane][step]: the launch's ops
  std::vector<int> stream_of_lane_;                     // -1: a lane of another device
  cuda::DeviceArena arena_;
  std::vector<void*> address_;                          // per value, nullptr when not on this GPU
  std::map<ValueId, cuda::PinnedBuffer> staging_;
  std::map<int, cuda::Event> events_;
  cuda::CudaGraph graph_exec_;
  std::optional<cuda::Event> origin_;            // step timing: the run's origin on stream 0
  std::vector<std::vector<cuda::Event>> marks_;  // [lane][2 * step + end]
  GpuDeviceStats stats_;
};

}  // namespace

std::unique_ptr<GpuDevice> make_gpu_device(const Graph& graph, const Plan& plan, int plan_device, int ordinal,
                                           int n_streams) {
  return std::make_unique<CudaGpuDevice>(graph, plan, plan_device, ordinal, n_streams);
}

}  // namespace hetsched
