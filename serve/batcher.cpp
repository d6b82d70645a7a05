// Dynamic batching (see serve/batcher.h).
#include "serve/batcher.h"

#include <chrono>
#include <cstring>
#include <exception>
#include <vector>

#include <fmt/format.h>

#include "hetsched/error.h"

namespace hetsched::serve {

using Clock = std::chrono::steady_clock;

// One request waiting in a batch.
struct Request {
  const TensorMap* inputs;
  int64_t rows;
  Clock::time_point arrived;
  TensorMap outputs;
  RunTiming timing;
  std::exception_ptr error;
  bool done = false;
};

struct Batcher::Batch {
  std::vector<Request*> requests;
  int64_t rows = 0;
  bool closed = false;  // full, or closed by a request that did not fit
};

namespace {

// What requests must share to be stacked: every input's name, dtype and dims
// but the first.
std::string signature(const TensorMap& inputs) {
  std::string key;
  for (const auto& [name, t] : inputs) {
    key += fmt::format("{}:{}:", name, dtype_name(t.dtype()));
    for (size_t d = 1; d < t.shape().size(); ++d) key += fmt::format("{}x", t.shape()[d]);
    key += ";";
  }
  return key;
}

// The rows of a request: its inputs' common first dim; -1 when they differ or
// an input is a scalar (Session::run then says what is wrong).
int64_t rows_of(const TensorMap& inputs) {
  int64_t rows = -1;
  for (const auto& [name, t] : inputs) {
    if (t.rank() == 0 || (rows >= 0 && t.dim(0) != rows)) return -1;
    rows = t.dim(0);
  }
  return rows;
}

// The rows a batch of `rows` (at most max_batch) runs as: the next power of
// two, or max_batch.
int64_t padded_rows(int64_t rows, int64_t max_batch) {
  int64_t padded = 1;
  while (padded < rows) padded *= 2;
  return std::min(padded, max_batch);
}

}  // namespace

Batcher::Batcher(std::shared_ptr<Session> session, const std::string& name, int max_batch, double max_delay_ms)
    : session_(std::move(session)), name_(name), max_batch_(max_batch), max_delay_ms_(max_delay_ms) {
  check_batchable(session_->graph(), name);
}

void Batcher::check_batchable(const Graph& g, const std::string& name) {
  for (ValueId id : g.inputs) {
    const Value& v = g.values[id];
    if (!v.has_shape || v.shape.empty() || v.shape[0] >= 0)
      throw Error(ErrorCode::kUsage,
                  fmt::format("--max-batch: model '{}' cannot be batched: input '{}' has {} (dynamic batching "
                              "stacks requests along a free first dim)",
                              name, v.name, v.has_shape && !v.shape.empty()
                                                ? fmt::format("a fixed first dim of {}", v.shape[0])
                                                : std::string("no first dim")));
  }
}

TensorMap Batcher::run(const TensorMap& inputs, RunTiming* timing) {
  Request me{&inputs, rows_of(inputs), Clock::now(), {}, {}, nullptr, false};
  if (me.rows <= 0 || me.rows >= max_batch_) {  // alone: too big to share, or malformed
    TensorMap outputs = session_->run(inputs, nullptr, timing);
    ++n_batches_;
    n_rows_ += static_cast<uint64_t>(std::max<int64_t>(me.rows, 0));
    return outputs;
  }
  const std::string key = signature(inputs);
  std::unique_lock<std::mutex> lock(mutex_);
  auto open = open_.find(key);
  if (open != open_.end() && open->second->rows + me.rows <= max_batch_) {
    // 1. A follower: joins the open batch, closing it when it is full.
    Batch& batch = *open->second;
    batch.requests.push_back(&me);
    batch.rows += me.rows;
    if (batch.rows >= max_batch_) {
      batch.closed = true;
      open_.erase(open);
      leaders_.notify_all();
    }
    done_.wait(lock, [&] { return me.done; });
  } else {
    // 2. A leader: closes a batch it does not fit in, opens its own, waits
    // for it to fill or for the delay to pass, runs it.
    if (open != open_.end()) {
      open->second->closed = true;
      open_.erase(open);
      leaders_.notify_all();
    }
    auto batch = std::make_shared<Batch>();
    batch->requests.push_back(&me);
    batch->rows = me.rows;
    open_[key] = batch;
    const auto deadline = me.arrived + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double, std::milli>(max_delay_ms_));
    // Runs when no other batch runs and it is closed or its delay has
    // passed: while one runs, requests keep joining (see batcher.h).
    while (running_ > 0 || (!batch->closed && Clock::now() < deadline)) {
      if (running_ > 0)
        leaders_.wait(lock);
      else
        leaders_.wait_until(lock, deadline);
    }
    if (!batch->closed) {
      batch->closed = true;
      open_.erase(key);
    }
    ++running_;
    lock.unlock();
    run_batch(*batch);
    lock.lock();
    --running_;
    for (Request* r : batch->requests) r->done = true;
    done_.notify_all();
    leaders_.notify_all();  // the devices are free
  }
  lock.unlock();
  if (me.error) std::rethrow_exception(me.error);
  if (timing) *timing = me.timing;
  return std::move(me.outputs);
}

void Batcher::run_batch(Batch& batch) {
  const Clock::time_point start = Clock::now();
  try {
    const int64_t rows = batch.rows, padded = padded_rows(rows, max_batch_);
    // Stack the requests' rows, then copies of the last row up to `padded`.
    TensorMap stacked;
    for (const auto& [name, first] : *batch.requests.front()->inputs) {
      Shape shape = first.shape();
      shape[0] = padded;
      Tensor t(first.dtype(), shape);
      auto* out = static_cast<std::byte*>(t.raw());
      const size_t row_bytes = first.nbytes() / static_cast<size_t>(first.dim(0));
      for (const Request* r : batch.requests) {
        const Tensor& part = r->inputs->at(name);
        std::memcpy(out, part.raw(), part.nbytes());
        out += part.nbytes();
      }
      for (int64_t k = rows; k < padded; ++k, out += row_bytes) std::memcpy(out, out - row_bytes, row_bytes);
      stacked.emplace(name, std::move(t));
    }
    RunTiming timing;
    TensorMap outputs = session_->run(stacked, nullptr, &timing);
    // Each request's rows of each output.
    for (const auto& [name, out] : outputs)
      if (out.rank() == 0 || out.dim(0) != padded)
        throw Error(ErrorCode::kRuntime,
                    fmt::format("--max-batch: output '{}' of model '{}' has {} for a batch of {} rows: the model does "
                                "not keep the batch along the first dim (serve it without --max-batch)",
                                name, name_, out.rank() == 0 ? "no first dim" : fmt::format("{} rows", out.dim(0)),
                                padded));
    int64_t offset = 0;
    for (Request* r : batch.requests) {
      for (const auto& [name, out] : outputs) {
        Shape shape = out.shape();
        shape[0] = r->rows;
        Tensor part(out.dtype(), shape);
        const size_t row_bytes = out.nbytes() / static_cast<size_t>(padded);
        std::memcpy(part.raw(), static_cast<const std::byte*>(out.raw()) + static_cast<size_t>(offset) * row_bytes,
                    part.nbytes());
        r->outputs.emplace(name, std::move(part));
      }
      offset += r->rows;
      r->timing = timing;
      r->timing.queue_s += std::chrono::duration<double>(start - r->arrived).count();
    }
    ++n_batches_;
    n_rows_ += static_cast<uint64_t>(rows);
  } catch (...) {
    for (Request* r : batch.requests) r->error = std::current_exception();
  }
}

bool Batcher::warm_up() {
  const Graph& g = session_->graph();
  for (ValueId id : g.inputs)
    for (size_t d = 1; d < g.values[id].shape.size(); ++d)
      if (g.values[id].shape[d] < 0) return false;
  for (int64_t rows = 1;; rows = std::min<int64_t>(rows * 2, max_batch_)) {  // each padded_rows() value
    TensorMap zeros;
    for (ValueId id : g.inputs) {
      Shape shape = g.values[id].shape;
      shape[0] = rows;
      zeros.emplace(g.values[id].name, Tensor(g.values[id].dtype, shape));
    }
    session_->run(zeros);
    if (rows >= max_batch_) return true;
  }
}

}  // namespace hetsched::serve
