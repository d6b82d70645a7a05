#include "graph/specialize.h"

#include <map>
#include <utility>

#include <fmt/format.h>

#include "graph/onnx_export.h"
#include "graph/optimize.h"

namespace hetsched {

bool has_free_input_dims(const Graph& graph) {
  for (ValueId id : graph.inputs)
    if (!graph.values[id].shape_is_static()) return true;
  return false;
}

std::string signature_text(const Graph& graph, const ShapeSignature& shapes) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < graph.inputs.size() && i < shapes.size(); ++i)
    parts.push_back(fmt::format("{}={}", graph.values[graph.inputs[i]].name, fmt::join(shapes[i], "x")));
  return fmt::format("{}", fmt::join(parts, ", "));
}

void check_input_dims(const Graph& graph, const ShapeSignature& shapes) {
  if (shapes.size() != graph.inputs.size())
    throw Error(ErrorCode::kInvalidInput,
                fmt::format("expected shapes for {} inputs, got {}", graph.inputs.size(), shapes.size()));
  // A named dim -> (its size, the input that set it).
  std::map<std::string, std::pair<int64_t, std::string>> named;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Value& v = graph.values[graph.inputs[i]];
    const Shape& shape = shapes[i];
    if (v.has_shape && v.shape.size() != shape.size())
      throw Error(ErrorCode::kInvalidInput, fmt::format("input '{}': expected rank {} ({}), got {}", v.name,
                                                        v.shape.size(), shape_to_string(v.shape),
                                                        shape_to_string(shape)));
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] < 0)
        throw Error(ErrorCode::kInvalidInput, fmt::format("input '{}': dim {} is {}", v.name, d, shape[d]));
      if (!v.has_shape) continue;
      if (v.shape[d] >= 0 && v.shape[d] != shape[d])
        throw Error(ErrorCode::kInvalidInput, fmt::format("input '{}': dim {} must be {}, got {}", v.name, d,
                                                          v.shape[d], shape_to_string(shape)));
      const std::string& param = d < v.dim_params.size() ? v.dim_params[d] : std::string();
      if (v.shape[d] >= 0 || param.empty()) continue;
      auto [it, first] = named.emplace(param, std::make_pair(shape[d], v.name));
      if (!first && it->second.first != shape[d])
        throw Error(ErrorCode::kInvalidInput,
                    fmt::format("input '{}': dim {} ('{}') is {}, but input '{}' gave '{}' = {}", v.name, d, param,
                                shape[d], it->second.second, param, it->second.first));
    }
  }
}

void propagate_and_fold(Graph& graph) {
  // Each round: inference gives shapes from what is static; folding turns
  // Shape/Size of now-static values (and the arithmetic on them) into
  // constants, which the next inference reads, e.g. as Reshape's target.
  // A round whose passes change nothing leaves the graph as its inference
  // saw it: inference again would find nothing new.
  for (;;) {
    refine_shapes(graph);
    OptimizeStats done = optimize_graph(graph);
    int n_changes = done.n_folded_constants + done.n_removed_identity + done.n_folded_batch_norm +
                    done.n_folded_pads + done.n_einsum_as_matmul + done.n_quantized_fused + done.n_gelu_fused;
    if (n_changes == 0) break;
  }
}

Graph specialize_graph(const Graph& graph, const ShapeSignature& shapes) {
  check_input_dims(graph, shapes);
  Graph g = graph;
  for (size_t i = 0; i < shapes.size(); ++i) {
    Value& v = g.values[g.inputs[i]];
    v.has_shape = true;
    v.shape = shapes[i];
    v.dim_params.clear();
  }
  propagate_and_fold(g);
  g.annotate_costs();
  return g;
}

}  // namespace hetsched
