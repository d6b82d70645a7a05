// Elementwise activations oneDNN runs as a primitive or as a post-op.
#pragma once

#include <optional>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "hetsched/graph.h"

namespace hetsched::cpu {

struct EltwiseSpec {
  dnnl::algorithm algorithm;
  float alpha = 0.0f;
  float beta = 0.0f;
};

// The oneDNN form of `node` (Relu, LeakyRelu, Clip with constant bounds,
// Sigmoid, Tanh, HardSwish, Elu, ...), or nullopt when it has none.
std::optional<EltwiseSpec> eltwise_spec(const Graph& graph, const Node& node);

// An activation a CPU kernel applies to a value it computes, as oneDNN
// eltwise ops in order (post-ops of a Conv, Gemm or MatMul, or a standalone
// primitive), and the graph nodes it replaces, in topological order.
struct Activation {
  std::vector<NodeId> nodes;
  std::vector<EltwiseSpec> ops;
};

// The gate headed by `gate`, a Sigmoid or HardSigmoid node: v * Sigmoid(v)
// (SiLU, as PyTorch exports it) as one swish, or v * HardSigmoid(v) with
// alpha 1/6 and beta 1/2 (HardSwish before opset 14) as one hardswish; its
// nodes are the gate and the Mul, which alone reads the gate's output and
// reads v too. nullopt for anything else.
std::optional<Activation> gate_at(const Graph& graph, NodeId gate);

// The activation of `node` alone: eltwise_spec()'s op, or for HardSigmoid
// linear(alpha, beta) then clip(0, 1) (oneDNN 2.6 has no hardsigmoid).
std::optional<std::vector<EltwiseSpec>> activation_ops(const Graph& graph, const Node& node);

// The activation computed from `v` by the nodes reading it, when v itself is
// needed by nothing else (no other reader; not a graph output), so that its
// producer may write the activation's result instead of v: one node
// activation_ops() maps, or a gate (see gate_at) as one op. Float32
// only.
std::optional<Activation> activation_after(const Graph& graph, ValueId v);

// For a lowering: appends to `post_ops` the activation fusion_group() put
// into `group` from index `first` on, reading `result`, moves `result` to
// the activation's output and returns its nodes (to absorb). Empty, with
// nothing appended, when group[first..] is not exactly that activation (a
// launch boundary cut it short).
std::vector<NodeId> fuse_activation(const Graph& graph, const std::vector<NodeId>& group, size_t first,
                                    ValueId& result, dnnl::post_ops& post_ops);

}  // namespace hetsched::cpu
