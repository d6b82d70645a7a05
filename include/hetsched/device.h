// Devices: the processing units work is placed on.
//
// A device spec (the --devices flag) is a comma-separated list:
//   cpu          one device on every core of the machine
//   cpu:2        one device on core 2
//   cpu:0-3      one device on cores 0..3
//   cpu:0,cpu:1  two devices, one core each
//   cpu:0,cpu:1,cpu:0-1  the same two and their union, a wide device: plans
//                never run it at once with either (overlapping devices)
//   emu:npu      the device "npu" of the platform file (--platform), emulated
//   cuda:0       CUDA GPU 0 with kDefaultCudaStreams streams (cuda = cuda:0)
//   cuda:0*2     CUDA GPU 0 with 2 streams
// Cores are the logical processors (PUs) the OS numbers; a core may belong
// to one device only, except that a device whose cores are exactly the union
// of other devices of the spec overlaps them. GPUs are numbered as the CUDA runtime numbers them
// (after CUDA_VISIBLE_DEVICES); a GPU may be listed once. A CUDA device is a
// usage error in a build without the CUDA backend or on a machine without a
// CUDA GPU, saying which.
#pragma once

#include <string>
#include <vector>

namespace hetsched {

// kEmulated: a device described by a platform file ("emu:NAME"), run by
// emulation on this machine (see platform.h). kCuda: a CUDA GPU ("cuda:N").
enum class DeviceKind { kCpu, kEmulated, kCuda };

// Streams of a CUDA device whose spec gives no count ("cuda:0"): enough for
// the multi-stream schedulers' branches, few enough to share the GPU well.
constexpr int kDefaultCudaStreams = 4;
constexpr int kMaxCudaStreams = 64;

struct DeviceSpec {
  DeviceKind kind = DeviceKind::kCpu;
  std::vector<int> cores;  // kCpu: sorted, unique OS processor numbers
  std::string emulated;    // kEmulated: the platform file's device name (spec "emu:NAME")
  int gpu = 0;             // kCuda: the CUDA device number N of "cuda:N"
  int streams = kDefaultCudaStreams;  // kCuda: S of "cuda:N*S"
  // Canonical name: "cpu:0-1", "cpu:3", "cpu:0-1+4" for a gap, "emu:npu",
  // "cuda:0". A GPU's stream count is not part of its name (plans name
  // lanes by device and stream; the platform's signature has the count).
  std::string name() const;
};

// Parses and validates a device spec against this machine: unknown device
// kinds, malformed ranges, cores the machine (or this process's affinity
// mask) lacks, and cores shared by two devices (but a union device's with
// the devices it is the union of) are ErrorCode::kUsage errors naming the
// offending part.
std::vector<DeviceSpec> parse_device_spec(const std::string& spec);

// The CPU device to put beside a CUDA GPU: every one of `usable_cores` but
// the first, which the threads driving the GPU's streams keep (docs/cuda.md);
// "cpu:1-15" on 16 cores. "" with fewer than two cores.
std::string cpu_spec_beside_gpu(const std::vector<int>& usable_cores);

// The devices `hetsched run MODEL` schedules over when given none: this
// machine's usable cores in two halves ("cpu:0,cpu:1" on 2 cores,
// "cpu:0-7,cpu:8-15" on 16), so that auto may run branches side by side and
// the rest on their union, which it adds (choose.h); with CUDA GPUs, every
// core but the first (left to the threads driving the GPUs, as
// cpu_spec_beside_gpu) as one device beside each GPU. "cpu" on one core.
std::string machine_devices_spec();

struct CacheInfo {
  int level = 0;            // 1, 2, 3
  long long size_bytes = 0;
  int n_sharing_cores = 0;  // logical processors sharing one instance
  // Per instance holding a usable processor: the usable processors (OS
  // numbers, ascending) it serves. A core group's share of the level is
  // size_bytes times the instances its cores cover.
  std::vector<std::vector<int>> instances;
};

struct MachineInfo {
  std::string cpu_model;
  int n_logical_cores = 0;   // processors this process may run on
  int n_physical_cores = 0;
  int n_numa_nodes = 0;
  std::vector<int> usable_cores;  // OS numbers of the processors above
  std::vector<CacheInfo> caches;  // one entry per level
  // One line per CUDA GPU: "cuda:0  NVIDIA H100 80GB HBM3, 79.1 GiB,
  // compute capability 9.0, 132 SMs, driver 580.65.06, CUDA 13.0".
  std::vector<std::string> gpus;
  // Why `gpus` is empty ("no CUDA GPU: cudaGetDeviceCount returned ...",
  // "this build has no CUDA backend ..."); "" when it is not.
  std::string gpu_note;
  // The CUDA libraries the backend runs with; "" without the backend.
  std::string gpu_libraries;
  // How the CPU kernels' OpenMP threads wait (openmp_wait_settings()).
  std::string openmp_waits;
};

// Reads the machine's topology (hwloc).
MachineInfo describe_machine();

// How OpenMP threads wait between kernels. The CPU kernels (oneDNN) run on
// libgomp, which reads OMP_WAIT_POLICY and GOMP_SPINCOUNT once, when it is
// loaded. By default a thread spins 300,000 times before it sleeps, but only
// 100 times while the process holds more OpenMP threads than it has cores:
// as soon as two executors' CPU devices live side by side (`compare`,
// `demo` and a Session's measured check keep one executor per plan), or
// devices overlap (cpu:0, cpu:1 and cpu:0-1). Then every kernel of a
// multi-core device pays for waking its threads: on 2 cores googlenet on
// cpu:0-1 measured 19.5 ms in `compare`, 8.4 ms in `hetsched run`, and a
// one-core device looked faster than both cores. With OMP_WAIT_POLICY=ACTIVE
// and GOMP_SPINCOUNT=30000 libgomp spins 30,000 times (about 0.3 ms) where
// it has a core per thread, and 1000 times where it has not (10.8 ms
// there). libgomp's own 300,000 (about 3 ms) kept an idle multi-core
// device's threads spinning on cores a device sharing them used next.
//
// prefer_active_openmp_waits() sets those two in the environment unless
// either is set, and returns whether it set them. They act on a process that
// loads libgomp afterwards: the CLI runs itself again with them, the Python
// package sets them while it loads its extension (and takes them out of the
// environment again); a C++ program linking hetsched should set them where
// it is started.
bool prefer_active_openmp_waits();
// "OMP_WAIT_POLICY=ACTIVE GOMP_SPINCOUNT=30000": the two as the
// environment held them when libgomp read it, at load ("OMP_WAIT_POLICY
// unset GOMP_SPINCOUNT unset" when neither was set).
std::string openmp_wait_settings();

}  // namespace hetsched
