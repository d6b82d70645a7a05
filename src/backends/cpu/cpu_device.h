// A CPU device: a group of cores with its own pinned worker thread.
//
// Contract:
//   - Work given to a device runs on its worker thread, one task at a time,
//     in submission order. The thread is pinned to the device's cores before
//     it runs anything, and calls omp_set_num_threads(n_cores) first, so the
//     OpenMP team of any parallel region it opens (oneDNN's, ours) has one
//     thread per core and inherits the pinning. Two devices never share a
//     thread or a core, so their kernels run at the same time.
//   - oneDNN fixes a primitive's thread count when the primitive is created:
//     create AND execute a device's primitives through run()/submit().
//   - An exception thrown by a task reaches the caller (run) or the future
//     (submit); the worker stays usable.
//   - The worker sleeps on a condition variable when idle (no busy-waiting).
//   - The destructor runs what is queued, then joins the thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
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
  CpuDevice(const CpuDevice&) = delete;
  CpuDevice& operator=(const CpuDevice&) = delete;

  const DeviceSpec& spec() const { return spec_; }
  int n_threads() const { return static_cast<int>(spec_.cores.size()); }

  // Runs fn on the worker thread and waits for it; rethrows its exception.
  void run(std::function<void()> fn);
  // Queues fn; the future becomes ready when it has run.
  std::future<void> submit(std::function<void()> fn);

 private:
  void worker_loop();

  DeviceSpec spec_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::packaged_task<void()>> queue_;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace hetsched
