#include "runtime/request_pool.h"

#include <algorithm>

#include "hetsched/error.h"

namespace hetsched {

namespace {

// Weight of the newest run in a worker's expected time.
constexpr double kNewestRunWeight = 0.1;
// Expected time of every worker before any has run (none was given one).
constexpr double kUnknownMs = 1;

}  // namespace

RequestPool::RequestPool(std::vector<Worker> workers)
    : workers_(std::move(workers)), busy_(workers_.size(), false), started_(workers_.size()) {
  if (workers_.empty()) throw Error(ErrorCode::kUsage, "a request pool needs a worker");
  for (const Worker& w : workers_) {
    loads_.push_back({w.device, 0, 0, 0});
    expected_ms_.push_back(w.expected_ms > 0 ? w.expected_ms : 0);
  }
}

void RequestPool::dispatch() {
  size_t n = workers_.size();
  auto now = Clock::now();
  // When each worker could start one more request, in ms from now. A busy
  // worker past its expected time still counts a tenth of it: it is about
  // to finish, but not yet free.
  std::vector<double> available(n, 0), expected(n);
  // A worker not run yet counts as the average of those that have.
  double known_sum = 0;
  int n_known = 0;
  for (double ms : expected_ms_)
    if (ms > 0) known_sum += ms, ++n_known;
  double unknown = n_known ? known_sum / n_known : kUnknownMs;
  size_t n_free = 0;
  for (size_t w = 0; w < n; ++w) {
    expected[w] = expected_ms_[w] > 0 ? expected_ms_[w] : unknown;
    if (!busy_[w]) {
      ++n_free;
      continue;
    }
    double elapsed = std::chrono::duration<double, std::milli>(now - started_[w]).count();
    available[w] = std::max(expected[w] - elapsed, 0.1 * expected[w]);
  }
  bool any = false;
  for (auto it = waiting_.begin(); it != waiting_.end() && n_free > 0;) {
    // The earliest finish; on a tie a free worker, then the earlier one.
    size_t best = 0;
    for (size_t w = 1; w < n; ++w) {
      double a = available[w] + expected[w], b = available[best] + expected[best];
      if (a < b || (a == b && !busy_[w] && busy_[best])) best = w;
    }
    available[best] += expected[best];
    if (busy_[best]) {
      ++it;  // it waits for that worker; the next ones are planned after it
      continue;
    }
    busy_[best] = true;
    started_[best] = now;
    --n_free;
    (*it)->worker = static_cast<int>(best);
    it = waiting_.erase(it);
    any = true;
  }
  if (any) assigned_.notify_all();
}

TensorMap RequestPool::run(const TensorMap& inputs, RunTimeline* timeline, size_t* worker, RunTiming* timing) {
  auto arrival = Clock::now();
  Waiting me;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    waiting_.push_back(&me);
    dispatch();
    assigned_.wait(lock, [&] { return me.worker >= 0; });
  }
  size_t w = static_cast<size_t>(me.worker);
  auto start = Clock::now();
  auto release = [&](bool failed) {
    double s = std::chrono::duration<double>(Clock::now() - start).count();
    if (timing) *timing = {std::chrono::duration<double>(start - arrival).count(), s, workers_[w].device};
    std::lock_guard<std::mutex> lock(mutex_);
    busy_[w] = false;
    WorkerLoad& load = loads_[w];
    ++load.n_requests;
    load.n_failed += failed;
    load.busy_s += s;
    if (!failed)
      expected_ms_[w] = expected_ms_[w] > 0 ? (1 - kNewestRunWeight) * expected_ms_[w] + kNewestRunWeight * s * 1000
                                            : s * 1000;
    dispatch();
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
