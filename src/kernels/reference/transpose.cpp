// Transpose: permutes axes (default perm reverses them). Dtype-agnostic.
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kernels/reference/common.h"

namespace hetsched::kernels {
namespace {

// Copies `n` elements of width W bytes from src (stepping `stride` elements,
// possibly negative or 0) to dst (contiguous).
template <size_t W>
void copy_row_w(std::byte* dst, const std::byte* src, int64_t n, int64_t stride) {
  for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * static_cast<int64_t>(W), src + i * stride * static_cast<int64_t>(W), W);
}

void copy_row(std::byte* dst, const std::byte* src, int64_t n, int64_t stride, size_t es) {
  if (stride == 1) {
    std::memcpy(dst, src, static_cast<size_t>(n) * es);
    return;
  }
  switch (es) {
    case 1: copy_row_w<1>(dst, src, n, stride); break;
    case 2: copy_row_w<2>(dst, src, n, stride); break;
    case 4: copy_row_w<4>(dst, src, n, stride); break;
    case 8: copy_row_w<8>(dst, src, n, stride); break;
    default:
      for (int64_t i = 0; i < n; ++i)
        std::memcpy(dst + i * static_cast<int64_t>(es), src + i * stride * static_cast<int64_t>(es), es);
  }
}

// dst (dense, shape out_shape) gets, at multi-index idx, the element of src at
// element offset base + sum(idx[d] * strides[d]). Element width es bytes.
void strided_copy(const void* src_raw, int64_t base, const std::vector<int64_t>& strides, const Shape& out_shape,
                  void* dst_raw, size_t es) {
  const auto* src = static_cast<const std::byte*>(src_raw);
  auto* dst = static_cast<std::byte*>(dst_raw);
  int64_t n = shape_numel(out_shape);
  if (n == 0) return;
  size_t rank = out_shape.size();
  if (rank == 0) {
    std::memcpy(dst, src + base * static_cast<int64_t>(es), es);
    return;
  }
  int64_t inner = out_shape.back();
  int64_t inner_stride = strides.back();
  std::vector<int64_t> idx(rank, 0);
  int64_t offset = base;
  int64_t es_i = static_cast<int64_t>(es);
  for (int64_t row = 0, rows = n / inner; row < rows; ++row) {
    copy_row(dst + row * inner * es_i, src + offset * es_i, inner, inner_stride, es);
    for (size_t d = rank - 1; d-- > 0;) {
      offset += strides[d];
      if (++idx[d] < out_shape[d]) break;
      offset -= strides[d] * out_shape[d];
      idx[d] = 0;
    }
  }
}

void check_transpose(const Node& node, const Graph& graph) {
  if (node.input(0) == kNoValue) throw_invalid(node, "input 'data' is missing");
  if (!node.has_attr("perm")) return;
  std::vector<int64_t> perm = node.attr_ints("perm");
  std::vector<bool> seen(perm.size(), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(perm.size()) || seen[static_cast<size_t>(p)])
      throw_invalid(node, fmt::format("perm [{}] is not a permutation", fmt::join(perm, ",")));
    seen[static_cast<size_t>(p)] = true;
  }
  const Value& x = graph.values[node.input(0)];
  if (x.has_shape && x.shape.size() != perm.size())
    throw_invalid(node, fmt::format("perm [{}] does not match input rank {}", fmt::join(perm, ","), x.shape.size()));
}

std::vector<Tensor> compute_transpose(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = required_input(node, inputs, 0);
  size_t rank = static_cast<size_t>(x.rank());
  std::vector<int64_t> perm = node.attr_ints("perm");
  if (perm.empty() && !node.has_attr("perm"))
    for (size_t i = 0; i < rank; ++i) perm.push_back(static_cast<int64_t>(rank - 1 - i));
  std::vector<bool> seen(rank, false);
  bool ok = perm.size() == rank;
  for (size_t i = 0; ok && i < rank; ++i) {
    ok = perm[i] >= 0 && perm[i] < static_cast<int64_t>(rank) && !seen[static_cast<size_t>(perm[i])];
    if (ok) seen[static_cast<size_t>(perm[i])] = true;
  }
  if (!ok)
    throw_runtime(node, fmt::format("perm [{}] is not a permutation of the {} axes of {}", fmt::join(perm, ","), rank,
                                    shape_to_string(x.shape())));
  std::vector<int64_t> in_strides = strides_of(x.shape());
  Shape out_shape(rank);
  std::vector<int64_t> strides(rank);
  for (size_t i = 0; i < rank; ++i) {
    out_shape[i] = x.dim(perm[i]);
    strides[i] = in_strides[static_cast<size_t>(perm[i])];
  }
  Tensor out(x.dtype(), out_shape);
  strided_copy(x.raw(), 0, strides, out_shape, out.raw(), dtype_size(x.dtype()));
  return {out};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("Transpose", check_transpose, compute_transpose);

}  // namespace hetsched::kernels
