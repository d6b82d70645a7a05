// QLinearConv on oneDNN's int8 convolution (VNNI or AMX where the CPU has
// them): uint8 or int8 activations, int8 weights with zero points 0 (oneDNN
// has no weight zero points), an int32 bias; the requantization is the
// primitive's output scales (x_scale * w_scale[m] / y_scale, one per output
// channel or one for all) and zero points. The load-time fusion of the QDQ
// format (graph/quantized_fusion.cpp) makes these nodes from
// DequantizeLinear -> Conv -> QuantizeLinear chains.
#include "backends/cpu/conv_geometry.h"
#include "backends/cpu/lowering.h"

namespace hetsched::cpu {
namespace {

using tag = dnnl::memory::format_tag;

bool lower_qlinear_conv(Lowering& l) {
  const Node& node = l.node();
  for (size_t i = 1; i <= 7; ++i)
    if (!l.input_is_constant(i)) return false;
  if (l.has_input(8) && !l.input_is_constant(8)) return false;
  const Value& x = l.input_value(0);
  const Tensor& w = l.constant(3);
  const Tensor &x_scale = l.constant(1), &x_zp = l.constant(2), &w_scale = l.constant(4), &w_zp = l.constant(5);
  const Tensor &y_scale = l.constant(6), &y_zp = l.constant(7);
  auto src_type = dnnl_type(x.dtype), dst_type = dnnl_type(y_zp.dtype());
  if (!src_type || !dst_type || (x.dtype != DType::kUInt8 && x.dtype != DType::kInt8)) return false;
  if (y_zp.dtype() != DType::kUInt8 && y_zp.dtype() != DType::kInt8) return false;
  if (w.dtype() != DType::kInt8 || x_zp.dtype() != x.dtype || x_zp.numel() != 1 || y_zp.numel() != 1) return false;
  if (x_scale.dtype() != DType::kFloat32 || w_scale.dtype() != DType::kFloat32 || y_scale.dtype() != DType::kFloat32 ||
      x_scale.numel() != 1 || y_scale.numel() != 1 || (w_scale.numel() != 1 && w_scale.numel() != w.dim(0)))
    return false;
  for (int64_t z : w_zp.to_int64_vector())
    if (z != 0) return false;
  if (l.has_input(8) && (l.constant(8).dtype() != DType::kInt32 || l.constant(8).numel() != w.dim(0))) return false;
  std::optional<ConvGeometry> geo = conv_geometry(node, x.shape, w.shape());
  if (!geo) return false;

  // Requantization, as the reference kernel computes its multiplier.
  const float sx = x_scale.data<float>()[0], sy = y_scale.data<float>()[0];
  std::vector<float> scales;
  for (int64_t m = 0; m < w_scale.numel(); ++m) scales.push_back(sx * w_scale.data<float>()[m] / sy);
  dnnl::primitive_attr attr;
  attr.set_output_scales(scales.size() == 1 ? 0 : 1 << 1, scales);
  int32_t src_zp = static_cast<int32_t>(x_zp.to_int64_vector()[0]);
  int32_t dst_zp = static_cast<int32_t>(y_zp.to_int64_vector()[0]);
  if (src_zp != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {src_zp});
  if (dst_zp != 0) attr.set_zero_points(DNNL_ARG_DST, 0, {dst_zp});

  const Value& y = l.graph().values[node.outputs[0]];
  dnnl::memory::dims src_dims(x.shape.begin(), x.shape.end()), dst_dims(y.shape.begin(), y.shape.end());
  dnnl::memory::desc bias_desc;
  if (l.has_input(8)) bias_desc = dnnl::memory::desc({w.dim(0)}, dnnl::memory::data_type::s32, tag::a);
  dnnl::convolution_forward::desc desc(
      dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
      dnnl::memory::desc(src_dims, *src_type, tag::any),
      dnnl::memory::desc(geo->weights, dnnl::memory::data_type::s8, tag::any), bias_desc,
      dnnl::memory::desc(dst_dims, *dst_type, tag::any), geo->strides, geo->dilations, geo->pad_l, geo->pad_r);
  dnnl::convolution_forward::primitive_desc pd;
  try {
    pd = dnnl::convolution_forward::primitive_desc(desc, attr, l.engine());
  } catch (const dnnl::error&) {
    return false;  // an ISA without int8 convolutions
  }

  // Everything is decided: emit.
  BufferId src = l.input(0, pd.src_desc());
  BufferId weights = l.new_constant(w.reshaped(Shape(geo->weights.begin(), geo->weights.end())), pd.weights_desc());
  BufferId dst = l.output(node.outputs[0], pd.dst_desc());
  std::vector<std::pair<int, BufferId>> args = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, dst}};
  if (l.has_input(8)) args.push_back({DNNL_ARG_BIAS, l.input(8, pd.bias_desc())});
  l.emit(dnnl::convolution_forward(pd), std::move(args));
  return true;
}

}  // namespace

HETSCHED_CPU_LOWERING("QLinearConv", lower_qlinear_conv, "oneDNN int8 convolution",
                      "scales, zero points, weights or bias computed at run time; weight zero points not 0 or "
                      "weights not int8; a CPU without int8 convolutions");

}  // namespace hetsched::cpu
