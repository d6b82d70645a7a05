// The GPU kernel registry, GpuOp's operand binding, fusion groups and the
// host-tensor runner (contracts in gpu_op.h).
#include "backends/cuda/gpu_op.h"

#include <algorithm>
#include <limits>
#include <map>
#include <mutex>
#include <set>

#include <fmt/format.h>

#include "backends/cuda/check.h"
#include "hetsched/error.h"

namespace hetsched::cuda {
namespace {

std::map<std::string, GpuKernel>& registry() {
  static std::map<std::string, GpuKernel> kernels;
  return kernels;
}

}  // namespace

// ---------------------------------------------------------------- GpuOp

GpuOp::GpuOp(const GpuPrepare& p, std::string what) : nodes_(p.nodes), what_(std::move(what)) {
  for (ValueId v : p.node(p.nodes.size() - 1).outputs)
    if (v != kNoValue) outputs_.push_back(v);
}

GpuOp::Operand GpuOp::bind(const GpuPrepare& p, ValueId id) {
  if (id == kNoValue) return {};
  for (const auto& [value, operand] : bound_)
    if (value == id) return operand;
  Operand operand;
  const Value& value = p.value(id);
  if (value.is_constant()) {
    operand = bind_constant(p, *value.initializer);
  } else {
    operand.input = static_cast<int>(inputs_.size());
    inputs_.push_back(id);
  }
  bound_.emplace_back(id, operand);
  return operand;
}

GpuOp::Operand GpuOp::bind_constant(const GpuPrepare& p, const Tensor& tensor) {
  // At least one byte, so that an empty constant still has an address and
  // counts as present.
  p.context.make_current();
  DeviceBuffer buffer(std::max<size_t>(tensor.nbytes(), 1));
  upload_bytes(buffer.get(), tensor.raw(), tensor.nbytes());
  constants_.push_back(std::move(buffer));
  Operand operand;
  operand.constant = constants_.back().get();
  return operand;
}

// ---------------------------------------------------------------- registry

void register_gpu_kernel(GpuKernel kernel) {
  std::string op = kernel.op_type;
  registry()[op] = std::move(kernel);
}

const GpuKernel* find_gpu_kernel(const std::string& op_type) {
  auto it = registry().find(op_type);
  return it == registry().end() ? nullptr : &it->second;
}

std::vector<std::string> gpu_op_types() {
  std::vector<std::string> ops;
  for (const auto& [op, _] : registry()) ops.push_back(op);
  return ops;
}

std::string gpu_declines(const Graph& graph, const Node& node) {
  const GpuKernel* kernel = find_gpu_kernel(node.op_type);
  if (!kernel || !node.domain.empty()) return fmt::format("no CUDA kernel for {}", node.op_type);
  for (const std::vector<ValueId>* list : {&node.inputs, &node.outputs})
    for (ValueId v : *list) {
      if (v == kNoValue) continue;
      const Value& value = graph.values[v];
      if (!value.is_constant() && !value.shape_is_static())
        return fmt::format("value '{}' has no static shape", value.name);
      if (value.dtype == DType::kUndefined) return fmt::format("value '{}' has no known dtype", value.name);
      // A kernel launch of no blocks is an error and a library call with a
      // leading dimension 0 is refused; the reference kernels run empty tensors.
      if (!value.is_constant() && shape_numel(value.shape) == 0)
        return fmt::format("value '{}' is empty", value.name);
      // cuDNN's tensor descriptors and the own kernels' indices are int.
      if (shape_numel(value.shape) > std::numeric_limits<int32_t>::max())
        return fmt::format("value '{}' has 2^31 elements or more", value.name);
    }
  return kernel->declines ? kernel->declines(graph, node) : "";
}

// ---------------------------------------------------------------- fusion

namespace {

// The only reader of `node`'s single output, when it may join the group.
NodeId sole_reader(const Graph& graph, NodeId node, const std::function<bool(NodeId)>& may_fuse) {
  const Node& n = graph.nodes[node];
  int present = 0;
  for (ValueId v : n.outputs) present += v != kNoValue;
  if (present != 1 || n.outputs.empty() || n.outputs[0] == kNoValue) return kNoNode;
  ValueId out = n.outputs[0];
  const Value& value = graph.values[out];
  if (value.consumers.size() != 1 || graph.is_graph_output(out)) return kNoNode;
  NodeId reader = value.consumers[0];
  // A reader reading the value twice (Add(y, y)) cannot take it fused.
  const Node& r = graph.nodes[reader];
  if (std::count(r.inputs.begin(), r.inputs.end(), out) != 1) return kNoNode;
  if (may_fuse && !may_fuse(reader)) return kNoNode;
  if (!gpu_declines(graph, r).empty()) return kNoNode;
  return reader;
}

bool is_op(const Graph& graph, NodeId node, const char* op) {
  return node != kNoNode && graph.nodes[node].op_type == op;
}

// The Add's input other than `from`.
ValueId other_input(const Node& add, ValueId from) { return add.inputs[0] == from ? add.inputs[1] : add.inputs[0]; }

bool same_float_shape(const Graph& graph, ValueId a, ValueId b) {
  const Value& x = graph.values[a];
  const Value& y = graph.values[b];
  return x.dtype == DType::kFloat32 && y.dtype == DType::kFloat32 && x.shape == y.shape;
}

}  // namespace

std::vector<NodeId> gpu_fusion_group(const Graph& graph, NodeId node, const std::function<bool(NodeId)>& may_fuse) {
  std::vector<NodeId> group = {node};
  const Node& anchor = graph.nodes[node];
  if (anchor.op_type != "Conv" && anchor.op_type != "Gemm" && anchor.op_type != "MatMul") return group;
  if (!gpu_declines(graph, anchor).empty()) return group;
  NodeId next = sole_reader(graph, node, may_fuse);
  ValueId last = anchor.outputs[0];
  if (is_op(graph, next, "Add") && graph.nodes[next].inputs.size() == 2) {
    const Node& add = graph.nodes[next];
    ValueId other = other_input(add, last);
    bool takes = false;
    if (anchor.op_type == "Conv") {
      // A residual of the convolution's own shape: cuDNN's z operand. The
      // group runs where the convolution is, so the residual must be made
      // before it (in a ResNet downsampling block only the later of the two
      // convolutions can take the Add).
      NodeId producer = graph.values[other].producer;
      takes = same_float_shape(graph, other, last) && same_float_shape(graph, add.outputs[0], last) &&
              (producer == kNoNode || producer < node);
    } else if (anchor.op_type == "MatMul") {
      // A bias over the last dim: the cuBLASLt epilogue's bias vector, which
      // runs over B's columns; with a 1-D B the last dim is A's rows.
      const Value& bias = graph.values[other];
      const Shape& y = graph.values[last].shape;
      bool b_matrix = graph.values[anchor.inputs[1]].shape.size() >= 2;
      bool vector = b_matrix && bias.is_constant() && bias.dtype == DType::kFloat32 && !y.empty() &&
                    bias.initializer->numel() == y.back() && bias.shape.size() <= y.size() &&
                    (bias.shape.empty() || bias.shape.back() == y.back());
      takes = vector && same_float_shape(graph, add.outputs[0], last);
    }
    if (takes) {
      group.push_back(next);
      last = add.outputs[0];
      next = sole_reader(graph, next, may_fuse);
    }
  }
  if (is_op(graph, next, "Relu") && graph.values[graph.nodes[next].outputs[0]].dtype == DType::kFloat32)
    group.push_back(next);
  return group;
}

std::vector<std::vector<NodeId>> gpu_launch_groups(const Graph& graph, const std::vector<NodeId>& nodes) {
  std::set<NodeId> in_launch(nodes.begin(), nodes.end()), done;
  std::vector<std::vector<NodeId>> groups;
  for (NodeId n : nodes) {
    if (done.count(n)) continue;
    std::vector<NodeId> group = gpu_fusion_group(graph, n, [&](NodeId m) { return in_launch.count(m) > 0; });
    std::set<NodeId> members(group.begin(), group.end());
    bool reads_later_value = false;
    for (NodeId m : group)
      for (ValueId v : graph.nodes[m].inputs) {
        NodeId producer = v == kNoValue ? kNoNode : graph.values[v].producer;
        reads_later_value = reads_later_value || (producer != kNoNode && in_launch.count(producer) &&
                                                  !members.count(producer) && !done.count(producer));
      }
    if (reads_later_value) group = {n};
    done.insert(group.begin(), group.end());
    groups.push_back(std::move(group));
  }
  return groups;
}

std::unique_ptr<GpuOp> prepare_gpu_op(CudaContext& context, const Graph& graph, const std::vector<NodeId>& nodes) {
  if (nodes.empty()) throw Error(ErrorCode::kUsage, "prepare_gpu_op: no node");
  for (NodeId n : nodes) {
    const Node& node = graph.nodes[n];
    std::string why = gpu_declines(graph, node);
    if (!why.empty()) throw Error(ErrorCode::kUnsupported, fmt::format("{}: the GPU does not run it: {}", node.label(), why));
  }
  const GpuKernel* kernel = find_gpu_kernel(graph.nodes[nodes[0]].op_type);
  context.make_current();
  return kernel->prepare(GpuPrepare{context, graph, nodes});
}

std::vector<Tensor> run_gpu_op(CudaContext& context, const Graph& graph, const GpuOp& op,
                               const std::vector<Tensor>& inputs) {
  if (inputs.size() != op.inputs().size())
    throw Error(ErrorCode::kUsage, fmt::format("run_gpu_op: {} inputs given, the op reads {}", inputs.size(),
                                               op.inputs().size()));
  context.make_current();
  context.reserve_workspace(op.workspace_bytes());
  std::vector<DeviceBuffer> in_buffers, out_buffers;
  std::vector<const void*> in;
  std::vector<void*> out;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value& value = graph.values[op.inputs()[i]];
    if (inputs[i].dtype() != value.dtype || inputs[i].shape() != value.shape)
      throw Error(ErrorCode::kUsage,
                  fmt::format("run_gpu_op: input {} ('{}') is {} {}, the graph says {} {}", i, value.name,
                              dtype_name(inputs[i].dtype()), shape_to_string(inputs[i].shape()),
                              dtype_name(value.dtype), shape_to_string(value.shape)));
    DeviceBuffer buffer(std::max<size_t>(inputs[i].nbytes(), 1));
    upload_bytes(buffer.get(), inputs[i].raw(), inputs[i].nbytes());
    in.push_back(buffer.get());
    in_buffers.push_back(std::move(buffer));
  }
  const GpuStream& stream = context.stream(0);
  for (ValueId v : op.outputs()) {
    const Value& value = graph.values[v];
    size_t bytes = static_cast<size_t>(shape_numel(value.shape)) * dtype_size(value.dtype);
    DeviceBuffer buffer(std::max<size_t>(bytes, 1));
    // NaN bit patterns instead of zeros: a kernel that forgets to write an
    // element shows up in a comparison.
    HETSCHED_CUDA_CHECK(cudaMemsetAsync(buffer.get(), 0xff, buffer.bytes(), stream.stream));
    out.push_back(buffer.get());
    out_buffers.push_back(std::move(buffer));
  }
  op.enqueue(stream, in.data(), out.data());
  context.synchronize(0);
  std::vector<Tensor> results;
  for (size_t i = 0; i < op.outputs().size(); ++i) {
    const Value& value = graph.values[op.outputs()[i]];
    results.push_back(context.download(out[i], value.dtype, value.shape));
  }
  return results;
}

}  // namespace hetsched::cuda
