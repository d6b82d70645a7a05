// The part sizes of a Split node, as its reference kernel reads them;
// shared with the CPU backend's Split so both cut at the same places.
#pragma once

#include <vector>

#include "kernels/reference/common.h"

namespace hetsched::kernels {

// For data of `shape` (rank >= 1): the size of each output along the axis
// (normalised into *axis): the `split` attribute (before opset 13), the
// `split` input (`split`, nullptr or empty when not given), `num_outputs`
// (opset 18, the last part smaller when the dim is not divisible), or an
// even split. Throws Error(kRuntime) naming the node when they do not add
// up to the dim.
std::vector<int64_t> split_sizes(const Node& node, const Shape& shape, const Tensor* split, int64_t* axis);

}  // namespace hetsched::kernels
