// Helpers shared by the GPU op files (src/backends/cuda/ops/*.cpp): value
// facts, decline phrases and layouts for the own kernels.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "backends/cuda/gpu_op.h"
#include "backends/cuda/kernels/device_kernels.h"

namespace hetsched::cuda::ops {

inline const Value& value_of(const Graph& graph, ValueId id) { return graph.values[id]; }
inline const Shape& shape_of(const Graph& graph, ValueId id) { return graph.values[id].shape; }
inline int64_t numel_of(const Graph& graph, ValueId id) { return shape_numel(graph.values[id].shape); }
inline size_t bytes_of(const Graph& graph, ValueId id) {
  return static_cast<size_t>(numel_of(graph, id)) * dtype_size(graph.values[id].dtype);
}

// "not float32" when a present input among `inputs` (every input when
// empty) or any present output is not float32; "" otherwise.
std::string need_float32(const Graph& graph, const Node& node, std::initializer_list<size_t> inputs = {});
// "rank above 8" when a present input or output has a rank the own kernels
// cannot index; "" otherwise.
std::string need_rank_at_most(const Graph& graph, const Node& node, int rank = kern::kMaxRank);
// The int64 values of a constant int32 / int64 input; nullopt when the input
// is absent or not a constant.
std::optional<std::vector<int64_t>> constant_ints(const Graph& graph, ValueId id);
// The first value of a constant float input as float; nullopt when absent or
// not a constant.
std::optional<float> constant_scalar(const Graph& graph, ValueId id);

// Dense row-major layout of `shape`.
kern::Strided dense_layout(const Shape& shape);
// Layout reading a tensor of `shape` broadcast to `out` (numpy rules,
// right-aligned; 0 strides on broadcast dims).
kern::Strided broadcast_layout(const Shape& shape, const Shape& out);

// "Conv 'c1' (cuda)": how GPU errors name a node.
std::string label(const Node& node);

}  // namespace hetsched::cuda::ops
