// A pool of workers serving requests side by side: the executor under a
// throughput flow (hetsched/throughput.h) and under every Session (a
// latency session is a pool of one worker).
//
// Contract:
//   - run() may be called from any number of threads at once. A call takes
//     the first free worker in the pool's order (the flow lists the fastest
//     first) and runs its request there; when none is free it waits, and
//     waiting calls are served first come, first served.
//   - A worker's executor runs one request at a time; workers never share
//     cores (the flow's devices are disjoint), so requests on different
//     workers run at once without disturbing each other's threads.
//   - A failing request rethrows its executor's error in its caller; the
//     worker is free again for the next request.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "hetsched/session.h"
#include "runtime/executor.h"

namespace hetsched {

class RequestPool {
 public:
  struct Worker {
    std::string device;
    std::shared_ptr<Executor> executor;
    std::shared_ptr<const Platform> platform;  // the executor's plan's platform
  };
  explicit RequestPool(std::vector<Worker> workers);

  // Runs one request on the first free worker; `timeline` (optional) gets
  // its run's timeline, `worker` the index of the worker that ran it and
  // `timing` its wait and run time.
  TensorMap run(const TensorMap& inputs, RunTimeline* timeline = nullptr, size_t* worker = nullptr,
                RunTiming* timing = nullptr);

  const std::vector<Worker>& workers() const { return workers_; }
  // Per worker: requests served and time busy since construction or the
  // last reset_loads().
  std::vector<WorkerLoad> loads() const;
  void reset_loads();

 private:
  std::vector<Worker> workers_;
  mutable std::mutex mutex_;
  std::condition_variable free_;
  std::vector<bool> busy_;
  std::vector<WorkerLoad> loads_;
  uint64_t next_ticket_ = 0, now_serving_ = 0;
};

}  // namespace hetsched
