// If — reference kernel.
//
// Runs then_branch when the condition (one element) is true, else_branch
// otherwise, each with the values it reads from the enclosing graph; the
// branch's outputs are the node's. Branches may give outputs of different
// shapes (opset 11+): the node's shapes are then known only when it ran.
// Refused: branches whose output count is not the node's; sequence and
// optional values (as everywhere).
#include "kernels/reference/control_flow.h"

namespace hetsched::kernels {
namespace {

void check_if(const Node& node, const Graph&) {
  for (const char* branch : {"then_branch", "else_branch"}) {
    const Attribute& a = control_flow::subgraph(node, branch);
    if (a.graph->outputs.size() != node.outputs.size())
      throw_invalid(node, fmt::format("{} has {} outputs, the node {}", branch, a.graph->outputs.size(),
                                      node.outputs.size()));
    if (control_flow::n_formal_inputs(a) != 0) throw_invalid(node, fmt::format("{} declares inputs", branch));
  }
}

std::vector<Tensor> compute_if(const Node& node, const std::vector<const Tensor*>& inputs) {
  bool cond = control_flow::truth(node, required_input(node, inputs, 0), "cond");
  const Attribute& branch = control_flow::subgraph(node, cond ? "then_branch" : "else_branch");
  return control_flow::run(node, branch, {}, inputs);
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("If", check_if, compute_if);

}  // namespace hetsched::kernels
