// Unique — reference kernel: the distinct elements of the flattened input, or
// with `axis` the distinct slices along it (compared element by element in
// row-major order, as numpy.unique does), ascending (`sorted`, the default)
// or in order of first occurrence; optional int64 outputs: each one's first
// index, each input's position in Y (inverse_indices) and each one's count.
// The output's length depends on the data. Supported: every dtype the
// engine has.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "kernels/reference/common.h"

namespace hetsched::kernels {
namespace {

std::vector<Tensor> compute_unique(const Node& node, const std::vector<const Tensor*>& inputs) {
  Tensor x = required_input(node, inputs, 0);
  bool sorted = node.attr_int("sorted", 1) != 0;
  bool by_axis = node.has_attr("axis");
  if (!by_axis) x = x.reshaped({x.numel()});
  int64_t axis = by_axis ? normalize_axis(node, node.attr_int("axis", 0), x.rank()) : 0;
  // x as [outer, n, inner]: slice k holds x[o, k, i] for every (o, i).
  int64_t n = x.dim(axis), outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);

  // Slices grouped by content: a stable sort keeps the first occurrence
  // first in its group.
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::vector<int64_t> group_start;  // positions in `order` where a new value begins
  dispatch_all(node, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = x.data<T>();
    auto element = [&](int64_t k, int64_t j) { return p[(j / inner) * n * inner + k * inner + j % inner]; };
    int64_t slice = outer * inner;
    auto less = [&](int64_t a, int64_t b) {
      for (int64_t j = 0; j < slice; ++j) {
        T ea = element(a, j), eb = element(b, j);
        if (ea < eb) return true;
        if (eb < ea) return false;
      }
      return false;
    };
    std::stable_sort(order.begin(), order.end(), less);
    for (size_t i = 0; i < order.size(); ++i)
      if (i == 0 || less(order[i - 1], order[i])) group_start.push_back(static_cast<int64_t>(i));
  });
  size_t n_unique = group_start.size();
  // Output order of the groups: by value, or by first occurrence.
  std::vector<size_t> groups(n_unique);
  std::iota(groups.begin(), groups.end(), 0);
  auto first_of = [&](size_t g) { return order[static_cast<size_t>(group_start[g])]; };
  if (!sorted) std::sort(groups.begin(), groups.end(), [&](size_t a, size_t b) { return first_of(a) < first_of(b); });

  Shape y_shape = x.shape();
  y_shape[static_cast<size_t>(axis)] = static_cast<int64_t>(n_unique);
  Tensor y(x.dtype(), y_shape);
  Tensor indices(DType::kInt64, {static_cast<int64_t>(n_unique)});
  Tensor inverse(DType::kInt64, {n});
  Tensor counts(DType::kInt64, {static_cast<int64_t>(n_unique)});
  size_t es = dtype_size(x.dtype());
  const auto* src = static_cast<const std::byte*>(x.raw());
  auto* dst = static_cast<std::byte*>(y.raw());
  for (size_t u = 0; u < n_unique; ++u) {
    size_t g = groups[u];
    int64_t begin = group_start[g];
    int64_t end = g + 1 < n_unique ? group_start[g + 1] : n;
    int64_t k = first_of(g);
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(dst + static_cast<size_t>((o * static_cast<int64_t>(n_unique) + static_cast<int64_t>(u)) * inner) * es,
                  src + static_cast<size_t>((o * n + k) * inner) * es, static_cast<size_t>(inner) * es);
    indices.data<int64_t>()[u] = k;
    counts.data<int64_t>()[u] = end - begin;
    for (int64_t i = begin; i < end; ++i) inverse.data<int64_t>()[order[static_cast<size_t>(i)]] = static_cast<int64_t>(u);
  }
  return {y, indices, inverse, counts};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("Unique", nullptr, compute_unique);

}  // namespace hetsched::kernels
