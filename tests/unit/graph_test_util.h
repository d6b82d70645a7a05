// Building small graphs by hand in tests.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "hetsched/graph.h"

namespace hetsched::testing {

// A float32 value of a fixed shape.
inline ValueId add_float_value(Graph& g, const std::string& name, Shape shape) {
  Value v;
  v.name = name;
  v.dtype = DType::kFloat32;
  v.has_shape = true;
  v.shape = std::move(shape);
  return g.add_value(std::move(v));
}

// A node of the default domain at opset 17.
inline NodeId add_op(Graph& g, const std::string& op, const std::string& name, std::vector<ValueId> inputs,
                     std::vector<ValueId> outputs) {
  Node n;
  n.name = name;
  n.op_type = op;
  n.opset = 17;
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  return g.add_node(std::move(n));
}

// x -> Relu -> Relu -> ... (n of them), every value float32 [1, width]:
// a chain of memory-bound nodes, each its own fusion unit. Finalized, costs
// annotated.
inline Graph relu_chain(int n, int64_t width) {
  Graph g;
  ValueId v = add_float_value(g, "x", {1, width});
  g.inputs.push_back(v);
  for (int i = 0; i < n; ++i) {
    ValueId out = add_float_value(g, "y" + std::to_string(i), {1, width});
    add_op(g, "Relu", "relu" + std::to_string(i), {v}, {out});
    v = out;
  }
  g.outputs.push_back(v);
  g.finalize();
  g.annotate_costs();
  return g;
}

}  // namespace hetsched::testing
