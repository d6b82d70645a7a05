// CpuDevice: a pinned worker thread per core group (contract in cpu_device.h).
#include "backends/cpu/cpu_device.h"

#include <pthread.h>
#include <sched.h>

#include <omp.h>
#include <pmmintrin.h>
#include <xmmintrin.h>

#include <algorithm>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "hetsched/error.h"

namespace hetsched {
namespace {

// Pins `thread` to `cores`; returns 0 or the pthread error number.
int pin_thread(pthread_t thread, const std::vector<int>& cores) {
  int n_cpus = *std::max_element(cores.begin(), cores.end()) + 1;
  cpu_set_t* set = CPU_ALLOC(n_cpus);
  size_t size = CPU_ALLOC_SIZE(n_cpus);
  CPU_ZERO_S(size, set);
  for (int c : cores) CPU_SET_S(c, size, set);
  int rc = pthread_setaffinity_np(thread, size, set);
  CPU_FREE(set);
  return rc;
}

// Denormal floats read and written as zero on the calling thread.
void flush_denormals() {
  _MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_ON);
  _MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_ON);
}

}  // namespace

CpuDevice::CpuDevice(DeviceSpec spec) : spec_(std::move(spec)) {
  if (spec_.cores.empty()) throw Error(ErrorCode::kUsage, fmt::format("device '{}' has no cores", spec_.name()));
  if (spec_.cores.front() < 0)
    throw Error(ErrorCode::kUsage, fmt::format("device '{}': core numbers must be >= 0", spec_.name()));
  worker_ = std::thread([this] { worker_loop(); });
  // Pinned from here, before the constructor returns: nothing can be queued
  // yet, so no task ever runs unpinned, and a failure can be thrown to the
  // caller instead of being lost on the worker.
  if (int rc = pin_thread(worker_.native_handle(), spec_.cores); rc != 0) {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    worker_.join();
    throw Error(ErrorCode::kRuntime,
                fmt::format("device '{}': cannot pin its thread to these cores: {}", spec_.name(), std::strerror(rc)));
  }
}

std::shared_ptr<CpuDevice> CpuDevice::shared(const DeviceSpec& spec) {
  static std::mutex mutex;
  static std::map<std::vector<int>, std::weak_ptr<CpuDevice>> workers;
  std::vector<int> cores = spec.cores;
  std::sort(cores.begin(), cores.end());
  std::lock_guard lock(mutex);
  if (auto device = workers[cores].lock()) return device;
  auto device = std::make_shared<CpuDevice>(spec);
  workers[cores] = device;
  return device;
}

std::vector<std::unique_lock<std::mutex>> lock_exclusive(std::vector<CpuDevice*> devices) {
  std::sort(devices.begin(), devices.end());
  devices.erase(std::unique(devices.begin(), devices.end()), devices.end());
  std::vector<std::unique_lock<std::mutex>> locks;
  for (CpuDevice* device : devices) locks.emplace_back(device->exclusive());
  return locks;
}

CpuDevice::~CpuDevice() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void CpuDevice::run(std::function<void()> fn) {
  // A task that runs more work on its own device would wait on itself
  // forever: run it inline, it is already on the right thread.
  if (std::this_thread::get_id() == worker_.get_id()) {
    fn();
    return;
  }
  submit(std::move(fn)).get();
}

std::future<void> CpuDevice::submit(std::function<void()> fn) {
  std::packaged_task<void()> task(std::move(fn));
  std::future<void> done = task.get_future();
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(task));
  }
  wake_.notify_one();
  return done;
}

void CpuDevice::worker_loop() {
  // The OpenMP thread count is a per-thread setting: it must be set on this
  // thread, and the team threads it spawns inherit this thread's pinning and
  // its floating-point mode (set here too, in case a team exists already).
  flush_denormals();
  omp_set_num_threads(n_threads());
#pragma omp parallel
  flush_denormals();
  std::unique_lock lock(mutex_);
  while (true) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything queued has run
    std::packaged_task<void()> task = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    task();  // an exception is stored in the task's future, not thrown here
    lock.lock();
  }
}

}  // namespace hetsched
