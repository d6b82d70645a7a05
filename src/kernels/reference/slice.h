// Where a Slice node reads, as its reference kernel normalises starts, ends,
// axes and steps (clamping out-of-range starts and ends as the spec says);
// shared with the CPU backend's Slice so both read the same elements.
#pragma once

#include <vector>

#include "kernels/reference/common.h"

namespace hetsched::kernels {

struct SliceGeometry {
  std::vector<int64_t> first;  // per axis of the data: the first index read
  std::vector<int64_t> step;   // per axis: the step (negative: backwards)
  Shape out_shape;
};

// For data of `shape`: starts/ends/axes from the attributes before opset 10,
// else from inputs 1..4 (inputs[0] is not read; absent axes and steps are
// the defaults). Throws Error(kRuntime) naming the node for inconsistent
// values (an axis out of range or repeated, a step of 0...).
SliceGeometry slice_geometry(const Node& node, const Shape& shape, const std::vector<const Tensor*>& inputs);

}  // namespace hetsched::kernels
