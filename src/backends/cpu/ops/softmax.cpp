// Softmax and LogSoftmax on oneDNN (softmax_v2: softmax_accurate and
// softmax_log), over one axis, in the input's layout.
//
// Opset >= 13 normalises along the single dim `axis`. Before opset 13 the
// input is coerced to 2-D [prod(shape[:axis]), prod(shape[axis:])]: that is
// a single-axis softmax only when at most one of the dims axis..rank-1 is
// not 1 (the usual case: axis is the last dim, or every dim after it is 1);
// it then runs on that dim. Refused: any other opset < 13 axis (the rows
// span several dims), axis == rank (rows of one element), dtypes other than
// float32, scalars and empty tensors.
#include <optional>

#include "backends/cpu/lowering.h"

namespace hetsched::cpu {
namespace {

using tag = dnnl::memory::format_tag;

// The one dim oneDNN normalises along, or nullopt.
std::optional<int> softmax_axis(const Node& node, const Shape& shape) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (rank == 0) return std::nullopt;
  int64_t axis = node.attr_int("axis", node.opset < 13 ? 1 : -1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return std::nullopt;
  if (node.opset >= 13) return static_cast<int>(axis);
  // Opset < 13: rows are the flattened dims axis..rank-1.
  std::optional<int64_t> only;
  for (int64_t d = axis; d < rank; ++d) {
    if (shape[static_cast<size_t>(d)] == 1) continue;
    if (only) return std::nullopt;  // two dims of the row are not 1
    only = d;
  }
  return static_cast<int>(only.value_or(rank - 1));
}

bool lower_softmax(Lowering& l, dnnl::algorithm algorithm) {
  const Node& node = l.node();
  if (!l.has_input(0) || node.outputs.size() != 1 || node.outputs[0] == kNoValue) return false;
  const Value& x = l.input_value(0);
  const Value& y = l.graph().values[node.outputs[0]];
  if (x.dtype != DType::kFloat32 || y.dtype != DType::kFloat32 || y.shape != x.shape) return false;
  if (shape_numel(x.shape) == 0) return false;
  auto axis = softmax_axis(node, x.shape);
  if (!axis) return false;
  dnnl::memory::dims dims(x.shape.begin(), x.shape.end());
  dnnl::softmax_v2_forward::primitive_desc pd;
  try {
    dnnl::softmax_v2_forward::desc desc(dnnl::prop_kind::forward_inference, algorithm, l.input_desc(0),
                                        dnnl::memory::desc(dims, dnnl::memory::data_type::f32, tag::any), *axis);
    pd = dnnl::softmax_v2_forward::primitive_desc(desc, l.engine());
  } catch (const dnnl::error&) {
    return false;
  }
  BufferId src = l.input(0, pd.src_desc());
  BufferId dst = l.output(node.outputs[0], pd.dst_desc());
  l.emit(dnnl::softmax_v2_forward(pd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
  return true;
}

bool lower_softmax_op(Lowering& l) { return lower_softmax(l, dnnl::algorithm::softmax_accurate); }
bool lower_log_softmax_op(Lowering& l) { return lower_softmax(l, dnnl::algorithm::softmax_log); }

constexpr const char* kSoftmaxReference =
    "not float32; before opset 13, an axis whose rows span several dims larger than 1; scalars; empty tensors";

}  // namespace

HETSCHED_CPU_LOWERING("Softmax", lower_softmax_op, "oneDNN softmax", kSoftmaxReference);
HETSCHED_CPU_LOWERING("LogSoftmax", lower_log_softmax_op, "oneDNN softmax (log)", kSoftmaxReference);

}  // namespace hetsched::cpu
