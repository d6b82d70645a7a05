// The executor: runs a validated Plan on the platform's devices at once.
//
// Contract:
//   - One worker per lane (device, stream). A CPU device's lane runs on the
//     device's pinned worker thread (cpu_device.h) over a cpu::Program
//     compiled for exactly the lane's launches; an emulated device's lane
//     runs reference kernels on its own thread and holds each launch until
//     its modeled duration (cost model) has passed. A GPU's (`cuda:N`) lane
//     is a host thread of its own driving the lane's stream of the GPU
//     (runtime/gpu_device.h): it enqueues launches, copies and events and
//     returns; run() ends when every GPU is idle.
//   - CUDA Graphs (`cuda_graph`): when every lane is on one GPU, kAuto and
//     kOn capture the whole plan at the first run as one graph and replay it
//     on each run; kOn for a plan that is not on one GPU is ErrorCode::kUsage;
//     kOff enqueues step by step. A replayed run's timeline has no steps
//     (only its makespan): the GPU runs it as one launch. In a step-by-step
//     run a GPU lane's step times are the GPU's (CUDA timing events around
//     each step), not the host's, which only enqueues.
//   - Values read by one lane only stay in that lane's arena (in whatever
//     layout its kernels like); values crossing lanes are held in a per-run
//     store, one copy per memory space (MemoryPlan): float values passing
//     between CPU lanes only in the layout their producer wrote (the
//     programs are compiled launch by launch so that readers know it),
//     everything else plain. A GPU holds all its values in one device arena
//     (plan_gpu_memory); Copy steps move them to and from host memory
//     through pinned staging buffers.
//   - Wait: a CPU lane spins for at most a few milliseconds on its own cores
//     (no other kernel can run there meanwhile: devices running at once never
//     share cores), then sleeps on a condition variable; emulated lanes
//     sleep at once, and so does a Wait on an event recorded on an
//     overlapping device (PlatformDevice::overlaps): that launch runs on the
//     waiting lane's own cores.
//     Record wakes the sleepers. Spinning matters on VMs: an idle vCPU is
//     descheduled, and the next kernel on it starts slower and later.
//     On a GPU, Record also records a CUDA event on the lane's stream; a
//     Wait on it by a lane of the same GPU makes the stream wait (the host
//     does not), any other lane waits on the host until the GPU has done
//     the work before it. A Copy from a GPU to the host on the GPU's own lane
//     waits for its stream, so the bytes are there when the lane records.
//   - The first failing step cancels the run: every worker stops at its next
//     step or wait, all are joined, and run() throws that step's error,
//     prefixed with the step, its lane and device (an std::bad_alloc becomes
//     ErrorCode::kResource). The executor stays usable for the next run.
//   - run() is not reentrant; calls are serialised.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "hetsched/cost_model.h"
#include "hetsched/plan.h"
#include "hetsched/session.h"
#include "hetsched/trace.h"

namespace hetsched {

// When each step of each lane ran, in microseconds from the start of run().
struct RunTimeline {
  struct StepTime {
    int lane = 0;
    int step = 0;
    double start_us = 0;
    double end_us = 0;
  };
  std::vector<StepTime> steps;
  double makespan_us = 0;
};

class Executor {
 public:
  // Validates the plan, starts the devices' workers and compiles each lane
  // (on its device's thread; a GPU's launches on its GpuDevice). `cost`
  // gives emulated launches their durations and may be null when the
  // platform has no emulated device.
  Executor(const Graph& graph, Plan plan, const Platform& platform, std::shared_ptr<const CostModel> cost,
           CudaGraphMode cuda_graph = CudaGraphMode::kAuto);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Inputs are not checked here (Session::run does).
  TensorMap run(const TensorMap& inputs, RunTimeline* timeline = nullptr);

  const Plan& plan() const;
  const ExecutionSummary& summary() const;

  // Test-only fault injection (docs/reliability.md): from the next run on,
  // until cleared, step `step` (every lane's steps counted in lane order)
  // fails instead of doing its work, on its lane's own thread:
  //   kKernel      a Launch: its kernel throws ErrorCode::kRuntime;
  //   kCopy        a Copy: the transfer throws ErrorCode::kRuntime;
  //   kAllocation  a Launch: allocating its first output's buffer fails, through
  //                the allocator's own failure path (core/allocation.h), as
  //                when memory is exhausted: ErrorCode::kResource with the bytes.
  //   kCapture     a Launch of a plan run as a CUDA Graph: enqueueing it inside
  //                the capture (not in the warm-up before it) throws
  //                ErrorCode::kRuntime, as a library call a capture does not
  //                permit would (step by step it runs).
  // The run then fails as for a real error: the message names the step, its
  // lane and device, and the kind; the executor stays usable. A failed
  // capture under CudaGraphMode::kAuto does not fail the run: the plan runs
  // step by step from then on, and the summary's cuda_graph says why. While
  // another fault is set, a plan replayed as a CUDA Graph runs step by step
  // instead. A step out of range or of the wrong kind is ErrorCode::kUsage;
  // step -1 clears.
  enum class FaultKind { kKernel, kCopy, kAllocation, kCapture };
  void inject_fault_for_testing(FaultKind kind, int step);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The timeline as a trace: one event per Launch, Copy and Wait. Its kind is
// "emulated" when the plan uses an emulated device.
Trace timeline_trace(const RunTimeline& timeline, const Plan& plan, const Graph& graph, const Platform& platform);

}  // namespace hetsched
