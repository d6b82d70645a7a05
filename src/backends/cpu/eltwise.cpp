#include "backends/cpu/eltwise.h"

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

std::optional<std::vector<EltwiseSpec>> activation_ops(const Graph& graph, const Node& node) {
  if (node.op_type == "HardSigmoid")
    return std::vector<EltwiseSpec>{{dnnl::algorithm::eltwise_linear, node.attr_float("alpha", 0.2f),
                                     node.attr_float("beta", 0.5f)},
                                    {dnnl::algorithm::eltwise_clip, 0.0f, 1.0f}};
  if (auto spec = eltwise_spec(graph, node)) return std::vector<EltwiseSpec>{*spec};
  return std::nullopt;
}

}  // namespace hetsched::cpu
