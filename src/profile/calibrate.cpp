#include "profile/calibrate.h"

#include <omp.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>

#include <dnnl.hpp>
#include <fmt/format.h>

#include "backends/cpu/cpu_device.h"
#include "hetsched/device.h"
#include "hetsched/throughput.h"

namespace hetsched {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Runs `fn` `warmups` times, then times it until `max_runs` runs or
// `budget_s` seconds (at least 3 runs); returns the median in seconds.
template <typename Fn>
double median_seconds(Fn&& fn, int warmups, int max_runs, double budget_s) {
  for (int i = 0; i < warmups; ++i) fn();
  std::vector<double> times;
  auto start = Clock::now();
  while (static_cast<int>(times.size()) < max_runs && (times.size() < 3 || seconds_since(start) < budget_s)) {
    auto t0 = Clock::now();
    fn();
    times.push_back(seconds_since(t0));
  }
  return percentile(times, 50);
}

// Large enough that a copy streams mostly from DRAM, small enough that
// touching the pages first stays quick.
constexpr size_t kCopyBytes = size_t{64} << 20;
// With several devices copying at once their buffers add up: each gets a
// share, never below what still defeats its private caches.
size_t shared_copy_bytes(size_t n_devices) {
  return std::max(size_t{16} << 20, (size_t{128} << 20) / std::max<size_t>(n_devices, 1));
}

// Runs fn(begin, end) on 64-byte aligned slices of [0, bytes), one per thread
// of the calling thread's OpenMP team — on a device's worker, one thread per
// core of the device.
template <typename Fn>
void split_over_team(size_t bytes, Fn fn) {
#pragma omp parallel
  {
    size_t n = static_cast<size_t>(omp_get_num_threads());
    size_t t = static_cast<size_t>(omp_get_thread_num());
    size_t chunk = (bytes / n + 63) / 64 * 64;
    size_t begin = std::min(bytes, t * chunk);
    size_t end = std::min(bytes, begin + chunk);
    if (end > begin) fn(begin, end);
  }
}

void parallel_copy(char* dst, const char* src, size_t bytes) {
  split_over_team(bytes, [&](size_t begin, size_t end) { std::memcpy(dst + begin, src + begin, end - begin); });
}


struct FreeDeleter {
  void operator()(char* p) const { std::free(p); }
};
using HostBuffer = std::unique_ptr<char, FreeDeleter>;

// Two buffers for copying, first touched by the device's own threads so
// their pages are placed near its cores.
struct CopyBuffers {
  explicit CopyBuffers(size_t n_bytes)
      : bytes(n_bytes),
        src(static_cast<char*>(std::aligned_alloc(64, n_bytes))),
        dst(static_cast<char*>(std::aligned_alloc(64, n_bytes))) {
    if (!src || !dst) throw Error(ErrorCode::kRuntime, fmt::format("calibration: cannot allocate {} bytes", n_bytes));
    parallel_fill(src.get(), bytes, 1);
    parallel_fill(dst.get(), bytes, 0);
  }
  void copy() { parallel_copy(dst.get(), src.get(), bytes); }

  size_t bytes;
  HostBuffer src, dst;
};

// Read and write traffic of one copy, as cost models count bytes.
double copy_traffic_bytes(const CopyBuffers& buffers) { return 2.0 * static_cast<double>(buffers.bytes); }

// On the device's thread: the FLOP/s of a square f32 matmul, the shape
// oneDNN runs closest to peak.
double measure_peak_gflops(dnnl::engine& engine, dnnl::stream& stream) {
  using dnnl::memory;
  const memory::dim n = omp_get_max_threads() >= 8 ? 1024 : 512;
  memory::desc md({n, n}, memory::data_type::f32, memory::format_tag::ab);
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(md, md, md), engine);
  dnnl::matmul matmul(pd);
  memory a(md, engine), b(md, engine), c(md, engine);
  for (memory* m : {&a, &b}) {
    float* p = static_cast<float*>(m->get_data_handle());
    for (memory::dim i = 0; i < n * n; ++i) p[i] = static_cast<float>((i % 7) - 3) * 0.25f;
  }
  double s = median_seconds(
      [&] {
        matmul.execute(stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
        stream.wait();
      },
      2, 15, 0.35);
  return 2.0 * static_cast<double>(n * n * n) / s / 1e9;
}

// On the device's thread: the time of a launch that does next to nothing
// (relu over 16 floats), i.e. what every launch costs on top of its work.
double measure_launch_overhead_us(dnnl::engine& engine, dnnl::stream& stream) {
  using dnnl::memory;
  memory::desc md({16}, memory::data_type::f32, memory::format_tag::a);
  dnnl::eltwise_forward::primitive_desc pd(
      dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::eltwise_relu, md, 0.f, 0.f),
      engine);
  dnnl::eltwise_forward relu(pd);
  memory src(md, engine), dst(md, engine);
  std::memset(src.get_data_handle(), 0, 16 * sizeof(float));
  constexpr int kBatch = 200;
  auto batch = [&] {
    for (int i = 0; i < kBatch; ++i) {
      relu.execute(stream, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
      stream.wait();
    }
  };
  return median_seconds(batch, 1, 7, 0.1) / kBatch * 1e6;
}

DevicePeaks measure_device(const PlatformDevice& device, size_t copy_bytes) {
  CpuDevice worker(DeviceSpec{DeviceKind::kCpu, device.cores, ""});
  DevicePeaks peaks;
  worker.run([&] {
    dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    dnnl::stream stream(engine);
    peaks.peak_gflops = measure_peak_gflops(engine, stream);
    peaks.launch_overhead_us = measure_launch_overhead_us(engine, stream);
    CopyBuffers buffers(copy_bytes);
    double s = median_seconds([&] { buffers.copy(); }, 1, 7, 0.25);
    peaks.bandwidth_gbps = copy_traffic_bytes(buffers) / s / 1e9;
  });
  return peaks;
}

// Every device copies for the same window at once; their rates add up to
// what the shared memory delivers under contention.
double measure_shared_bandwidth_gbps(const std::vector<const PlatformDevice*>& devices, size_t copy_bytes) {
  std::vector<std::unique_ptr<CpuDevice>> workers;
  for (const PlatformDevice* d : devices)
    workers.push_back(std::make_unique<CpuDevice>(DeviceSpec{DeviceKind::kCpu, d->cores, ""}));
  std::vector<std::unique_ptr<CopyBuffers>> buffers(devices.size());
  std::vector<std::future<void>> done;
  for (size_t i = 0; i < workers.size(); ++i)
    done.push_back(workers[i]->submit([&, i] {
      buffers[i] = std::make_unique<CopyBuffers>(copy_bytes);
      buffers[i]->copy();
    }));
  for (auto& f : done) f.get();

  constexpr double kWindowS = 0.3;
  std::barrier start_together(static_cast<std::ptrdiff_t>(workers.size()));
  std::vector<double> rates(workers.size(), 0);
  done.clear();
  for (size_t i = 0; i < workers.size(); ++i)
    done.push_back(workers[i]->submit([&, i] {
      start_together.arrive_and_wait();
      auto start = Clock::now();
      int n_copies = 0;
      do {
        buffers[i]->copy();
        ++n_copies;
      } while (seconds_since(start) < kWindowS);
      rates[i] = copy_traffic_bytes(*buffers[i]) * n_copies / seconds_since(start) / 1e9;
    }));
  for (auto& f : done) f.get();
  done.clear();
  for (size_t i = 0; i < workers.size(); ++i) done.push_back(workers[i]->submit([&, i] { buffers[i].reset(); }));
  for (auto& f : done) f.get();
  double total = 0;
  for (double r : rates) total += r;
  return total;
}

// The micro-benchmarks run on CPU cores: a GPU's parameters come from its
// probe (nominal until its launch units are profiled).
bool needs_peaks(const PlatformDevice& d) {
  return d.kind == DeviceKind::kCpu && (d.peak_gflops <= 0 || d.bandwidth_gbps <= 0 || d.launch_overhead_us <= 0);
}

void fill_missing(PlatformDevice& d, const DevicePeaks& peaks) {
  if (d.peak_gflops <= 0) d.peak_gflops = peaks.peak_gflops;
  if (d.bandwidth_gbps <= 0) d.bandwidth_gbps = peaks.bandwidth_gbps;
  if (d.launch_overhead_us <= 0) d.launch_overhead_us = peaks.launch_overhead_us;
}

}  // namespace

void calibrate_platform(Platform& platform, ProfileDB& db) {
  for (PlatformDevice& device : platform.devices) {
    if (!needs_peaks(device)) continue;
    // Without a signature a measurement cannot be told apart from another
    // machine's: measure, but do not store.
    std::optional<DevicePeaks> stored;
    if (!device.signature.empty()) stored = db.peaks(device.signature);
    if (!stored) {
      stored = measure_device(device, kCopyBytes);
      if (!device.signature.empty()) db.put_peaks(device.signature, *stored);
    }
    fill_missing(device, *stored);
  }

  std::vector<std::string> resource_names;
  for (const PlatformDevice& d : platform.devices)
    if (!d.is_emulated() && !d.shared_resource.empty() &&
        std::find(resource_names.begin(), resource_names.end(), d.shared_resource) == resource_names.end())
      resource_names.push_back(d.shared_resource);
  // A union device (overlapping a device with fewer cores) never copies at
  // once with the devices it is the union of: leave it out, as its cores
  // are theirs.
  auto is_union = [&](const PlatformDevice& d) {
    return std::any_of(d.overlaps.begin(), d.overlaps.end(), [&](const std::string& other) {
      return platform.devices[static_cast<size_t>(platform.find_device(other))].cores.size() < d.cores.size();
    });
  };
  for (const std::string& name : resource_names) {
    std::vector<const PlatformDevice*> sharing;
    bool all_real = true;
    for (const PlatformDevice& d : platform.devices) {
      if (d.shared_resource != name || is_union(d)) continue;
      sharing.push_back(&d);
      all_real = all_real && !d.is_emulated();
    }
    // A resource an emulated device also names is described by the file.
    if (!all_real) continue;
    SharedResource* resource = nullptr;
    for (SharedResource& r : platform.resources)
      if (r.name == name) resource = &r;
    if (!resource) {
      platform.resources.push_back(SharedResource{name, 0});
      resource = &platform.resources.back();
    }
    if (resource->bandwidth_gbps > 0) continue;
    if (sharing.size() == 1) {
      resource->bandwidth_gbps = sharing.front()->bandwidth_gbps;
      continue;
    }
    std::vector<std::string> signatures;
    bool signed_all = true;
    for (const PlatformDevice* d : sharing) {
      signatures.push_back(d->signature);
      signed_all = signed_all && !d->signature.empty();
    }
    std::sort(signatures.begin(), signatures.end());
    std::string key = fmt::format("resource|{}|{}", name, fmt::join(signatures, ";"));
    std::optional<DevicePeaks> stored;
    if (signed_all) stored = db.peaks(key);
    if (!stored) {
      stored = DevicePeaks{0, measure_shared_bandwidth_gbps(sharing, shared_copy_bytes(sharing.size())), 0};
      if (signed_all) db.put_peaks(key, *stored);
    }
    resource->bandwidth_gbps = stored->bandwidth_gbps;
  }
}

void parallel_fill(char* dst, size_t bytes, int value) {
  split_over_team(bytes, [&](size_t begin, size_t end) { std::memset(dst + begin, value, end - begin); });
}

}  // namespace hetsched
