#include "graph/stages.h"

#include <algorithm>

namespace hetsched {

bool all_shapes_static(const Graph& graph) {
  for (const Value& v : graph.values)
    if (!v.is_constant() && !v.shape_is_static()) return false;
  return true;
}

StageCut cut_at_data_dependent_shapes(const Graph& graph) {
  enum class Stage { kNone, kHead, kBarrier, kTail };
  std::vector<Stage> made_by(graph.values.size(), Stage::kNone);  // kNone: a graph input or a constant
  StageCut cut;
  // Pass 1: each node, in order, to the head (its outputs static, its inputs
  // from the head or the graph), a barrier (its inputs so, an output not
  // static) or the tail (an input from a barrier or the tail).
  for (NodeId n = 0; n < static_cast<NodeId>(graph.nodes.size()); ++n) {
    const Node& node = graph.nodes[n];
    bool inputs_known = true;
    for (ValueId v : node.inputs)
      if (v != kNoValue && (made_by[v] == Stage::kBarrier || made_by[v] == Stage::kTail)) inputs_known = false;
    bool outputs_static = true;
    for (ValueId v : node.outputs)
      if (v != kNoValue && !graph.values[v].shape_is_static()) outputs_static = false;
    Stage stage = !inputs_known ? Stage::kTail : outputs_static ? Stage::kHead : Stage::kBarrier;
    (stage == Stage::kHead ? cut.head : stage == Stage::kBarrier ? cut.barriers : cut.tail).push_back(n);
    for (ValueId v : node.outputs)
      if (v != kNoValue) made_by[v] = stage;
  }
  // Pass 2: what crosses from stage to stage.
  auto add = [](std::vector<ValueId>& list, ValueId v) {
    if (std::find(list.begin(), list.end(), v) == list.end()) list.push_back(v);
  };
  auto reads = [&](const std::vector<NodeId>& nodes, Stage self, std::vector<ValueId>* from_head,
                   std::vector<ValueId>* all) {
    for (NodeId n : nodes)
      for (ValueId v : graph.nodes[n].inputs) {
        if (v == kNoValue || graph.values[v].is_constant() || made_by[v] == self) continue;
        if (made_by[v] == Stage::kHead && from_head) add(*from_head, v);
        if (all) add(*all, v);
      }
  };
  for (NodeId n : cut.head)
    for (ValueId v : graph.nodes[n].inputs)
      if (v != kNoValue && !graph.values[v].is_constant() && made_by[v] == Stage::kNone) add(cut.head_inputs, v);
  reads(cut.barriers, Stage::kBarrier, &cut.head_outputs, nullptr);
  reads(cut.tail, Stage::kTail, &cut.head_outputs, &cut.tail_inputs);
  for (ValueId v : graph.outputs) {
    if (made_by[v] == Stage::kHead) add(cut.head_outputs, v);
    if (made_by[v] == Stage::kTail) add(cut.tail_outputs, v);
  }
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
