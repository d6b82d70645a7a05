// Data movement CUDA kernels: strided copies (Transpose, Slice, Expand),
// index-map copies, Gather and Pad (device_kernels.h). Copies move whole
// elements as unsigned integers of the element's width, so one kernel per
// width serves every dtype.
#include <cstdint>
#include <cstring>

#include "backends/cuda/kernels/common.cuh"
#include "hetsched/error.h"

namespace hetsched::cuda::kern {
namespace {

template <typename T>
__global__ void strided_copy_kernel(const T* __restrict__ src, Strided layout, T* __restrict__ dst, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    dst[i] = src[strided_offset(layout, i)];
}

template <typename T>
__global__ void index_copy_kernel(const T* __restrict__ src, const int64_t* __restrict__ map, T* __restrict__ dst,
                                  int64_t n, T fill) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t from = map[i];
    dst[i] = from >= 0 ? src[from] : fill;
  }
}

template <typename T, typename I>
__global__ void gather_kernel(const T* __restrict__ src, const I* __restrict__ indices, T* __restrict__ dst,
                              int64_t outer, int64_t axis_len, int64_t n_indices, int64_t inner) {
  int64_t n = outer * n_indices * inner;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t in = i % inner;
    int64_t j = (i / inner) % n_indices;
    int64_t o = i / (inner * n_indices);
    int64_t index = static_cast<int64_t>(indices[j]);
    if (index < 0) index += axis_len;
    dst[i] = index >= 0 && index < axis_len ? src[(o * axis_len + index) * inner + in] : T(0);
  }
}

struct PadParams {
  int rank = 0;
  int64_t in[kMaxRank] = {}, out[kMaxRank] = {}, begin[kMaxRank] = {};
};

// Maps an index of the padded axis into the input axis of size `size`, per
// mode; -1 for the constant's region.
__device__ inline int64_t pad_source(int64_t i, int64_t size, PadMode mode) {
  if (i >= 0 && i < size) return i;
  if (mode == PadMode::kConstant) return -1;
  if (mode == PadMode::kEdge) return i < 0 ? 0 : size - 1;
  // Reflect without repeating the edge, continuing past one period like
  // numpy.pad: a period of 2 * (size - 1).
  if (size == 1) return 0;
  int64_t period = 2 * (size - 1);
  int64_t m = i % period;
  if (m < 0) m += period;
  return m < size ? m : period - m;
}

__global__ void pad_kernel(const float* __restrict__ x, float* __restrict__ y, PadParams p, PadMode mode,
                           float value, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t rest = i, offset = 0, scale = 1;
    bool inside = true;
    for (int d = p.rank - 1; d >= 0; --d) {
      int64_t index = rest % p.out[d];
      rest /= p.out[d];
      int64_t from = pad_source(index - p.begin[d], p.in[d], mode);
      if (from < 0) inside = false;
      offset += from * scale;
      scale *= p.in[d];
    }
    y[i] = inside ? x[offset] : value;
  }
}

int64_t numel(const Strided& layout) {
  int64_t n = 1;
  for (int d = 0; d < layout.rank; ++d) n *= layout.dims[d];
  return n;
}

[[noreturn]] void bad_element_size(const char* what, int element_size) {
  throw Error(ErrorCode::kRuntime, std::string(what) + ": element size " + std::to_string(element_size) +
                                       " is not 1, 2, 4 or 8 bytes");
}

}  // namespace

void strided_copy(const void* src, const Strided& layout, void* dst, int element_size, cudaStream_t stream) {
  int64_t n = numel(layout);
  if (n <= 0) return;
  auto launch = [&](auto zero) {
    using T = decltype(zero);
    strided_copy_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const T*>(src), layout,
                                                                    static_cast<T*>(dst), n);
  };
  switch (element_size) {
    case 1: launch(uint8_t{}); break;
    case 2: launch(uint16_t{}); break;
    case 4: launch(uint32_t{}); break;
    case 8: launch(uint64_t{}); break;
    default: bad_element_size("strided_copy", element_size);
  }
  HETSCHED_CUDA_CHECK_LAUNCH("strided_copy_kernel");
}

void index_copy(const void* src, const int64_t* map, void* dst, int64_t n, int element_size, const void* fill,
                cudaStream_t stream) {
  if (n <= 0) return;
  auto launch = [&](auto zero) {
    using T = decltype(zero);
    T value = 0;
    if (fill) std::memcpy(&value, fill, sizeof(T));
    index_copy_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const T*>(src), map,
                                                                  static_cast<T*>(dst), n, value);
  };
  switch (element_size) {
    case 1: launch(uint8_t{}); break;
    case 2: launch(uint16_t{}); break;
    case 4: launch(uint32_t{}); break;
    case 8: launch(uint64_t{}); break;
    default: bad_element_size("index_copy", element_size);
  }
  HETSCHED_CUDA_CHECK_LAUNCH("index_copy_kernel");
}

void gather(const void* src, const void* indices, bool indices_int64, void* dst, int64_t outer, int64_t axis_len,
            int64_t n_indices, int64_t inner, int element_size, cudaStream_t stream) {
  int64_t n = outer * n_indices * inner;
  if (n <= 0) return;
  auto launch = [&](auto zero) {
    using T = decltype(zero);
    if (indices_int64)
      gather_kernel<T, int64_t><<<blocks_for(n), kThreads, 0, stream>>>(
          static_cast<const T*>(src), static_cast<const int64_t*>(indices), static_cast<T*>(dst), outer, axis_len,
          n_indices, inner);
    else
      gather_kernel<T, int32_t><<<blocks_for(n), kThreads, 0, stream>>>(
          static_cast<const T*>(src), static_cast<const int32_t*>(indices), static_cast<T*>(dst), outer, axis_len,
          n_indices, inner);
  };
  switch (element_size) {
    case 1: launch(uint8_t{}); break;
    case 2: launch(uint16_t{}); break;
    case 4: launch(uint32_t{}); break;
    case 8: launch(uint64_t{}); break;
    default: bad_element_size("gather", element_size);
  }
  HETSCHED_CUDA_CHECK_LAUNCH("gather_kernel");
}

void pad(const float* x, const int64_t* in_dims, float* y, const int64_t* out_dims, const int64_t* pad_begin,
         int rank, PadMode mode, float value, cudaStream_t stream) {
  if (rank > kMaxRank) throw Error(ErrorCode::kRuntime, "pad: rank above " + std::to_string(kMaxRank));
  PadParams p;
  p.rank = rank;
  int64_t n = 1;
  for (int d = 0; d < rank; ++d) {
    p.in[d] = in_dims[d];
    p.out[d] = out_dims[d];
    p.begin[d] = pad_begin[d];
    n *= out_dims[d];
  }
  if (n <= 0) return;
  pad_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, y, p, mode, value, n);
  HETSCHED_CUDA_CHECK_LAUNCH("pad_kernel");
}

}  // namespace hetsched::cuda::kern
