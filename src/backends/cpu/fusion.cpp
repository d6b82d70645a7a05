// Which neighbouring nodes a CPU device runs together with a node.
//
// The group is decided on the graph's topological order (node ids): a
// residual must be computed before the Conv that absorbs its Add.
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

}  // namespace

std::vector<NodeId> fusion_group(const Graph& graph, NodeId node) {
  std::vector<NodeId> group = {node};
  const Node& head = graph.nodes[node];
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
      next = only_consumer(graph, out);
    }
  }
  // Then an activation (an `eltwise` post-op).
  if (next != kNoNode && eltwise_spec(graph, graph.nodes[next]) && is_float32(graph, graph.nodes[next].outputs[0]))
    group.push_back(next);
  return group;
}

}  // namespace hetsched::cpu
