#include "backends/cpu/memory_plan.h"

#include <algorithm>
#include <numeric>

namespace hetsched::cpu {

ArenaPlan plan_arena(const std::vector<BufferLifetime>& buffers, size_t alignment) {
  ArenaPlan plan;
  plan.offsets.assign(buffers.size(), 0);
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return buffers[a].size > buffers[b].size; });
  auto round_up = [&](size_t n) { return (n + alignment - 1) / alignment * alignment; };
  std::vector<size_t> placed;
  for (size_t id : order) {
    const BufferLifetime& b = buffers[id];
    // Blocks alive at the same time, by offset; take the first gap that fits.
    std::vector<std::pair<size_t, size_t>> busy;
    for (size_t other : placed) {
      const BufferLifetime& o = buffers[other];
      if (o.last < b.first || b.last < o.first) continue;
      busy.emplace_back(plan.offsets[other], plan.offsets[other] + round_up(o.size));
    }
    std::sort(busy.begin(), busy.end());
    size_t offset = 0;
    for (const auto& [start, end] : busy) {
      if (offset + round_up(b.size) <= start) break;
      offset = std::max(offset, end);
    }
    plan.offsets[id] = offset;
    plan.total = std::max(plan.total, offset + round_up(b.size));
    placed.push_back(id);
  }
  return plan;
}

}  // namespace hetsched::cpu
