// What If, Loop and Scan share (internal): their subgraph attributes and
// running one (kernel.h run_graph) on its formal inputs plus the values it
// reads from the enclosing graph (the node's implicit inputs, graph.h).
#pragma once

#include <cstring>
#include <string>

#include <fmt/format.h>

#include "kernels/reference/common.h"

namespace hetsched::kernels::control_flow {

// The graph attribute `name`; an invalid model without it.
inline const Attribute& subgraph(const Node& node, const char* name) {
  auto it = node.attributes.find(name);
  if (it == node.attributes.end() || !it->second.graph)
    throw_invalid(node, fmt::format("attribute '{}' (a graph) is missing", name));
  return it->second;
}

// The number of a subgraph's own inputs (its captured ones come after).
inline size_t n_formal_inputs(const Attribute& a) { return a.graph->inputs.size() - a.captured_inputs.size(); }

// The node's inputs of the ONNX node (without its implicit ones).
inline size_t n_declared_inputs(const Node& node) {
  return node.inputs.size() - static_cast<size_t>(node.n_implicit_inputs);
}

inline std::vector<Tensor> run(const Node& node, const Attribute& a, std::vector<Tensor> formals,
                               const std::vector<const Tensor*>& inputs) {
  if (formals.size() != n_formal_inputs(a))
    throw_runtime(node, fmt::format("subgraph '{}' takes {} inputs, given {}", a.graph->name, n_formal_inputs(a),
                                    formals.size()));
  for (size_t k : a.captured_inputs) formals.push_back(required_input(node, inputs, k));
  return run_graph(*a.graph, formals);
}

// A bool (or numeric) scalar's truth.
inline bool truth(const Node& node, const Tensor& t, const char* what) {
  if (t.numel() != 1) throw_runtime(node, fmt::format("{} of shape {}: expected one element", what,
                                                      shape_to_string(t.shape())));
  return t.dtype() == DType::kBool ? t.data<bool>()[0] : t.to_double_vector()[0] != 0;
}

// `slices` (each of one shape and dtype) stacked along a new dim at `axis`
// (0..rank of a slice); with none, a tensor of `empty_shape` with that dim 0.
inline Tensor stack(const Node& node, const std::vector<Tensor>& slices, int64_t axis, DType empty_dtype,
                    Shape empty_shape) {
  if (slices.empty()) return Tensor(empty_dtype, std::move(empty_shape));
  const Tensor& first = slices[0];
  for (const Tensor& s : slices)
    if (s.shape() != first.shape() || s.dtype() != first.dtype())
      throw_runtime(node, fmt::format("scan output slices differ: {} and {}", first.description(), s.description()));
  Shape shape = first.shape();
  shape.insert(shape.begin() + axis, static_cast<int64_t>(slices.size()));
  Tensor out(first.dtype(), shape);
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= first.dim(d);
  const size_t inner_bytes = outer == 0 ? 0 : first.nbytes() / static_cast<size_t>(outer);
  auto* dst = static_cast<std::byte*>(out.raw());
  for (size_t t = 0; t < slices.size(); ++t) {
    const auto* src = static_cast<const std::byte*>(slices[t].raw());
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(dst + (static_cast<size_t>(o) * slices.size() + t) * inner_bytes,
                  src + static_cast<size_t>(o) * inner_bytes, inner_bytes);
  }
  return out;
}

// The shape a subgraph output declares, with `n` in front: a zero-iteration
// scan output's shape ({n} alone when the rest is not known).
inline Shape leading(int64_t n, const Value& declared) {
  Shape shape{n};
  if (declared.shape_is_static()) shape.insert(shape.end(), declared.shape.begin(), declared.shape.end());
  return shape;
}

}  // namespace hetsched::kernels::control_flow
