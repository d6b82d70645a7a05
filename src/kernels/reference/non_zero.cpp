// NonZero: int64 [rank, count] coordinates of the non-zero elements, in
// row-major order (a scalar input counts as 1-D, like numpy).
#include <cstring>

#include "kernels/reference/common.h"

namespace hetsched::kernels {
namespace {

std::vector<Tensor> compute_non_zero(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = required_input(node, inputs, 0);
  std::vector<bool> nonzero(static_cast<size_t>(x.numel()));
  if (x.dtype() == DType::kFloat16) {
    const auto* bits = static_cast<const uint16_t*>(x.raw());
    for (size_t i = 0; i < nonzero.size(); ++i) nonzero[i] = (bits[i] & 0x7FFF) != 0;
  } else {
    dispatch_all(node, x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* p = x.data<T>();
      for (size_t i = 0; i < nonzero.size(); ++i) nonzero[i] = p[i] != T(0);
    });
  }
  int64_t count = 0;
  for (bool b : nonzero) count += b ? 1 : 0;
  Shape shape = x.rank() == 0 ? Shape{1} : x.shape();
  int64_t rank = static_cast<int64_t>(shape.size());
  Tensor out(DType::kInt64, {rank, count});
  int64_t* dst = out.data<int64_t>();
  std::vector<int64_t> coord(static_cast<size_t>(rank), 0);
  int64_t j = 0;
  for (size_t i = 0; i < nonzero.size(); ++i) {
    if (nonzero[i]) {
      for (int64_t d = 0; d < rank; ++d) dst[d * count + j] = coord[static_cast<size_t>(d)];
      ++j;
    }
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++coord[static_cast<size_t>(d)] < shape[static_cast<size_t>(d)]) break;
      coord[static_cast<size_t>(d)] = 0;
    }
  }
  return {out};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("NonZero", nullptr, compute_non_zero);

}  // namespace hetsched::kernels
