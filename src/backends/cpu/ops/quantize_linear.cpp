// QuantizeLinear on oneDNN: float32 to uint8 / int8 by a reorder in the
// input's layout, one scale and zero point. oneDNN multiplies by 1 / scale
// where the spec (and the reference kernel) divides by the scale: a value
// within float32 rounding of a tie between two steps may round the other way.
#include "backends/cpu/quantize_reorder.h"

namespace hetsched::cpu {
namespace {

bool lower_quantize_linear(Lowering& l) {
  float scale;
  int32_t zero_point;
  DType type;
  if (l.input_value(0).dtype != DType::kFloat32 || !per_tensor_parameters(l, scale, zero_point, type)) return false;
  return emit_scaled_reorder(l, *dnnl_type(type), 1.0f / scale, 0, zero_point);
}

}  // namespace

HETSCHED_CPU_LOWERING("QuantizeLinear", lower_quantize_linear, "oneDNN reorder with a scale and a zero point",
                      "not float32 input; scales or zero points per axis or computed at run time");

}  // namespace hetsched::cpu
