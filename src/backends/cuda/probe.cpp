// probe_gpus() of the CUDA backend (platform/gpu_probe.h): asks the CUDA
// runtime for the GPUs without creating a context on them, so a machine
// without a GPU (or without a driver) gets an answer, not an error. The
// kernel questions of gpu_probe.h are the kernel registry's (gpu_op.h).
#include <cctype>
#include <fstream>
#include <sstream>
#include <string>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <fmt/format.h>

#include "backends/cuda/gpu_op.h"
#include "platform/gpu_probe.h"

namespace hetsched {
namespace {

std::string format_gib(int64_t bytes) { return fmt::format("{:.1f} GiB", static_cast<double>(bytes) / (1 << 30)); }

std::string cuda_version(int v) { return fmt::format("{}.{}", v / 1000, (v % 1000) / 10); }

// The kernel module's version ("580.65.06") from /proc, "" when unreadable
// (containers may hide it). The CUDA driver API version alone does not name
// the driver release.
std::string kernel_module_version() {
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line;
  if (!std::getline(in, line)) return "";
  size_t module = line.find("Module");
  std::istringstream words(module == std::string::npos ? line : line.substr(module));
  std::string word;
  while (words >> word)
    if (!word.empty() && std::isdigit(static_cast<unsigned char>(word[0])) && word.find('.') != std::string::npos)
      return word;
  return "";
}

// FP32 units per SM: 64 on Volta, Turing and A100 (8.0), 128 on the other
// Ampere parts, Ada, Hopper and Blackwell.
int fp32_lanes_per_sm(int major, int minor) {
  if (major < 8 || (major == 8 && minor == 0)) return 64;
  return 128;
}

GpuProbe probe() {
  GpuProbe result;
  int runtime = 0;
  cudaRuntimeGetVersion(&runtime);
  size_t cudnn = cudnnGetVersion();
  int cublas_major = 0, cublas_minor = 0, cublas_patch = 0;
  cublasGetProperty(MAJOR_VERSION, &cublas_major);
  cublasGetProperty(MINOR_VERSION, &cublas_minor);
  cublasGetProperty(PATCH_LEVEL, &cublas_patch);
  // cuDNN 9 numbers its versions major * 10000 + minor * 100 + patch.
  result.libraries = fmt::format("CUDA runtime {}, cuDNN {}.{}.{}, cuBLAS {}.{}.{}", cuda_version(runtime),
                                 cudnn / 10000, cudnn % 10000 / 100, cudnn % 100, cublas_major, cublas_minor,
                                 cublas_patch);

  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();  // not sticky: later calls should not see it
    result.why_none = fmt::format("no CUDA GPU: cudaGetDeviceCount returned {} ({})", cudaGetErrorName(status),
                                  cudaGetErrorString(status));
    return result;
  }
  if (count == 0) {
    result.why_none = "no CUDA GPU: cudaGetDeviceCount returned 0";
    return result;
  }
  int driver = 0;
  cudaDriverGetVersion(&driver);
  std::string module = kernel_module_version();
  std::string driver_text = module.empty() ? fmt::format("CUDA {}", cuda_version(driver))
                                           : fmt::format("{}, CUDA {}", module, cuda_version(driver));
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) {
      cudaGetLastError();
      continue;
    }
    GpuInfo gpu;
    gpu.ordinal = i;
    gpu.name = prop.name;
    gpu.memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
    gpu.cc_major = prop.major;
    gpu.cc_minor = prop.minor;
    gpu.multiprocessors = prop.multiProcessorCount;
    gpu.l2_bytes = prop.l2CacheSize;
    gpu.driver = driver_text;
    int clock_khz = 0, memory_khz = 0, bus_bits = 0;
    cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, i);
    cudaDeviceGetAttribute(&memory_khz, cudaDevAttrMemoryClockRate, i);
    cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, i);
    cudaGetLastError();
    gpu.peak_gflops = gpu.multiprocessors * fp32_lanes_per_sm(gpu.cc_major, gpu.cc_minor) * 2.0 * clock_khz / 1e6;
    // Double data rate: two transfers per memory clock.
    gpu.bandwidth_gbps = 2.0 * memory_khz * 1e3 * (bus_bits / 8.0) / 1e9;
    result.gpus.push_back(gpu);
  }
  if (result.gpus.empty()) result.why_none = "no CUDA GPU: cudaGetDeviceProperties failed for every device";
  return result;
}

}  // namespace

std::string GpuInfo::summary() const {
  return fmt::format("cuda:{}  {}, {}, compute capability {}.{}, {} SMs, driver {}", ordinal, name,
                     format_gib(memory_bytes), cc_major, cc_minor, multiprocessors, driver);
}

const GpuProbe& probe_gpus() {
  static const GpuProbe result = probe();
  return result;
}

std::string gpu_declines_node(const Graph& graph, const Node& node) { return cuda::gpu_declines(graph, node); }

std::vector<std::string> gpu_kernel_op_types() { return cuda::gpu_op_types(); }

}  // namespace hetsched
