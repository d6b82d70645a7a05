// The executor's view of one GPU of a plan: the narrow interface its GPU
// lanes call, free of CUDA so that the executor compiles in every build.
//
// Implemented by the CUDA backend (src/backends/cuda/executor_device.cpp)
// in a build with HETSCHED_WITH_CUDA, and by gpu_device_none.cpp otherwise,
// where make_gpu_device() throws saying so (as platform/gpu_probe.h does for
// the probe).
//
// Contract of a GpuDevice (one per `cuda:N` device of a plan):
//   - Built for one graph and plan: it prepares every launch of the device's
//     lanes (one GPU op per fusion group, within the launch), places the
//     values its lanes touch in one device arena (plan_gpu_memory below), and
//     allocates a pinned staging buffer per value copied to or from it.
//     Everything that allocates or synchronises happens here, so the calls
//     below only enqueue, except where they say that the host waits.
//   - `lane` and `step` are the plan's lane and step indices; `stream` the
//     lane's stream. Calls for different streams may come from different
//     host threads at once; calls for one stream come from one thread.
//   - Errors are Error(kRuntime) naming the CUDA call (backends/cuda/check.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "hetsched/graph.h"
#include "hetsched/plan.h"

namespace hetsched {

struct GpuDeviceStats {
  int n_ops = 0;            // GPU ops prepared (a fused group is one)
  int n_fused_nodes = 0;    // nodes run inside another node's op
  size_t arena_bytes = 0;   // the device arena holding the lanes' values
  size_t staging_bytes = 0; // pinned host staging for copies
};

class GpuDevice {
 public:
  virtual ~GpuDevice() = default;

  // Enqueues Launch step `step` of lane `lane` (its GPU ops, in order).
  virtual void launch(int lane, int step) = 0;

  // Copies between the host and value `v` on this GPU through v's pinned
  // staging buffer. stage_in (host memcpy into the staging) before
  // enqueue_to_device; stage_out (host memcpy out of it) once the copy
  // enqueued by enqueue_to_host has completed (synchronize, host_wait).
  virtual void stage_in(ValueId v, const void* host) = 0;
  virtual void enqueue_to_device(int stream, ValueId v) = 0;
  virtual void enqueue_to_host(int stream, ValueId v) = 0;
  virtual void stage_out(ValueId v, void* host) = 0;
  // Blocking copies for a thread that drives none of this GPU's streams (a
  // CPU lane reading a GPU's value after waiting for it): they return when
  // the bytes have arrived.
  virtual void upload(ValueId v, const void* host) = 0;
  virtual void download(ValueId v, void* host) = 0;

  // The plan's event `event` (recorded on a lane of this GPU) as a CUDA
  // event: record enqueues it on `stream`; wait makes `stream` wait for its
  // last record without blocking the host; host_wait blocks the calling
  // thread until the work before its last record has completed.
  virtual void record(int stream, int event) = 0;
  virtual void wait(int stream, int event) = 0;
  virtual void host_wait(int event) = 0;

  // The host waits for every stream of the GPU, or for one.
  virtual void synchronize() = 0;
  virtual void synchronize(int stream) = 0;

  // CUDA Graphs: capture() records what `enqueue` enqueues on the GPU's
  // streams (launches, copies, records and waits; nothing that synchronises
  // or stages) as one graph, replacing any earlier one; replay() runs it and
  // returns at once. The caller runs the same work once for real before
  // (a warm-up), so that no library's first-call setup falls in the capture.
  virtual void capture(const std::function<void()>& enqueue) = 0;
  virtual void replay() = 0;

  // Step timing, for timelines (profiles, traces): the host sees a GPU step
  // only being enqueued. In a timed run, start_timing() marks the origin on
  // the idle GPU before anything of the run is enqueued; mark(lane, step,
  // end) is called before (end false) and after (end true) each step of
  // the GPU's lanes is enqueued and records a CUDA timing event on the
  // lane's stream; once the GPU is synchronized, step_time_us(lane, step)
  // is when the GPU began and ended that step, in microseconds since the
  // origin. Not for captured runs.
  virtual void start_timing() = 0;
  virtual void mark(int lane, int step, bool end) = 0;
  virtual std::pair<double, double> step_time_us(int lane, int step) = 0;

  virtual GpuDeviceStats stats() const = 0;
};

// The GpuDevice for plan device `plan_device` (a `cuda:N` device of the
// platform, CUDA ordinal `ordinal`, `n_streams` streams). Error(kUnsupported)
// naming the node when the GPU declines one of its launches' nodes;
// Error(kRuntime) when the GPU cannot be used; in a build without the CUDA
// backend Error(kUnsupported) saying so.
std::unique_ptr<GpuDevice> make_gpu_device(const Graph& graph, const Plan& plan, int plan_device, int ordinal,
                                           int n_streams);

// Where one GPU's values live in its arena.
struct GpuMemoryLayout {
  std::vector<int64_t> offset;  // per value of the graph: bytes into the arena, -1 when the GPU does not hold it
  size_t bytes = 0;             // the arena's size
  size_t whole_run_bytes = 0;   // of which values held for the whole run
};

// Places a GPU's values (needs no GPU). lane_values[l][s]: the values step
// s of the GPU's lane l reads or writes on the device; `whole_run`: values
// that must keep their memory for the whole run (those copied to or from the
// GPU, read by another thread); alias[v]: the value whose memory v shares
// (a view's output: its input), kNoValue when none (may be empty: no
// aliases). A value touched by two lanes, or in `whole_run`, gets memory of
// its own for the whole run; any other lives from the first to the last step
// of its lane touching it, and values of one lane whose lifetimes do not
// overlap may share memory: a lane's stream runs its steps in order. Values
// of two lanes never share memory: their streams run at once. Offsets are
// multiples of `alignment`, sizes are the graph's (at least one byte).
GpuMemoryLayout plan_gpu_memory(const Graph& graph, const std::vector<std::vector<std::vector<ValueId>>>& lane_values,
                                const std::set<ValueId>& whole_run, const std::vector<ValueId>& alias,
                                size_t alignment);

}  // namespace hetsched
