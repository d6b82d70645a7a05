// Gather, GatherElements and GatherND: index-driven byte copies (any dtype),
// int32/int64 indices, negative indices count from the end of the axis.
#include <cstring>

#include <fmt/format.h>

#include "kernels/reference/common.h"

namespace hetsched::kernels {
namespace {

constexpr std::initializer_list<DType> kIndexTypes = {DType::kInt32, DType::kInt64};

// Maps a possibly negative index into [0, dim); throws naming the node.
int64_t checked_index(const Node& node, int64_t index, int64_t dim) {
  int64_t i = index < 0 ? index + dim : index;
  if (i < 0 || i >= dim)
    throw_runtime(node, fmt::format("index {} is out of range for a dim of {}", index, dim));
  return i;
}

void check_gather_like(const Node& node, const Graph& graph) {
  if (node.input(0) == kNoValue || node.input(1) == kNoValue) throw_invalid(node, "needs data and indices inputs");
  check_input_dtypes(node, graph, kIndexTypes, {1});
}

std::vector<Tensor> compute_gather(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& data = required_input(node, inputs, 0);
  const Tensor& indices = required_input(node, inputs, 1);
  if (data.rank() == 0) throw_runtime(node, "data must have rank >= 1");
  int64_t axis = normalize_axis(node, node.attr_int("axis", 0), data.rank());
  int64_t dim = data.dim(axis);
  Shape out_shape(data.shape().begin(), data.shape().begin() + axis);
  out_shape.insert(out_shape.end(), indices.shape().begin(), indices.shape().end());
  out_shape.insert(out_shape.end(), data.shape().begin() + axis + 1, data.shape().end());

  std::vector<int64_t> idx = indices.to_int64_vector();
  for (int64_t& i : idx) i = checked_index(node, i, dim);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= data.dim(d);
  for (int64_t d = axis + 1; d < data.rank(); ++d) inner *= data.dim(d);

  Tensor out(data.dtype(), out_shape);
  size_t block = static_cast<size_t>(inner) * dtype_size(data.dtype());
  const auto* src = static_cast<const std::byte*>(data.raw());
  auto* dst = static_cast<std::byte*>(out.raw());
  if (block == 0) return {out};
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i : idx) {
      std::memcpy(dst, src + static_cast<size_t>(o * dim + i) * block, block);
      dst += block;
    }
  return {out};
}

std::vector<Tensor> compute_gather_elements(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& data = required_input(node, inputs, 0);
  const Tensor& indices = required_input(node, inputs, 1);
  int64_t rank = data.rank();
  if (rank == 0) throw_runtime(node, "data must have rank >= 1");
  if (indices.rank() != rank)
    throw_runtime(node, fmt::format("indices rank {} differs from data rank {}", indices.rank(), rank));
  int64_t axis = normalize_axis(node, node.attr_int("axis", 0), rank);
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && indices.dim(d) > data.dim(d))
      throw_runtime(node, fmt::format("indices shape {} exceeds data shape {} on axis {}",
                                      shape_to_string(indices.shape()), shape_to_string(data.shape()), d));

  Tensor out(data.dtype(), indices.shape());
  std::vector<int64_t> idx = indices.to_int64_vector();
  std::vector<int64_t> strides = strides_of(data.shape());
  size_t es = dtype_size(data.dtype());
  const auto* src = static_cast<const std::byte*>(data.raw());
  auto* dst = static_cast<std::byte*>(out.raw());
  std::vector<int64_t> coord(static_cast<size_t>(rank), 0);
  for (size_t k = 0; k < idx.size(); ++k) {
    int64_t offset = 0;
    for (int64_t d = 0; d < rank; ++d)
      offset += (d == axis ? checked_index(node, idx[k], data.dim(axis)) : coord[d]) * strides[d];
    std::memcpy(dst + k * es, src + static_cast<size_t>(offset) * es, es);
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++coord[d] < indices.dim(d)) break;
      coord[d] = 0;
    }
  }
  return {out};
}

std::vector<Tensor> compute_gather_nd(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& data = required_input(node, inputs, 0);
  const Tensor& indices = required_input(node, inputs, 1);
  int64_t r = data.rank(), q = indices.rank();
  int64_t b = node.attr_int("batch_dims", 0);
  if (r < 1 || q < 1) throw_runtime(node, "data and indices must have rank >= 1");
  if (b < 0 || b >= std::min(r, q))
    throw_runtime(node, fmt::format("batch_dims {} must be in [0, {})", b, std::min(r, q)));
  for (int64_t d = 0; d < b; ++d)
    if (indices.dim(d) != data.dim(d))
      throw_runtime(node, fmt::format("batch dim {} differs: data {}, indices {}", d, shape_to_string(data.shape()),
                                      shape_to_string(indices.shape())));
  int64_t last = indices.dim(q - 1);
  if (last < 1 || last > r - b)
    throw_runtime(node, fmt::format("indices last dim {} must be in [1, {}]", last, r - b));

  Shape out_shape(indices.shape().begin(), indices.shape().end() - 1);
  out_shape.insert(out_shape.end(), data.shape().begin() + b + last, data.shape().end());
  Tensor out(data.dtype(), out_shape);

  int64_t batches = 1, tuples = 1, block = 1;
  for (int64_t d = 0; d < b; ++d) batches *= data.dim(d);
  for (int64_t d = b; d < q - 1; ++d) tuples *= indices.dim(d);
  for (int64_t d = b + last; d < r; ++d) block *= data.dim(d);
  std::vector<int64_t> strides = strides_of(data.shape());
  int64_t batch_stride = b == 0 ? data.numel() : strides[static_cast<size_t>(b - 1)];

  std::vector<int64_t> idx = indices.to_int64_vector();
  size_t es = dtype_size(data.dtype());
  size_t block_bytes = static_cast<size_t>(block) * es;
  const auto* src = static_cast<const std::byte*>(data.raw());
  auto* dst = static_cast<std::byte*>(out.raw());
  const int64_t* tuple = idx.data();
  for (int64_t bi = 0; bi < batches; ++bi)
    for (int64_t t = 0; t < tuples; ++t, tuple += last) {
      int64_t offset = bi * batch_stride;
      for (int64_t j = 0; j < last; ++j)
        offset += checked_index(node, tuple[j], data.dim(b + j)) * strides[static_cast<size_t>(b + j)];
      if (block_bytes) std::memcpy(dst, src + static_cast<size_t>(offset) * es, block_bytes);
      dst += block_bytes;
    }
  return {out};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("Gather", check_gather_like, compute_gather);
HETSCHED_REFERENCE_KERNEL("GatherElements", check_gather_like, compute_gather_elements);
HETSCHED_REFERENCE_KERNEL("GatherND", check_gather_like, compute_gather_nd);

}  // namespace hetsched::kernels
