#include "hetsched/session.h"
#include "kernels/kernel.h"

namespace hetsched {

TensorMap run_reference(const Graph& graph, const TensorMap& inputs) {
  std::vector<Tensor> in;
  for (ValueId id : graph.inputs) in.push_back(inputs.at(graph.values[id].name));
  std::vector<Tensor> out = kernels::run_graph(graph, in);
  TensorMap result;
  for (size_t i = 0; i < graph.outputs.size(); ++i) result[graph.values[graph.outputs[i]].name] = out[i];
  return result;
}

}  // namespace hetsched
