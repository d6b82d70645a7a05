// Det — reference kernel: the determinant of each [M, M] matrix of
// [..., M, M], by LU decomposition with partial pivoting in double.
// Supported: float32 and float64.
// Refused: other dtypes.
#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "kernels/reference/common.h"

namespace hetsched::kernels {
namespace {

void check_det(const Node& node, const Graph& graph) { check_input_dtypes(node, graph, kFloatTypes); }

std::vector<Tensor> compute_det(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = required_input(node, inputs, 0);
  if (x.rank() < 2 || x.dim(-1 + x.rank()) != x.dim(x.rank() - 2))
    throw_runtime(node, fmt::format("input of shape {}: expected [..., M, M]", shape_to_string(x.shape())));
  const int64_t m = x.dim(x.rank() - 1);
  const Shape batch_shape(x.shape().begin(), x.shape().end() - 2);
  const std::vector<double> v = x.to_double_vector();
  std::vector<double> dets;
  std::vector<double> a(static_cast<size_t>(m * m));
  for (size_t base = 0; base + static_cast<size_t>(m * m) <= v.size() && m > 0; base += static_cast<size_t>(m * m)) {
    std::copy(v.begin() + static_cast<std::ptrdiff_t>(base), v.begin() + static_cast<std::ptrdiff_t>(base + m * m),
              a.begin());
    double det = 1;
    for (int64_t c = 0; c < m && det != 0; ++c) {
      int64_t pivot = c;
      for (int64_t r = c + 1; r < m; ++r)
        if (std::fabs(a[r * m + c]) > std::fabs(a[pivot * m + c])) pivot = r;
      if (a[pivot * m + c] == 0) {
        det = 0;
        break;
      }
      if (pivot != c) {
        for (int64_t k = 0; k < m; ++k) std::swap(a[c * m + k], a[pivot * m + k]);
        det = -det;
      }
      det *= a[c * m + c];
      for (int64_t r = c + 1; r < m; ++r) {
        const double f = a[r * m + c] / a[c * m + c];
        for (int64_t k = c; k < m; ++k) a[r * m + k] -= f * a[c * m + k];
      }
    }
    dets.push_back(det);
  }
  if (m == 0) dets.assign(static_cast<size_t>(shape_numel(batch_shape)), 1.0);
  return {float_tensor_of(node, x.dtype(), batch_shape, dets)};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("Det", check_det, compute_det);

}  // namespace hetsched::kernels
