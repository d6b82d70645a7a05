#include "hetsched/graph.h"

#include <algorithm>
#include <queue>
#include <set>

#include <fmt/format.h>

namespace hetsched {

bool Value::shape_is_static() const {
  if (!has_shape) return false;
  return std::all_of(shape.begin(), shape.end(), [](int64_t d) { return d >= 0; });
}

namespace {
const char* kind_name(Attribute::Kind kind) {
  switch (kind) {
    case Attribute::Kind::kInt: return "int";
    case Attribute::Kind::kFloat: return "float";
    case Attribute::Kind::kString: return "string";
    case Attribute::Kind::kInts: return "ints";
    case Attribute::Kind::kFloats: return "floats";
    case Attribute::Kind::kStrings: return "strings";
    case Attribute::Kind::kTensor: return "tensor";
    case Attribute::Kind::kGraph: return "graph";
  }
  return "?";
}
}  // namespace

#define HETSCHED_ATTR_GETTER(RET, NAME, KIND, FIELD)                                                    \
  RET Node::NAME(const std::string& key, RET fallback) const {                                          \
    auto it = attributes.find(key);                                                                     \
    if (it == attributes.end()) return fallback;                                                        \
    if (it->second.kind != Attribute::Kind::KIND)                                                       \
      throw Error(ErrorCode::kInvalidModel,                                                             \
                  fmt::format("{}: attribute '{}' is of type {}, expected {}", label(), key,            \
                              kind_name(it->second.kind), kind_name(Attribute::Kind::KIND)));          \
    return it->second.FIELD;                                                                            \
  }
HETSCHED_ATTR_GETTER(int64_t, attr_int, kInt, i)
HETSCHED_ATTR_GETTER(float, attr_float, kFloat, f)
HETSCHED_ATTR_GETTER(std::string, attr_string, kString, s)
HETSCHED_ATTR_GETTER(std::vector<int64_t>, attr_ints, kInts, ints)
HETSCHED_ATTR_GETTER(std::vector<float>, attr_floats, kFloats, floats)
#undef HETSCHED_ATTR_GETTER

const Tensor* Node::attr_tensor(const std::string& key) const {
  auto it = attributes.find(key);
  if (it == attributes.end()) return nullptr;
  if (it->second.kind != Attribute::Kind::kTensor)
    throw Error(ErrorCode::kInvalidModel, fmt::format("{}: attribute '{}' is of type {}, expected tensor",
                                                      label(), key, kind_name(it->second.kind)));
  return &it->second.t;
}

std::string Node::label() const { return fmt::format("{} '{}'", op_type, name); }

ValueId Graph::add_value(Value value) {
  values.push_back(std::move(value));
  return static_cast<ValueId>(values.size() - 1);
}

ValueId Graph::add_constant(const std::string& name, Tensor tensor) {
  Value v;
  v.name = unused_name(name);
  v.dtype = tensor.dtype();
  v.has_shape = true;
  v.shape = tensor.shape();
  v.dim_params.assign(v.shape.size(), "");
  v.initializer = std::move(tensor);
  return add_value(std::move(v));
}

std::string Graph::unused_name(const std::string& base) const {
  std::string name = base;
  for (int k = 2; find_value(name) != kNoValue || find_node(name) != kNoNode; ++k)
    name = base + "." + std::to_string(k);
  return name;
}

NodeId Graph::add_node(Node node) {
  nodes.push_back(std::move(node));
  return static_cast<NodeId>(nodes.size() - 1);
}

ValueId Graph::find_value(const std::string& value_name) const {
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i].name == value_name) return static_cast<ValueId>(i);
  return kNoValue;
}

NodeId Graph::find_node(const std::string& node_name) const {
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].name == node_name) return static_cast<NodeId>(i);
  return kNoNode;
}

bool Graph::is_graph_output(ValueId id) const {
  return std::find(outputs.begin(), outputs.end(), id) != outputs.end();
}
bool Graph::is_graph_input(ValueId id) const {
  return std::find(inputs.begin(), inputs.end(), id) != inputs.end();
}

void Graph::finalize() {
  // Pass 1: drop dead nodes (marked by an empty op_type).
  std::vector<Node> live;
  live.reserve(nodes.size());
  for (auto& n : nodes)
    if (!n.op_type.empty()) live.push_back(std::move(n));
  nodes = std::move(live);

  // Pass 2: keep values that are referenced by a node, a graph input or output.
  std::vector<bool> used(values.size(), false);
  for (ValueId v : inputs) used[v] = true;
  for (ValueId v : outputs) used[v] = true;
  for (const auto& n : nodes) {
    for (ValueId v : n.inputs)
      if (v != kNoValue) used[v] = true;
    for (ValueId v : n.outputs)
      if (v != kNoValue) used[v] = true;
  }
  std::vector<ValueId> remap(values.size(), kNoValue);
  std::vector<Value> kept;
  for (size_t i = 0; i < values.size(); ++i) {
    if (!used[i]) continue;
    remap[i] = static_cast<ValueId>(kept.size());
    kept.push_back(std::move(values[i]));
  }
  values = std::move(kept);
  auto map_ids = [&](std::vector<ValueId>& ids) {
    for (ValueId& v : ids)
      if (v != kNoValue) v = remap[v];
  };
  map_ids(inputs);
  map_ids(outputs);
  for (auto& n : nodes) {
    map_ids(n.inputs);
    map_ids(n.outputs);
  }

  // Pass 3: producers; a value produced twice is a model error.
  for (auto& v : values) {
    v.producer = kNoNode;
    v.consumers.clear();
  }
  for (size_t i = 0; i < nodes.size(); ++i)
    for (ValueId v : nodes[i].outputs) {
      if (v == kNoValue) continue;
      if (values[v].producer != kNoNode)
        throw Error(ErrorCode::kInvalidModel,
                    fmt::format("value '{}' is produced by both {} and {}", values[v].name,
                                nodes[values[v].producer].label(), nodes[i].label()));
      values[v].producer = static_cast<NodeId>(i);
    }

  // Pass 4: stable topological sort (Kahn's algorithm, smallest index first).
  size_t n_nodes = nodes.size();
  std::vector<int> pending(n_nodes, 0);
  std::vector<std::vector<NodeId>> successors(n_nodes);
  for (size_t i = 0; i < n_nodes; ++i) {
    std::set<NodeId> preds;
    for (ValueId v : nodes[i].inputs)
      if (v != kNoValue && values[v].producer != kNoNode) preds.insert(values[v].producer);
    pending[i] = static_cast<int>(preds.size());
    for (NodeId p : preds) successors[p].push_back(static_cast<NodeId>(i));
  }
  std::priority_queue<NodeId, std::vector<NodeId>, std::greater<>> ready;
  for (size_t i = 0; i < n_nodes; ++i)
    if (pending[i] == 0) ready.push(static_cast<NodeId>(i));
  std::vector<NodeId> order;
  while (!ready.empty()) {
    NodeId id = ready.top();
    ready.pop();
    order.push_back(id);
    for (NodeId s : successors[id])
      if (--pending[s] == 0) ready.push(s);
  }
  if (order.size() != n_nodes) {
    for (size_t i = 0; i < n_nodes; ++i)
      if (pending[i] > 0)
        throw Error(ErrorCode::kInvalidModel,
                    fmt::format("graph has a cycle through {}", nodes[i].label()));
  }
  std::vector<Node> sorted;
  sorted.reserve(n_nodes);
  for (NodeId id : order) sorted.push_back(std::move(nodes[id]));
  nodes = std::move(sorted);

  // Pass 5: producers and consumers in the final numbering.
  for (auto& v : values) v.producer = kNoNode;
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (ValueId v : nodes[i].outputs)
      if (v != kNoValue) values[v].producer = static_cast<NodeId>(i);
    for (ValueId v : nodes[i].inputs)
      if (v != kNoValue) values[v].consumers.push_back(static_cast<NodeId>(i));
  }
}

SubgraphView SubgraphView::of(const Graph& graph, std::vector<NodeId> node_ids) {
  SubgraphView view;
  std::sort(node_ids.begin(), node_ids.end());
  node_ids.erase(std::unique(node_ids.begin(), node_ids.end()), node_ids.end());
  view.nodes = std::move(node_ids);
  std::set<ValueId> inputs, outputs;
  for (NodeId id : view.nodes) {
    const Node& n = graph.nodes[id];
    for (ValueId v : n.inputs) {
      if (v == kNoValue) continue;
      NodeId p = graph.values[v].producer;
      if (p == kNoNode || !view.contains(p)) inputs.insert(v);
    }
    for (ValueId v : n.outputs) {
      if (v == kNoValue) continue;
      bool escapes = graph.is_graph_output(v);
      for (NodeId c : graph.values[v].consumers)
        if (!view.contains(c)) escapes = true;
      if (escapes) outputs.insert(v);
    }
  }
  view.inputs.assign(inputs.begin(), inputs.end());
  view.outputs.assign(outputs.begin(), outputs.end());
  return view;
}

bool SubgraphView::contains(NodeId id) const { return std::binary_search(nodes.begin(), nodes.end(), id); }

}  // namespace hetsched
