// Which neighbouring nodes a CPU device runs together with a node, and the
// activations (eltwise.h: gate_at, activation_after, fuse_activation) it
// applies to a kernel's result.
//
// The group is decided on the graph's topological order (node ids): a
// residual must be computed before the Conv that absorbs its Add.
#include <algorithm>

#include "backends/cpu/eltwise.h"
#include "backends/cpu/program.h"

namespace hetsched::cpu {

namespace {

// The single node reading `value`, when nothing else (no other node, no
// graph output) does.
NodeId only_consumer(const Graph& graph, ValueId value) {
  const Value& v = graph.values[value];
  if (v.consumers.size() != 1 || graph.is_graph_output(value)) return kNoNode;
  return v.consumers[0];
}

bool is_float32(const Graph& graph, ValueId id) { return id != kNoValue && graph.values[id].dtype == DType::kFloat32; }

// Adds to the group the activation oneDNN applies as `eltwise` post-ops to
// the group's result `out` (activation_after: one node, or a SiLU or
// HardSwish gate of two).
void append_activation(const Graph& graph, ValueId out, std::vector<NodeId>& group) {
  if (auto activation = activation_after(graph, out))
    group.insert(group.end(), activation->nodes.begin(), activation->nodes.end());
}

// The Add of a constant bias vector (shape [.., 1, N] or [N], not changing
// the shape) reading a matrix product `out` (float32, rank >= 2), when it is
// out's sole reader; kNoNode otherwise.
NodeId bias_add_after(const Graph& graph, ValueId out) {
  NodeId next = only_consumer(graph, out);
  if (next == kNoNode || graph.nodes[next].op_type != "Add" || graph.nodes[next].inputs.size() != 2) return kNoNode;
  const Node& add = graph.nodes[next];
  const Value& product = graph.values[out];
  const Value& bias = graph.values[add.inputs[0] == out ? add.inputs[1] : add.inputs[0]];
  bool ok = add.inputs[0] != add.inputs[1] && bias.is_constant() && bias.dtype == DType::kFloat32 &&
            product.shape.size() >= 2 && bias.shape.size() <= product.shape.size() &&
            is_float32(graph, add.outputs[0]) && graph.values[add.outputs[0]].shape == product.shape;
  for (size_t i = 0; ok && i < bias.shape.size(); ++i) {
    int64_t d = bias.shape[bias.shape.size() - 1 - i];
    ok = d == 1 || (i == 0 && d == product.shape.back());
  }
  return ok ? next : kNoNode;
}

// MatMul and Gemm (float32): a MatMul followed by an Add of a constant bias
// vector (bias_add_after; oneDNN's bias), then an activation (an `eltwise`
// post-op); a Gemm followed by an activation. Each only when it is the sole
// reader of what precedes it.
std::vector<NodeId> matmul_group(const Graph& graph, NodeId node) {
  std::vector<NodeId> group = {node};
  const Node& head = graph.nodes[node];
  if (head.outputs.empty() || !is_float32(graph, head.outputs[0])) return group;
  ValueId out = head.outputs[0];
  bool matrices = std::all_of(head.inputs.begin(), head.inputs.end(),
                              [&](ValueId in) { return in != kNoValue && graph.values[in].shape.size() >= 2; });
  if (NodeId add = bias_add_after(graph, out); head.op_type == "MatMul" && matrices && add != kNoNode) {
    group.push_back(add);
    out = graph.nodes[add].outputs[0];
  }
  append_activation(graph, out, group);
  return group;
}

// The op a gate's product computes, when `gate` heads one.
std::optional<EltwiseSpec> gate_op(const Graph& graph, NodeId gate) {
  const Node& n = graph.nodes[gate];
  if (n.op_type == "Sigmoid") return EltwiseSpec{dnnl::algorithm::eltwise_swish, 1.0f};
  // oneDNN 2.6's hardswish is x * relu6(x + 3) / 6: only these parameters.
  if (n.op_type == "HardSigmoid" && n.attr_float("alpha", 0.2f) == 1.0f / 6.0f && n.attr_float("beta", 0.5f) == 0.5f)
    return EltwiseSpec{dnnl::algorithm::eltwise_hardswish};
  return std::nullopt;
}

}  // namespace

std::optional<Activation> gate_at(const Graph& graph, NodeId gate) {
  const Node& g = graph.nodes[gate];
  std::optional<EltwiseSpec> op = gate_op(graph, gate);
  if (!op || g.inputs.size() != 1 || g.outputs.size() != 1) return std::nullopt;
  ValueId v = g.inputs[0], s = g.outputs[0];
  NodeId mul = only_consumer(graph, s);
  if (mul == kNoNode) return std::nullopt;
  const Node& m = graph.nodes[mul];
  bool reads_both = m.inputs.size() == 2 && ((m.inputs[0] == v && m.inputs[1] == s) || (m.inputs[0] == s && m.inputs[1] == v));
  if (m.op_type != "Mul" || !reads_both || m.outputs.size() != 1 || !is_float32(graph, v) || !is_float32(graph, s) ||
      !is_float32(graph, m.outputs[0]) || graph.values[m.outputs[0]].shape != graph.values[v].shape)
    return std::nullopt;
  return Activation{{gate, mul}, {*op}};
}

std::optional<Activation> activation_after(const Graph& graph, ValueId v) {
  const Value& value = graph.values[v];
  if (graph.is_graph_output(v) || !is_float32(graph, v)) return std::nullopt;
  if (value.consumers.size() == 1) {
    const Node& n = graph.nodes[value.consumers[0]];
    auto ops = activation_ops(graph, n);
    if (!ops || n.input(0) != v || n.outputs.size() != 1 || !is_float32(graph, n.outputs[0])) return std::nullopt;
    return Activation{{value.consumers[0]}, *ops};
  }
  if (value.consumers.size() != 2) return std::nullopt;
  for (NodeId gate : value.consumers) {
    std::optional<Activation> gated = gate_at(graph, gate);
    if (gated && graph.nodes[gate].inputs[0] == v &&
        std::count(value.consumers.begin(), value.consumers.end(), gated->nodes[1]) == 1)
      return gated;
  }
  return std::nullopt;
}

std::vector<NodeId> fuse_activation(const Graph& graph, const std::vector<NodeId>& group, size_t first,
                                    ValueId& result, dnnl::post_ops& post_ops) {
  if (first >= group.size()) return {};
  std::optional<Activation> activation = activation_after(graph, result);
  if (!activation || !std::equal(group.begin() + first, group.end(), activation->nodes.begin(), activation->nodes.end()))
    return {};
  for (const EltwiseSpec& op : activation->ops) post_ops.append_eltwise(1.0f, op.algorithm, op.alpha, op.beta);
  result = graph.nodes[activation->nodes.back()].outputs[0];
  return activation->nodes;
}

std::vector<NodeId> fusion_group(const Graph& graph, NodeId node) {
  std::vector<NodeId> group = {node};
  const Node& head = graph.nodes[node];
  if (head.op_type == "MatMul" || head.op_type == "Gemm") return matmul_group(graph, node);
  if (head.op_type == "MatMulInteger" && !head.outputs.empty()) {
    // Its int32 product cast to float32 (ONNX Runtime's dynamic
    // quantization: MatMulInteger -> Cast -> Mul by the scales): the
    // primitive writes float32, the same values. Then a Mul by constant
    // scales, one or one per column (a QDQ MatMul, quantized_fusion.cpp):
    // the primitive's output scales, the same float product; and after
    // them a bias Add and an activation, as a float MatMul's (post-ops).
    NodeId next = only_consumer(graph, head.outputs[0]);
    if (next == kNoNode || graph.nodes[next].op_type != "Cast" || !is_float32(graph, graph.nodes[next].outputs[0]))
      return group;
    group.push_back(next);
    ValueId as_float = graph.nodes[next].outputs[0];
    NodeId mul = only_consumer(graph, as_float);
    if (mul == kNoNode || graph.nodes[mul].op_type != "Mul" || graph.nodes[mul].inputs.size() != 2) return group;
    const Node& m = graph.nodes[mul];
    const Value& scales = graph.values[m.inputs[m.inputs[0] == as_float ? 1 : 0]];
    const Shape& product = graph.values[as_float].shape;
    if (m.inputs[0] == m.inputs[1] || !scales.is_constant() || scales.dtype != DType::kFloat32 ||
        !graph.values[as_float].shape_is_static() || product.empty() || scales.shape.size() > product.size() ||
        graph.values[m.outputs[0]].shape != product)
      return group;
    const int64_t n = scales.initializer->numel();
    bool per_column = n == product.back() && !scales.shape.empty() && scales.shape.back() == n;
    if (n != 1 && !per_column) return group;
    group.push_back(mul);
    ValueId out = m.outputs[0];
    if (NodeId add = bias_add_after(graph, out); add != kNoNode) {
      group.push_back(add);
      out = graph.nodes[add].outputs[0];
    }
    append_activation(graph, out, group);
    return group;
  }
  // A standalone gate: its Sigmoid or HardSigmoid and the Mul, as one op.
  if (auto gate = gate_at(graph, node)) return gate->nodes;
  if (head.op_type == "BatchNormalization" && head.outputs.size() == 1) {
    // A following Relu (DenseNet's pre-activation): its fuse_norm_relu flag.
    NodeId next = only_consumer(graph, head.outputs[0]);
    if (next != kNoNode && graph.nodes[next].op_type == "Relu" && is_float32(graph, graph.nodes[next].outputs[0]))
      group.push_back(next);
    return group;
  }
  if (head.op_type != "Conv" || head.outputs.empty()) return group;
  ValueId out = head.outputs[0];
  // A residual Add of the same shape (oneDNN's `sum` post-op).
  NodeId next = only_consumer(graph, out);
  if (next != kNoNode && graph.nodes[next].op_type == "Add" && graph.nodes[next].inputs.size() == 2) {
    const Node& add = graph.nodes[next];
    ValueId other = add.inputs[0] == out ? add.inputs[1] : add.inputs[0];
    // The residual must exist when the Conv runs: produced earlier in the
    // topological order (else the other branch's Conv fuses the Add).
    NodeId other_producer = graph.values[other].producer;
    bool ready = other_producer == kNoNode || other_producer < node;
    if (add.inputs[0] != add.inputs[1] && ready && is_float32(graph, other) &&
        graph.values[other].shape == graph.values[out].shape) {
      group.push_back(next);
      out = add.outputs[0];
    }
  }
  append_activation(graph, out, group);
  return group;
}

}  // namespace hetsched::cpu
