// QuantizeLinear and DequantizeLinear on oneDNN: a reorder that changes the
// element type (float32 <-> uint8 / int8) in the input's own layout, scaling
// by the output scale and shifting by a zero point (ops/quantize_linear.cpp,
// ops/dequantize_linear.cpp).
#pragma once

#include "backends/cpu/lowering.h"

namespace hetsched::cpu {

// One scale and one zero point (per tensor), constant; false when the node
// has others (per axis, computed at run time) or a rank-0 input. `scale` and
// `zero_point` receive them (zero point 0 and uint8 when absent).
bool per_tensor_parameters(Lowering& l, float& scale, int32_t& zero_point, DType& zero_point_type);

// Emits the reorder of input 0 into a new buffer of the node's output, of
// `type`, in input 0's layout: out = (in - src_zero_point) * scale + dst_zero_point
// rounded to nearest even and saturated. False (nothing emitted) when oneDNN
// has no such reorder.
bool emit_scaled_reorder(Lowering& l, dnnl::memory::data_type type, float scale, int32_t src_zero_point,
                         int32_t dst_zero_point);

}  // namespace hetsched::cpu
