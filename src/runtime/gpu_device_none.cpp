// The GPU lanes' backend in a build without the CUDA backend: no GPU device
// can be made. The CUDA backend's
// src/backends/cuda/executor_device.cpp defines these otherwise.
#ifndef HETSCHED_WITH_CUDA

#include <fmt/format.h>

#include "hetsched/error.h"
#include "runtime/gpu_device.h"

namespace hetsched {

namespace {
constexpr const char* kNoBackend =
    "this build has no CUDA backend (configure with -DHETSCHED_WITH_CUDA=ON where the CUDA toolkit and cuDNN are "
    "installed)";
}  // namespace

std::unique_ptr<GpuDevice> make_gpu_device(const Graph&, const Plan& plan, int plan_device, int, int) {
  throw Error(ErrorCode::kUnsupported, fmt::format("{}: {}", plan.devices.at(plan_device), kNoBackend));
}

}  // namespace hetsched

#endif  // HETSCHED_WITH_CUDA
