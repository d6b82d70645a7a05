#include <gtest/gtest.h>

#include "backends/cpu/memory_plan.h"

namespace hetsched::cpu {
namespace {

bool overlaps_in_time(const BufferLifetime& a, const BufferLifetime& b) { return !(a.last < b.first || b.last < a.first); }

TEST(ArenaPlan, ReusesMemoryOfDeadBuffers) {
  // A chain: each buffer is read only by the next step.
  std::vector<BufferLifetime> chain = {{1000, 0, 1}, {1000, 1, 2}, {1000, 2, 3}, {1000, 3, 4}};
  ArenaPlan plan = plan_arena(chain);
  // Two buffers are alive at a time: the peak is two of them, not four.
  EXPECT_EQ(plan.total, 2 * 1024u);
}

TEST(ArenaPlan, LiveBuffersNeverOverlap) {
  std::vector<BufferLifetime> buffers;
  for (int i = 0; i < 60; ++i)
    buffers.push_back({static_cast<size_t>(100 + (i * 7919) % 5000), i % 13, i % 13 + (i * 31) % 9});
  ArenaPlan plan = plan_arena(buffers, 64);
  size_t sum = 0;
  for (size_t i = 0; i < buffers.size(); ++i) {
    EXPECT_EQ(plan.offsets[i] % 64, 0u);
    EXPECT_LE(plan.offsets[i] + buffers[i].size, plan.total);
    sum += buffers[i].size;
    for (size_t j = 0; j < i; ++j) {
      if (!overlaps_in_time(buffers[i], buffers[j])) continue;
      bool apart = plan.offsets[i] + buffers[i].size <= plan.offsets[j] ||
                   plan.offsets[j] + buffers[j].size <= plan.offsets[i];
      EXPECT_TRUE(apart) << "buffers " << i << " and " << j << " share memory while both alive";
    }
  }
  EXPECT_LT(plan.total, sum);
}

}  // namespace
}  // namespace hetsched::cpu
