// Reducing CUDA kernels: Softmax / LogSoftmax, layer normalisation, the
// Reduce* ops and the general pooling kernel (device_kernels.h).
#include <cmath>

#include "backends/cuda/kernels/common.cuh"

namespace hetsched::cuda::kern {
namespace {

// One block per row of `len` contiguous elements (inner == 1, the common
// case: the last axis).
__global__ void softmax_rows_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t rows, int64_t len,
                                    bool log) {
  __shared__ float scratch[32];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* xr = x + row * len;
    float* yr = y + row * len;
    float m = -INFINITY;
    for (int64_t i = threadIdx.x; i < len; i += blockDim.x) m = fmaxf(m, xr[i]);
    m = block_max(m, scratch);
    float s = 0.0f;
    for (int64_t i = threadIdx.x; i < len; i += blockDim.x) s += expf(xr[i] - m);
    s = block_sum(s, scratch);
    if (log) {
      float log_s = logf(s);
      for (int64_t i = threadIdx.x; i < len; i += blockDim.x) yr[i] = xr[i] - m - log_s;
    } else {
      float inv = 1.0f / s;
      for (int64_t i = threadIdx.x; i < len; i += blockDim.x) yr[i] = expf(xr[i] - m) * inv;
    }
  }
}

// One thread per (outer, inner) pair, walking the axis at stride `inner`:
// neighbouring threads read neighbouring elements, so loads coalesce.
__global__ void softmax_strided_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t outer, int64_t len,
                                       int64_t inner, bool log) {
  int64_t n = outer * inner;
  for (int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; t < n;
       t += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t o = t / inner, in = t % inner;
    const float* xp = x + o * len * inner + in;
    float* yp = y + o * len * inner + in;
    float m = -INFINITY;
    for (int64_t a = 0; a < len; ++a) m = fmaxf(m, xp[a * inner]);
    float s = 0.0f;
    for (int64_t a = 0; a < len; ++a) s += expf(xp[a * inner] - m);
    if (log) {
      float log_s = logf(s);
      for (int64_t a = 0; a < len; ++a) yp[a * inner] = xp[a * inner] - m - log_s;
    } else {
      float inv = 1.0f / s;
      for (int64_t a = 0; a < len; ++a) yp[a * inner] = expf(xp[a * inner] - m) * inv;
    }
  }
}

// One block per row; mean first, then the variance around it (two passes
// over the row: more accurate than E[x^2] - E[x]^2 for rows far from 0).
__global__ void layer_norm_kernel(const float* __restrict__ x, const float* __restrict__ scale,
                                  const float* __restrict__ bias, float* __restrict__ y, int64_t rows, int64_t cols,
                                  float epsilon) {
  __shared__ float scratch[32];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* xr = x + row * cols;
    float* yr = y + row * cols;
    float s = 0.0f;
    for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) s += xr[i];
    float mean = block_sum(s, scratch) / static_cast<float>(cols);
    float v = 0.0f;
    for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) {
      float d = xr[i] - mean;
      v += d * d;
    }
    float var = block_sum(v, scratch) / static_cast<float>(cols);
    float inv = 1.0f / sqrtf(var + epsilon);
    for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) {
      float out = (xr[i] - mean) * inv * scale[i];
      yr[i] = bias ? out + bias[i] : out;
    }
  }
}

struct AxisWindow {
  int64_t start, lo, hi, padded;
};

// The taps [lo, hi) of output position o that land inside the input, the
// position of tap 0, and the taps inside the padded extent (the reference
// kernel's axis_taps).
__device__ inline AxisWindow window(const PoolGeometry& g, int axis, int64_t o) {
  AxisWindow w;
  int64_t k = g.kernel[axis], d = g.dilation[axis], in = g.in[axis];
  w.start = o * g.stride[axis] - g.pad_begin[axis];
  w.lo = 0;
  while (w.lo < k && w.start + w.lo * d < 0) ++w.lo;
  w.hi = w.lo;
  while (w.hi < k && w.start + w.hi * d < in) ++w.hi;
  w.padded = 0;
  while (w.padded < k && w.start + w.padded * d < in + g.pad_end[axis]) ++w.padded;
  return w;
}

__global__ void pool_kernel(bool max, bool count_include_pad, const float* __restrict__ x, float* __restrict__ y,
                            PoolGeometry g) {
  int64_t out_plane = g.out[0] * g.out[1] * g.out[2], in_plane = g.in[0] * g.in[1] * g.in[2];
  int64_t n = g.planes * out_plane;
  for (int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; t < n;
       t += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t ow = t % g.out[2], oh = (t / g.out[2]) % g.out[1], od = (t / (g.out[2] * g.out[1])) % g.out[0];
    int64_t p = t / out_plane;
    AxisWindow wd = window(g, 0, od), wh = window(g, 1, oh), ww = window(g, 2, ow);
    const float* xp = x + p * in_plane;
    float best = -INFINITY, sum = 0.0f;
    bool any = false;
    for (int64_t kd = wd.lo; kd < wd.hi; ++kd) {
      int64_t id = wd.start + kd * g.dilation[0];
      for (int64_t kh = wh.lo; kh < wh.hi; ++kh) {
        int64_t ih = wh.start + kh * g.dilation[1];
        const float* row = xp + (id * g.in[1] + ih) * g.in[2];
        for (int64_t kw = ww.lo; kw < ww.hi; ++kw) {
          float v = row[ww.start + kw * g.dilation[2]];
          // The first tap always wins, then greater values and a first NaN.
          if (!any || v > best || (v != v && best == best)) best = v;
          any = true;
          sum += v;
        }
      }
    }
    if (max) {
      y[t] = best;
    } else {
      int64_t count = count_include_pad ? wd.padded * wh.padded * ww.padded
                                        : (wd.hi - wd.lo) * (wh.hi - wh.lo) * (ww.hi - ww.lo);
      y[t] = sum / static_cast<float>(count);
    }
  }
}

// ---- Reduce*: an accumulator per thread (double, as the reference kernel
// accumulates), combined across a block.

__device__ inline double reduction_identity(Reduction op) {
  return op == Reduction::kMax ? -INFINITY : op == Reduction::kMin ? INFINITY : 0.0;
}

// Folds one more value (or a partial result: Max, Min and the sums combine as
// they fold) into `acc`; a NaN in Max / Min stays.
__device__ inline double reduction_fold(Reduction op, double acc, double v) {
  switch (op) {
    case Reduction::kMax: return acc != acc || acc > v ? acc : v;
    case Reduction::kMin: return acc != acc || acc < v ? acc : v;
    default: return acc + v;
  }
}

__device__ inline double reduction_term(Reduction op, float v) {
  double d = v;
  return op == Reduction::kSumSquare || op == Reduction::kL2 ? d * d : op == Reduction::kL1 ? fabs(d) : d;
}

__device__ inline float reduction_finish(Reduction op, double acc, int64_t n) {
  return static_cast<float>(op == Reduction::kMean ? acc / static_cast<double>(n)
                            : op == Reduction::kL2 ? sqrt(acc)
                                                   : acc);
}

__device__ inline double reduction_over_block(Reduction op, double v, double* scratch) {
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  for (int offset = 16; offset > 0; offset /= 2) v = reduction_fold(op, v, __shfl_xor_sync(0xffffffffu, v, offset));
  __syncthreads();  // scratch may still be read by the previous output's reduction
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : reduction_identity(op);
  for (int offset = 16; offset > 0; offset /= 2) v = reduction_fold(op, v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// One block per output element: long reductions (a global mean over H x W).
__global__ void reduce_block_kernel(Reduction op, const float* __restrict__ x, Strided kept, Strided reduced,
                                    float* __restrict__ y, int64_t n_out, int64_t n_reduced) {
  __shared__ double scratch[32];
  for (int64_t o = blockIdx.x; o < n_out; o += gridDim.x) {
    const float* xo = x + strided_offset(kept, o);
    double acc = reduction_identity(op);
    for (int64_t r = threadIdx.x; r < n_reduced; r += blockDim.x)
      acc = reduction_fold(op, acc, reduction_term(op, xo[strided_offset(reduced, r)]));
    acc = reduction_over_block(op, acc, scratch);
    if (threadIdx.x == 0) y[o] = reduction_finish(op, acc, n_reduced);
  }
}

// One thread per output element: short reductions over many outputs.
__global__ void reduce_thread_kernel(Reduction op, const float* __restrict__ x, Strided kept, Strided reduced,
                                     float* __restrict__ y, int64_t n_out, int64_t n_reduced) {
  for (int64_t o = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; o < n_out;
       o += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float* xo = x + strided_offset(kept, o);
    double acc = reduction_identity(op);
    for (int64_t r = 0; r < n_reduced; ++r)
      acc = reduction_fold(op, acc, reduction_term(op, xo[strided_offset(reduced, r)]));
    y[o] = reduction_finish(op, acc, n_reduced);
  }
}

unsigned row_blocks(int64_t rows) { return static_cast<unsigned>(rows < 65535 ? (rows < 1 ? 1 : rows) : 65535); }

}  // namespace

void softmax(const float* x, float* y, int64_t outer, int64_t len, int64_t inner, bool log, cudaStream_t stream) {
  if (outer * len * inner <= 0) return;
  if (inner == 1) {
    softmax_rows_kernel<<<row_blocks(outer), kThreads, 0, stream>>>(x, y, outer, len, log);
    HETSCHED_CUDA_CHECK_LAUNCH("softmax_rows_kernel");
  } else {
    softmax_strided_kernel<<<blocks_for(outer * inner), kThreads, 0, stream>>>(x, y, outer, len, inner, log);
    HETSCHED_CUDA_CHECK_LAUNCH("softmax_strided_kernel");
  }
}

void layer_norm(const float* x, const float* scale, const float* bias, float* y, int64_t rows, int64_t cols,
                float epsilon, cudaStream_t stream) {
  if (rows * cols <= 0) return;
  layer_norm_kernel<<<row_blocks(rows), kThreads, 0, stream>>>(x, scale, bias, y, rows, cols, epsilon);
  HETSCHED_CUDA_CHECK_LAUNCH("layer_norm_kernel");
}

void reduce(Reduction op, const float* x, const Strided& kept, const Strided& reduced, float* y, cudaStream_t stream) {
  int64_t n_out = 1, n_reduced = 1;
  for (int d = 0; d < kept.rank; ++d) n_out *= kept.dims[d];
  for (int d = 0; d < reduced.rank; ++d) n_reduced *= reduced.dims[d];
  if (n_out <= 0 || n_reduced <= 0) return;
  if (n_reduced >= kThreads) {
    reduce_block_kernel<<<row_blocks(n_out), kThreads, 0, stream>>>(op, x, kept, reduced, y, n_out, n_reduced);
    HETSCHED_CUDA_CHECK_LAUNCH("reduce_block_kernel");
  } else {
    reduce_thread_kernel<<<blocks_for(n_out), kThreads, 0, stream>>>(op, x, kept, reduced, y, n_out, n_reduced);
    HETSCHED_CUDA_CHECK_LAUNCH("reduce_thread_kernel");
  }
}

void pool(bool max, bool count_include_pad, const float* x, float* y, const PoolGeometry& g, cudaStream_t stream) {
  int64_t n = g.planes * g.out[0] * g.out[1] * g.out[2];
  if (n <= 0) return;
  pool_kernel<<<blocks_for(n), kThreads, 0, stream>>>(max, count_include_pad, x, y, g);
  HETSCHED_CUDA_CHECK_LAUNCH("pool_kernel");
}

}  // namespace hetsched::cuda::kern
