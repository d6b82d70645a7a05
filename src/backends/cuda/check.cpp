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

// "" or, after a sticky error (reported by `status`, or by an earlier CUDA
// call of this thread), the sentence that says the process must be
// restarted.
std::string sticky_note(cudaError_t status) {
  if (!is_sticky_error(status)) status = cudaPeekAtLastError();
  if (!is_sticky_error(status)) return "";
  return fmt::format("; {} is sticky: this process's CUDA context is lost and every later CUDA call fails, so "
                     "restart the process",
                     cudaGetErrorName(status));
}

}  // namespace

bool is_sticky_error(cudaError_t status) {
  // By number: the newest of these codes are missing from older toolkits'
  // headers, and the numbers do not change.
  switch (static_cast<int>(status)) {
    case 226:  // cudaErrorContained
    case 700:  // cudaErrorIllegalAddress
    case 702:  // cudaErrorLaunchTimeout
    case 710:  // cudaErrorAssert
    case 714:  // cudaErrorHardwareStackError
    case 715:  // cudaErrorIllegalInstruction
    case 716:  // cudaErrorMisalignedAddress
    case 717:  // cudaErrorInvalidAddressSpace
    case 718:  // cudaErrorInvalidPc
    case 719:  // cudaErrorLaunchFailure
    case 721:  // cudaErrorTensorMemoryLeak
    case 810:  // cudaErrorMpsClientTerminated
    case 911:  // cudaErrorExternalDevice
      return true;
    default:
      return false;
  }
}

const char* cuda_error_name(cudaError_t status) { return cudaGetErrorName(status); }
const char* cuda_error_text(cudaError_t status) { return cudaGetErrorString(status); }

void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line) {
  // Clears the error when it is not sticky; a sticky one (an illegal address
  // in a kernel) stays, and every later call reports it, as it should: the
  // context is unusable.
  cudaGetLastError();
  throw Error(ErrorCode::kRuntime, fmt::format("{} failed: {} ({}) [{}:{}]{}", call, cudaGetErrorName(status),
                                               cudaGetErrorString(status), source_path(file), line,
                                               sticky_note(status)));
}

void throw_cudnn_error(cudnnStatus_t status, const char* call, const char* file, int line) {
  // cuDNN 9 keeps a more precise message of the last failure per thread.
  char detail[512] = {0};
  cudnnGetLastErrorString(detail, sizeof(detail));
  std::string more = detail[0] ? fmt::format(": {}", detail) : "";
  for (char& c : more)
    if (c == '\n') c = ' ';
  throw Error(ErrorCode::kRuntime, fmt::format("{} failed: {}{} [{}:{}]{}", call, cudnnGetErrorString(status), more,
                                               source_path(file), line, sticky_note(cudaSuccess)));
}

void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) {
  throw Error(ErrorCode::kRuntime, fmt::format("{} failed: {} ({}) [{}:{}]{}", call, cublasGetStatusName(status),
                                               cublasGetStatusString(status), source_path(file), line,
                                               sticky_note(cudaSuccess)));
}

void check_launch(const char* kernel, const char* file, int line) {
  cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess)
    throw Error(ErrorCode::kRuntime,
                fmt::format("launching the CUDA kernel {} failed: {} ({}) [{}:{}]{}", kernel, cudaGetErrorName(status),
                            cudaGetErrorString(status), source_path(file), line, sticky_note(status)));
}

}  // namespace hetsched::cuda
