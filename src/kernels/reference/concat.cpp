// Concat: joins tensors of one dtype along an axis (negative axis from opset 11).
// Dtype-agnostic: whole blocks are copied as bytes.
#include <cstring>

#include <fmt/format.h>

#include "kernels/reference/common.h"

namespace hetsched::kernels {
namespace {

void check_concat(const Node& node, const Graph& graph) {
  if (!node.has_attr("axis")) throw_invalid(node, "attribute 'axis' is required");
  if (node.inputs.empty()) throw_invalid(node, "needs at least one input");
  DType common = DType::kUndefined;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    ValueId id = node.inputs[i];
    if (id == kNoValue) throw_invalid(node, fmt::format("input {} is missing", i));
    DType d = graph.values[id].dtype;
    if (d == DType::kUndefined) continue;
    if (common != DType::kUndefined && d != common)
      throw_invalid(node, fmt::format("input {} has dtype {}, input 0 has {}", i, dtype_name(d),
                                      dtype_name(common)));
    common = d;
  }
}

std::vector<Tensor> compute_concat(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& first = required_input(node, inputs, 0);
  int64_t rank = first.rank();
  if (rank == 0) throw_runtime(node, "cannot concatenate scalars");
  int64_t axis = normalize_axis(node, node.attr_int("axis", 0), rank);
  Shape out_shape = first.shape();
  out_shape[axis] = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = required_input(node, inputs, i);
    if (t.dtype() != first.dtype())
      throw_runtime(node, fmt::format("input {} is {}, input 0 is {}", i, t.description(), first.description()));
    bool same = t.rank() == rank;
    for (int64_t d = 0; same && d < rank; ++d) same = d == axis || t.dim(d) == first.dim(d);
    if (!same)
      throw_runtime(node, fmt::format("input {} has shape {}, incompatible with input 0 ({}) on axis {}", i,
                                      shape_to_string(t.shape()), shape_to_string(first.shape()), axis));
    out_shape[axis] += t.dim(axis);
  }
  Tensor out(first.dtype(), out_shape);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= out_shape[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= out_shape[d];
  size_t es = dtype_size(first.dtype());
  auto* dst = static_cast<std::byte*>(out.raw());
  for (int64_t o = 0; o < outer; ++o) {
    for (const Tensor* t : inputs) {
      size_t bytes = static_cast<size_t>(t->dim(axis) * inner) * es;
      if (bytes == 0) continue;
      std::memcpy(dst, static_cast<const std::byte*>(t->raw()) + static_cast<size_t>(o) * bytes, bytes);
      dst += bytes;
    }
  }
  return {out};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("Concat", check_concat, compute_concat);

}  // namespace hetsched::kernels
