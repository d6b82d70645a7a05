// Helpers for the CPU backend's host code (Lowering::emit_host): the loops
// of ops oneDNN has no primitive for, run on the device's thread.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>

namespace hetsched::cpu {

// The library's baseline on x86-64 is SSE2. A hot loop marked so is also
// compiled for AVX-512 and AVX2, and the dynamic loader picks the version
// the CPU runs (GCC target_clones).
#define HETSCHED_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

// [0, n) in chunks for the device's OpenMP team: one per thread, but none
// under kMinChunk elements (below that, a thread's wake-up costs more than
// it saves); no chunk for n = 0.
struct Chunks {
  static constexpr int64_t kMinChunk = 16384;
  explicit Chunks(int64_t n)
      : n(n), count(std::min<int64_t>(omp_get_max_threads(), (n + kMinChunk - 1) / kMinChunk)),
        size(count > 0 ? (n + count - 1) / count : 0) {}
  // fn(k, begin, end) for each chunk k, side by side when there are several.
  template <typename Fn>
  void for_each(Fn fn) const {
#pragma omp parallel for schedule(static) if (count > 1)
    for (int64_t k = 0; k < count; ++k) {
      int64_t begin = k * size, end = std::min(n, begin + size);
      if (begin < end) fn(k, begin, end);
    }
  }
  int64_t n, count, size;
};

}  // namespace hetsched::cpu
