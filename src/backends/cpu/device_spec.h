// Device spec parsing against a given machine (parse_device_spec in
// hetsched/device.h checks against this one).
#pragma once

#include <string>
#include <vector>

#include "hetsched/device.h"

namespace hetsched {

// What a device spec is checked against: the processors this process may
// use and the CUDA GPUs it sees.
struct SpecMachine {
  std::vector<int> usable_cores;
  int n_gpus = 0;
  // Why n_gpus is 0, as probe_gpus() says: "no CUDA GPU: cudaGetDeviceCount
  // returned ..." or "this build has no CUDA backend ...".
  std::string no_gpu;
};

// This process on this machine (usable_cores(), probe_gpus()). The GPU
// probe runs only when `with_gpus` (a spec naming no cuda device needs none).
SpecMachine this_machine_for_specs(bool with_gpus);

// machine_devices_spec() for `machine`.
std::string machine_devices_spec(const SpecMachine& machine);

// parse_device_spec() against `machine`: the same grammar and errors.
std::vector<DeviceSpec> parse_device_spec(const std::string& spec, const SpecMachine& machine);

}  // namespace hetsched
