// describe_machine(): the machine's topology as hwloc reports it, restricted
// to the processors this process may run on.
//
// Only processors in the affinity mask count (taskset, cgroup cpusets): they
// are the ones a device spec may name, and a count that includes forbidden
// cores would suggest devices that cannot be built. If hwloc cannot load the
// topology the description degrades to what the affinity mask and
// /proc/cpuinfo say, rather than failing: it is informational. The GPUs are
// the CUDA backend's probe_gpus() (none, with the reason, without it).
#include <hwloc.h>
#include <sched.h>
#include <sys/sysinfo.h>

#include <cerrno>
#include <fstream>
#include <memory>

#include "backends/cpu/cpu_device.h"
#include "hetsched/device.h"
#include "platform/gpu_probe.h"

namespace hetsched {
namespace {

std::string model_from_proc_cpuinfo() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    auto start = line.find_first_not_of(" \t", colon + 1);
    if (start != std::string::npos) return line.substr(start);
  }
  return "";
}

struct TopologyDeleter {
  void operator()(hwloc_topology_t t) const { hwloc_topology_destroy(t); }
};
struct BitmapDeleter {
  void operator()(hwloc_bitmap_t b) const { hwloc_bitmap_free(b); }
};
using Topology = std::unique_ptr<hwloc_topology, TopologyDeleter>;
using Bitmap = std::unique_ptr<hwloc_bitmap_s, BitmapDeleter>;

Topology load_topology() {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) return nullptr;
  Topology topo(raw);
  // Cache objects are filtered out by default on some builds; we report them.
  hwloc_topology_set_cache_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_ALL);
  if (hwloc_topology_load(raw) != 0) return nullptr;
  return topo;
}

// Objects of `type` that hold at least one usable processor.
std::vector<hwloc_obj_t> usable_objects(hwloc_topology_t topo, hwloc_obj_type_t type, hwloc_const_bitmap_t usable) {
  std::vector<hwloc_obj_t> objs;
  for (hwloc_obj_t obj = hwloc_get_next_obj_by_type(topo, type, nullptr); obj;
       obj = hwloc_get_next_obj_by_type(topo, type, obj))
    if (obj->cpuset && hwloc_bitmap_intersects(obj->cpuset, usable)) objs.push_back(obj);
  return objs;
}

}  // namespace

MachineInfo describe_cpus() {
  MachineInfo info;
  info.usable_cores = usable_cores();
  info.n_logical_cores = static_cast<int>(info.usable_cores.size());

  if (Topology topo = load_topology()) {
    Bitmap usable(hwloc_bitmap_alloc());
    for (int c : info.usable_cores) hwloc_bitmap_set(usable.get(), static_cast<unsigned>(c));

    for (hwloc_obj_t package : usable_objects(topo.get(), HWLOC_OBJ_PACKAGE, usable.get())) {
      if (const char* model = hwloc_obj_get_info_by_name(package, "CPUModel")) {
        info.cpu_model = model;
        break;
      }
    }
    // A core counts when any of its hardware threads is usable: it is still
    // a physical core this process can occupy.
    info.n_physical_cores = static_cast<int>(usable_objects(topo.get(), HWLOC_OBJ_CORE, usable.get()).size());
    info.n_numa_nodes = static_cast<int>(usable_objects(topo.get(), HWLOC_OBJ_NUMANODE, usable.get()).size());

    const hwloc_obj_type_t levels[] = {HWLOC_OBJ_L1CACHE, HWLOC_OBJ_L2CACHE, HWLOC_OBJ_L3CACHE, HWLOC_OBJ_L4CACHE,
                                       HWLOC_OBJ_L5CACHE};
    for (hwloc_obj_type_t type : levels) {
      // Data/unified caches only (instruction caches are separate hwloc
      // types); the first instance over our cores stands for the level's
      // size and sharing, and every instance lists the usable cores it serves.
      CacheInfo c;
      for (hwloc_obj_t cache : usable_objects(topo.get(), type, usable.get())) {
        if (cache->attr->cache.type == HWLOC_OBJ_CACHE_INSTRUCTION || cache->attr->cache.size == 0) continue;
        if (c.level == 0) {
          c.level = static_cast<int>(cache->attr->cache.depth);
          c.size_bytes = static_cast<long long>(cache->attr->cache.size);
          c.n_sharing_cores = hwloc_bitmap_weight(cache->cpuset);
        }
        std::vector<int> served;
        for (int core : info.usable_cores)
          if (hwloc_bitmap_isset(cache->cpuset, static_cast<unsigned>(core))) served.push_back(core);
        c.instances.push_back(std::move(served));
      }
      if (c.level != 0) info.caches.push_back(std::move(c));
    }
  }

  if (info.cpu_model.empty()) info.cpu_model = model_from_proc_cpuinfo();
  if (info.cpu_model.empty()) info.cpu_model = "unknown CPU";
  // Without topology, every usable processor is taken for its own core.
  if (info.n_physical_cores < 1) info.n_physical_cores = info.n_logical_cores;
  if (info.n_numa_nodes < 1) info.n_numa_nodes = 1;
  return info;
}

MachineInfo describe_machine() {
  MachineInfo info = describe_cpus();
  const GpuProbe& probe = probe_gpus();
  for (const GpuInfo& gpu : probe.gpus) info.gpus.push_back(gpu.summary());
  info.gpu_note = probe.why_none;
  info.gpu_libraries = probe.libraries;
  info.openmp_waits = openmp_wait_settings();
  return info;
}

}  // namespace hetsched
