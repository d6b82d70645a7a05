// Dynamic batching (`hetsched serve --max-batch B --max-delay-ms D`):
// requests of one model that arrive close together run as one batch, their
// rows stacked along the inputs' first dim, which the model leaves free.
//
// The first request of a batch leads it: it waits for more requests whose
// inputs match its own but for the rows (same names, dtypes and other
// dims) for D ms and, past them, for as long as another batch runs; then
// it runs the batch and hands each request its rows of the outputs. A batch
// closes early when it holds B rows; a request that would not fit closes
// the open batch and leads a new one; a request of B rows or more runs
// alone. One batch runs at a time: a free-dim session compiles a program
// (and in throughput mode chooses a flow) per batch size, and batches of
// two sizes at once would run on two flows sharing the same devices
// (measured on 2 cores: 0.50x of unbatched serving that way, against 0.57x
// one at a time); the batch itself runs on its size's flow. A batch's rows are
// padded to the next power of two (up to B) with copies of its last row,
// whose outputs are dropped: a free-dim session compiles a program per
// input shape, and so compiles at most log2(B) + 1 of them; warm_up()
// compiles those ahead when the rows are the only free dim.
//
// The model must keep the batch: every input's first dim free, every
// output's first dim as many rows as the inputs. The first is checked when
// the batcher is made (ErrorCode::kUsage), the second on each batch (the
// batch's requests fail with ErrorCode::kRuntime).
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "hetsched/session.h"

namespace hetsched::serve {

class Batcher {
 public:
  Batcher(std::shared_ptr<Session> session, const std::string& name, int max_batch, double max_delay_ms);

  // ErrorCode::kUsage naming the input when model `name` (its graph) cannot
  // be batched: what the constructor checks, for a caller to check before
  // the session is made.
  static void check_batchable(const Graph& graph, const std::string& name);

  // Runs one request's inputs within a batch and returns its outputs; errors
  // as Session::run's (a batch's failure is each of its requests'). timing:
  // queue_s counts the wait for the batch to close.
  TensorMap run(const TensorMap& inputs, RunTiming* timing);

  // Runs each padded batch size once on zeros, so that no request waits for
  // a compile; false (nothing run) when an input has another free dim.
  bool warm_up();

  uint64_t n_batches() const { return n_batches_; }
  uint64_t n_rows() const { return n_rows_; }  // the requests' rows, padding excluded
  int max_batch() const { return max_batch_; }

 private:
  struct Batch;
  void run_batch(Batch& batch);

  std::shared_ptr<Session> session_;
  std::string name_;
  int max_batch_;
  double max_delay_ms_;
  std::mutex mutex_;
  std::condition_variable done_;     // a batch finished: its requests wake
  std::condition_variable leaders_;  // a batch closed or finished: leaders look again
  std::map<std::string, std::shared_ptr<Batch>> open_;  // by input signature
  int running_ = 0;  // batches running (0 or 1), under mutex_
  std::atomic<uint64_t> n_batches_{0}, n_rows_{0};
};

}  // namespace hetsched::serve
