// How the CPU kernels' OpenMP threads wait between kernels (device.h says
// why hetsched prefers active waits).
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "hetsched/device.h"
#include "hetsched/platform.h"

namespace hetsched {
namespace {

constexpr const char* kPolicy = "OMP_WAIT_POLICY";
constexpr const char* kSpinCount = "GOMP_SPINCOUNT";

std::string setting(const char* name) {
  const char* value = std::getenv(name);
  return value ? fmt::format("{}={}", name, value) : fmt::format("{} unset", name);
}

// The environment as libgomp read it: it is loaded, and reads it, before
// this library's static initialisation (libgomp is a dependency), so what
// the environment held then is what libgomp runs with, whatever it holds
// later.
struct AtLoad {
  bool chosen = false;  // either variable set
  std::string settings;
};
const AtLoad& at_load() {
  static const AtLoad read{std::getenv(kPolicy) != nullptr || std::getenv(kSpinCount) != nullptr,
                           setting(kPolicy) + " " + setting(kSpinCount)};
  return read;
}
[[maybe_unused]] const AtLoad& read_at_load = at_load();

}  // namespace

bool prefer_active_openmp_waits() {
  if (std::getenv(kPolicy) || std::getenv(kSpinCount)) return false;  // the user's choice
  // 30,000 spins (about 0.3 ms at 10 ns a spin) cover the gaps between one
  // device's kernels. libgomp's own 300,000 (about 3 ms) kept a multi-core
  // device's idle team spinning on cores that a device sharing them used
  // next (a union device's narrow devices, the next plan measured): random
  // googlenet plans over cpu:0, cpu:1 and cpu:0-1 measured 31.7 ms instead of
  // 20.9. The policy raises the count where a thread has no core of its own
  // from 100 to 1000 spins.
  return setenv(kPolicy, "ACTIVE", 0) == 0 && setenv(kSpinCount, "30000", 0) == 0;
}

std::string openmp_wait_settings() { return at_load().settings; }

std::string openmp_waits_warning(const Platform& platform) {
  if (at_load().chosen) return "";
  for (const PlatformDevice& device : platform.devices)
    if (device.kind == DeviceKind::kCpu && device.cores.size() > 1)
      return fmt::format("{} runs on {} cores, and libgomp waits as by default: measured beside other plans, its "
                         "kernels wait for their threads to wake and it seems slower than it is; start the program "
                         "with OMP_WAIT_POLICY=ACTIVE GOMP_SPINCOUNT=30000 (see docs/user-guide.md, Devices)",
                         device.name, device.cores.size());
  return "";
}

}  // namespace hetsched
