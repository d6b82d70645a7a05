// The oneDNN geometry of an ONNX Conv-like node (Conv, QLinearConv): strides,
// dilations (as oneDNN counts them: the gaps) and padding per spatial dim,
// and the weights' dims with the groups split off the output channels.
#pragma once

#include <optional>

#include <dnnl.hpp>

#include "hetsched/graph.h"

namespace hetsched::cpu {

struct ConvGeometry {
  dnnl::memory::dims strides, dilations, pad_l, pad_r;
  dnnl::memory::dims weights;  // [g, O/g, I/g, k...] when grouped, else W's dims
};

// nullopt when oneDNN cannot run it: x of rank outside 3..5, W of another
// rank than x, a group that does not divide W's output channels.
std::optional<ConvGeometry> conv_geometry(const Node& node, const Shape& x, const Shape& w);

}  // namespace hetsched::cpu
