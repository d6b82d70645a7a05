// Standalone activations on oneDNN (those no Conv absorbed as a post-op):
// every op eltwise_spec() maps (Relu, LeakyRelu, Sigmoid, Tanh, HardSwish,
// Elu, Exp, Log, Sqrt, Abs, Softplus, Mish, Neg, Clip, Gelu) runs as an
// eltwise primitive in the input's layout, so blocked data stays blocked.
// HardSigmoid runs as two (linear, then clip in place), and a gate v *
// Sigmoid(v) or v * HardSigmoid(v) (fusion_group() gives the Mul) as one
// swish or hardswish.
//
// Log runs on oneDNN's reference implementation (std::log per element): its
// jit log is off by ~1.4e-6 around 1, which the ONNX tests notice.
// Supported: float32. Refused: other dtypes (the reference kernels also take
// integers for Relu, Neg, Abs, Clip); Clip with a bound that is not a
// float32 constant scalar, or with min > max; Gelu with an approximate other
// than none/tanh; empty tensors.
#include <string>

#include "backends/cpu/eltwise.h"
#include "backends/cpu/lowering.h"

namespace hetsched::cpu {
namespace {

bool lower_eltwise(Lowering& l) {
  const Node& node = l.node();
  const Graph& g = l.graph();
  if (!l.has_input(0) || node.outputs.size() != 1 || node.outputs[0] == kNoValue) return false;
  const Value& x = l.input_value(0);
  const Value& y = g.values[node.outputs[0]];
  if (x.dtype != DType::kFloat32 || y.dtype != DType::kFloat32 || y.shape != x.shape) return false;
  if (shape_numel(x.shape) == 0) return false;
  if (node.op_type == "Gelu") {
    std::string approximate = node.attr_string("approximate", "none");
    if (approximate != "none" && approximate != "tanh") return false;
  }
  if (node.op_type == "Clip") {
    // activation_ops reads attributes before opset 11, inputs after: the node
    // must have the form its opset says.
    bool has_attrs = node.has_attr("min") || node.has_attr("max");
    bool has_inputs = node.input(1) != kNoValue || node.input(2) != kNoValue;
    if (node.opset < 11 ? has_inputs : has_attrs) return false;
    for (size_t i = 1; i < 3; ++i)
      if (node.input(i) != kNoValue && g.values[node.input(i)].dtype != DType::kFloat32) return false;
  }
  // A gate (v * Sigmoid(v), v * HardSigmoid(v)) is one op; HardSigmoid
  // alone is two (linear, then clip in place).
  std::vector<NodeId> group = l.fusion_group();
  ValueId result = node.outputs[0];
  std::optional<std::vector<EltwiseSpec>> ops;
  if (group.size() == 2) {
    ops = gate_at(g, l.node_id())->ops;  // fusion_group put its Mul there
    result = g.nodes[group[1]].outputs[0];
  } else {
    ops = activation_ops(g, node);
  }
  if (!ops) return false;
  if (node.op_type == "Clip" && !(ops->front().alpha <= ops->front().beta)) return false;

  std::vector<dnnl::eltwise_forward::primitive_desc> pds;
  try {
    for (const EltwiseSpec& op : *ops) {
      dnnl::eltwise_forward::desc desc(dnnl::prop_kind::forward_inference, op.algorithm,
                                       pds.empty() ? l.input_desc(0) : pds.back().dst_desc(), op.alpha, op.beta);
      dnnl::eltwise_forward::primitive_desc pd(desc, l.engine());
      // The jit log of oneDNN 2.6 is a polynomial off by ~1.4e-6 around 1
      // (log(1) = -1.4e-6, where the reference kernel gives 0): take the
      // reference implementation (std::log per element) for Log.
      if (op.algorithm == dnnl::algorithm::eltwise_log)
        while (std::string(pd.impl_info_str()).rfind("ref", 0) != 0)
          if (!pd.next_impl()) return false;
      pds.push_back(pd);
    }
  } catch (const dnnl::error&) {
    return false;
  }
  BufferId src = l.input(0, pds.front().src_desc());
  BufferId dst = l.output(result, pds.front().dst_desc());
  if (group.size() == 2) l.absorb(group[1]);
  for (size_t k = 0; k < pds.size(); ++k)
    l.emit(dnnl::eltwise_forward(pds[k]), {{DNNL_ARG_SRC, k == 0 ? src : dst}, {DNNL_ARG_DST, dst}});
  return true;
}

constexpr const char* kEltwise = "oneDNN eltwise; after a Conv, Gemm or MatMul, fused as its post-op";
constexpr const char* kEltwiseReference = "not float32; empty tensors";
constexpr const char* kIntegerReference = "not float32 (the reference kernel also takes integers); empty tensors";

}  // namespace

HETSCHED_CPU_LOWERING("Relu", lower_eltwise, kEltwise, kIntegerReference);
HETSCHED_CPU_LOWERING("LeakyRelu", lower_eltwise, kEltwise, kEltwiseReference);
HETSCHED_CPU_LOWERING("Sigmoid", lower_eltwise,
                      "oneDNN eltwise; v * Sigmoid(v) as one swish; after a Conv, Gemm or MatMul, fused as its post-op",
                      kEltwiseReference);
HETSCHED_CPU_LOWERING("HardSigmoid", lower_eltwise,
                      "oneDNN eltwise linear then clip; v * HardSigmoid(v) (alpha 1/6, beta 1/2) as one hardswish; "
                      "after a Conv, Gemm or MatMul, fused as its post-ops",
                      kEltwiseReference);
HETSCHED_CPU_LOWERING("Tanh", lower_eltwise, kEltwise, kEltwiseReference);
HETSCHED_CPU_LOWERING("HardSwish", lower_eltwise, kEltwise, kEltwiseReference);
HETSCHED_CPU_LOWERING("Elu", lower_eltwise, kEltwise, kEltwiseReference);
HETSCHED_CPU_LOWERING("Exp", lower_eltwise, kEltwise, kEltwiseReference);
HETSCHED_CPU_LOWERING("Log", lower_eltwise,
                      "oneDNN eltwise, its reference implementation (the jit log is off by ~1e-6)", kEltwiseReference);
HETSCHED_CPU_LOWERING("Sqrt", lower_eltwise, kEltwise, kEltwiseReference);
HETSCHED_CPU_LOWERING("Abs", lower_eltwise, kEltwise, kIntegerReference);
HETSCHED_CPU_LOWERING("Softplus", lower_eltwise, kEltwise, kEltwiseReference);
HETSCHED_CPU_LOWERING("Mish", lower_eltwise, kEltwise, kEltwiseReference);
HETSCHED_CPU_LOWERING("Neg", lower_eltwise, kEltwise, kIntegerReference);
HETSCHED_CPU_LOWERING("Clip", lower_eltwise, kEltwise,
                      "not float32 (the reference kernel also takes integers); a bound that is not a float32 constant "
                      "scalar; min > max; empty tensors");
HETSCHED_CPU_LOWERING("Gelu", lower_eltwise, kEltwise,
                      "not float32; approximate other than none or tanh; empty tensors");

}  // namespace hetsched::cpu
