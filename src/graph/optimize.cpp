#include "graph/optimize.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "core/allocation.h"
#include "kernels/kernel.h"

namespace hetsched {

namespace {
void set_constant(Value& value, Tensor tensor) {
  value.dtype = tensor.dtype();
  value.has_shape = true;
  value.shape = tensor.shape();
  value.dim_params.assign(value.shape.size(), "");
  value.initializer = std::move(tensor);
}

// Whether `value` is read as a Conv's weights (input 1).
// The weights (input 1) of a Conv, MatMul or Gemm: what fuse_quantized_ops
// takes in int8.
bool is_weights(const Graph& graph, ValueId value) {
  for (NodeId c : graph.values[value].consumers) {
    const std::string& op = graph.nodes[c].op_type;
    if ((op == "Conv" || op == "MatMul" || op == "Gemm") && graph.nodes[c].input(1) == value) return true;
  }
  return false;
}

bool foldable_shape_query(const Graph& graph, const Node& node) {
  if (node.op_type != "Shape" && node.op_type != "Size") return false;
  ValueId in = node.input(0);
  return in != kNoValue && graph.values[in].shape_is_static();
}

// Folding runs the node's kernel at load on data the file supplies: each
// tensor it allocates is bounded (core/allocation.h), so that a small
// file cannot make loading allocate without bound (a OneHot of depth 2^32,
// an Expand to a stated shape). A node whose outputs would be far larger
// than its constant inputs is left to run time; one that only rearranges
// them (Transpose of a large weight) still folds.
constexpr double kMaxFoldGrowthBytes = 64.0 * 1024 * 1024;

size_t fold_allocation_limit(const Graph& graph, const Node& node) {
  double in_bytes = 0;
  for (ValueId v : node.inputs)
    if (v != kNoValue && graph.values[v].is_constant()) in_bytes += graph.values[v].initializer->nbytes();
  return static_cast<size_t>(std::max(kMaxFoldGrowthBytes, 2 * in_bytes));
}
}  // namespace

int fold_constants(Graph& graph, bool keep_quantized_weights) {
  int n_folded = 0;
  for (Node& node : graph.nodes) {
    if (keep_quantized_weights && node.op_type == "DequantizeLinear" && is_weights(graph, node.outputs[0]))
      continue;
    bool all_constant = true;
    for (ValueId v : node.inputs)
      if (v != kNoValue && !graph.values[v].is_constant()) all_constant = false;
    bool shape_query = foldable_shape_query(graph, node);
    if (!all_constant && !shape_query) continue;
    const auto* kernel = kernels::find_reference_kernel(node.op_type);
    if (!kernel) continue;
    std::vector<Tensor> placeholders;
    placeholders.reserve(node.inputs.size());
    std::vector<const Tensor*> inputs;
    for (ValueId v : node.inputs) {
      if (v == kNoValue) {
        inputs.push_back(nullptr);
      } else if (graph.values[v].is_constant()) {
        inputs.push_back(&*graph.values[v].initializer);
      } else {
        // No storage: Shape and Size read the shape only, and allocating
        // (and zeroing) the whole input here would cost its full size at load.
        const Value& value = graph.values[v];
        placeholders.push_back(
            Tensor::wrap(value.dtype == DType::kUndefined ? DType::kFloat32 : value.dtype, value.shape, nullptr));
        inputs.push_back(&placeholders.back());
      }
    }
    std::vector<Tensor> outputs;
    try {
      ScopedAllocationLimit limit(fold_allocation_limit(graph, node));
      outputs = kernel->compute(node, inputs);
    } catch (const AllocationOverLimit&) {
      continue;  // left to run time
    } catch (const Error& e) {
      // A folded constant larger than memory: say which node made it.
      if (e.code() != ErrorCode::kResource) throw;
      throw Error(e.code(), fmt::format("folding {}: {}", node.label(), e.what()));
    }
    for (size_t i = 0; i < node.outputs.size(); ++i)
      if (node.outputs[i] != kNoValue && i < outputs.size()) set_constant(graph.values[node.outputs[i]], outputs[i]);
    node.op_type.clear();  // dead
    ++n_folded;
  }
  if (n_folded) graph.finalize();
  return n_folded;
}

NodeId sole_reader(const Graph& graph, ValueId v) {
  const Value& value = graph.values[v];
  if (value.consumers.size() != 1 || graph.is_graph_output(v)) return kNoNode;
  return value.consumers[0];
}

int remove_identities(Graph& graph) {
  int n_removed = 0;
  for (Node& node : graph.nodes) {
    bool is_dropout = node.op_type == "Dropout";
    if (node.op_type != "Identity" && !is_dropout) continue;
    if (is_dropout) {
      ValueId mask = node.outputs.size() > 1 ? node.outputs[1] : kNoValue;
      if (mask != kNoValue && (!graph.values[mask].consumers.empty() || graph.is_graph_output(mask))) continue;
      // A training_mode given: bypassed when a constant false (inference,
      // as PyTorch exports it), else left to the kernel.
      if (ValueId training = node.input(2); training != kNoValue) {
        const Value& t = graph.values[training];
        if (!t.is_constant() || t.initializer->numel() != 1 || t.initializer->to_int64_vector()[0] != 0) continue;
      }
    }
    ValueId in = node.input(0), out = node.outputs[0];
    if (in == kNoValue || out == kNoValue) continue;
    if (graph.is_graph_output(out)) {
      // The output's name must survive: rename the input to it, when the
      // input is an internal value nothing else names.
      Value& src = graph.values[in];
      if (src.producer == kNoNode || graph.is_graph_output(in) || src.is_constant()) continue;
      src.name = graph.values[out].name;
      for (ValueId& o : graph.outputs)
        if (o == out) o = in;
    } else {
      for (NodeId c : graph.values[out].consumers)
        for (ValueId& v : graph.nodes[c].inputs)
          if (v == out) v = in;
    }
    node.op_type.clear();
    ++n_removed;
  }
  if (n_removed) graph.finalize();
  return n_removed;
}

int fold_batch_norm_into_conv(Graph& graph) {
  int n_folded = 0;
  for (Node& bn : graph.nodes) {
    if (bn.op_type != "BatchNormalization" || bn.attr_int("training_mode", 0) != 0) continue;
    if (bn.outputs.size() > 1) {
      bool extra_used = false;
      for (size_t i = 1; i < bn.outputs.size(); ++i)
        if (bn.outputs[i] != kNoValue) extra_used = true;
      if (extra_used) continue;
    }
    ValueId x = bn.input(0);
    if (x == kNoValue || graph.values[x].producer == kNoNode) continue;
    Node& conv = graph.nodes[graph.values[x].producer];
    if (conv.op_type != "Conv" || graph.values[x].consumers.size() != 1 || graph.is_graph_output(x)) continue;
    bool params_constant = true;
    for (size_t i = 1; i < 5; ++i)
      if (bn.input(i) == kNoValue || !graph.values[bn.input(i)].is_constant()) params_constant = false;
    ValueId w_id = conv.input(1), b_id = conv.input(2);
    if (!params_constant || w_id == kNoValue || !graph.values[w_id].is_constant()) continue;
    if (b_id != kNoValue && !graph.values[b_id].is_constant()) continue;
    const Tensor& w = *graph.values[w_id].initializer;
    if (w.dtype() != DType::kFloat32 || w.rank() < 1) continue;
    int64_t out_channels = w.dim(0);
    auto scale = graph.values[bn.input(1)].initializer->to_double_vector();
    auto beta = graph.values[bn.input(2)].initializer->to_double_vector();
    auto mean = graph.values[bn.input(3)].initializer->to_double_vector();
    auto var = graph.values[bn.input(4)].initializer->to_double_vector();
    auto n = static_cast<size_t>(out_channels);
    if (scale.size() != n || beta.size() != n || mean.size() != n || var.size() != n) continue;
    std::vector<double> bias(n, 0.0);
    if (b_id != kNoValue) {
      bias = graph.values[b_id].initializer->to_double_vector();
      if (bias.size() != n) continue;
    }
    double epsilon = bn.attr_float("epsilon", 1e-5f);

    Tensor new_w(DType::kFloat32, w.shape());
    Tensor new_b(DType::kFloat32, {out_channels});
    int64_t per_channel = w.numel() / out_channels;
    const float* src = w.data<float>();
    float* dst = new_w.data<float>();
    for (size_t o = 0; o < n; ++o) {
      double s = scale[o] / std::sqrt(var[o] + epsilon);
      for (int64_t k = 0; k < per_channel; ++k)
        dst[o * per_channel + k] = static_cast<float>(src[o * per_channel + k] * s);
      new_b.data<float>()[o] = static_cast<float>((bias[o] - mean[o]) * s + beta[o]);
    }
    Value wv, bv;
    wv.name = fmt::format("{}_bn_folded_weight", conv.name);
    bv.name = fmt::format("{}_bn_folded_bias", conv.name);
    set_constant(wv, std::move(new_w));
    set_constant(bv, std::move(new_b));
    ValueId new_w_id = graph.add_value(std::move(wv));
    ValueId new_b_id = graph.add_value(std::move(bv));
    // add_value may reallocate graph.values, not graph.nodes: conv/bn stay valid.
    conv.inputs.resize(3, kNoValue);
    conv.inputs[1] = new_w_id;
    conv.inputs[2] = new_b_id;
    conv.outputs[0] = bn.outputs[0];
    bn.op_type.clear();
    ++n_folded;
  }
  if (n_folded) graph.finalize();
  return n_folded;
}

namespace {

// The pads of a constant-mode, zero-valued Pad node, or nullopt.
std::optional<std::vector<int64_t>> zero_pad_amounts(const Graph& graph, const Node& pad) {
  if (pad.attr_string("mode", "constant") != "constant") return std::nullopt;
  std::vector<int64_t> pads;
  if (pad.opset < 11) {
    if (pad.attr_float("value", 0.0f) != 0.0f) return std::nullopt;
    pads = pad.attr_ints("pads");
  } else {
    ValueId p = pad.input(1), value = pad.input(2), axes = pad.input(3);
    if (p == kNoValue || !graph.values[p].is_constant() || axes != kNoValue) return std::nullopt;
    if (value != kNoValue) {
      const Value& v = graph.values[value];
      if (!v.is_constant() || v.initializer->numel() != 1 || v.initializer->to_double_vector()[0] != 0.0)
        return std::nullopt;
    }
    pads = graph.values[p].initializer->to_int64_vector();
  }
  for (int64_t x : pads)
    if (x < 0) return std::nullopt;
  return pads;
}

}  // namespace

int fold_pads(Graph& graph) {
  int n_folded = 0;
  for (Node& pad : graph.nodes) {
    if (pad.op_type != "Pad" || pad.outputs.empty()) continue;
    ValueId in = pad.input(0), out = pad.outputs[0];
    const Value& padded = graph.values[out];
    if (in == kNoValue || padded.consumers.size() != 1 || graph.is_graph_output(out)) continue;
    Node& next = graph.nodes[padded.consumers[0]];
    bool is_conv = next.op_type == "Conv", is_pool = next.op_type == "AveragePool";
    if ((!is_conv && !is_pool) || next.input(0) != out || next.attr_string("auto_pad", "NOTSET") != "NOTSET") continue;
    auto pads = zero_pad_amounts(graph, pad);
    if (!pads || pads->size() % 2 != 0 || pads->size() < 6) continue;
    size_t rank = pads->size() / 2, n_spatial = rank - 2;
    // N and C are not padded.
    if ((*pads)[0] || (*pads)[1] || (*pads)[rank] || (*pads)[rank + 1]) continue;
    std::vector<int64_t> own = next.attr_ints("pads", std::vector<int64_t>(2 * n_spatial, 0));
    if (own.size() != 2 * n_spatial) continue;
    if (is_pool) {
      bool own_zero = std::all_of(own.begin(), own.end(), [](int64_t x) { return x == 0; });
      if (next.attr_int("ceil_mode", 0) != 0 || (!own_zero && next.attr_int("count_include_pad", 0) == 0)) continue;
      Attribute include;
      include.kind = Attribute::Kind::kInt;
      include.i = 1;
      next.attributes["count_include_pad"] = include;
    }
    for (size_t d = 0; d < n_spatial; ++d) {
      own[d] += (*pads)[2 + d];
      own[n_spatial + d] += (*pads)[rank + 2 + d];
    }
    Attribute merged;
    merged.kind = Attribute::Kind::kInts;
    merged.ints = own;
    next.attributes["pads"] = merged;
    next.inputs[0] = in;
    pad.op_type.clear();
    ++n_folded;
  }
  if (n_folded) graph.finalize();
  return n_folded;
}

OptimizeStats optimize_graph(Graph& graph) {
  OptimizeStats stats;
  for (;;) {
    // Quantized weights stay int8 until the fusion has seen them.
    int folded = fold_constants(graph, /*keep_quantized_weights=*/true);
    int quantized = fuse_quantized_ops(graph);
    folded += fold_constants(graph);
    int removed = remove_identities(graph);
    int bn = fold_batch_norm_into_conv(graph);
    int pads = fold_pads(graph);
    int einsums = einsum_as_matmul(graph);
    int gelus = fuse_gelu(graph);
    stats.n_folded_constants += folded;
    stats.n_removed_identity += removed;
    stats.n_folded_batch_norm += bn;
    stats.n_folded_pads += pads;
    stats.n_einsum_as_matmul += einsums;
    stats.n_quantized_fused += quantized;
    stats.n_gelu_fused += gelus;
    if (folded + quantized + removed + bn + pads + einsums + gelus == 0) break;
  }
  return stats;
}

}  // namespace hetsched
