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

}  // namespace hetsched::testing
