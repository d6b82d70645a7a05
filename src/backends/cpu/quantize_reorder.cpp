#include "backends/cpu/quantize_reorder.h"

#include <cmath>

namespace hetsched::cpu {

bool per_tensor_parameters(Lowering& l, float& scale, int32_t& zero_point, DType& zero_point_type) {
  if (l.input_value(0).shape.empty() || !l.input_is_constant(1) || (l.has_input(2) && !l.input_is_constant(2)))
    return false;
  const Tensor& s = l.constant(1);
  if (s.dtype() != DType::kFloat32 || s.numel() != 1) return false;
  scale = s.data<float>()[0];
  zero_point = 0;
  zero_point_type = DType::kUInt8;
  if (l.has_input(2)) {
    const Tensor& z = l.constant(2);
    if (z.numel() != 1 || (z.dtype() != DType::kUInt8 && z.dtype() != DType::kInt8)) return false;
    zero_point = static_cast<int32_t>(z.to_int64_vector()[0]);
    zero_point_type = z.dtype();
  }
  return std::isfinite(scale) && scale != 0.0f;
}

bool emit_scaled_reorder(Lowering& l, dnnl::memory::data_type type, float scale, int32_t src_zero_point,
                         int32_t dst_zero_point) {
  dnnl::memory::desc src_desc = l.input_desc(0);
  dnnl::memory::desc dst_desc = src_desc;
  dst_desc.data.data_type = static_cast<dnnl_data_type_t>(type);
  dnnl::primitive_attr attr;
  attr.set_output_scales(0, {scale});
  if (src_zero_point != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {src_zero_point});
  if (dst_zero_point != 0) attr.set_zero_points(DNNL_ARG_DST, 0, {dst_zero_point});
  dnnl::reorder::primitive_desc pd;
  try {
    pd = dnnl::reorder::primitive_desc(l.engine(), src_desc, l.engine(), dst_desc, attr);
  } catch (const dnnl::error&) {
    return false;
  }
  BufferId src = l.input(0, src_desc);
  BufferId dst = l.output(l.node().outputs[0], dst_desc);
  l.emit(dnnl::reorder(pd), {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}});
  return true;
}

}  // namespace hetsched::cpu
