#include "backends/cpu/eltwise.h"

#include <algorithm>
#include <limits>

namespace hetsched::cpu {

namespace {
// Clip's bound: attribute before opset 11, optional constant input after.
std::optional<float> clip_bound(const Graph& graph, const Node& node, size_t input, const char* attr, float fallback) {
  if (node.opset < 11) return node.attr_float(attr, fallback);
  ValueId id = node.input(input);
  if (id == kNoValue) return fallback;
  const Value& v = graph.values[id];
  if (!v.is_constant() || v.initializer->numel() != 1) return std::nullopt;
  return static_cast<float>(v.initializer->to_double_vector()[0]);
}
}  // namespace

std::optional<EltwiseSpec> eltwise_spec(const Graph& graph, const Node& node) {
  using A = dnnl::algorithm;
  const std::string& op = node.op_type;
  if (op == "Relu") return EltwiseSpec{A::eltwise_relu};
  if (op == "LeakyRelu") return EltwiseSpec{A::eltwise_relu, node.attr_float("alpha", 0.01f)};
  if (op == "Sigmoid") return EltwiseSpec{A::eltwise_logistic};
  if (op == "Tanh") return EltwiseSpec{A::eltwise_tanh};
  if (op == "HardSwish") return EltwiseSpec{A::eltwise_hardswish};
  if (op == "Elu") return EltwiseSpec{A::eltwise_elu, node.attr_float("alpha", 1.0f)};
  if (op == "Exp") return EltwiseSpec{A::eltwise_exp};
  if (op == "Log") return EltwiseSpec{A::eltwise_log};
  if (op == "Sqrt") return EltwiseSpec{A::eltwise_sqrt};
  if (op == "Abs") return EltwiseSpec{A::eltwise_abs};
  if (op == "Softplus") return EltwiseSpec{A::eltwise_soft_relu};
  if (op == "Mish") return EltwiseSpec{A::eltwise_mish};
  if (op == "Neg") return EltwiseSpec{A::eltwise_linear, -1.0f, 0.0f};
  if (op == "Clip") {
    auto lo = clip_bound(graph, node, 1, "min", std::numeric_limits<float>::lowest());
    auto hi = clip_bound(graph, node, 2, "max", std::numeric_limits<float>::max());
    if (!lo || !hi) return std::nullopt;
    return EltwiseSpec{A::eltwise_clip, *lo, *hi};
  }
  if (op == "Gelu") {
    std::string approximate = node.attr_string("approximate", "none");
    if (approximate == "tanh") return EltwiseSpec{A::eltwise_gelu_tanh};
    return EltwiseSpec{A::eltwise_gelu_erf};
  }
  return std::nullopt;
}

namespace {
bool is_float32(const Graph& graph, ValueId v) { return v != kNoValue && graph.values[v].dtype == DType::kFloat32; }

// The node alone reading `v`, when v is not a graph output either.
NodeId sole_consumer(const Graph& graph, ValueId v) {
  const Value& value = graph.values[v];
  return value.consumers.size() == 1 && !graph.is_graph_output(v) ? value.consumers[0] : kNoNode;
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
  NodeId mul = sole_consumer(graph, s);
  if (mul == kNoNode) return std::nullopt;
  const Node& m = graph.nodes[mul];
  bool reads_both = m.inputs.size() == 2 && ((m.inputs[0] == v && m.inputs[1] == s) || (m.inputs[0] == s && m.inputs[1] == v));
  if (m.op_type != "Mul" || !reads_both || m.outputs.size() != 1 || !is_float32(graph, v) || !is_float32(graph, s) ||
      !is_float32(graph, m.outputs[0]) || graph.values[m.outputs[0]].shape != graph.values[v].shape)
    return std::nullopt;
  return Activation{{gate, mul}, {*op}};
}

std::optional<std::vector<EltwiseSpec>> activation_ops(const Graph& graph, const Node& node) {
  if (node.op_type == "HardSigmoid")
    return std::vector<EltwiseSpec>{{dnnl::algorithm::eltwise_linear, node.attr_float("alpha", 0.2f),
                                     node.attr_float("beta", 0.5f)},
                                    {dnnl::algorithm::eltwise_clip, 0.0f, 1.0f}};
  if (auto spec = eltwise_spec(graph, node)) return std::vector<EltwiseSpec>{*spec};
  return std::nullopt;
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

}  // namespace hetsched::cpu
