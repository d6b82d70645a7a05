// Load-time graph optimisations (internal). Each pass keeps outputs identical
// to the unoptimised graph up to float rounding, and leaves the graph
// finalized (see Graph::finalize).
#pragma once

#include "hetsched/graph.h"

namespace hetsched {

struct OptimizeStats {
  int n_folded_constants = 0;   // nodes evaluated at load and replaced by initializers
  int n_removed_identity = 0;   // Identity / inference Dropout nodes removed
  int n_folded_batch_norm = 0;  // BatchNormalization nodes folded into the preceding Conv
  int n_folded_pads = 0;        // zero Pad nodes folded into the following Conv / AveragePool
  int n_einsum_as_matmul = 0;   // Einsum nodes that are matrix products, made MatMul
  int n_quantized_fused = 0;    // QDQ chains made QLinearConv, and DequantizeLinear -> MaxPool swapped
  int n_gelu_fused = 0;         // GELUs written out as Div/Erf/Add/Mul/Mul made one Gelu node
};

// The single node reading `v` (and no graph output), else kNoNode: where a
// rewrite may absorb what produces `v`.
NodeId sole_reader(const Graph& graph, ValueId v);

// Nodes whose inputs are all constants (and Shape/Size of a value with a
// static shape) are evaluated with the reference kernels and replaced by
// initializers. With `keep_quantized_weights`, a DequantizeLinear whose
// output is a Conv's weights or a MatMul's or Gemm's B is left for fuse_quantized_ops.
int fold_constants(Graph& graph, bool keep_quantized_weights = false);
// Identity and inference-mode Dropout (mask unused) are bypassed.
int remove_identities(Graph& graph);
// Conv (constant weights) -> BatchNormalization (constant parameters), where
// the Conv's output feeds only the BN, becomes one Conv with scaled weights
// and a bias.
int fold_batch_norm_into_conv(Graph& graph);

// A constant zero Pad of the spatial dims feeding only a Conv (auto_pad
// NOTSET), or an AveragePool (auto_pad NOTSET, ceil_mode 0, no pads of its own
// unless count_include_pad), becomes that node's own padding (AveragePool then
// counts the padding, as the explicit Pad made it do). PyTorch exports
// count_include_pad pools this way.
int fold_pads(Graph& graph);

// An Einsum of two operands that is a (batched) matrix product, such as
// "bhid,bhjd->bhij", becomes a MatMul, with a Transpose of the last two dims
// of an operand given transposed (einsum_as_matmul.cpp).
int einsum_as_matmul(Graph& graph);

// DequantizeLinear -> Conv [-> Relu] -> QuantizeLinear chains (the QDQ
// format) become QLinearConv nodes, and the other quantized chains their
// int8 forms (quantized_fusion.cpp says which and when); what stays float32
// is listed in Graph::float_chains.
int fuse_quantized_ops(Graph& graph);

// GELU written out with Erf (x / sqrt(2) -> Erf -> + 1 -> * x -> * 0.5, as
// PyTorch exports it before opset 20) becomes one Gelu node
// (gelu_fusion.cpp); graph_to_model writes it back out for older opsets.
int fuse_gelu(Graph& graph);

// All passes, to a fixed point.
OptimizeStats optimize_graph(Graph& graph);

}  // namespace hetsched
