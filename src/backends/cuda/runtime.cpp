// The CUDA runtime layer (contract in runtime.h).
#include "backends/cuda/runtime.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "backends/cuda/check.h"
#include "hetsched/error.h"

namespace hetsched::cuda {

// ---------------------------------------------------------------- DeviceBuffer

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes > 0) HETSCHED_CUDA_CHECK(cudaMalloc(&ptr_, bytes));
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) cudaFree(ptr_);  // never throws from a destructor
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : ptr_(std::exchange(other.ptr_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (ptr_) cudaFree(ptr_);
    ptr_ = std::exchange(other.ptr_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

// ---------------------------------------------------------------- PinnedBuffer

PinnedBuffer::PinnedBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes > 0) HETSCHED_CUDA_CHECK(cudaMallocHost(&ptr_, bytes));
}

PinnedBuffer::~PinnedBuffer() {
  if (ptr_) cudaFreeHost(ptr_);
}

PinnedBuffer::PinnedBuffer(PinnedBuffer&& other) noexcept
    : ptr_(std::exchange(other.ptr_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  if (this != &other) {
    if (ptr_) cudaFreeHost(ptr_);
    ptr_ = std::exchange(other.ptr_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

// ---------------------------------------------------------------- Event

Event::Event(bool timing, bool blocking) {
  unsigned flags = (timing ? cudaEventDefault : cudaEventDisableTiming) | (blocking ? cudaEventBlockingSync : 0);
  HETSCHED_CUDA_CHECK(cudaEventCreateWithFlags(&event_, flags));
}

Event::~Event() {
  if (event_) cudaEventDestroy(event_);
}

Event::Event(Event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    if (event_) cudaEventDestroy(event_);
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

void Event::record(cudaStream_t stream) { HETSCHED_CUDA_CHECK(cudaEventRecord(event_, stream)); }

void Event::wait_on(cudaStream_t stream) const { HETSCHED_CUDA_CHECK(cudaStreamWaitEvent(stream, event_, 0)); }

void Event::synchronize() const { HETSCHED_CUDA_CHECK(cudaEventSynchronize(event_)); }

float Event::elapsed_ms(const Event& start, const Event& end) {
  float ms = 0;
  HETSCHED_CUDA_CHECK(cudaEventElapsedTime(&ms, start.event_, end.event_));
  return ms;
}

// ---------------------------------------------------------------- DeviceArena

DeviceArena::DeviceArena(size_t capacity) : memory_(align(capacity)) {}

void* DeviceArena::at(size_t offset, size_t bytes) const {
  if (offset % kAlignment != 0 || offset > capacity() || bytes > capacity() - offset)
    throw Error(ErrorCode::kRuntime,
                fmt::format("device arena: [{}, {}) is not an aligned range of the {}-byte arena", offset,
                            offset + bytes, capacity()));
  return static_cast<char*>(memory_.get()) + offset;
}

void* DeviceArena::allocate(size_t bytes) {
  size_t size = align(bytes);
  if (size > capacity() - used_)
    throw Error(ErrorCode::kRuntime,
                fmt::format("device arena full: {} bytes asked, {} of {} bytes in use", bytes, used_, capacity()));
  void* p = static_cast<char*>(memory_.get()) + used_;
  used_ += size;
  peak_ = std::max(peak_, used_);
  return p;
}

// ---------------------------------------------------------------- blocking copies

void upload_bytes(void* dst, const void* host_src, size_t bytes) {
  if (bytes == 0) return;
  HETSCHED_CUDA_CHECK(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, cudaStreamLegacy));
  HETSCHED_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
}

void download_bytes(void* host_dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  HETSCHED_CUDA_CHECK(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, cudaStreamLegacy));
  HETSCHED_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
}

// ---------------------------------------------------------------- CudaContext

namespace {

// cuBLAS's own recommendation for Hopper (and ample before): its kernels'
// split-K and stream-K scratch.
constexpr size_t kCublasWorkspaceBytes = size_t{32} << 20;

}  // namespace

CudaContext::CudaContext(int ordinal, int n_streams, size_t workspace_bytes) : ordinal_(ordinal) {
  if (n_streams < 1) throw Error(ErrorCode::kUsage, fmt::format("cuda:{}: needs at least one stream", ordinal));
  int count = 0;
  HETSCHED_CUDA_CHECK(cudaGetDeviceCount(&count));
  if (ordinal < 0 || ordinal >= count)
    throw Error(ErrorCode::kUsage, fmt::format("cuda:{} does not exist ({} CUDA GPU{})", ordinal, count,
                                               count == 1 ? "" : "s"));
  make_current();
  // The destructor does not run when the constructor throws: what was made
  // so far is released by hand.
  try {
    HETSCHED_CUDA_CHECK(cublasLtCreate(&cublaslt_));
    streams_.resize(static_cast<size_t>(n_streams));
    for (int i = 0; i < n_streams; ++i) {
      GpuStream& s = streams_[static_cast<size_t>(i)];
      s.index = i;
      s.cublaslt = cublaslt_;
      HETSCHED_CUDA_CHECK(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
      HETSCHED_CUDA_CHECK(cublasCreate(&s.cublas));
      HETSCHED_CUDA_CHECK(cublasSetStream(s.cublas, s.stream));
      cublas_workspaces_.emplace_back(kCublasWorkspaceBytes);
      HETSCHED_CUDA_CHECK(cublasSetWorkspace(s.cublas, cublas_workspaces_.back().get(), kCublasWorkspaceBytes));
      HETSCHED_CUDA_CHECK(cublasSetMathMode(s.cublas, CUBLAS_DEFAULT_MATH));
      // Device-side alpha/beta would need device memory per call; host
      // scalars are captured by value into CUDA Graphs.
      HETSCHED_CUDA_CHECK(cublasSetPointerMode(s.cublas, CUBLAS_POINTER_MODE_HOST));
      HETSCHED_CUDA_CHECK(cudnnCreate(&s.cudnn));
      HETSCHED_CUDA_CHECK(cudnnSetStream(s.cudnn, s.stream));
      workspaces_.emplace_back(DeviceArena::align(workspace_bytes));
      s.workspace = workspaces_.back().get();
      s.workspace_bytes = workspaces_.back().bytes();
    }
  } catch (...) {
    release();
    throw;
  }
}

CudaContext::~CudaContext() { release(); }

void CudaContext::release() noexcept {
  cudaSetDevice(ordinal_);
  for (GpuStream& s : streams_) {
    if (s.stream) cudaStreamSynchronize(s.stream);
    if (s.cudnn) cudnnDestroy(s.cudnn);
    if (s.cublas) cublasDestroy(s.cublas);
    if (s.stream) cudaStreamDestroy(s.stream);
    s = GpuStream{};
  }
  streams_.clear();
  workspaces_.clear();
  cublas_workspaces_.clear();
  if (cublaslt_) cublasLtDestroy(cublaslt_);
  cublaslt_ = nullptr;
}

const GpuStream& CudaContext::stream(int i) const {
  if (i < 0 || i >= n_streams())
    throw Error(ErrorCode::kUsage, fmt::format("cuda:{}: stream {} does not exist (it has {})", ordinal_, i,
                                               n_streams()));
  return streams_[static_cast<size_t>(i)];
}

void CudaContext::make_current() const { HETSCHED_CUDA_CHECK(cudaSetDevice(ordinal_)); }

void CudaContext::set_allow_tf32(bool allow) {
  allow_tf32_ = allow;
  make_current();
  for (GpuStream& s : streams_) {
    s.allow_tf32 = allow;
    HETSCHED_CUDA_CHECK(cublasSetMathMode(s.cublas, allow ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  }
}

void CudaContext::reserve_workspace(size_t bytes) {
  bytes = DeviceArena::align(bytes);
  if (streams_.empty() || streams_.front().workspace_bytes >= bytes) return;
  synchronize();  // a kernel may still be using the old scratch
  // Free all first (the old and new may not fit together), and forget them:
  // should an allocation fail, no stream may keep a freed scratch.
  for (size_t i = 0; i < streams_.size(); ++i) {
    workspaces_[i] = DeviceBuffer();
    streams_[i].workspace = nullptr;
    streams_[i].workspace_bytes = 0;
  }
  for (size_t i = 0; i < streams_.size(); ++i) {
    workspaces_[i] = DeviceBuffer(bytes);
    streams_[i].workspace = workspaces_[i].get();
    streams_[i].workspace_bytes = bytes;
  }
}

void CudaContext::set_blocking_waits(bool blocking) {
  make_current();
  wait_events_.clear();
  if (blocking)
    for (size_t i = 0; i < streams_.size(); ++i) wait_events_.emplace_back(false, true);
}

void CudaContext::synchronize() const {
  for (int i = 0; i < n_streams(); ++i) synchronize(i);
}

void CudaContext::synchronize(int i) const {
  make_current();
  cudaStream_t s = stream(i).stream;
  if (wait_events_.empty()) {
    HETSCHED_CUDA_CHECK(cudaStreamSynchronize(s));
    return;
  }
  const Event& done = wait_events_[static_cast<size_t>(i)];
  HETSCHED_CUDA_CHECK(cudaEventRecord(done.get(), s));
  done.synchronize();
}

void CudaContext::copy_to_device(void* dst, const void* host_src, size_t bytes, int i) const {
  if (bytes == 0) return;
  make_current();  // a new host thread starts on device 0
  HETSCHED_CUDA_CHECK(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, stream(i).stream));
}

void CudaContext::copy_to_host(void* host_dst, const void* src, size_t bytes, int i) const {
  if (bytes == 0) return;
  make_current();
  HETSCHED_CUDA_CHECK(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, stream(i).stream));
}

void CudaContext::copy_on_device(void* dst, const void* src, size_t bytes, int i) const {
  if (bytes == 0 || dst == src) return;
  make_current();
  HETSCHED_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream(i).stream));
}

DeviceBuffer CudaContext::upload(const Tensor& tensor) const {
  make_current();
  DeviceBuffer buffer(tensor.nbytes());
  upload_bytes(buffer.get(), tensor.raw(), tensor.nbytes());
  return buffer;
}

Tensor CudaContext::download(const void* src, DType dtype, const Shape& shape) const {
  make_current();
  Tensor t(dtype, shape);
  download_bytes(t.raw(), src, t.nbytes());
  return t;
}

}  // namespace hetsched::cuda
