// The graph IR every part of hetsched works on.
//
// A Graph holds Values (tensors flowing between nodes: dtype, shape, producer,
// consumers) and Nodes (one ONNX operator each). Ids are indices into
// Graph::values / Graph::nodes. Initializers (weights and folded constants)
// are held once, inside their Value. After import and after every pass that
// edits the graph, Graph::finalize() re-establishes the invariants:
//   - nodes are in a topological order (a cycle is an ErrorCode::kInvalidModel);
//   - Value::producer / Value::consumers match the nodes' inputs and outputs;
//   - no dead nodes or unused values remain.
// Partitioners and schedulers work on SubgraphViews: a set of nodes together
// with the values that cross its boundary.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hetsched/tensor.h"

namespace hetsched {

using ValueId = int32_t;
using NodeId = int32_t;
constexpr ValueId kNoValue = -1;  // an omitted optional input or output
constexpr NodeId kNoNode = -1;

class Graph;

struct Value {
  std::string name;
  DType dtype = DType::kUndefined;
  // Known rank and dims; a dim of -1 is unknown (dim_params names it when the
  // model gave it a symbolic name). has_shape == false: rank unknown.
  bool has_shape = false;
  Shape shape;
  std::vector<std::string> dim_params;
  std::optional<Tensor> initializer;  // weights and folded constants
  NodeId producer = kNoNode;
  std::vector<NodeId> consumers;

  bool is_constant() const { return initializer.has_value(); }
  bool shape_is_static() const;  // has_shape and every dim >= 0
  double nbytes() const;          // size of its tensor; 0 unless the shape is static
};

struct Attribute {
  enum class Kind { kInt, kFloat, kString, kInts, kFloats, kStrings, kTensor, kGraph };
  Kind kind = Kind::kInt;
  int64_t i = 0;
  float f = 0.0f;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::vector<std::string> strings;
  Tensor t;
  // kGraph (If's branches, Loop's and Scan's body): the subgraph, imported
  // as a model's graph is. Its inputs are the op's formal inputs, then the
  // values it reads from enclosing graphs, the k-th of those fed by the
  // node's input captured_inputs[k] (one of its implicit inputs). `onnx`:
  // the ONNX GraphProto it came from, serialized, to write the node out.
  std::shared_ptr<const Graph> graph;
  std::vector<size_t> captured_inputs;
  std::string onnx;
};

// Work and traffic of one node, used by cost models (0 when shapes are unknown).
struct NodeCost {
  double flops = 0;          // multiply and add count as two
  double bytes_read = 0;     // all inputs, weights included
  double bytes_written = 0;  // all outputs
  // The number format of its arithmetic, what a device must compute in to
  // run it (PlatformDevice::precisions): "int8" for 8-bit integer work
  // (QLinearConv, MatMulInteger, the (De)QuantizeLinear conversions at an
  // int8 unit's edge, a MaxPool or Concat of uint8 values), the float type
  // of a float op's data ("float32", "float16", "bfloat16", "float64"), ""
  // when no format applies (shape and index arithmetic on int64).
  std::string precision;
};

struct Node {
  std::string name;     // unique within the graph (import names unnamed nodes)
  std::string op_type;  // ONNX op type, e.g. "Conv"
  std::string domain;   // "" for the default ONNX domain
  int64_t opset = 0;    // opset version of the node's domain in the model
  std::vector<ValueId> inputs;   // kNoValue for an omitted optional input
  std::vector<ValueId> outputs;  // kNoValue for an omitted optional output
  std::map<std::string, Attribute> attributes;
  NodeCost cost;
  // The last n_implicit_inputs inputs are values of this graph that the
  // node's subgraphs read (Attribute::graph): inputs as far as order,
  // liveness and placement go, not inputs of the ONNX node.
  int n_implicit_inputs = 0;

  bool has_attr(const std::string& key) const { return attributes.count(key) != 0; }
  // Typed attribute access with a default; a present attribute of another
  // kind is an ErrorCode::kInvalidModel naming the node and attribute.
  int64_t attr_int(const std::string& key, int64_t fallback) const;
  float attr_float(const std::string& key, float fallback) const;
  std::string attr_string(const std::string& key, std::string fallback) const;
  std::vector<int64_t> attr_ints(const std::string& key, std::vector<int64_t> fallback = {}) const;
  std::vector<float> attr_floats(const std::string& key, std::vector<float> fallback = {}) const;
  const Tensor* attr_tensor(const std::string& key) const;  // nullptr when absent

  // The input at `index`, or kNoValue when omitted or beyond the list.
  ValueId input(size_t index) const { return index < inputs.size() ? inputs[index] : kNoValue; }
  // "Conv 'conv1'" — how errors name a node.
  std::string label() const;
};

class Graph {
 public:
  std::string name;
  std::string source;  // file path or zoo:NAME the graph was loaded from
  std::vector<Value> values;
  std::vector<Node> nodes;
  std::vector<ValueId> inputs;   // graph inputs that are not initializers
  std::vector<ValueId> outputs;
  // The quantized chains (DequantizeLinear -> Conv, MatMul, Add...) the
  // load-time fusion left in float32: "<node label>: why" (`run -v`).
  std::vector<std::string> float_chains;

  ValueId add_value(Value value);
  // A new value holding `tensor` as its initializer (dtype and shape from
  // it), named `name`, or `name` with a number added when taken.
  ValueId add_constant(const std::string& name, Tensor tensor);
  // `base`, or `base` with a number added ("base.2"...) when a value or a
  // node has that name already.
  std::string unused_name(const std::string& base) const;
  NodeId add_node(Node node);
  // kNoValue / kNoNode when absent.
  ValueId find_value(const std::string& value_name) const;
  NodeId find_node(const std::string& node_name) const;

  // Drops nodes marked dead (op_type empty) and values nothing refers to,
  // renumbers ids, recomputes producer/consumers and sorts nodes
  // topologically (stable: keeps the given order where it is valid).
  void finalize();

  bool is_graph_output(ValueId id) const;
  bool is_graph_input(ValueId id) const;

  // Every node's cost annotation, from the values' static shapes.
  void annotate_costs();
  double total_flops() const;
};

// A set of nodes with the values that cross its boundary: `inputs` are values
// the nodes read but do not produce; `outputs` are values the nodes produce
// that are read outside the set or are graph outputs.
struct SubgraphView {
  std::vector<NodeId> nodes;  // in the graph's topological order
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;

  static SubgraphView of(const Graph& graph, std::vector<NodeId> node_ids);
  bool contains(NodeId id) const;
};

}  // namespace hetsched
