// Conversions between the 16-bit float types (Float16, BFloat16; tensor.h)
// and float32.
//
// float16: IEEE 754 binary16 by the FP16 library (libfp16-dev), rounding to
// nearest even, with infinities, NaN and subnormals. bfloat16: the upper 16
// bits of a float32, rounded to nearest even (as PyTorch, oneDNN and ONNX
// from 1.13 do; ONNX 1.12's reference truncated), NaN kept a quiet NaN.
// From double, both go through float32.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include <fp16.h>

#include "hetsched/tensor.h"

namespace hetsched {

inline float to_float(Float16 h) { return fp16_ieee_to_fp32_value(h.bits); }

inline float to_float(BFloat16 b) {
  uint32_t bits = static_cast<uint32_t>(b.bits) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

inline Float16 float16_of(float f) { return Float16{fp16_ieee_from_fp32_value(f)}; }

inline BFloat16 bfloat16_of(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if (std::isnan(f)) return BFloat16{static_cast<uint16_t>((bits >> 16) | 0x0040)};
  bits += 0x7fff + ((bits >> 16) & 1);  // round to nearest, ties to even
  return BFloat16{static_cast<uint16_t>(bits >> 16)};
}

// Whole arrays of float16, converted as above (with the CPU's F16C
// instructions where it has them: the same results, ~20x faster).
void float16_to_float(const Float16* in, float* out, int64_t n);
void float_to_float16(const float* in, Float16* out, int64_t n);

// A float16 or bfloat16 tensor as a float32 one (exactly).
Tensor widened_to_float32(const Tensor& half);

}  // namespace hetsched
