// Status checks (check.h): one-line hetsched::Error messages naming the call.
#include "backends/cuda/check.h"

#include <cstring>
#include <string>

#include <fmt/format.h>

#include "hetsched/error.h"

namespace hetsched::cuda {
namespace {

// "src/backends/cuda/runtime.cpp" from an absolute __FILE__: the part a
// reader of the sources recognises.
const char* source_path(const char* file) {
  const char* src = std::strstr(file, "src/backends/");
  return src ? src : file;
}

}  // namespace

const char* cuda_error_name(cudaError_t status) { return cudaGetErrorName(status); }
const char* cuda_error_text(cudaError_t status) { return cudaGetErrorString(status); }

void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line) {
  // Clears the error when it is not sticky; a sticky one (an illegal address
  // in a kernel) stays, and every later call reports it, as it should: the
  // context is unusable.
  cudaGetLastError();
  throw Error(ErrorCode::kRuntime, fmt::format("{} failed: {} ({}) [{}:{}]", call, cudaGetErrorName(status),
                                               cudaGetErrorString(status), source_path(file), line));
}

void throw_cudnn_error(cudnnStatus_t status, const char* call, const char* file, int line) {
  // cuDNN 9 keeps a more precise message of the last failure per thread.
  char detail[512] = {0};
  cudnnGetLastErrorString(detail, sizeof(detail));
  std::string more = detail[0] ? fmt::format(": {}", detail) : "";
  for (char& c : more)
    if (c == '\n') c = ' ';
  throw Error(ErrorCode::kRuntime, fmt::format("{} failed: {}{} [{}:{}]", call, cudnnGetErrorString(status), more,
                                               source_path(file), line));
}

void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) {
  throw Error(ErrorCode::kRuntime, fmt::format("{} failed: {} ({}) [{}:{}]", call, cublasGetStatusName(status),
                                               cublasGetStatusString(status), source_path(file), line));
}

void check_launch(const char* kernel, const char* file, int line) {
  cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess)
    throw Error(ErrorCode::kRuntime,
                fmt::format("launching the CUDA kernel {} failed: {} ({}) [{}:{}]", kernel, cudaGetErrorName(status),
                            cudaGetErrorString(status), source_path(file), line));
}

}  // namespace hetsched::cuda
