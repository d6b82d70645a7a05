#include <new>

#include <fmt/format.h>

#include "kernels/kernel.h"

namespace hetsched::kernels {

std::vector<Tensor> run_graph(const Graph& graph, const std::vector<Tensor>& inputs) {
  if (inputs.size() != graph.inputs.size())
    throw Error(ErrorCode::kRuntime,
                fmt::format("graph '{}': {} inputs given, {} expected", graph.name, inputs.size(), graph.inputs.size()));
  std::vector<Tensor> slots(graph.values.size());
  std::vector<size_t> remaining_uses(graph.values.size(), 0);
  for (size_t i = 0; i < graph.values.size(); ++i) {
    const Value& v = graph.values[i];
    if (v.is_constant()) slots[i] = *v.initializer;
    remaining_uses[i] = v.consumers.size();
  }
  for (size_t i = 0; i < inputs.size(); ++i) slots[graph.inputs[i]] = inputs[i];

  std::vector<const Tensor*> args;
  for (NodeId n = 0; n < static_cast<NodeId>(graph.nodes.size()); ++n) {
    const Node& node = graph.nodes[n];
    args.clear();
    for (ValueId v : node.inputs) args.push_back(v == kNoValue ? nullptr : &slots[v]);
    const auto* kernel = find_reference_kernel(node.op_type);
    std::vector<Tensor> outputs;
    try {
      outputs = kernel->compute(node, args);
    } catch (const Error& e) {
      // A buffer that cannot be had: say whose.
      if (e.code() == ErrorCode::kResource) throw Error(e.code(), fmt::format("{}: {}", node.label(), e.what()));
      throw;
    } catch (const std::bad_alloc&) {
      throw Error(ErrorCode::kResource, fmt::format("{}: out of memory (std::bad_alloc)", node.label()));
    } catch (const std::exception& e) {
      throw Error(ErrorCode::kRuntime, fmt::format("{}: {}", node.label(), e.what()));
    }
    if (outputs.size() < node.outputs.size())
      throw Error(ErrorCode::kRuntime, fmt::format("{}: kernel returned {} outputs, expected {}", node.label(),
                                                   outputs.size(), node.outputs.size()));
    for (size_t i = 0; i < node.outputs.size(); ++i)
      if (node.outputs[i] != kNoValue) slots[node.outputs[i]] = std::move(outputs[i]);
    // Free what no later node reads (graph outputs and constants stay).
    for (ValueId v : node.inputs) {
      if (v == kNoValue || --remaining_uses[v] > 0) continue;
      if (!graph.is_graph_output(v) && !graph.values[v].is_constant()) slots[v] = Tensor();
    }
  }
  std::vector<Tensor> result;
  for (ValueId id : graph.outputs) result.push_back(slots[id]);
  return result;
}

}  // namespace hetsched::kernels
