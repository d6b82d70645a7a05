// A pool of workers serving requests side by side: the executor under a
// throughput flow (hetsched/throughput.h) and under every Session (a
// latency session is a pool of one worker).
//
// Contract:
//   - run() may be called from any number of threads at once. Each request
//     goes to the worker that would finish it first (earliest finish time,
//     as Band's and HEFT's schedulers place work): every worker's expected
//     time per request (the flow's prediction, then the average of its
//     recent runs) plus, for a busy worker, what remains of its current
//     request. Waiting requests are planned in order of arrival, each on
//     the earliest finish given the ones before it; a request starts when
//     its worker is free. So a request waits for a busy fast worker rather
//     than run far longer on a free slow one, and a slow worker takes
//     requests only when enough are waiting that it finishes one sooner
//     than the fast ones would. Among equal workers this is "first free,
//     first come first served".
//   - A worker's executor runs one request at a time; workers never share
//     cores (the flow's devices are disjoint), so requests on different
//     workers run at once without disturbing each other's threads.
//   - A failing request rethrows its executor's error in its caller; the
//     worker is free again for the next request.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
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
    double expected_ms = 0;  // a request's expected time; 0: unknown (learned from its runs)
  };
  explicit RequestPool(std::vector<Worker> workers);

  // Runs one request on the worker that finishes it first; `timeline`
  // (optional) gets its run's timeline, `worker` the index of the worker
  // that ran it and `timing` its wait and run time.
  TensorMap run(const TensorMap& inputs, RunTimeline* timeline = nullptr, size_t* worker = nullptr,
                RunTiming* timing = nullptr);

  const std::vector<Worker>& workers() const { return workers_; }
  // Per worker: requests served and time busy since construction or the
  // last reset_loads().
  std::vector<WorkerLoad> loads() const;
  void reset_loads();

 private:
  using Clock = std::chrono::steady_clock;
  struct Waiting {
    int worker = -1;  // assigned by dispatch()
  };
  // Starts the waiting requests that should start now (see the contract);
  // called with mutex_ held whenever a request arrives or a worker frees.
  void dispatch();

  std::vector<Worker> workers_;
  mutable std::mutex mutex_;
  std::condition_variable assigned_;
  std::deque<Waiting*> waiting_;       // in order of arrival
  std::vector<bool> busy_;
  std::vector<Clock::time_point> started_;
  std::vector<double> expected_ms_;    // per worker: recent average time per request
  std::vector<WorkerLoad> loads_;
};

}  // namespace hetsched
