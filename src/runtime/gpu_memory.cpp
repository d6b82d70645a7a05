// plan_gpu_memory (contract in gpu_device.h): a GPU's values in one arena,
// with the CPU backend's liveness placement for each lane's own values.
#include <algorithm>
#include <map>

#include "backends/cpu/memory_plan.h"
#include "hetsched/error.h"
#include "runtime/gpu_device.h"

namespace hetsched {

GpuMemoryLayout plan_gpu_memory(const Graph& graph, const std::vector<std::vector<std::vector<ValueId>>>& lane_values,
                                const std::set<ValueId>& whole_run, const std::vector<ValueId>& alias,
                                size_t alignment) {
  size_t n = graph.values.size();
  auto root = [&](ValueId v) {
    for (size_t hops = 0; static_cast<size_t>(v) < alias.size() && alias[v] != kNoValue; ++hops) {
      if (hops > n) throw Error(ErrorCode::kRuntime, "plan_gpu_memory: the aliases form a cycle");
      v = alias[v];
    }
    return v;
  };
  auto size_of = [&](ValueId v) {
    const Value& value = graph.values[v];
    size_t bytes = static_cast<size_t>(shape_numel(value.shape)) * dtype_size(value.dtype);
    return std::max<size_t>(bytes, 1);
  };

  // Per root: its size (the largest of the values sharing it), the lane
  // touching it (-2: several) and its first and last step there.
  struct Use {
    size_t bytes = 0;
    int lane = -1;
    int first = 0, last = 0;
    bool whole_run = false;
  };
  std::map<ValueId, Use> uses;
  auto touch = [&](ValueId v, int lane, int step) {
    Use& use = uses[root(v)];
    use.bytes = std::max(use.bytes, size_of(v));
    if (use.lane == -1) {
      use.lane = lane;
      use.first = use.last = step;
    } else if (use.lane != lane) {
      use.lane = -2;
    } else {
      use.first = std::min(use.first, step);
      use.last = std::max(use.last, step);
    }
  };
  for (size_t l = 0; l < lane_values.size(); ++l)
    for (size_t s = 0; s < lane_values[l].size(); ++s)
      for (ValueId v : lane_values[l][s])
        if (v != kNoValue) touch(v, static_cast<int>(l), static_cast<int>(s));
  for (ValueId v : whole_run) {
    Use& use = uses[root(v)];
    use.bytes = std::max(use.bytes, size_of(v));
    use.whole_run = true;
  }

  GpuMemoryLayout layout;
  layout.offset.assign(n, -1);
  std::map<ValueId, size_t> root_offset;
  size_t end = 0;
  auto align = [&](size_t bytes) { return (bytes + alignment - 1) / alignment * alignment; };
  for (auto& [r, use] : uses)
    if (use.whole_run || use.lane < 0) {
      root_offset[r] = end;
      end += align(use.bytes);
    }
  layout.whole_run_bytes = end;
  // Each lane's own values: one region per lane, placed by liveness.
  for (size_t l = 0; l < lane_values.size(); ++l) {
    std::vector<ValueId> roots;
    std::vector<cpu::BufferLifetime> lifetimes;
    for (auto& [r, use] : uses)
      if (!use.whole_run && use.lane == static_cast<int>(l)) {
        roots.push_back(r);
        lifetimes.push_back({use.bytes, use.first, use.last});
      }
    if (roots.empty()) continue;
    cpu::ArenaPlan region = cpu::plan_arena(lifetimes, alignment);
    for (size_t i = 0; i < roots.size(); ++i) root_offset[roots[i]] = end + region.offsets[i];
    end += align(region.total);
  }
  layout.bytes = end;
  for (size_t v = 0; v < n; ++v) {
    auto it = root_offset.find(root(static_cast<ValueId>(v)));
    if (it != root_offset.end()) layout.offset[v] = static_cast<int64_t>(it->second);
  }
  return layout;
}

}  // namespace hetsched
