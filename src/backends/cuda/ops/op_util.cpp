// Helpers shared by the GPU op files (op_util.h).
#include "backends/cuda/ops/op_util.h"

#include <fmt/format.h>

#include "kernels/reference/common.h"

namespace hetsched::cuda::ops {

std::string need_float32(const Graph& graph, const Node& node, std::initializer_list<size_t> inputs) {
  auto is_float = [&](ValueId v) { return v == kNoValue || graph.values[v].dtype == DType::kFloat32; };
  if (inputs.size() == 0) {
    for (ValueId v : node.inputs)
      if (!is_float(v)) return "not float32";
  } else {
    for (size_t i : inputs)
      if (!is_float(node.input(i))) return "not float32";
  }
  for (ValueId v : node.outputs)
    if (!is_float(v)) return "not float32";
  return "";
}

std::string need_rank_at_most(const Graph& graph, const Node& node, int rank) {
  for (const std::vector<ValueId>* list : {&node.inputs, &node.outputs})
    for (ValueId v : *list)
      if (v != kNoValue && static_cast<int>(graph.values[v].shape.size()) > rank)
        return fmt::format("rank above {}", rank);
  return "";
}

std::optional<std::vector<int64_t>> constant_ints(const Graph& graph, ValueId id) {
  if (id == kNoValue || !graph.values[id].is_constant()) return std::nullopt;
  const Tensor& t = *graph.values[id].initializer;
  if (t.dtype() != DType::kInt64 && t.dtype() != DType::kInt32) return std::nullopt;
  return t.to_int64_vector();
}

std::optional<float> constant_scalar(const Graph& graph, ValueId id) {
  if (id == kNoValue || !graph.values[id].is_constant()) return std::nullopt;
  const Tensor& t = *graph.values[id].initializer;
  if (t.numel() < 1) return std::nullopt;
  return static_cast<float>(t.to_double_vector()[0]);
}

kern::Strided dense_layout(const Shape& shape) {
  kern::Strided layout;
  layout.rank = static_cast<int>(shape.size());
  std::vector<int64_t> strides = kernels::strides_of(shape);
  for (size_t d = 0; d < shape.size(); ++d) {
    layout.dims[d] = shape[d];
    layout.strides[d] = strides[d];
  }
  return layout;
}

kern::Strided broadcast_layout(const Shape& shape, const Shape& out) {
  kern::Strided layout;
  layout.rank = static_cast<int>(out.size());
  std::vector<int64_t> strides = kernels::broadcast_strides(shape, out);
  for (size_t d = 0; d < out.size(); ++d) {
    layout.dims[d] = out[d];
    layout.strides[d] = strides[d];
  }
  return layout;
}

std::string label(const Node& node) { return node.label() + " (cuda)"; }

}  // namespace hetsched::cuda::ops
