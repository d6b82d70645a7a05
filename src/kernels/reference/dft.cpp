// DFT — reference kernel (opset 17): the discrete Fourier transform of the
// signal along `axis` (default 1) of a [batch, ..., 1 or 2] input (real, or
// complex as (re, im) in the last dim), `dft_length` points (the signal
// zero-padded or cut; default its length), `inverse` scaled by 1 / length,
// `onesided` keeping the first floor(length / 2) + 1 bins. Output
// [..., bins, ..., 2]. Computed directly in double (signal_common.h), not by
// an FFT.
// Supported: float32, float64. Refused: other dtypes.
#include <fmt/format.h>

#include "kernels/reference/common.h"
#include "kernels/reference/signal_common.h"

namespace hetsched::kernels {
namespace {

void check_dft(const Node& node, const Graph& graph) {
  check_input_dtypes(node, graph, kFloatTypes, {0});
  check_input_dtypes(node, graph, {DType::kInt32, DType::kInt64}, {1});
}

std::vector<Tensor> compute_dft(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = required_input(node, inputs, 0);
  int64_t rank = x.rank();
  if (rank < 2 || (x.dim(rank - 1) != 1 && x.dim(rank - 1) != 2))
    throw_runtime(node, fmt::format("input must end in a dim of 1 (real) or 2 (complex), got shape {}",
                                    shape_to_string(x.shape())));
  int64_t axis = node.attr_int("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank - 1) throw_runtime(node, fmt::format("axis {} is out of range", node.attr_int("axis", 1)));
  bool inverse = node.attr_int("inverse", 0) != 0;
  bool onesided = node.attr_int("onesided", 0) != 0;
  int64_t n = x.dim(axis);
  int64_t length = n;
  if (inputs.size() > 1 && inputs[1] && inputs[1]->numel() > 0) {
    length = inputs[1]->to_int64_vector().at(0);
    if (length < 1) throw_runtime(node, fmt::format("dft_length {} must be positive", length));
  }
  int64_t bins = onesided ? length / 2 + 1 : length;
  int64_t components = x.dim(rank - 1);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
  for (int64_t d = axis + 1; d < rank - 1; ++d) inner *= x.dim(d);

  std::vector<double> in = x.to_double_vector();
  Shape out_shape = x.shape();
  out_shape[static_cast<size_t>(axis)] = bins;
  out_shape[static_cast<size_t>(rank - 1)] = 2;
  std::vector<double> out(static_cast<size_t>(outer * bins * inner * 2));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const double* re = in.data() + ((o * n) * inner + i) * components;
      dft(re, components == 2 ? re + 1 : nullptr, inner * components, n, length, inverse, bins,
          out.data() + ((o * bins) * inner + i) * 2, inner * 2);
    }
  return {float_tensor_of(node, x.dtype(), out_shape, out)};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("DFT", check_dft, compute_dft);

}  // namespace hetsched::kernels
