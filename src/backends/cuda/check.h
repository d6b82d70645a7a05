// Status checks of the CUDA runtime, cuDNN and cuBLAS / cuBLASLt calls.
//
// HETSCHED_CUDA_CHECK(call) runs `call` and, unless it returned success,
// throws hetsched::Error(kRuntime) naming the call as written, the status's
// name and description, and where it was made:
//   "cudaMalloc(&ptr, bytes) failed: cudaErrorMemoryAllocation (out of
//    memory) [src/backends/cuda/runtime.cpp:40]"
// One macro serves the three libraries (check_status is overloaded on their
// status types). A CUDA error that is not sticky is cleared before throwing,
// so the next call does not report it again. A sticky one (an illegal
// address in a kernel) has lost the process's CUDA context: every later
// call of any library fails too, and nothing but a new process recovers
// (a device reset would also free what other libraries hold on the GPU).
// The message that reports it, and every later one of a thread that has
// seen it (cuDNN's and cuBLAS's too), ends by saying so.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

namespace hetsched::cuda {

[[noreturn]] void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line);
[[noreturn]] void throw_cudnn_error(cudnnStatus_t status, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line);

inline void check_status(cudaError_t status, const char* call, const char* file, int line) {
  if (status != cudaSuccess) throw_cuda_error(status, call, file, line);
}
inline void check_status(cudnnStatus_t status, const char* call, const char* file, int line) {
  if (status != CUDNN_STATUS_SUCCESS) throw_cudnn_error(status, call, file, line);
}
inline void check_status(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS) throw_cublas_error(status, call, file, line);
}

// Whether `status` leaves the process's CUDA context unusable: the codes
// the CUDA headers document as "the process must be terminated and
// relaunched" (cudaErrorIllegalAddress, cudaErrorLaunchFailure, ...).
bool is_sticky_error(cudaError_t status);

// "cudaErrorNoDevice (no CUDA-capable device is detected)".
const char* cuda_error_name(cudaError_t status);
const char* cuda_error_text(cudaError_t status);

// After launching one of the backend's own kernels: the launch's error (bad
// configuration, no kernel image for this GPU) as an Error naming `kernel`.
void check_launch(const char* kernel, const char* file, int line);

}  // namespace hetsched::cuda

#define HETSCHED_CUDA_CHECK(call) ::hetsched::cuda::check_status((call), #call, __FILE__, __LINE__)
#define HETSCHED_CUDA_CHECK_LAUNCH(kernel) ::hetsched::cuda::check_launch(kernel, __FILE__, __LINE__)
