// RAII holders of cuDNN descriptors and the packed NCHW tensor descriptors
// the GPU ops use (ops/conv.cpp, ops/pool.cpp).
#pragma once

#include <utility>
#include <vector>

#include "backends/cuda/check.h"

namespace hetsched::cuda::ops {

template <typename T, cudnnStatus_t (*Create)(T*), cudnnStatus_t (*Destroy)(T)>
class CudnnDescriptor {
 public:
  CudnnDescriptor() { HETSCHED_CUDA_CHECK(Create(&d_)); }
  ~CudnnDescriptor() {
    if (d_) Destroy(d_);
  }
  CudnnDescriptor(CudnnDescriptor&& other) noexcept : d_(std::exchange(other.d_, nullptr)) {}
  CudnnDescriptor& operator=(CudnnDescriptor&& other) noexcept {
    if (this != &other) {
      if (d_) Destroy(d_);
      d_ = std::exchange(other.d_, nullptr);
    }
    return *this;
  }
  CudnnDescriptor(const CudnnDescriptor&) = delete;
  CudnnDescriptor& operator=(const CudnnDescriptor&) = delete;
  T get() const { return d_; }

 private:
  T d_ = nullptr;
};

using TensorDescriptor =
    CudnnDescriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor>;
using FilterDescriptor =
    CudnnDescriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor>;
using ConvolutionDescriptor = CudnnDescriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor,
                                              cudnnDestroyConvolutionDescriptor>;
using PoolingDescriptor =
    CudnnDescriptor<cudnnPoolingDescriptor_t, cudnnCreatePoolingDescriptor, cudnnDestroyPoolingDescriptor>;
using ActivationDescriptor =
    CudnnDescriptor<cudnnActivationDescriptor_t, cudnnCreateActivationDescriptor, cudnnDestroyActivationDescriptor>;

// A dense float32 tensor of `dims` (4 or 5 of them: cuDNN's NCHW / NCDHW).
inline void set_packed(const TensorDescriptor& desc, const std::vector<int>& dims) {
  std::vector<int> strides(dims.size(), 1);
  for (size_t d = dims.size() - 1; d-- > 0;) strides[d] = strides[d + 1] * dims[d + 1];
  HETSCHED_CUDA_CHECK(cudnnSetTensorNdDescriptor(desc.get(), CUDNN_DATA_FLOAT, static_cast<int>(dims.size()),
                                                 dims.data(), strides.data()));
}

}  // namespace hetsched::cuda::ops
