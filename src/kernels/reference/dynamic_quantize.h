// DynamicQuantizeLinear's arithmetic, element by element, shared by its
// reference kernel (the whole tensor at once) and the CPU backend's kernel
// (chunks on the device's threads, the ranges merged): both give the same
// bytes. Files including it are compiled with -fno-trapping-math, which lets
// the compiler turn the comparisons below into vector selects.
//   y_scale = (max(0, max x) - min(0, min x)) / 255
//   y_zero_point = saturate(round_half_to_even(0 - min(0, min x) / y_scale))
//   y = saturate(round_half_to_even(x / y_scale) + y_zero_point)
#pragma once

#include <cstdint>

#include "kernels/reference/quantize_common.h"

namespace hetsched::kernels::dynamic_quant {

// The range of some of x's values, widened to include 0, and how many are
// NaN (a min or max of NaN is unspecified in the vectorised loop: counted
// apart). Ranges of chunks merge by min, max and sum.
struct Range {
  float lo = 0.0f, hi = 0.0f;
  int64_t n_nan = 0;
};

inline Range range(const float* __restrict in, int64_t n) {
  float lo = 0.0f, hi = 0.0f;
#pragma omp simd reduction(min : lo) reduction(max : hi)
  for (int64_t i = 0; i < n; ++i) {
    lo = in[i] < lo ? in[i] : lo;
    hi = in[i] > hi ? in[i] : hi;
  }
  int64_t n_nan = 0;
#pragma omp simd reduction(+ : n_nan)
  for (int64_t i = 0; i < n; ++i) n_nan += in[i] != in[i];
  return {lo, hi, n_nan};
}

inline float scale_of(const Range& r) { return (r.hi - r.lo) / 255.0f; }

// The zero point of a range with scale_of(r) > 0.
inline uint8_t zero_point_of(const Range& r, float scale) { return quant::saturate_round<uint8_t>(0.0f - r.lo / scale, 0); }

// y for n values of x, given y_scale > 0 and y_zero_point.
inline void quantize(const float* __restrict in, int64_t n, float scale, uint8_t zero_point, uint8_t* __restrict out) {
  const int32_t z = zero_point;
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) out[j] = quant::saturate_round_float<uint8_t>(in[j] / scale, z);
}

}  // namespace hetsched::kernels::dynamic_quant
