// Liveness-based placement of buffers in one arena.
#pragma once

#include <cstddef>
#include <vector>

namespace hetsched::cpu {

struct BufferLifetime {
  size_t size = 0;  // bytes
  int first = 0;    // first step that touches the buffer
  int last = 0;     // last step that touches it (inclusive)
};

struct ArenaPlan {
  std::vector<size_t> offsets;  // per buffer, multiples of `alignment`
  size_t total = 0;             // arena size: the peak
};

// Greedy by size (largest first, each at the lowest offset that overlaps no
// placed buffer alive at the same time): buffers whose lifetimes overlap
// never overlap in memory.
ArenaPlan plan_arena(const std::vector<BufferLifetime>& buffers, size_t alignment = 64);

}  // namespace hetsched::cpu
