// GPU kernels: the CUDA backend's counterpart of the reference kernels
// (kernels/kernel.h), checked against them by tests/unit/test_cuda_kernels.cpp.
//
// Each op family lives in its own file under src/backends/cuda/ops/ and
// registers a GpuKernel per op type with HETSCHED_CUDA_KERNEL; nothing
// central lists them. For one node, and the nodes fused into it
// (gpu_fusion_group), the kernel's `prepare` builds a GpuOp from the graph's
// static shapes: library descriptors, algorithm choices, parameters, and the
// node's constant inputs (weights) uploaded once. GpuOp::enqueue then only
// launches work on a stream.
//
// Contract of a kernel:
//   declines(graph, node) -> "" when prepare takes the node, else why not, as
//                         a short phrase ("not float32", "a dynamic shape"),
//                         like the CPU lowerings' reference fallbacks. Never
//                         throws for a node its reference kernel accepts.
//   prepare(p)            -> a GpuOp, for nodes declines() accepted; throws
//                         Error(kRuntime) when a CUDA library call fails.
//   GpuOp::enqueue        -> no allocation, no synchronisation, no host
//                         access: the work can be captured into a CUDA Graph
//                         and replayed. Reads only inputs() and its own
//                         constants, writes only outputs() and the stream's
//                         workspace (at most workspace_bytes()).
//   Results agree with the reference kernel to float rounding (FP32 math;
//   TF32 only when the context allows it).
#pragma once

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/runtime.h"
#include "hetsched/graph.h"

namespace hetsched::cuda {

// What prepare() works from. nodes[0] is the node whose op's kernel
// prepares; the others are fused into it, in order.
struct GpuPrepare {
  CudaContext& context;
  const Graph& graph;
  std::vector<NodeId> nodes;

  const Node& node(size_t i = 0) const { return graph.nodes[nodes.at(i)]; }
  const Value& value(ValueId id) const { return graph.values[id]; }
};

class GpuOp {
 public:
  virtual ~GpuOp() = default;

  const std::vector<NodeId>& nodes() const { return nodes_; }
  // Values read from device memory, in the order enqueue's `in` gives them:
  // the non-constant inputs of the fused nodes that none of them produces,
  // each once.
  const std::vector<ValueId>& inputs() const { return inputs_; }
  // Values written, in the order of enqueue's `out`: the last fused node's
  // present outputs (fusion never hides a value read elsewhere).
  const std::vector<ValueId>& outputs() const { return outputs_; }
  // Scratch the op needs on its stream (GpuStream::workspace).
  size_t workspace_bytes() const { return workspace_bytes_; }
  // outputs()[0] holds inputs()[0]'s bytes unchanged (Reshape, Flatten,
  // Squeeze...): bound to the same memory it needs no work, and enqueue then
  // does nothing; bound elsewhere it copies.
  bool is_view() const { return is_view_; }
  // What runs, for summaries: "cuDNN convolution + bias + ReLU".
  const std::string& what() const { return what_; }

  // in[i]: device memory of inputs()[i]; out[i]: of outputs()[i]. Dense,
  // row-major, the graph's dtypes and shapes.
  virtual void enqueue(const GpuStream& stream, const void* const* in, void* const* out) const = 0;

 protected:
  // Where an operand's data is: in[input], or a constant the op holds.
  struct Operand {
    int input = -1;
    const void* constant = nullptr;
    bool present() const { return input >= 0 || constant; }
  };

  // Sets nodes(), outputs() (the last node's present outputs) and what().
  GpuOp(const GpuPrepare& p, std::string what);
  // The operand for value `id`: constants are uploaded (once per op), other
  // values become inputs(). kNoValue gives an absent operand.
  Operand bind(const GpuPrepare& p, ValueId id);
  // A constant the op makes itself (a zero bias, an index map).
  Operand bind_constant(const GpuPrepare& p, const Tensor& tensor);
  static const void* data(const Operand& operand, const void* const* in) {
    return operand.input >= 0 ? in[operand.input] : operand.constant;
  }
  void set_what(std::string what) { what_ = std::move(what); }
  void need_workspace(size_t bytes) { workspace_bytes_ = std::max(workspace_bytes_, bytes); }
  void set_view() { is_view_ = true; }

 private:
  std::vector<NodeId> nodes_;
  std::vector<ValueId> inputs_;
  std::vector<ValueId> outputs_;
  std::vector<std::pair<ValueId, Operand>> bound_;
  std::vector<DeviceBuffer> constants_;
  size_t workspace_bytes_ = 0;
  bool is_view_ = false;
  std::string what_;
};

using DeclinesFn = std::string (*)(const Graph& graph, const Node& node);
using PrepareFn = std::unique_ptr<GpuOp> (*)(const GpuPrepare& p);

struct GpuKernel {
  std::string op_type;
  DeclinesFn declines = nullptr;  // nullptr: takes every node with static shapes
  PrepareFn prepare = nullptr;
  std::string what;  // "cuDNN convolution, fused bias + residual Add + ReLU" (for docs)
};

void register_gpu_kernel(GpuKernel kernel);
const GpuKernel* find_gpu_kernel(const std::string& op_type);  // nullptr when none
std::vector<std::string> gpu_op_types();                        // sorted

// Why the GPU does not run `node`: no kernel for its op, a shape that is not
// static, or what the kernel declines; "" when it runs it.
std::string gpu_declines(const Graph& graph, const Node& node);

// The nodes the kernel of `node` runs in one go: `node`, then the nodes
// fused into it, in order. `may_fuse(n)` says whether node n may join (the
// executor passes "n is in the same launch"). Fused today:
//   Conv [+ Add of a same-shape residual] [+ Relu]   (cudnnConvolutionBiasActivationForward)
//   Gemm [+ Relu]                                    (cuBLASLt bias/ReLU epilogue)
//   MatMul [+ Add of a constant [N] bias] [+ Relu]   (cuBLASLt bias/ReLU epilogue)
// A node joins only when it reads the previous node's output, that output has
// no other reader and is not a graph output, and its kernel would run it; a
// residual must be produced before `node` in the graph's (topological) node
// order, since the group runs where `node` does.
std::vector<NodeId> gpu_fusion_group(const Graph& graph, NodeId node,
                                     const std::function<bool(NodeId)>& may_fuse = nullptr);

// The GPU ops of one launch: its `nodes`, in the order the launch runs
// them, as the groups that become one GpuOp each. A node's group is its
// gpu_fusion_group among the launch's nodes, or the node alone where a fused
// node would read a value that the launch makes only after the group's
// first node (a residual made later in this launch's order than in the
// graph's). Every node is in exactly one group, in the launch's order.
std::vector<std::vector<NodeId>> gpu_launch_groups(const Graph& graph, const std::vector<NodeId>& nodes);

// The GpuOp for `nodes` (a gpu_fusion_group); Error(kUnsupported) naming the
// node when the GPU does not run it.
std::unique_ptr<GpuOp> prepare_gpu_op(CudaContext& context, const Graph& graph, const std::vector<NodeId>& nodes);

// For tests and checks: runs `op` once on stream 0 with host tensors for its
// inputs() and returns its outputs() as host tensors (the graph's dtypes and
// shapes). Allocates, reserves the workspace and synchronises.
std::vector<Tensor> run_gpu_op(CudaContext& context, const Graph& graph, const GpuOp& op,
                               const std::vector<Tensor>& inputs);

}  // namespace hetsched::cuda

#define HETSCHED_CUDA_CONCAT_INNER(a, b) a##b
#define HETSCHED_CUDA_CONCAT(a, b) HETSCHED_CUDA_CONCAT_INNER(a, b)
// HETSCHED_CUDA_KERNEL("Conv", declines_fn, prepare_fn, "what runs");
#define HETSCHED_CUDA_KERNEL(OP_TYPE, DECLINES, PREPARE, WHAT)                                          \
  static const bool HETSCHED_CUDA_CONCAT(hetsched_cuda_kernel_, __LINE__) = [] {                          \
    ::hetsched::cuda::register_gpu_kernel(::hetsched::cuda::GpuKernel{OP_TYPE, DECLINES, PREPARE, WHAT}); \
    return true;                                                                                        \
  }()
