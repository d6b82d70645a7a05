#include "core/half.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace hetsched {

namespace {

#if defined(__x86_64__)
// F16C converts as the FP16 library does: exactly to float32, and to
// float16 rounding to nearest even (_MM_FROUND_TO_NEAREST_INT).
__attribute__((target("avx,f16c"))) void float16_to_float_f16c(const Float16* in, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
  for (; i < n; ++i) out[i] = to_float(in[i]);
}

__attribute__((target("avx,f16c"))) void float_to_float16_f16c(const float* in, Float16* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; ++i) out[i] = float16_of(in[i]);
}

bool has_f16c() {
  static const bool yes = __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");
  return yes;
}
#endif

}  // namespace

void float16_to_float(const Float16* in, float* out, int64_t n) {
#if defined(__x86_64__)
  if (has_f16c()) return float16_to_float_f16c(in, out, n);
#endif
  for (int64_t i = 0; i < n; ++i) out[i] = to_float(in[i]);
}

void float_to_float16(const float* in, Float16* out, int64_t n) {
#if defined(__x86_64__)
  if (has_f16c()) return float_to_float16_f16c(in, out, n);
#endif
  for (int64_t i = 0; i < n; ++i) out[i] = float16_of(in[i]);
}

Tensor widened_to_float32(const Tensor& half) {
  Tensor out(DType::kFloat32, half.shape());
  float* o = out.data<float>();
  if (half.dtype() == DType::kFloat16) {
    float16_to_float(half.data<Float16>(), o, half.numel());
  } else {
    const BFloat16* in = half.data<BFloat16>();
    for (int64_t i = 0; i < half.numel(); ++i) o[i] = to_float(in[i]);
  }
  return out;
}

}  // namespace hetsched
