// float16 and bfloat16 computed in float32: the rewrite half_as_float.h
// describes, in four passes.
#include "graph/half_as_float.h"

#include <algorithm>
#include <set>
#include <string>

#include <fmt/format.h>

#include "core/half.h"
#include "graph/tensor_proto.h"

namespace hetsched {

bool is_half_float(DType dtype) { return dtype == DType::kFloat16 || dtype == DType::kBFloat16; }

namespace {

bool has_half_values(const Graph& graph) {
  for (const Value& v : graph.values)
    if (is_half_float(v.dtype)) return true;
  for (const Node& node : graph.nodes)
    for (const auto& [key, attr] : node.attributes)
      if (attr.graph && has_half_values(*attr.graph)) return true;
  return false;
}

// A copy of `of`'s type and shape under a new name, without its producer,
// consumers or initializer.
ValueId add_value_like(Graph& graph, ValueId of, const std::string& suffix, DType dtype) {
  Value v;
  v.name = graph.unused_name(graph.values[of].name + suffix);
  v.dtype = dtype;
  v.has_shape = graph.values[of].has_shape;
  v.shape = graph.values[of].shape;
  v.dim_params = graph.values[of].dim_params;
  return graph.add_value(std::move(v));
}

void add_cast(Graph& graph, ValueId from, ValueId to, DType dtype, int64_t opset) {
  Node node;
  node.name = graph.unused_name(graph.values[to].name + ".cast");
  node.op_type = "Cast";
  node.opset = opset;
  node.inputs = {from};
  node.outputs = {to};
  Attribute a;
  a.kind = Attribute::Kind::kInt;
  a.i = dtype_to_onnx(dtype);
  node.attributes["to"] = a;
  graph.add_node(std::move(node));
}

// Every read of `from` by a node reads `to` instead.
void redirect_reads(Graph& graph, ValueId from, ValueId to) {
  for (Node& node : graph.nodes)
    std::replace(node.inputs.begin(), node.inputs.end(), from, to);
}

}  // namespace

int compute_half_as_float(Graph& graph) {
  for (const Node& node : graph.nodes)
    for (const auto& [key, attr] : node.attributes)
      if (attr.graph && has_half_values(*attr.graph))
        throw Error(ErrorCode::kUnsupported,
                    fmt::format("node {}: float16 or bfloat16 values inside a subgraph (attribute '{}') are not "
                                "supported",
                                node.label(), key));
  if (!has_half_values(graph)) return 0;
  // Casts are added at the opset of the model's default domain.
  int64_t opset = 13;
  for (const Node& node : graph.nodes)
    if (node.domain.empty()) opset = std::max(opset, node.opset);
  std::set<ValueId> keep;  // 16-bit values that stay so

  // Pass 1: a Cast or CastLike to a 16-bit type rounds into a value of its
  // own, read back as float32 (a graph output then gets its own Cast to 16
  // bits in pass 3, and its other readers the float32 value).
  const size_t n_nodes = graph.nodes.size();
  for (size_t n = 0; n < n_nodes; ++n) {
    Node& node = graph.nodes[n];
    ValueId out = node.outputs.empty() ? kNoValue : node.outputs[0];
    if (out == kNoValue || !is_half_float(graph.values[out].dtype)) continue;
    if (node.op_type == "CastLike") {
      node.op_type = "Cast";
      node.inputs.resize(1);
      Attribute a;
      a.kind = Attribute::Kind::kInt;
      a.i = dtype_to_onnx(graph.values[out].dtype);
      node.attributes = {{"to", a}};
    }
    if (node.op_type != "Cast") continue;
    ValueId rounded = add_value_like(graph, out, ".rounded", graph.values[out].dtype);
    keep.insert(rounded);
    graph.nodes[n].outputs[0] = rounded;
    add_cast(graph, rounded, out, DType::kFloat32, opset);
  }

  // Pass 2: 16-bit graph inputs are read as float32.
  for (ValueId in : std::vector<ValueId>(graph.inputs)) {
    if (!is_half_float(graph.values[in].dtype)) continue;
    keep.insert(in);
    ValueId wide = add_value_like(graph, in, ".float32", DType::kFloat32);
    redirect_reads(graph, in, wide);
    add_cast(graph, in, wide, DType::kFloat32, opset);
  }

  // Pass 3: 16-bit graph outputs are Casts of the float32 values their
  // producers (or initializers) now make.
  for (ValueId out : std::vector<ValueId>(graph.outputs)) {
    if (!is_half_float(graph.values[out].dtype) || keep.count(out)) continue;
    keep.insert(out);
    ValueId wide = add_value_like(graph, out, ".float32", graph.values[out].dtype);  // made float32 in pass 4
    graph.values[wide].initializer = std::move(graph.values[out].initializer);
    graph.values[out].initializer.reset();
    for (Node& node : graph.nodes)
      std::replace(node.outputs.begin(), node.outputs.end(), out, wide);
    redirect_reads(graph, out, wide);
    add_cast(graph, wide, out, graph.values[out].dtype, opset);
  }

  // Pass 4: every other 16-bit value, constant and attribute is float32.
  int n_converted = 0;
  for (ValueId id = 0; id < static_cast<ValueId>(graph.values.size()); ++id) {
    Value& v = graph.values[id];
    if (!is_half_float(v.dtype) || keep.count(id)) continue;
    v.dtype = DType::kFloat32;
    if (v.initializer) v.initializer = widened_to_float32(*v.initializer);
    ++n_converted;
  }
  for (Node& node : graph.nodes) {
    for (auto& [key, attr] : node.attributes)
      if (attr.kind == Attribute::Kind::kTensor && is_half_float(attr.t.dtype())) attr.t = widened_to_float32(attr.t);
    if (node.op_type == "EyeLike" && is_half_float(dtype_from_onnx(static_cast<int32_t>(node.attr_int("dtype", 0)))))
      node.attributes["dtype"].i = dtype_to_onnx(DType::kFloat32);
  }
  graph.finalize();
  return n_converted;
}

}  // namespace hetsched
