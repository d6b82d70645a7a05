// DynamicQuantizeLinear — reference kernel (opset 11).
//
// x (float32) to uint8 with a scale and zero point computed from x's range,
// which always includes 0, in float32 as the spec's reference does:
//   y_scale = (max(0, max x) - min(0, min x)) / 255
//   y_zero_point = saturate(round_half_to_even(0 - min(0, min x) / y_scale))
//   y = saturate(round_half_to_even(x / y_scale) + y_zero_point)
// An x of zeros only (or empty) has y_scale 0, y_zero_point 0 and y 0 (the
// spec's formula would divide by zero).
#include <algorithm>

#include "kernels/reference/quantize_common.h"

namespace hetsched::kernels {
namespace {

void check_dynamic_quantize_linear(const Node& node, const Graph& graph) {
  check_input_dtypes(node, graph, {DType::kFloat32});
}

// round_half_to_even(v) + zp saturated to uint8, for v = x / y_scale as a
// float32: what quant::saturate_round computes, in float32 arithmetic the
// compiler vectorises (transformers quantize every MatMul's input at each
// run; CMakeLists.txt compiles this file with -fno-trapping-math, which lets
// it turn the comparisons into selects). v is first clamped to +-1024,
// which saturates the same as v itself (zp is 0..255); adding and
// subtracting 1.5 x 2^23 then rounds it to the nearest integer, ties to even
// (the default rounding mode), exactly for |v| <= 2^22; the sum with zp is
// exact.
inline uint8_t quantize_uint8(float v, float zp) {
  constexpr float kRound = 12582912.0f;  // 1.5 x 2^23
  v = v < -1024.0f ? -1024.0f : v;
  v = v > 1024.0f ? 1024.0f : v;
  float r = (v + kRound) - kRound + zp;
  r = r < 0.0f ? 0.0f : r;
  r = r > 255.0f ? 255.0f : r;
  return static_cast<uint8_t>(static_cast<int32_t>(r));
}

std::vector<Tensor> compute_dynamic_quantize_linear(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = required_input(node, inputs, 0);
  if (x.dtype() != DType::kFloat32) throw_runtime(node, fmt::format("x must be float32, got {}", dtype_name(x.dtype())));
  const float* __restrict in = x.data<float>();
  const int64_t n = x.numel();
  // The range: an OpenMP SIMD reduction, which the compiler vectorises
  // (NaN is looked for apart: a min or max of NaN is unspecified there).
  float lo = 0.0f, hi = 0.0f;
#pragma omp simd reduction(min : lo) reduction(max : hi)
  for (int64_t i = 0; i < n; ++i) {
    lo = in[i] < lo ? in[i] : lo;
    hi = in[i] > hi ? in[i] : hi;
  }
  int64_t n_nan = 0;
  for (int64_t j = 0; j < n; ++j) n_nan += in[j] != in[j];
  bool nan = n_nan > 0;
  if (nan)
    for (int64_t j = 0; j < n; ++j)
      if (std::isnan(in[j])) throw_runtime(node, fmt::format("x holds NaN at element {}", j));
  const float scale = (hi - lo) / 255.0f;
  Tensor y(DType::kUInt8, x.shape());
  uint8_t zp = 0;
  if (scale > 0.0f) {
    zp = quant::saturate_round<uint8_t>(0.0f - lo / scale, 0);
    uint8_t* __restrict out = y.data<uint8_t>();
    const float z = static_cast<float>(zp);
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) out[j] = quantize_uint8(in[j] / scale, z);
  }
  return {y, Tensor::scalar<float>(scale), Tensor::scalar<uint8_t>(zp)};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("DynamicQuantizeLinear", check_dynamic_quantize_linear, compute_dynamic_quantize_linear);

}  // namespace hetsched::kernels
