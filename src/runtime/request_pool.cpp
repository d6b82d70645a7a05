#include "runtime/request_pool.h"

#include <algorithm>
#include <chrono>

#include "hetsched/error.h"

namespace hetsched {

RequestPool::RequestPool(std::vector<Worker> workers)
    : workers_(std::move(workers)), busy_(workers_.size(), false) {
  if (workers_.empty()) throw Error(ErrorCode::kUsage, "a request pool needs a worker");
  for (const Worker& w : workers_) loads_.push_back({w.device, 0, 0, 0});
}

TensorMap RequestPool::run(const TensorMap& inputs, RunTimeline* timeline, size_t* worker, RunTiming* timing) {
  size_t w = 0;
  auto arrival = std::chrono::steady_clock::now();
  {
    std::unique_lock<std::mutex> lock(mutex_);
    uint64_t ticket = next_ticket_++;
    // Tickets keep the order of arrival: only the oldest waiting call may
    // take a worker, so a call is never overtaken while it waits.
    free_.wait(lock, [&] {
      return ticket == now_serving_ && std::find(busy_.begin(), busy_.end(), false) != busy_.end();
    });
    w = static_cast<size_t>(std::find(busy_.begin(), busy_.end(), false) - busy_.begin());
    busy_[w] = true;
    ++now_serving_;
  }
  free_.notify_all();  // the next ticket may find another free worker
  auto start = std::chrono::steady_clock::now();
  auto release = [&](bool failed) {
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (timing) *timing = {std::chrono::duration<double>(start - arrival).count(), s, workers_[w].device};
    {
      std::lock_guard<std::mutex> lock(mutex_);
      busy_[w] = false;
      WorkerLoad& load = loads_[w];
      ++load.n_requests;
      load.n_failed += failed;
      load.busy_s += s;
    }
    free_.notify_all();
  };
  try {
    TensorMap outputs = workers_[w].executor->run(inputs, timeline);
    release(false);
    if (worker) *worker = w;
    return outputs;
  } catch (...) {
    release(true);
    throw;
  }
}

std::vector<WorkerLoad> RequestPool::loads() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return loads_;
}

void RequestPool::reset_loads() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (WorkerLoad& load : loads_) load = {load.device, 0, 0, 0};
}

}  // namespace hetsched
