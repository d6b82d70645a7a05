// Concat on oneDNN: the concat primitive reads every input in the layout it
// arrives in (blocked or plain, constants plain) and writes the layout it
// picks for the output (dst format `any`), so a blocked network stays
// blocked through its branches.
//
// Supported: the dtypes oneDNN has (float32, int32, int8, uint8; a concat
// copies bytes), rank >= 1, any axis (negative too).
// Refused: int64 and the other dtypes oneDNN lacks; empty inputs or output.
#include "backends/cpu/lowering.h"

namespace hetsched::cpu {
namespace {

using tag = dnnl::memory::format_tag;

bool lower_concat(Lowering& l) {
  const Node& node = l.node();
  if (node.inputs.empty() || node.outputs.size() != 1 || node.outputs[0] == kNoValue) return false;
  const Value& y = l.graph().values[node.outputs[0]];
  auto type = dnnl_type(y.dtype);
  const int64_t rank = static_cast<int64_t>(y.shape.size());
  if (!type || rank == 0 || shape_numel(y.shape) == 0) return false;
  int64_t axis = node.attr_int("axis", 0);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return false;
  int64_t total = 0;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (!l.has_input(i)) return false;
    const Value& x = l.input_value(i);
    if (x.dtype != y.dtype || x.shape.size() != y.shape.size() || shape_numel(x.shape) == 0) return false;
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis && x.shape[static_cast<size_t>(d)] != y.shape[static_cast<size_t>(d)]) return false;
    total += x.shape[static_cast<size_t>(axis)];
  }
  if (total != y.shape[static_cast<size_t>(axis)]) return false;

  std::vector<dnnl::memory::desc> srcs;
  for (size_t i = 0; i < node.inputs.size(); ++i) srcs.push_back(l.input_desc(i));
  dnnl::memory::dims dst_dims(y.shape.begin(), y.shape.end());
  dnnl::concat::primitive_desc pd;
  try {
    pd = dnnl::concat::primitive_desc(dnnl::memory::desc(dst_dims, *type, tag::any), static_cast<int>(axis), srcs,
                                      l.engine());
  } catch (const dnnl::error&) {
    return false;
  }
  std::vector<std::pair<int, BufferId>> args;
  for (size_t i = 0; i < node.inputs.size(); ++i)
    args.push_back({DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i), l.input(i, pd.src_desc(static_cast<int>(i)))});
  args.push_back({DNNL_ARG_DST, l.output(node.outputs[0], pd.dst_desc())});
  l.emit(dnnl::concat(pd), std::move(args));
  return true;
}

}  // namespace

HETSCHED_CPU_LOWERING("Concat", lower_concat, "oneDNN concat (blocked layouts kept)",
                      "int64, bool, float64 and other dtypes oneDNN lacks; empty inputs");

}  // namespace hetsched::cpu
