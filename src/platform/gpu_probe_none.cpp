// probe_gpus() in a build without the CUDA backend: no GPU, and why. The CUDA
// backend's src/backends/cuda/probe.cpp defines it otherwise.
#ifndef HETSCHED_WITH_CUDA

#include <fmt/format.h>

#include "platform/gpu_probe.h"

namespace hetsched {

std::string GpuInfo::summary() const { return fmt::format("{} (no CUDA backend)", name); }

const GpuProbe& probe_gpus() {
  static const GpuProbe probe{{},
                              "this build has no CUDA backend (configure with -DHETSCHED_WITH_CUDA=ON where the "
                              "CUDA toolkit and cuDNN are installed)",
                              ""};
  return probe;
}

}  // namespace hetsched

#endif  // HETSCHED_WITH_CUDA
