// Trilu: keeps the upper (upper=1, j - i >= k) or lower (upper=0, j - i <= k)
// triangle of the last two axes and zeroes the rest. Dtype-agnostic.
#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "kernels/reference/common.h"

namespace hetsched::kernels {
namespace {

void check_trilu(const Node& node, const Graph& graph) {
  if (node.input(0) == kNoValue) throw_invalid(node, "input 'input' is missing");
  check_input_dtypes(node, graph, {DType::kInt64}, {1});
}

std::vector<Tensor> compute_trilu(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = required_input(node, inputs, 0);
  if (x.rank() < 2) throw_runtime(node, fmt::format("input must have rank >= 2, got {}", shape_to_string(x.shape())));
  int64_t k = 0;
  if (inputs.size() > 1 && inputs[1]) {
    if (inputs[1]->numel() != 1) throw_runtime(node, "'k' must hold one value");
    k = inputs[1]->to_int64_vector()[0];
  }
  bool upper = node.attr_int("upper", 1) != 0;
  int64_t rows = x.dim(x.rank() - 2), cols = x.dim(x.rank() - 1);
  Tensor out(x.dtype(), x.shape());  // zero-initialised
  if (out.numel() == 0) return {out};
  int64_t matrices = x.numel() / (rows * cols);
  size_t es = dtype_size(x.dtype());
  const auto* src = static_cast<const std::byte*>(x.raw());
  auto* dst = static_cast<std::byte*>(out.raw());
  // Clamp k so that i + k cannot overflow; beyond +-(rows + cols) nothing changes.
  k = std::clamp<int64_t>(k, -(rows + cols), rows + cols);
  for (int64_t m = 0; m < matrices; ++m)
    for (int64_t i = 0; i < rows; ++i) {
      // Columns kept in row i: [lo, hi).
      int64_t lo = upper ? std::clamp<int64_t>(i + k, 0, cols) : 0;
      int64_t hi = upper ? cols : std::clamp<int64_t>(i + k + 1, 0, cols);
      if (hi <= lo) continue;
      size_t row = static_cast<size_t>((m * rows + i) * cols);
      std::memcpy(dst + (row + static_cast<size_t>(lo)) * es, src + (row + static_cast<size_t>(lo)) * es,
                  static_cast<size_t>(hi - lo) * es);
    }
  return {out};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("Trilu", check_trilu, compute_trilu);

}  // namespace hetsched::kernels
