// Helpers shared by the backend's CUDA kernels: launch geometry, block
// reductions and index arithmetic over kern::Strided layouts.
#pragma once

#include <cstdint>

#include "backends/cuda/check.h"
#include "backends/cuda/kernels/device_kernels.h"

namespace hetsched::cuda::kern {

constexpr int kThreads = 256;

// Blocks for a grid-stride loop over n elements: enough to fill any current
// GPU several times over, capped so the grid stays valid.
inline unsigned blocks_for(int64_t n) {
  int64_t blocks = (n + kThreads - 1) / kThreads;
  if (blocks < 1) blocks = 1;
  if (blocks > 65535) blocks = 65535;
  return static_cast<unsigned>(blocks);
}

// Element offset of the output's i-th element under `layout`.
__device__ inline int64_t strided_offset(const Strided& layout, int64_t i) {
  int64_t offset = layout.base;
  for (int d = layout.rank - 1; d >= 0; --d) {
    int64_t dim = layout.dims[d];
    int64_t index = i % dim;
    i /= dim;
    offset += index * layout.strides[d];
  }
  return offset;
}

__device__ inline float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ inline float warp_max(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Block-wide sum / max for blockDim.x a multiple of 32 (at most 1024);
// every thread gets the result. `scratch` holds 32 floats of shared memory.
__device__ inline float block_sum(float v, float* scratch) {
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = warp_sum(v);
  __syncthreads();  // scratch may still be read by a previous reduction
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : 0.0f;
  return warp_sum(v);
}

__device__ inline float block_max(float v, float* scratch) {
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : -INFINITY;
  return warp_max(v);
}

}  // namespace hetsched::cuda::kern
