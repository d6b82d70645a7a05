// A CPU device: a group of cores with its own pinned worker thread.
//
// Contract:
//   - Work given to a device runs on its worker thread, one task at a time,
//     in submission order. The thread is pinned to the device's cores before
//     it runs anything, and calls omp_set_num_threads(n_cores) first, so the
//     OpenMP team of any parallel region it opens (oneDNN's, ours) has one
//     thread per core and inherits the pinning. Two devices never share a
//     thread or a core, so their kernels run at the same time.
//   - The worker and its team flush denormal floats to zero (x86 MXCSR FTZ
//     and DAZ, as TensorFlow's CPU threads do): a value below 1.2e-38 is 0
//     to every kernel. Without it a squeeze-and-excitation gate near 0 (or a
//     SiLU of a large negative value) left denormals in EfficientNet's
//     activations, and each Conv reading them ran 2-4x slower (microcode
//     assists). Threads outside the devices (the caller's) are untouched.
//   - oneDNN fixes a primitive's thread count when the primitive is created:
//     create AND execute a device's primitives through run()/submit().
//   - An exception thrown by a task reaches the caller (run) or the future
//     (submit); the worker stays usable.
//   - The worker sleeps on a condition variable when idle (no busy-waiting).
//   - The destructor runs what is queued, then joins the thread.
//   - shared(): executors take their devices from one process-wide set, one
//     worker (and one OpenMP team) per core set. Every executor built its
//     own before: with a dozen plans measured side by side (compare, demo,
//     auto's measured choice), libgomp then manages more team threads than
//     there are cores and lets them spin only 1000 times before sleeping, so
//     every kernel of a multi-core device waited for its team to wake
//     (googlenet on cpu:0-1: 20 ms instead of 10 in such a compare).
//   - exclusive(): a run that spreads over several devices holds the mutex of
//     each (in address order, see lock_exclusive) while it runs. A lane
//     occupies its worker while it waits for another lane's event; two runs
//     on the same workers at once could each hold a worker the other waits
//     for.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "hetsched/device.h"

namespace hetsched {

// The processors this process may run on: its affinity mask (which reflects
// cgroup cpusets), sorted; every online processor when there is no mask.
// Call it from a thread no device has pinned.
std::vector<int> usable_cores();

// describe_machine() without the GPU probe: what CPU devices need, without
// starting the CUDA runtime.
MachineInfo describe_cpus();

class CpuDevice {
 public:
  explicit CpuDevice(DeviceSpec spec);
  ~CpuDevice();
  // The process's worker for spec's core set: made at the first call, kept
  // while anyone holds it. Devices with the same cores are the same worker.
  static std::shared_ptr<CpuDevice> shared(const DeviceSpec& spec);
  CpuDevice(const CpuDevice&) = delete;
  CpuDevice& operator=(const CpuDevice&) = delete;

  const DeviceSpec& spec() const { return spec_; }
  int n_threads() const { return static_cast<int>(spec_.cores.size()); }

  // Runs fn on the worker thread and waits for it; rethrows its exception.
  void run(std::function<void()> fn);
  // Queues fn; the future becomes ready when it has run.
  std::future<void> submit(std::function<void()> fn);

  // Held by whoever runs work on this device that waits on other devices
  // (an executor's run); see lock_exclusive.
  std::mutex& exclusive() { return exclusive_; }

 private:
  void worker_loop();

  DeviceSpec spec_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::packaged_task<void()>> queue_;
  bool stopping_ = false;
  std::thread worker_;
  std::mutex exclusive_;
};

// Locks the exclusive() mutex of each device, in one global order (by
// address), so that runs needing overlapping sets of devices never deadlock.
std::vector<std::unique_lock<std::mutex>> lock_exclusive(std::vector<CpuDevice*> devices);

}  // namespace hetsched
