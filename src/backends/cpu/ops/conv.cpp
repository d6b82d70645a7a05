// Conv on oneDNN: 1-D/2-D/3-D, groups, strides, dilations, pads and
// auto_pad, float32 (input and weights in bfloat16 on a device computing in
// it: Lowering::compute_type), constant weights (reordered once into the
// layout the primitive prefers). Fuses a following residual Add (`sum` post-op, in place
// over the residual when the residual is read by nothing else) and an
// activation (`eltwise` post-op), per fusion_group().
#include "backends/cpu/conv_geometry.h"
#include "backends/cpu/eltwise.h"
#include "backends/cpu/lowering.h"

namespace hetsched::cpu {
namespace {

using tag = dnnl::memory::format_tag;

bool lower_conv(Lowering& l) {
  const Graph& g = l.graph();
  const Node& node = l.node();
  if (!l.input_is_constant(1) || (l.has_input(2) && !l.input_is_constant(2))) return false;
  const Value& x = l.input_value(0);
  const Tensor& w = l.constant(1);
  if (x.dtype != DType::kFloat32 || w.dtype() != DType::kFloat32) return false;
  std::optional<ConvGeometry> geo = conv_geometry(node, x.shape, w.shape());
  if (!geo) return false;
  int64_t out_channels = w.dim(0);

  // Post-ops for the nodes this Conv fuses with: a residual Add, then an
  // activation.
  std::vector<NodeId> group_nodes = l.fusion_group();
  ValueId result = node.outputs[0];
  ValueId residual = kNoValue;
  dnnl::post_ops post_ops;
  std::vector<NodeId> fused;
  if (group_nodes.size() > 1 && g.nodes[group_nodes[1]].op_type == "Add") {
    const Node& add = g.nodes[group_nodes[1]];
    residual = add.inputs[0] == result ? add.inputs[1] : add.inputs[0];
    post_ops.append_sum(1.0f);
    result = add.outputs[0];
    fused.push_back(group_nodes[1]);
  }
  for (NodeId n : fuse_activation(g, group_nodes, fused.size() + 1, result, post_ops)) fused.push_back(n);
  dnnl::primitive_attr attr;
  attr.set_post_ops(post_ops);

  const dnnl::memory::dims& w_dims = geo->weights;
  const Value& y = g.values[node.outputs[0]];
  auto any = [](const dnnl::memory::dims& dims, dnnl::memory::data_type type) {
    return dnnl::memory::desc(dims, type, tag::any);
  };
  dnnl::memory::dims src_dims(x.shape.begin(), x.shape.end()), dst_dims(y.shape.begin(), y.shape.end());
  dnnl::memory::desc bias_desc;
  if (l.has_input(2)) bias_desc = dnnl::memory::desc({out_channels}, dnnl::memory::data_type::f32, tag::a);
  dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                       any(src_dims, l.compute_type()), any(w_dims, l.compute_type()), bias_desc,
                                       any(dst_dims, dnnl::memory::data_type::f32), geo->strides, geo->dilations,
                                       geo->pad_l, geo->pad_r);
  dnnl::convolution_forward::primitive_desc pd(desc, attr, l.engine());

  // Everything is decided: emit.
  BufferId src = l.input(0, pd.src_desc());
  BufferId weights = l.new_constant(w.reshaped(Shape(w_dims.begin(), w_dims.end())), pd.weights_desc());
  BufferId dst;
  if (residual != kNoValue) {
    // `sum` accumulates into dst: dst starts as the residual, in dst's layout.
    BufferId res = l.value_in(residual, pd.dst_desc());
    if (l.dies_at(residual, fused[0])) {
      dst = res;
      l.alias(result, dst);
    } else {
      dst = l.output(result, pd.dst_desc());
      l.copy(res, dst);
    }
  } else {
    dst = l.output(result, pd.dst_desc());
  }
  std::vector<std::pair<int, BufferId>> args = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, dst}};
  if (l.has_input(2)) args.push_back({DNNL_ARG_BIAS, l.input(2, pd.bias_desc())});
  for (NodeId n : fused) l.absorb(n);
  l.emit(dnnl::convolution_forward(pd), std::move(args));
  return true;
}

}  // namespace

HETSCHED_CPU_LOWERING("Conv", lower_conv,
                      "oneDNN convolution, with a following residual Add and activation fused",
                      "not float32; weights or bias computed at run time; more than 3 spatial dims");

}  // namespace hetsched::cpu
