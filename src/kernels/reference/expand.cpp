// Expand: broadcasts the input against a shape (numpy rules in both
// directions: a 1 in `shape` keeps the input dim). Dtype-agnostic.
#include <cstring>

#include <fmt/format.h>

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

void check_expand(const Node& node, const Graph& graph) {
  if (node.input(0) == kNoValue || node.input(1) == kNoValue) throw_invalid(node, "needs input and shape");
  check_input_dtypes(node, graph, {DType::kInt64}, {1});
}

std::vector<Tensor> compute_expand(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = required_input(node, inputs, 0);
  const Tensor& shape_t = required_input(node, inputs, 1);
  if (shape_t.rank() > 1) throw_runtime(node, "shape must be 1-D");
  Shape target = shape_t.to_int64_vector();
  for (int64_t d : target)
    if (d < 0) throw_runtime(node, fmt::format("shape value {} is negative", d));
  Shape out_shape = broadcast_shapes(node, x.shape(), target);
  Tensor out(x.dtype(), out_shape);
  strided_copy(x.raw(), 0, broadcast_strides(x.shape(), out_shape), out_shape, out.raw(), dtype_size(x.dtype()));
  return {out};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("Expand", check_expand, compute_expand);

}  // namespace hetsched::kernels
