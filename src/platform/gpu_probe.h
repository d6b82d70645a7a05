// The CUDA GPUs this process can use, as the CUDA backend sees them.
//
// Implemented by the CUDA backend (src/backends/cuda/probe.cpp) in a build
// with HETSCHED_WITH_CUDA, and by gpu_probe_none.cpp otherwise, so that
// device specs, platforms and `hetsched devices` ask the same question in
// both builds and get an answer that says why there is no GPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hetsched/graph.h"

namespace hetsched {

struct GpuInfo {
  int ordinal = 0;                 // the N of "cuda:N" (after CUDA_VISIBLE_DEVICES)
  std::string name;                // "NVIDIA H100 80GB HBM3"
  int64_t memory_bytes = 0;        // global memory
  int cc_major = 0, cc_minor = 0;  // compute capability
  int multiprocessors = 0;
  int64_t l2_bytes = 0;
  std::string driver;              // "580.65.06, CUDA 13.0" (the kernel module's version when readable)
  // Nominal peaks from the device's attributes (FP32 lanes x 2 x clock,
  // memory clock x bus width): roofline parameters until measured.
  double peak_gflops = 0;
  double bandwidth_gbps = 0;
  // One line for `hetsched devices`: name, memory, compute capability, driver.
  std::string summary() const;
};

struct GpuProbe {
  std::vector<GpuInfo> gpus;
  // Why `gpus` is empty, e.g. "no CUDA GPU: cudaGetDeviceCount returned
  // cudaErrorNoDevice (no CUDA-capable device is detected)" or "this build
  // has no CUDA backend"; "" when there are GPUs.
  std::string why_none;
  // Library versions the backend runs with ("CUDA runtime 13.0, cuDNN
  // 9.19.0, cuBLAS 13.0.2"); "" without the backend.
  std::string libraries;
};

// Asked once per process (the answer is cached): creating a CUDA context is
// not needed for it, but the runtime's first call costs milliseconds.
const GpuProbe& probe_gpus();

// What the backend's kernels run, asked without a GPU. Why the CUDA backend
// does not run `node` ("no CUDA kernel for X", "not float32", a shape that is
// not static); "" when it does. Without the backend: that the build has none.
std::string gpu_declines_node(const Graph& graph, const Node& node);
// The op types the CUDA backend has kernels for (sorted); empty without it.
std::vector<std::string> gpu_kernel_op_types();

}  // namespace hetsched
