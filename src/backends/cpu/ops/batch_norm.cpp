// BatchNormalization (inference) on oneDNN, for the ones the load-time
// optimiser did not fold into a preceding Conv, in the input's layout, with a
// following Relu fused (DenseNet's pre-activation BatchNormalization -> Relu
// -> Conv in one pass): constant parameters as a per-channel multiply-add
// (lower_as_affine), parameters computed at run time as batch_normalization
// forward with use_global_stats (the given mean and var), use_scale and
// use_shift (and fuse_norm_relu).
//
// Supported: X float32 of rank 2 to 5; scale, B, mean, var of C values
// (constants of any float dtype, converted once; or float32 values of shape
// [C] computed at run time); epsilon.
// Refused: training_mode 1, the training outputs, the opset 7-8
// spatial = 0 (per-activation parameters).
#include <cmath>
#include <optional>
#include <string>

#include "backends/cpu/lowering.h"

namespace hetsched::cpu {
namespace {

// Constant parameters: y = x * a + b per channel, with a = scale /
// sqrt(var + epsilon) and b = B - mean * a (computed in double once), as one
// binary multiply with an add (and Relu) post-op. In the channels-last
// layout the 1x1 Convs around it prefer, oneDNN's batch normalization runs
// at half the speed of this (measured: 74 against 45 us for 64 x 56 x 56 on
// one core). False, with nothing emitted, where oneDNN has only its
// reference binary kernel for the layout.
bool lower_as_affine(Lowering& l, int64_t channels, float epsilon, const std::vector<NodeId>& group) {
  const bool relu = group.size() == 2;
  using dt = dnnl::memory::data_type;
  std::vector<double> scale = l.constant(1).to_double_vector(), shift = l.constant(2).to_double_vector(),
                      mean = l.constant(3).to_double_vector(), var = l.constant(4).to_double_vector();
  std::vector<float> a(channels), b(channels);
  for (int64_t c = 0; c < channels; ++c) {
    double ac = scale[c] / std::sqrt(var[c] + static_cast<double>(epsilon));
    a[c] = static_cast<float>(ac);
    b[c] = static_cast<float>(shift[c] - mean[c] * ac);
  }
  dnnl::memory::desc src = l.input_desc(0);
  Shape per_channel(src.dims().size(), 1);
  per_channel[1] = channels;
  dnnl::memory::desc params = plain_desc(DType::kFloat32, per_channel);
  dnnl::post_ops post_ops;
  post_ops.append_binary(dnnl::algorithm::binary_add, params);
  if (relu) post_ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
  dnnl::primitive_attr attr;
  attr.set_post_ops(post_ops);
  dnnl::binary::primitive_desc pd;
  try {
    dnnl::memory::desc dst(src.dims(), dt::f32, dnnl::memory::format_tag::any);
    pd = dnnl::binary::primitive_desc(dnnl::binary::desc(dnnl::algorithm::binary_mul, src, params, dst), attr,
                                      l.engine());
  } catch (const dnnl::error&) {
    return false;
  }
  if (std::string(pd.impl_info_str()).rfind("ref", 0) == 0) return false;

  // Everything is decided: emit.
  BufferId x = l.input(0, pd.src_desc(0));
  BufferId multiplier = l.new_constant(Tensor::from_vector<float>(per_channel, a));
  BufferId addend = l.new_constant(Tensor::from_vector<float>(per_channel, b));
  BufferId y = l.output(l.graph().nodes[group.back()].outputs[0], pd.dst_desc());
  if (relu) l.absorb(group[1]);
  l.emit(dnnl::binary(pd), {{DNNL_ARG_SRC_0, x},
                            {DNNL_ARG_SRC_1, multiplier},
                            {DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, addend},
                            {DNNL_ARG_DST, y}});
  return true;
}

bool lower_batch_norm(Lowering& l) {
  const Node& node = l.node();
  if (node.attr_int("training_mode", 0) != 0) return false;
  if (node.outputs.empty() || node.outputs[0] == kNoValue) return false;
  for (size_t i = 1; i < node.outputs.size(); ++i)
    if (node.outputs[i] != kNoValue) return false;
  for (size_t i = 0; i < 5; ++i)
    if (!l.has_input(i)) return false;
  const Value& x = l.input_value(0);
  const Value& y = l.graph().values[node.outputs[0]];
  if (x.dtype != DType::kFloat32 || y.dtype != DType::kFloat32 || y.shape != x.shape) return false;
  if (x.shape.size() < 2 || x.shape.size() > 5 || shape_numel(x.shape) == 0) return false;
  if (node.attr_int("spatial", 1) == 0 && x.shape.size() > 2) return false;
  const int64_t channels = x.shape[1];
  // Parameters: 1 scale, 2 B, 3 mean, 4 var.
  for (size_t i = 1; i < 5; ++i) {
    const Value& p = l.input_value(i);
    if (p.is_constant()) {
      const Tensor& t = l.constant(i);
      if (t.numel() != channels || (t.dtype() != DType::kFloat32 && t.dtype() != DType::kFloat64)) return false;
    } else if (p.dtype != DType::kFloat32 || p.shape != Shape{channels}) {
      return false;
    }
  }
  const float epsilon = node.attr_float("epsilon", 1e-5f);
  // A following Relu (fusion_group): applied by the same pass.
  std::vector<NodeId> group = l.fusion_group();
  const bool relu = group.size() == 2;
  bool constant_parameters = true;
  for (size_t i = 1; i < 5; ++i) constant_parameters = constant_parameters && l.input_is_constant(i);
  if (constant_parameters && lower_as_affine(l, channels, epsilon, group)) return true;

  auto flags = dnnl::normalization_flags::use_global_stats | dnnl::normalization_flags::use_scale |
               dnnl::normalization_flags::use_shift;
  if (relu) flags |= dnnl::normalization_flags::fuse_norm_relu;
  dnnl::batch_normalization_forward::primitive_desc pd;
  try {
    dnnl::batch_normalization_forward::desc desc(dnnl::prop_kind::forward_inference, l.input_desc(0), epsilon, flags);
    pd = dnnl::batch_normalization_forward::primitive_desc(desc, l.engine());
  } catch (const dnnl::error&) {
    return false;
  }

  // Everything is decided: emit.
  auto param = [&](size_t i) {
    const Value& p = l.input_value(i);
    if (p.is_constant() && (p.initializer->dtype() != DType::kFloat32 || p.initializer->rank() != 1)) {
      std::vector<double> v = p.initializer->to_double_vector();
      return l.new_constant(Tensor::from_vector<float>({channels}, std::vector<float>(v.begin(), v.end())));
    }
    return l.input(i);
  };
  BufferId src = l.input(0, pd.src_desc());
  BufferId scale = param(1), shift = param(2), mean = param(3), var = param(4);
  BufferId dst = l.output(l.graph().nodes[group.back()].outputs[0], pd.dst_desc());
  if (relu) l.absorb(group[1]);
  l.emit(dnnl::batch_normalization_forward(pd), {{DNNL_ARG_SRC, src},
                                                 {DNNL_ARG_MEAN, mean},
                                                 {DNNL_ARG_VARIANCE, var},
                                                 {DNNL_ARG_SCALE, scale},
                                                 {DNNL_ARG_SHIFT, shift},
                                                 {DNNL_ARG_DST, dst}});
  return true;
}

}  // namespace

HETSCHED_CPU_LOWERING("BatchNormalization", lower_batch_norm,
                      "oneDNN binary multiply-add per channel (parameters computed at run time: oneDNN batch "
                      "normalization), with a following Relu fused; after a Conv it is folded into the Conv at load",
                      "not float32; rank outside 2-5; training_mode 1 or the training outputs; spatial 0");

}  // namespace hetsched::cpu
