// IOS's operator merge (Ding et al., MLSys'21): convolutions reading one
// input with the same kernel, strides, padding, dilation and groups can run
// as one convolution whose output channels are theirs side by side, reading
// the shared input once. The "ios" scheduler merges them; the cost model
// charges a launch holding several of them as that one wider kernel.
#pragma once

#include <string>
#include <vector>

#include "hetsched/graph.h"

namespace hetsched {

// The merge key of fusion unit `unit` (its nodes in topological order):
// units with equal non-empty keys can merge. A unit qualifies when its head
// is a Conv with constant weights (and bias) on a computed input, and the
// rest of the unit is an epilogue on its output alone (an activation; no
// residual read from outside), which the wider kernel can apply per
// channel. "" = never merges.
std::string conv_merge_key(const Graph& graph, const std::vector<NodeId>& unit);

}  // namespace hetsched
