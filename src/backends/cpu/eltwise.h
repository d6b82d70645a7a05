// Elementwise activations oneDNN runs as a primitive or as a post-op.
#pragma once

#include <optional>

#include <oneapi/dnnl/dnnl.hpp>

#include "hetsched/graph.h"

namespace hetsched::cpu {

struct EltwiseSpec {
  dnnl::algorithm algorithm;
  float alpha = 0.0f;
  float beta = 0.0f;
};

// The oneDNN form of `node` (Relu, LeakyRelu, Clip with constant bounds,
// Sigmoid, Tanh, HardSwish, Elu, ...), or nullopt when it has none.
std::optional<EltwiseSpec> eltwise_spec(const Graph& graph, const Node& node);

}  // namespace hetsched::cpu
