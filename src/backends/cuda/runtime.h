// The CUDA runtime layer of the GPU backend: device memory (buffers and one
// arena), pinned host staging buffers, events, and one GPU's context of
// streams with their cuBLAS / cuBLASLt / cuDNN handles and scratch memory.
//
// Contract:
//   - Everything here needs a GPU. Constructors throw Error(kRuntime) naming
//     the failing CUDA call when there is none; ask probe_gpus()
//     (platform/gpu_probe.h) first.
//   - Objects belong to the device that was current when they were made;
//     CudaContext::make_current() selects its device for the calling thread
//     (every CudaContext method does it itself).
//   - What is *enqueued* on a stream through this layer never allocates and
//     never synchronises, so it can be captured into a CUDA Graph
//     (graph_capture.h). Allocation, uploads of constants and workspace
//     growth happen before: at prepare time, outside any capture.
//   - Streams are non-blocking: they never wait for the legacy default stream.
//
// Status: compiled and unit-tested for construction errors on a machine
// without a GPU; the GPU paths are exercised by tests/unit/test_cuda_*.cpp,
// which skip without a GPU (see docs/cuda.md for what has run where).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "hetsched/tensor.h"

namespace hetsched::cuda {

// Device memory from cudaMalloc, freed on destruction. Move-only.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);  // 0 bytes: no allocation, get() == nullptr
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// Page-locked host memory (cudaMallocHost): the staging side of copies
// between host tensors and the GPU. Only copies from and to pinned memory
// are asynchronous (and capturable); pageable memory makes
// cudaMemcpyAsync wait for the host. Move-only.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(size_t bytes);
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer&& other) noexcept;
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  void* get() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// A CUDA event: the GPU side of a plan's Record / Wait steps, and the
// fork/join points of a multi-stream capture. Without timing by default
// (cheaper to record and to wait on).
class Event {
 public:
  // `timing`: elapsed_ms can measure between two such events. `blocking`:
  // synchronize() sleeps until the work is done instead of spinning on a
  // core (cudaEventBlockingSync).
  explicit Event(bool timing = false, bool blocking = false);
  ~Event();
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  void record(cudaStream_t stream);
  // `stream` runs nothing enqueued after this call until the event's last
  // record has completed (cudaStreamWaitEvent; the host does not wait).
  void wait_on(cudaStream_t stream) const;
  void synchronize() const;  // the host waits
  cudaEvent_t get() const { return event_; }
  // Milliseconds between two completed timing events.
  static float elapsed_ms(const Event& start, const Event& end);

 private:
  cudaEvent_t event_ = nullptr;
};

// One cudaMalloc holding a run's intermediate values. Values are placed at
// offsets a memory plan computed (at()) or, without one, by a bump allocator
// (allocate()). Offsets and allocations are aligned to kAlignment, which
// suits every kernel and library of the backend (cuBLASLt wants 16 bytes,
// vectorised loads 16, cuDNN 128 for its fastest paths).
class DeviceArena {
 public:
  static constexpr size_t kAlignment = 256;
  static size_t align(size_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

  DeviceArena() = default;
  explicit DeviceArena(size_t capacity);

  void* base() const { return memory_.get(); }
  size_t capacity() const { return memory_.bytes(); }
  // The memory at `offset` (a memory plan's); Error(kRuntime) when
  // [offset, offset + bytes) is not inside the arena or offset is unaligned.
  void* at(size_t offset, size_t bytes) const;
  // Bump allocation; Error(kRuntime) naming the sizes when the arena is full.
  void* allocate(size_t bytes);
  // Forgets every allocation (the memory stays); peak() is kept.
  void reset() { used_ = 0; }
  size_t used() const { return used_; }
  size_t peak() const { return peak_; }

 private:
  DeviceBuffer memory_;
  size_t used_ = 0, peak_ = 0;
};

// What a kernel runs on: one stream with its own library handles (bound to
// it once, so two host threads driving two streams never share a handle) and
// scratch memory. `workspace` is valid for the kernel running now on this
// stream only.
struct GpuStream {
  int index = 0;
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  cublasLtHandle_t cublaslt = nullptr;
  cudnnHandle_t cudnn = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  // FP32 everywhere unless allowed: cuDNN and cuBLAS would otherwise pick
  // TF32 tensor-core kernels on Ampere and later (~1e-3 relative error).
  bool allow_tf32 = false;
};

// Blocking copies for prepare time (constants, test data): they return when
// the bytes have arrived. A plain cudaMemcpy from pageable memory may return
// before its DMA ends, and the non-blocking streams would not wait for it.
void upload_bytes(void* dst, const void* host_src, size_t bytes);
void download_bytes(void* host_dst, const void* src, size_t bytes);

// One GPU with `n_streams` streams: the device `cuda:N*S` of a device spec.
class CudaContext {
 public:
  // cuBLAS gets a 32 MiB workspace per stream (set with cublasSetWorkspace,
  // so it never allocates during a capture); kernels' own scratch starts at
  // `workspace_bytes` per stream and grows with reserve_workspace().
  CudaContext(int ordinal, int n_streams, size_t workspace_bytes = 0);
  ~CudaContext();
  CudaContext(const CudaContext&) = delete;
  CudaContext& operator=(const CudaContext&) = delete;

  int ordinal() const { return ordinal_; }
  int n_streams() const { return static_cast<int>(streams_.size()); }
  const GpuStream& stream(int i) const;
  void make_current() const;

  // FP32 (default) or TF32 tensor-core math (GpuStream::allow_tf32): for
  // cuDNN convolutions and cuBLASLt products prepared from now on, and for
  // every cuBLAS sgemm from now on (the handles' math mode), prepared or not.
  void set_allow_tf32(bool allow);
  bool allow_tf32() const { return allow_tf32_; }

  // Each stream's scratch becomes at least `bytes` (GpuOp::workspace_bytes
  // says what a kernel needs). Growing synchronises the device: call it
  // before running or capturing, never while a capture is open.
  void reserve_workspace(size_t bytes);

  void synchronize() const;            // the host waits for every stream
  void synchronize(int stream) const;  // ... for one

  // How the host waits in synchronize(): spinning on a core (the default,
  // the least latency) or, with blocking waits, asleep: what a host thread
  // must do when CPU lanes' kernels need every core.
  void set_blocking_waits(bool blocking);

  // Asynchronous copies on stream `stream`; host memory should be pinned.
  void copy_to_device(void* dst, const void* host_src, size_t bytes, int stream) const;
  void copy_to_host(void* host_dst, const void* src, size_t bytes, int stream) const;
  void copy_on_device(void* dst, const void* src, size_t bytes, int stream) const;

  // A new buffer holding `tensor`'s bytes (synchronous; for constants at
  // prepare time). An empty tensor gives an empty buffer.
  DeviceBuffer upload(const Tensor& tensor) const;
  // A tensor of `dtype` and `shape` read from device memory (synchronous).
  Tensor download(const void* src, DType dtype, const Shape& shape) const;

 private:
  void release() noexcept;

  int ordinal_ = 0;
  bool allow_tf32_ = false;
  cublasLtHandle_t cublaslt_ = nullptr;
  std::vector<GpuStream> streams_;
  std::vector<DeviceBuffer> cublas_workspaces_;
  std::vector<DeviceBuffer> workspaces_;
  std::vector<Event> wait_events_;  // per stream, with blocking waits
};

}  // namespace hetsched::cuda
