// BatchNormalization (inference) on oneDNN, for the ones the load-time
// optimiser did not fold into a preceding Conv: batch_normalization forward
// with use_global_stats (the given mean and var), use_scale and use_shift,
// in the input's layout.
//
// Supported: X float32 of rank 2 to 5; scale, B, mean, var of C values
// (constants of any float dtype, converted once; or float32 values of shape
// [C] computed at run time); epsilon.
// Refused: training_mode 1, the training outputs, the opset 7-8
// spatial = 0 (per-activation parameters).
#include <optional>

#include "backends/cpu/lowering.h"

namespace hetsched::cpu {
namespace {

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
  const auto flags = dnnl::normalization_flags::use_global_stats | dnnl::normalization_flags::use_scale |
                     dnnl::normalization_flags::use_shift;
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
  BufferId dst = l.output(node.outputs[0], pd.dst_desc());
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
                      "oneDNN batch normalization (after a Conv it is folded into the Conv at load)",
                      "not float32; rank outside 2-5; training_mode 1 or the training outputs; spatial 0");

}  // namespace hetsched::cpu
