// Devices: the processing units work is placed on.
//
// A device spec (the --devices flag) is a comma-separated list:
//   cpu          one device on every core of the machine
//   cpu:2        one device on core 2
//   cpu:0-3      one device on cores 0..3
//   cpu:0,cpu:1  two devices, one core each
//   emu:npu      the device "npu" of the platform file (--platform), emulated
// Later backends add cuda:N. Cores are the logical
// processors (PUs) the OS numbers; a core may belong to one device only.
#pragma once

#include <string>
#include <vector>

namespace hetsched {

// kEmulated: a device described by a platform file ("emu:NAME"), run by
// emulation on this machine (see platform.h).
enum class DeviceKind { kCpu, kEmulated };

struct DeviceSpec {
  DeviceKind kind = DeviceKind::kCpu;
  std::vector<int> cores;  // kCpu: sorted, unique OS processor numbers
  std::string emulated;    // kEmulated: the platform file's device name (spec "emu:NAME")
  // Canonical name: "cpu:0-1", "cpu:3", "cpu:0-1+4" for a gap, "emu:npu".
  std::string name() const;
};

// Parses and validates a device spec against this machine: unknown device
// kinds, malformed ranges, cores the machine (or this process's affinity
// mask) lacks, and cores shared by two devices are ErrorCode::kUsage errors
// naming the offending part.
std::vector<DeviceSpec> parse_device_spec(const std::string& spec);

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
  std::vector<std::string> gpus;  // empty without a GPU backend
};

// Reads the machine's topology (hwloc).
MachineInfo describe_machine();

}  // namespace hetsched
