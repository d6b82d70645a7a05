// Tile: repeats the input `repeats[d]` times along each axis. Dtype-agnostic:
// each output row (last axis) is its input row copied repeats.back() times.
#include <cstring>

#include <fmt/format.h>

#include "kernels/reference/common.h"

namespace hetsched::kernels {
namespace {

void check_tile(const Node& node, const Graph& graph) {
  if (node.input(0) == kNoValue || node.input(1) == kNoValue) throw_invalid(node, "needs input and repeats");
  check_input_dtypes(node, graph, {DType::kInt64}, {1});
}

std::vector<Tensor> compute_tile(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = required_input(node, inputs, 0);
  std::vector<int64_t> repeats = required_input(node, inputs, 1).to_int64_vector();
  int64_t rank = x.rank();
  if (static_cast<int64_t>(repeats.size()) != rank)
    throw_runtime(node, fmt::format("{} repeats for an input of rank {}", repeats.size(), rank));
  Shape out_shape(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) {
    if (repeats[d] < 0) throw_runtime(node, fmt::format("repeat {} for axis {} is negative", repeats[d], d));
    out_shape[d] = size_product(node, x.dim(d), repeats[d]);
  }
  Tensor out(x.dtype(), out_shape);
  if (out.numel() == 0) return {out};
  size_t es = dtype_size(x.dtype());
  if (rank == 0) {
    std::memcpy(out.raw(), x.raw(), es);
    return {out};
  }
  // Odometer over the output rows (all axes but the last); output coordinate c
  // reads input coordinate c % dim.
  const auto* src = static_cast<const std::byte*>(x.raw());
  auto* dst = static_cast<std::byte*>(out.raw());
  std::vector<int64_t> in_strides = strides_of(x.shape());
  int64_t in_row = x.dim(rank - 1);
  size_t row_bytes = static_cast<size_t>(in_row) * es;
  int64_t rows = out.numel() / out_shape.back();
  std::vector<int64_t> coord(static_cast<size_t>(rank), 0);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t offset = 0;
    for (int64_t d = 0; d + 1 < rank; ++d) offset += (coord[d] % x.dim(d)) * in_strides[d];
    for (int64_t k = 0; k < repeats.back(); ++k) {
      std::memcpy(dst, src + static_cast<size_t>(offset) * es, row_bytes);
      dst += row_bytes;
    }
    for (int64_t d = rank - 2; d >= 0; --d) {
      if (++coord[d] < out_shape[d]) break;
      coord[d] = 0;
    }
  }
  return {out};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("Tile", check_tile, compute_tile);

}  // namespace hetsched::kernels
