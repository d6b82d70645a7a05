// Transpose on the CPU device: one oneDNN reorder from the input, in
// whatever layout it arrives (blocked included), into the plain output,
// described as the input's dims with permuted strides. A permutation that
// keeps the order of the dims larger than 1 moves no byte: the output is a
// view of the plain input.
// Refused: dtypes oneDNN lacks (int64, bool, float64, ...), invalid perms,
// ranks above 12.
#include <optional>

#include "backends/cpu/lowering.h"

namespace hetsched::cpu {
namespace {

using dims = dnnl::memory::dims;

bool lower_transpose(Lowering& l) {
  const Node& node = l.node();
  if (!l.has_input(0) || node.outputs.size() != 1 || node.outputs[0] == kNoValue) return false;
  const Value& x = l.input_value(0);
  const Value& y = l.graph().values[node.outputs[0]];
  auto type = dnnl_type(x.dtype);
  if (!type || y.dtype != x.dtype) return false;
  const size_t rank = x.shape.size();
  if (rank > DNNL_MAX_NDIMS) return false;
  std::vector<int64_t> perm = node.attr_ints("perm");
  if (!node.has_attr("perm"))
    for (size_t i = 0; i < rank; ++i) perm.push_back(static_cast<int64_t>(rank - 1 - i));
  if (perm.size() != rank) return false;
  std::vector<bool> seen(rank, false);
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(rank) || seen[static_cast<size_t>(p)]) return false;
    seen[static_cast<size_t>(p)] = true;
  }
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) out[i] = x.shape[static_cast<size_t>(perm[i])];
  if (out != y.shape) return false;

  // Same byte order when the dims > 1 keep their relative order.
  bool moves = false;
  int64_t last = -1;
  for (size_t i = 0; i < rank; ++i) {
    if (out[i] == 1) continue;
    if (perm[i] < last) moves = true;
    last = perm[i];
  }
  if (!moves || shape_numel(x.shape) <= 1) {
    l.view(node.outputs[0], l.input(0));
    l.emit_nothing();
    return true;
  }

  // Output element j (plain, row-major) holds input element perm(j): input
  // dim perm[i] advances by output stride i.
  dims y_strides(rank, 1);
  for (size_t i = rank - 1; i-- > 0;) y_strides[i] = y_strides[i + 1] * out[i + 1];
  dims dst_strides(rank);
  for (size_t i = 0; i < rank; ++i) dst_strides[static_cast<size_t>(perm[i])] = y_strides[i];
  dnnl::memory::desc src_md = l.input_desc(0);
  dnnl::memory::desc dst_md(dims(x.shape.begin(), x.shape.end()), *type, dst_strides);
  std::optional<dnnl::reorder::primitive_desc> pd;
  try {
    pd.emplace(l.engine(), src_md, l.engine(), dst_md);
  } catch (const dnnl::error&) {
    return false;
  }
  BufferId src = l.input(0, src_md);
  BufferId dst = l.output(node.outputs[0]);  // plain: the bytes dst_md describes
  l.emit(dnnl::reorder(*pd), {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}});
  return true;
}

}  // namespace

HETSCHED_CPU_LOWERING("Transpose", lower_transpose,
                      "oneDNN reorder; a view when no byte moves (the order of the dims larger than 1 is kept)",
                      "int64, bool, float64 and other dtypes oneDNN lacks; rank above 12");

}  // namespace hetsched::cpu
