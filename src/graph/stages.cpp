#include "graph/stages.h"

#include <algorithm>

namespace hetsched {

bool all_shapes_static(const Graph& graph) {
  for (const Value& v : graph.values)
    if (!v.is_constant() && !v.shape_is_static()) return false;
  return true;
}

StageCut cut_at_data_dependent_shapes(const Graph& graph) {
  StageCut cut;
  Stage* const kGiven = nullptr;  // a graph input or a constant
  std::vector<Stage*> made_by(graph.values.size(), kGiven);
  // Pass 1: each node, in order, to the head (its outputs static, its inputs
  // from the head or the graph), a barrier (its inputs so, an output not
  // static) or the tail (an input from a barrier or the tail).
  for (NodeId n = 0; n < static_cast<NodeId>(graph.nodes.size()); ++n) {
    const Node& node = graph.nodes[n];
    bool inputs_known = true;
    for (ValueId v : node.inputs)
      if (v != kNoValue && made_by[v] != kGiven && made_by[v] != &cut.head) inputs_known = false;
    bool outputs_static = true;
    for (ValueId v : node.outputs)
      if (v != kNoValue && !graph.values[v].shape_is_static()) outputs_static = false;
    Stage* stage = !inputs_known ? &cut.tail : outputs_static ? &cut.head : &cut.barriers;
    stage->nodes.push_back(n);
    for (ValueId v : node.outputs)
      if (v != kNoValue) made_by[v] = stage;
  }
  // Pass 2: what crosses from stage to stage.
  auto add = [](std::vector<ValueId>& list, ValueId v) {
    if (std::find(list.begin(), list.end(), v) == list.end()) list.push_back(v);
  };
  for (Stage* stage : {&cut.head, &cut.barriers, &cut.tail})
    for (NodeId n : stage->nodes)
      for (ValueId v : graph.nodes[n].inputs) {
        if (v == kNoValue || graph.values[v].is_constant() || made_by[v] == stage) continue;
        add(stage->inputs, v);
        if (made_by[v] != kGiven) add(made_by[v]->outputs, v);
      }
  for (ValueId v : graph.outputs)
    if (made_by[v] != kGiven) add(made_by[v]->outputs, v);
  return cut;
}

Graph extract_graph(const Graph& graph, const std::vector<NodeId>& nodes, const std::vector<ValueId>& inputs,
                    const std::vector<ValueId>& outputs, const std::string& name) {
  Graph part = graph;
  part.name = name;
  std::vector<bool> keep(graph.nodes.size(), false);
  for (NodeId n : nodes) keep[static_cast<size_t>(n)] = true;
  for (size_t n = 0; n < part.nodes.size(); ++n)
    if (!keep[n]) part.nodes[n].op_type.clear();  // dead: finalize drops it and what only it used
  part.inputs = inputs;
  part.outputs = outputs;
  part.finalize();
  part.annotate_costs();
  return part;
}

}  // namespace hetsched
