// What the signal ops share: the discrete Fourier transform (DFT, STFT) and
// the output_datatype of those that make their data (windows,
// MelWeightMatrix).
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>

#include <fmt/format.h>

#include "kernels/reference/common.h"

namespace hetsched::kernels {

// One complex transform of length `length` over `n` input samples
// (`re`/`im`, `stride` apart; samples past `n` are zeros, samples past
// `length` are dropped), its first `n_out` bins written to `out` as
// (re, im) pairs `out_stride` apart: X[k] = sum_t x[t] e^(-2 pi i k t / L),
// or with `inverse` the sum with e^(+...) divided by L. `im` may be null (a
// real signal). In double; the angle is reduced modulo L first, so large
// products k t lose no precision.
inline void dft(const double* re, const double* im, int64_t stride, int64_t n, int64_t length, bool inverse,
                int64_t n_out, double* out, int64_t out_stride) {
  const double sign = inverse ? 1.0 : -1.0;
  const int64_t used = n < length ? n : length;
  for (int64_t k = 0; k < n_out; ++k) {
    double sum_re = 0, sum_im = 0;
    for (int64_t t = 0; t < used; ++t) {
      double angle = sign * 2 * std::numbers::pi * static_cast<double>((k * t) % length) / static_cast<double>(length);
      double c = std::cos(angle), s = std::sin(angle);
      double xr = re[t * stride], xi = im ? im[t * stride] : 0.0;
      sum_re += xr * c - xi * s;
      sum_im += xr * s + xi * c;
    }
    if (inverse) {
      sum_re /= static_cast<double>(length);
      sum_im /= static_cast<double>(length);
    }
    out[k * out_stride] = sum_re;
    out[k * out_stride + 1] = sum_im;
  }
}

// The dtype the node's output_datatype attribute names: float (1, the
// default) or double (11); any other throws kUnsupported naming the node.
inline DType output_datatype(const Node& node) {
  int64_t t = node.attr_int("output_datatype", 1);
  if (t == 1) return DType::kFloat32;
  if (t == 11) return DType::kFloat64;
  throw_unsupported(node, fmt::format("output_datatype {} is not supported (1: float, 11: double)", t));
}

}  // namespace hetsched::kernels
