// DepthToSpace (modes DCR and CRD) and SpaceToDepth on 4-D NCHW tensors:
// a reshape to 6-D, a transpose and a reshape back, done as one strided copy.
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

void check_block_op(const Node& node, const Graph& graph) {
  if (node.input(0) == kNoValue) throw_invalid(node, "input 'input' is missing");
  if (node.attr_int("blocksize", 0) < 1) throw_invalid(node, "attribute 'blocksize' must be >= 1");
  std::string mode = node.attr_string("mode", "DCR");
  if (node.op_type == "DepthToSpace" && mode != "DCR" && mode != "CRD")
    throw_unsupported(node, fmt::format("mode '{}' is not supported (DCR, CRD)", mode));
  const Value& x = graph.values[node.input(0)];
  if (x.has_shape && x.shape.size() != 4)
    throw_invalid(node, fmt::format("input must be 4-D, got {}", shape_to_string(x.shape)));
}

// Copies x, viewed as `view` (6-D, row-major), to out with the view's axes
// permuted by `perm`.
Tensor permuted_copy(const Tensor& x, const Shape& view, const std::vector<size_t>& perm, const Shape& final_shape) {
  std::vector<int64_t> view_strides = strides_of(view);
  Shape out6(6);
  std::vector<int64_t> strides(6);
  for (size_t i = 0; i < 6; ++i) {
    out6[i] = view[perm[i]];
    strides[i] = view_strides[perm[i]];
  }
  Tensor out(x.dtype(), final_shape);
  strided_copy(x.raw(), 0, strides, out6, out.raw(), dtype_size(x.dtype()));
  return out;
}

std::vector<Tensor> compute_depth_to_space(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = required_input(node, inputs, 0);
  int64_t b = node.attr_int("blocksize", 0);
  if (b < 1) throw_runtime(node, "blocksize must be >= 1");
  if (x.rank() != 4) throw_runtime(node, fmt::format("input must be 4-D, got {}", shape_to_string(x.shape())));
  int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
  if (c % (b * b) != 0)
    throw_runtime(node, fmt::format("channels {} are not divisible by blocksize^2 = {}", c, b * b));
  int64_t oc = c / (b * b);
  Shape final_shape{n, oc, h * b, w * b};
  if (node.attr_string("mode", "DCR") == "CRD")
    return {permuted_copy(x, {n, oc, b, b, h, w}, {0, 1, 4, 2, 5, 3}, final_shape)};
  return {permuted_copy(x, {n, b, b, oc, h, w}, {0, 3, 4, 1, 5, 2}, final_shape)};
}

std::vector<Tensor> compute_space_to_depth(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = required_input(node, inputs, 0);
  int64_t b = node.attr_int("blocksize", 0);
  if (b < 1) throw_runtime(node, "blocksize must be >= 1");
  if (x.rank() != 4) throw_runtime(node, fmt::format("input must be 4-D, got {}", shape_to_string(x.shape())));
  int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
  if (h % b != 0 || w % b != 0)
    throw_runtime(node, fmt::format("spatial dims {}x{} are not divisible by blocksize {}", h, w, b));
  return {permuted_copy(x, {n, c, h / b, b, w / b, b}, {0, 3, 5, 1, 2, 4}, {n, c * b * b, h / b, w / b})};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("DepthToSpace", check_block_op, compute_depth_to_space);
HETSCHED_REFERENCE_KERNEL("SpaceToDepth", check_block_op, compute_space_to_depth);

}  // namespace hetsched::kernels
