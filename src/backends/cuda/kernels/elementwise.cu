// Elementwise CUDA kernels: unary activations and math, binary arithmetic
// with numpy broadcasting, bias + activation epilogues (device_kernels.h).
// The op is a runtime switch inside one kernel per family rather than a
// template per op: one kernel image each keeps the build small, and the
// branch is uniform across a launch.
#include <cmath>

#include "backends/cuda/kernels/common.cuh"

namespace hetsched::cuda::kern {
namespace {

__device__ inline float apply_unary(Unary op, float x, float alpha, float beta) {
  switch (op) {
    case Unary::kCopy: return x;
    case Unary::kRelu: return x < 0.0f ? 0.0f : x;  // NaN stays NaN, as in the reference
    case Unary::kLeakyRelu: return x < 0.0f ? alpha * x : x;
    case Unary::kClip: {  // as the reference: NaN stays NaN (fminf / fmaxf would give a bound)
      float v = x < alpha ? alpha : x;
      return v > beta ? beta : v;
    }
    case Unary::kSigmoid: return 1.0f / (1.0f + expf(-x));
    case Unary::kTanh: return tanhf(x);
    case Unary::kExp: return expf(x);
    case Unary::kLog: return logf(x);
    case Unary::kSqrt: return sqrtf(x);
    case Unary::kAbs: return fabsf(x);
    case Unary::kNeg: return -x;
    case Unary::kErf: return erff(x);
    case Unary::kGelu: return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    case Unary::kGeluTanh: {
      float inner = 0.79788456080286536f * (x + 0.044715f * x * x * x);
      return 0.5f * x * (1.0f + tanhf(inner));
    }
    case Unary::kHardSigmoid: return fmaxf(0.0f, fminf(1.0f, alpha * x + beta));
    case Unary::kHardSwish: return x * fmaxf(0.0f, fminf(1.0f, x / 6.0f + 0.5f));
    case Unary::kReciprocal: return 1.0f / x;
    case Unary::kFloor: return floorf(x);
    case Unary::kCeil: return ceilf(x);
    case Unary::kElu: return x > 0.0f ? x : alpha * expm1f(x);
    case Unary::kSoftplus: return x > 20.0f ? x : log1pf(expf(x));
    case Unary::kSin: return sinf(x);
    case Unary::kCos: return cosf(x);
  }
  return x;
}

__global__ void unary_kernel(Unary op, const float* x, float* y, int64_t n, float alpha,
                             float beta) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y[i] = apply_unary(op, x[i], alpha, beta);
}

__device__ inline float apply_binary(Binary op, float a, float b) {
  switch (op) {
    case Binary::kAdd: return a + b;
    case Binary::kSub: return a - b;
    case Binary::kMul: return a * b;
    case Binary::kDiv: return a / b;
    case Binary::kPow: return powf(a, b);
    case Binary::kMax: return (a != a || a > b) ? a : b;  // NaN wins
    case Binary::kMin: return (a != a || a < b) ? a : b;
  }
  return a;
}

__global__ void binary_contiguous_kernel(Binary op, const float* __restrict__ a, const float* __restrict__ b,
                                         float* __restrict__ y, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y[i] = apply_binary(op, a[i], b[i]);
}

__global__ void binary_strided_kernel(Binary op, const float* __restrict__ a, Strided a_layout,
                                      const float* __restrict__ b, Strided b_layout, float* __restrict__ y,
                                      int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y[i] = apply_binary(op, a[strided_offset(a_layout, i)], b[strided_offset(b_layout, i)]);
}

__global__ void bias_activation_kernel(float* __restrict__ y, const float* __restrict__ bias, int64_t rows,
                                       int64_t cols, bool relu) {
  int64_t n = rows * cols;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float v = y[i];
    if (bias) v += bias[i % cols];
    if (relu && v < 0.0f) v = 0.0f;
    y[i] = v;
  }
}

__global__ void channel_affine_kernel(const float* __restrict__ x, const float* __restrict__ scale,
                                      const float* __restrict__ shift, float* __restrict__ y, int64_t n,
                                      int64_t channels, int64_t inner) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t c = (i / inner) % channels;
    y[i] = x[i] * scale[c] + shift[c];
  }
}

}  // namespace

void channel_affine(const float* x, const float* scale, const float* shift, float* y, int64_t n, int64_t channels,
                    int64_t inner, cudaStream_t stream) {
  if (n <= 0) return;
  channel_affine_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, scale, shift, y, n, channels, inner);
  HETSCHED_CUDA_CHECK_LAUNCH("channel_affine_kernel");
}

void unary(Unary op, const float* x, float* y, int64_t n, float alpha, float beta, cudaStream_t stream) {
  if (n <= 0) return;
  unary_kernel<<<blocks_for(n), kThreads, 0, stream>>>(op, x, y, n, alpha, beta);
  HETSCHED_CUDA_CHECK_LAUNCH("unary_kernel");
}

void binary(Binary op, const float* a, const Strided& a_layout, const float* b, const Strided& b_layout, float* y,
            int64_t n, bool contiguous, cudaStream_t stream) {
  if (n <= 0) return;
  if (contiguous) {
    binary_contiguous_kernel<<<blocks_for(n), kThreads, 0, stream>>>(op, a, b, y, n);
    HETSCHED_CUDA_CHECK_LAUNCH("binary_contiguous_kernel");
  } else {
    binary_strided_kernel<<<blocks_for(n), kThreads, 0, stream>>>(op, a, a_layout, b, b_layout, y, n);
    HETSCHED_CUDA_CHECK_LAUNCH("binary_strided_kernel");
  }
}

void bias_activation(float* y, const float* bias, int64_t rows, int64_t cols, bool relu, cudaStream_t stream) {
  if (rows * cols <= 0 || (!bias && !relu)) return;
  bias_activation_kernel<<<blocks_for(rows * cols), kThreads, 0, stream>>>(y, bias, rows, cols, relu);
  HETSCHED_CUDA_CHECK_LAUNCH("bias_activation_kernel");
}

}  // namespace hetsched::cuda::kern
