// Multi-stream CUDA Graph capture and replay (contract in graph_capture.h).
#include "backends/cuda/graph_capture.h"

#include <utility>
#include <vector>

#include "backends/cuda/check.h"
#include "hetsched/error.h"

namespace hetsched::cuda {

CudaGraph::~CudaGraph() {
  if (exec_) cudaGraphExecDestroy(exec_);
}

CudaGraph::CudaGraph(CudaGraph&& other) noexcept
    : exec_(std::exchange(other.exec_, nullptr)),
      n_nodes_(other.n_nodes_),
      n_roots_(other.n_roots_),
      n_kernels_(other.n_kernels_) {}

CudaGraph& CudaGraph::operator=(CudaGraph&& other) noexcept {
  if (this != &other) {
    if (exec_) cudaGraphExecDestroy(exec_);
    exec_ = std::exchange(other.exec_, nullptr);
    n_nodes_ = other.n_nodes_;
    n_roots_ = other.n_roots_;
    n_kernels_ = other.n_kernels_;
  }
  return *this;
}

void CudaGraph::replay(const CudaContext& context, int stream) const {
  if (!exec_) throw Error(ErrorCode::kUsage, "CudaGraph::replay: nothing was captured");
  context.make_current();
  HETSCHED_CUDA_CHECK(cudaGraphLaunch(exec_, context.stream(stream).stream));
}

namespace {

// Releases a captured (not yet instantiated) graph.
struct GraphHolder {
  cudaGraph_t graph = nullptr;
  ~GraphHolder() {
    if (graph) cudaGraphDestroy(graph);
  }
};

}  // namespace

CudaGraph capture_graph(const CudaContext& context, const std::function<void()>& enqueue) {
  context.make_current();
  const int n = context.n_streams();
  cudaStream_t origin = context.stream(0).stream;
  Event fork;
  std::vector<Event> joins(static_cast<size_t>(n));

  HETSCHED_CUDA_CHECK(cudaStreamBeginCapture(origin, cudaStreamCaptureModeThreadLocal));
  GraphHolder captured;
  try {
    fork.record(origin);
    for (int i = 1; i < n; ++i) fork.wait_on(context.stream(i).stream);
    enqueue();
    for (int i = 1; i < n; ++i) {
      joins[static_cast<size_t>(i)].record(context.stream(i).stream);
      joins[static_cast<size_t>(i)].wait_on(origin);
    }
  } catch (...) {
    // Leave capture mode whatever state it is in: rejoin every stream (so
    // that none stays in the capture; errors ignored, the capture may be
    // invalidated already), end the capture and discard what it holds.
    for (int i = 1; i < n; ++i)
      if (cudaEventRecord(joins[static_cast<size_t>(i)].get(), context.stream(i).stream) == cudaSuccess)
        cudaStreamWaitEvent(origin, joins[static_cast<size_t>(i)].get(), 0);
    cudaGraph_t partial = nullptr;
    cudaStreamEndCapture(origin, &partial);
    if (partial) cudaGraphDestroy(partial);
    cudaGetLastError();
    throw;
  }
  HETSCHED_CUDA_CHECK(cudaStreamEndCapture(origin, &captured.graph));

  CudaGraph result;
  size_t n_nodes = 0, n_roots = 0;
  HETSCHED_CUDA_CHECK(cudaGraphGetNodes(captured.graph, nullptr, &n_nodes));
  HETSCHED_CUDA_CHECK(cudaGraphGetRootNodes(captured.graph, nullptr, &n_roots));
  std::vector<cudaGraphNode_t> nodes(n_nodes);
  if (n_nodes > 0) HETSCHED_CUDA_CHECK(cudaGraphGetNodes(captured.graph, nodes.data(), &n_nodes));
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type;
    HETSCHED_CUDA_CHECK(cudaGraphNodeGetType(node, &type));
    if (type == cudaGraphNodeTypeKernel) ++result.n_kernels_;
  }
  result.n_nodes_ = n_nodes;
  result.n_roots_ = n_roots;
  HETSCHED_CUDA_CHECK(cudaGraphInstantiate(&result.exec_, captured.graph, 0));
  return result;
}

}  // namespace hetsched::cuda
