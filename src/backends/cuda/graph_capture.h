// CUDA Graphs: work enqueued on several streams of one GPU, captured once
// into one graph and replayed with a single launch.
//
// capture_graph(context, enqueue):
//   1. creates a fork event and one join event per stream (before the
//      capture: creating them inside would be captured too);
//   2. begins capturing on stream 0 (thread-local mode: other host threads
//      may keep using CUDA meanwhile) and records the fork event there;
//      every other stream waits on it, which pulls it into the capture;
//   3. calls enqueue(), on the calling thread: it enqueues work on any of
//      the context's streams and orders streams only through events
//      (Event::record / wait_on), as a plan's Record and Wait steps do;
//   4. every other stream records its join event and stream 0 waits on all
//      of them (every stream must rejoin the origin before the capture
//      ends), ends the capture and instantiates the graph.
// enqueue() must not synchronise, allocate or copy from pageable memory
// (GpuOp::enqueue never does). If it throws, the capture is ended and
// discarded and the exception propagates; the streams are usable again.
//
// A replay runs the captured work with the pointers and parameters it had
// at capture time: to run on new inputs, copy them into the captured input
// buffers first (or capture those copies too, from pinned buffers).
#pragma once

#include <cstddef>
#include <functional>

#include "backends/cuda/runtime.h"

namespace hetsched::cuda {

class CudaGraph {
 public:
  CudaGraph() = default;
  ~CudaGraph();
  CudaGraph(CudaGraph&& other) noexcept;
  CudaGraph& operator=(CudaGraph&& other) noexcept;
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;

  bool valid() const { return exec_ != nullptr; }
  // Launches the whole graph on `stream` of its context (asynchronous).
  void replay(const CudaContext& context, int stream = 0) const;
  // Nodes of the captured graph (kernels, copies, memsets, event nodes), and
  // those with no dependency: work that starts at once on replay. Two
  // branches forked to two streams show up as two roots.
  size_t n_nodes() const { return n_nodes_; }
  size_t n_roots() const { return n_roots_; }
  size_t n_kernels() const { return n_kernels_; }

 private:
  friend CudaGraph capture_graph(const CudaContext& context, const std::function<void()>& enqueue);
  cudaGraphExec_t exec_ = nullptr;
  size_t n_nodes_ = 0, n_roots_ = 0, n_kernels_ = 0;
};

CudaGraph capture_graph(const CudaContext& context, const std::function<void()>& enqueue);

}  // namespace hetsched::cuda
