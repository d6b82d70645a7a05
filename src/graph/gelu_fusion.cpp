// GELU written out as ONNX ops before opset 20 has a Gelu op, as PyTorch
// exports nn.GELU and transformers' own code writes it:
//   x / sqrt(2) -> Erf -> + 1 -> x * that -> * 0.5     (or x * 0.5 first)
// (x * (1 / sqrt(2)) for the first step counts too) becomes one Gelu node
// (approximate "none"), which the CPU backend runs as oneDNN's gelu_erf, as a
// post-op of the MatMul before it where there is one, instead of an Erf on
// the reference kernel and four element-wise passes. graph_to_model writes
// it back as those ops for files of an opset without Gelu.
#include <cmath>
#include <optional>

#include "graph/optimize.h"

namespace hetsched {

namespace {

// The one value of a constant scalar (any rank, one element) input, else
// nullopt.
std::optional<double> constant_scalar(const Graph& g, ValueId v) {
  if (v == kNoValue || !g.values[v].is_constant() || g.values[v].initializer->numel() != 1) return std::nullopt;
  const Tensor& t = *g.values[v].initializer;
  if (t.dtype() != DType::kFloat32 && t.dtype() != DType::kFloat64) return std::nullopt;
  return t.to_double_vector()[0];
}

bool near(std::optional<double> v, double want) { return v && std::fabs(*v - want) <= 1e-6 * std::fabs(want); }

// A binary node `op` with `v` as one input: the other input.
ValueId other_input(const Graph& g, NodeId node, const std::string& op, ValueId v) {
  if (node == kNoNode) return kNoValue;
  const Node& n = g.nodes[node];
  if (n.op_type != op || n.inputs.size() != 2 || n.outputs.size() != 1) return kNoValue;
  if (n.inputs[0] == v) return n.inputs[1];
  if (n.inputs[1] == v) return n.inputs[0];
  return kNoValue;
}

// The nodes of a GELU ending anywhere after `erf`, and its input and output;
// empty when `erf` is not inside one.
struct Gelu {
  std::vector<NodeId> nodes;  // the last one becomes the Gelu node
  ValueId x = kNoValue;
};

Gelu match(const Graph& g, NodeId erf) {
  const Node& e = g.nodes[erf];
  if (e.inputs.size() != 1 || e.outputs.size() != 1) return {};
  // x / sqrt(2), or x * (1 / sqrt(2)), read by the Erf alone.
  NodeId scale = g.values[e.inputs[0]].producer;
  if (scale == kNoNode || sole_reader(g, e.inputs[0]) != erf) return {};
  const Node& s = g.nodes[scale];
  if (s.inputs.size() != 2) return {};
  ValueId x = s.inputs[0];
  bool div = s.op_type == "Div" && near(constant_scalar(g, s.inputs[1]), std::sqrt(2.0));
  bool mul = s.op_type == "Mul" && near(constant_scalar(g, s.inputs[1]), std::sqrt(0.5));
  if (s.op_type == "Mul" && !mul && near(constant_scalar(g, s.inputs[0]), std::sqrt(0.5))) {
    x = s.inputs[1];
    mul = true;
  }
  if (!div && !mul) return {};
  DType dtype = g.values[x].dtype;
  if (dtype != DType::kFloat32 && dtype != DType::kFloat64) return {};
  // + 1
  NodeId add = sole_reader(g, e.outputs[0]);
  if (!near(constant_scalar(g, other_input(g, add, "Add", e.outputs[0])), 1.0)) return {};
  ValueId one_plus = g.nodes[add].outputs[0];
  NodeId m1 = sole_reader(g, one_plus);
  ValueId partner = other_input(g, m1, "Mul", one_plus);
  if (partner == kNoValue) return {};
  if (partner == x) {
    // x * (1 + erf) -> * 0.5
    NodeId m2 = sole_reader(g, g.nodes[m1].outputs[0]);
    if (!near(constant_scalar(g, other_input(g, m2, "Mul", g.nodes[m1].outputs[0])), 0.5)) return {};
    return Gelu{{scale, erf, add, m1, m2}, x};
  }
  // (x * 0.5) * (1 + erf)
  NodeId half = g.values[partner].producer;
  if (half == kNoNode || sole_reader(g, partner) != m1) return {};
  if (!near(constant_scalar(g, other_input(g, half, "Mul", x)), 0.5)) return {};
  return Gelu{{scale, erf, add, half, m1}, x};
}

}  // namespace

int fuse_gelu(Graph& graph) {
  int n_fused = 0;
  for (NodeId id = 0; id < static_cast<NodeId>(graph.nodes.size()); ++id) {
    if (graph.nodes[id].op_type != "Erf") continue;
    Gelu gelu = match(graph, id);
    if (gelu.nodes.empty()) continue;
    Node& last = graph.nodes[gelu.nodes.back()];
    last.op_type = "Gelu";
    last.inputs = {gelu.x};
    last.attributes.clear();
    for (size_t k = 0; k + 1 < gelu.nodes.size(); ++k) graph.nodes[gelu.nodes[k]].op_type.clear();
    ++n_fused;
  }
  if (n_fused) graph.finalize();
  return n_fused;
}

}  // namespace hetsched
