// DequantizeLinear on oneDNN: uint8 / int8 to float32 by a reorder in the
// input's layout, one scale and zero point.
#include "backends/cpu/quantize_reorder.h"

namespace hetsched::cpu {
namespace {

bool lower_dequantize_linear(Lowering& l) {
  DType x = l.input_value(0).dtype;
  float scale;
  int32_t zero_point;
  DType type;
  if ((x != DType::kUInt8 && x != DType::kInt8) || !per_tensor_parameters(l, scale, zero_point, type) || type != x)
    return false;
  return emit_scaled_reorder(l, dnnl::memory::data_type::f32, scale, zero_point, 0);
}

}  // namespace

HETSCHED_CPU_LOWERING("DequantizeLinear", lower_dequantize_linear, "oneDNN reorder with a scale and a zero point",
                      "int32 input; scales or zero points per axis or computed at run time");

}  // namespace hetsched::cpu
