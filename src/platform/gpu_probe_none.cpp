// platform/gpu_probe.h in a build without the CUDA backend: no GPU, and why;
// no GPU kernel. The CUDA backend's src/backends/cuda/probe.cpp defines it
// otherwise.
#ifndef HETSCHED_WITH_CUDA

#include <fmt/format.h>

#include "platform/gpu_probe.h"

namespace hetsched {

std::string GpuInfo::summary() const { return fmt::format("{} (no CUDA backend)", name); }

namespace {
constexpr const char* kNoBackend =
    "this build has no CUDA backend (configure with -DHETSCHED_WITH_CUDA=ON where the CUDA toolkit and cuDNN are "
    "installed)";
}  // namespace

const GpuProbe& probe_gpus() {
  static const GpuProbe probe{{}, kNoBackend, ""};
  return probe;
}

std::string gpu_declines_node(const Graph&, const Node&) { return kNoBackend; }

std::vector<std::string> gpu_kernel_op_types() { return {}; }

}  // namespace hetsched

#endif  // HETSCHED_WITH_CUDA
