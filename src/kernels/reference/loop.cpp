// Loop — reference kernel.
//
// Inputs M (trip count, optional), cond (optional), then N loop-carried
// values; the body maps (iteration, cond, carried...) to (cond, carried...,
// scan outputs...). It runs while the iteration is below M (when given) and
// cond holds (when given: checked before the first iteration, then the
// body's); without cond the body's is ignored. Outputs: the final carried
// values (which may change shape between iterations), then each scan output
// stacked along a new first dim (zero iterations: that dim 0, the rest as
// the body declares it).
// Refused: a Loop with neither M nor cond (it never ends); sequence values.
#include <limits>

#include "kernels/reference/control_flow.h"

namespace hetsched::kernels {
namespace {

void check_loop(const Node& node, const Graph&) {
  const Attribute& body = control_flow::subgraph(node, "body");
  const size_t declared = control_flow::n_declared_inputs(node);
  if (declared < 2) throw_invalid(node, "expected inputs M, cond and the loop-carried values");
  const size_t n_carried = declared - 2;
  if (control_flow::n_formal_inputs(body) != 2 + n_carried)
    throw_invalid(node, fmt::format("the body takes {} inputs, expected {} (iteration, cond, {} carried)",
                                    control_flow::n_formal_inputs(body), 2 + n_carried, n_carried));
  if (body.graph->outputs.size() < 1 + n_carried || node.outputs.size() != body.graph->outputs.size() - 1)
    throw_invalid(node, fmt::format("the body gives {} outputs for {} carried values and the node's {} outputs",
                                    body.graph->outputs.size(), n_carried, node.outputs.size()));
  if (node.input(0) == kNoValue && node.input(1) == kNoValue)
    throw_unsupported(node, "a Loop with neither a trip count nor a condition never ends");
}

std::vector<Tensor> compute_loop(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Attribute& body = control_flow::subgraph(node, "body");
  const size_t n_carried = control_flow::n_declared_inputs(node) - 2;
  const size_t n_scans = body.graph->outputs.size() - 1 - n_carried;
  const Tensor* trips = inputs[0];
  const Tensor* cond_in = inputs.size() > 1 ? inputs[1] : nullptr;
  int64_t max_trips = std::numeric_limits<int64_t>::max();
  if (trips) {
    if (trips->numel() != 1) throw_runtime(node, "M: expected one element");
    max_trips = trips->to_int64_vector()[0];
  }
  bool cond = cond_in ? control_flow::truth(node, *cond_in, "cond") : true;
  std::vector<Tensor> carried;
  for (size_t i = 0; i < n_carried; ++i) carried.push_back(required_input(node, inputs, 2 + i));
  std::vector<std::vector<Tensor>> scans(n_scans);
  for (int64_t i = 0; i < max_trips && cond; ++i) {
    std::vector<Tensor> formals{Tensor::scalar<int64_t>(i), Tensor::scalar<bool>(cond)};
    formals.insert(formals.end(), carried.begin(), carried.end());
    std::vector<Tensor> out = control_flow::run(node, body, std::move(formals), inputs);
    if (cond_in) cond = control_flow::truth(node, out[0], "the body's cond");
    for (size_t k = 0; k < n_carried; ++k) carried[k] = out[1 + k];
    for (size_t k = 0; k < n_scans; ++k) scans[k].push_back(out[1 + n_carried + k]);
  }
  std::vector<Tensor> outputs = carried;
  for (size_t k = 0; k < n_scans; ++k) {
    const Value& declared = body.graph->values[body.graph->outputs[1 + n_carried + k]];
    DType dtype = declared.dtype == DType::kUndefined ? DType::kFloat32 : declared.dtype;
    outputs.push_back(control_flow::stack(node, scans[k], 0, dtype, control_flow::leading(0, declared)));
  }
  return outputs;
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("Loop", check_loop, compute_loop);

}  // namespace hetsched::kernels
