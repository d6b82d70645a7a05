// LRN on oneDNN (lrn_across_channels), in the input's layout.
//
// The two definitions agree: ONNX's
//   Y = X / (bias + alpha / size * sum_{c-floor((size-1)/2)}^{c+ceil((size-1)/2)} X^2) ^ beta
// is oneDNN's dst = src * (k + alpha / local_size * sum X^2) ^ -beta with
// k = bias, the same alpha (both divide it by the window size) and a window
// of local_size channels centred on c. oneDNN's window is symmetric
// (c - (size-1)/2 .. c + (size-1)/2), so an even size, whose ONNX window has
// one more channel after c than before it, is refused.
// Supported: float32, X of rank 3 to 5 (N, C, spatial...).
#include "backends/cpu/lowering.h"

namespace hetsched::cpu {
namespace {

bool lower_lrn(Lowering& l) {
  const Node& node = l.node();
  if (!l.has_input(0) || node.outputs.size() != 1 || node.outputs[0] == kNoValue) return false;
  const Value& x = l.input_value(0);
  const Value& y = l.graph().values[node.outputs[0]];
  if (x.dtype != DType::kFloat32 || y.dtype != DType::kFloat32 || y.shape != x.shape) return false;
  if (x.shape.size() < 3 || x.shape.size() > 5 || shape_numel(x.shape) == 0) return false;
  if (!node.has_attr("size")) return false;
  const int64_t size = node.attr_int("size", 1);
  if (size < 1 || size % 2 == 0) return false;
  const float alpha = node.attr_float("alpha", 1e-4f), beta = node.attr_float("beta", 0.75f),
              bias = node.attr_float("bias", 1.0f);
  dnnl::lrn_forward::primitive_desc pd;
  try {
    dnnl::lrn_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::lrn_across_channels,
                                 l.input_desc(0), size, alpha, beta, bias);
    pd = dnnl::lrn_forward::primitive_desc(desc, l.engine());
  } catch (const dnnl::error&) {
    return false;
  }
  BufferId src = l.input(0, pd.src_desc());
  BufferId dst = l.output(node.outputs[0], pd.dst_desc());
  l.emit(dnnl::lrn_forward(pd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
  return true;
}

}  // namespace

HETSCHED_CPU_LOWERING("LRN", lower_lrn, "oneDNN LRN (across channels)",
                      "not float32; rank outside 3-5; an even size (oneDNN's window is symmetric)");

}  // namespace hetsched::cpu
