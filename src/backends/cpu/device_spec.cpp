// Device specs: DeviceSpec::name() and parse_device_spec().
//
// Grammar (whitespace around any token is ignored):
//   spec   := device (',' device)*
//   device := 'cpu' | 'cpu' ':' cores | 'emu' ':' NAME | 'cuda' | 'cuda' ':' N ['*' S]
//   cores  := range ('+' range)*        '+' joins ranges, as name() prints them
//   range  := N | A '-' B               A <= B
//   NAME   := [A-Za-z0-9_-]+            a device of the platform file
//   S      := 1 .. kMaxCudaStreams      streams of the GPU (default kDefaultCudaStreams)
// Overlapping ranges inside one device are merged. Two devices may share
// cores only when one is the union of other devices of the spec
// (cpu:0,cpu:1,cpu:0-1: a wide device over narrow ones); plans then never run
// two launches on overlapping devices at once (plan_builder.h). Any other
// shared core (cpu:0-1,cpu:1-2; cpu:0-1,cpu:1; a device twice) is an error,
// since two devices running at once must never compete for one core. An emulated
// device or a GPU listed twice is an error too: a spec names each device
// once. A GPU the machine lacks (or any GPU, without the CUDA backend) is an
// error naming why, after the whole spec's syntax was checked.
#include <sched.h>
#include <sys/sysinfo.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <iterator>
#include <set>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backends/cpu/cpu_device.h"
#include "backends/cpu/device_spec.h"
#include "hetsched/device.h"
#include "hetsched/error.h"
#include "platform/gpu_probe.h"

namespace hetsched {

std::vector<int> usable_cores() {
  std::vector<int> cores;
  // The mask may be larger than CPU_SETSIZE on very large machines: grow it
  // until the kernel accepts it.
  for (int n_cpus = CPU_SETSIZE; n_cpus <= (1 << 20); n_cpus *= 2) {
    cpu_set_t* set = CPU_ALLOC(n_cpus);
    size_t size = CPU_ALLOC_SIZE(n_cpus);
    CPU_ZERO_S(size, set);
    if (sched_getaffinity(0, size, set) == 0) {
      for (int c = 0; c < n_cpus; ++c)
        if (CPU_ISSET_S(c, size, set)) cores.push_back(c);
      CPU_FREE(set);
      return cores;
    }
    CPU_FREE(set);
    if (errno != EINVAL) break;
  }
  // Without an affinity mask, assume every online processor.
  for (int c = 0; c < get_nprocs(); ++c) cores.push_back(c);
  return cores;
}

namespace {

// "0-3+6" for {0,1,2,3,6}: maximal runs of consecutive numbers.
std::string format_ranges(const std::vector<int>& sorted, const char* joiner) {
  std::string out;
  for (size_t i = 0; i < sorted.size();) {
    size_t j = i;
    while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1) ++j;
    if (!out.empty()) out += joiner;
    out += sorted[i] == sorted[j] ? std::to_string(sorted[i]) : fmt::format("{}-{}", sorted[i], sorted[j]);
    i = j + 1;
  }
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    parts.push_back(s.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return parts;
}

class SpecParser {
 public:
  SpecParser(const std::string& spec, const SpecMachine& machine)
      : spec_(spec), usable_(machine.usable_cores), machine_(machine) {}

  // Syntax of the whole spec first, then cores against the machine, so a
  // typo is reported as a typo even when it sits next to a missing core.
  std::vector<DeviceSpec> parse() {
    if (trim(spec_).empty()) fail("empty device spec (expected e.g. cpu, cpu:0, cpu:0,cpu:1 or cuda:0)");
    std::vector<ParsedDevice> parsed;
    auto items = split(spec_, ',');
    for (size_t i = 0; i < items.size(); ++i) {
      std::string_view item = trim(items[i]);
      if (item.empty())
        fail(fmt::format("device {} is empty (expected cpu, cpu:CORES, emu:NAME or cuda:N between the commas)",
                         i + 1));
      parsed.push_back(parse_device(item));
    }
    std::vector<DeviceSpec> devices;
    std::set<std::string> emulated;
    std::set<int> gpus;
    for (const ParsedDevice& p : parsed) {
      if (p.kind == DeviceKind::kEmulated && !emulated.insert(p.emulated).second)
        fail(fmt::format("emu:{} is listed twice", p.emulated));
      if (p.kind == DeviceKind::kCuda && !gpus.insert(p.gpu).second)
        fail(fmt::format("cuda:{} is listed twice (give one stream count: cuda:{}*S)", p.gpu, p.gpu));
      devices.push_back(resolve(p));
    }
    check_shared_cores(devices);
    return devices;
  }

 private:
  struct Range {
    int first = 0, last = 0;
  };
  struct ParsedDevice {
    DeviceKind kind = DeviceKind::kCpu;
    bool all_cores = false;  // plain "cpu"
    std::vector<Range> ranges;
    std::string emulated;  // kEmulated: NAME of "emu:NAME"
    int gpu = 0, streams = kDefaultCudaStreams;  // kCuda
  };

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(ErrorCode::kUsage, fmt::format("--devices '{}': {}", spec_, what));
  }

  // Devices sharing a core are allowed only as a union device over narrower
  // ones: one covers the other (a strict superset) and its cores are exactly
  // the union of the devices it covers. Every other pair sharing a core could
  // run at once on it, which no plan can rule out.
  void check_shared_cores(const std::vector<DeviceSpec>& devices) const {
    auto covers = [](const DeviceSpec& wide, const DeviceSpec& narrow) {
      return wide.cores.size() > narrow.cores.size() &&
             std::includes(wide.cores.begin(), wide.cores.end(), narrow.cores.begin(), narrow.cores.end());
    };
    auto is_union = [&](const DeviceSpec& wide) {
      std::set<int> covered;
      for (const DeviceSpec& d : devices)
        if (d.kind == DeviceKind::kCpu && covers(wide, d)) covered.insert(d.cores.begin(), d.cores.end());
      return covered.size() == wide.cores.size();
    };
    for (size_t i = 0; i < devices.size(); ++i)
      for (size_t j = i + 1; j < devices.size(); ++j) {
        const DeviceSpec& a = devices[i];
        const DeviceSpec& b = devices[j];
        if (a.kind != DeviceKind::kCpu || b.kind != DeviceKind::kCpu) continue;
        std::vector<int> shared;
        std::set_intersection(a.cores.begin(), a.cores.end(), b.cores.begin(), b.cores.end(),
                              std::back_inserter(shared));
        if (shared.empty()) continue;
        if (a.cores == b.cores)
          fail(fmt::format("core {} is in two devices ({} is listed twice)", shared[0], a.name()));
        if ((covers(a, b) && is_union(a)) || (covers(b, a) && is_union(b))) continue;
        fail(fmt::format("core {} is in two devices, {} and {}: devices may share cores only when one is the union "
                         "of other devices of the list (e.g. cpu:0,cpu:1,cpu:0-1)",
                         shared[0], a.name(), b.name()));
      }
  }

  ParsedDevice parse_device(std::string_view item) const {
    size_t colon = item.find(':');
    std::string_view kind = trim(item.substr(0, colon));
    if (kind == "emu") return parse_emulated(item, colon);
    if (kind == "cuda") return parse_cuda(item, colon);
    if (kind != "cpu")
      fail(fmt::format("unknown device kind '{}' (expected cpu, cpu:CORES, emu:NAME or cuda:N)", kind));
    ParsedDevice device;
    device.kind = DeviceKind::kCpu;
    if (colon == std::string_view::npos) {
      device.all_cores = true;
      return device;
    }
    std::string_view list = trim(item.substr(colon + 1));
    if (list.empty()) fail(fmt::format("'{}' lists no cores (expected cpu:N or cpu:A-B, e.g. cpu:0-3)", item));
    for (std::string_view range : split(list, '+')) device.ranges.push_back(parse_range(trim(range)));
    return device;
  }

  ParsedDevice parse_emulated(std::string_view item, size_t colon) const {
    std::string_view name = colon == std::string_view::npos ? std::string_view() : trim(item.substr(colon + 1));
    if (name.empty())
      fail(fmt::format("'{}' names no device (expected emu:NAME, NAME a device of the --platform file)", item));
    bool valid = std::all_of(name.begin(), name.end(), [](char ch) {
      return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-';
    });
    if (!valid)
      fail(fmt::format("'{}' is not a device name (expected emu:NAME with NAME of letters, digits, '_' and '-')",
                       item));
    ParsedDevice device;
    device.kind = DeviceKind::kEmulated;
    device.emulated = std::string(name);
    return device;
  }

  // "cuda", "cuda:N", "cuda:N*S".
  ParsedDevice parse_cuda(std::string_view item, size_t colon) const {
    ParsedDevice device;
    device.kind = DeviceKind::kCuda;
    if (colon == std::string_view::npos) return device;
    std::string_view rest = trim(item.substr(colon + 1));
    size_t star = rest.find('*');
    std::string_view number = trim(rest.substr(0, star));
    auto bad = [&] {
      fail(fmt::format("'{}' is not a GPU number (expected cuda:N or cuda:N*S, e.g. cuda:0 or cuda:0*4)", item));
    };
    if (!parse_count(number, device.gpu)) bad();
    if (star != std::string_view::npos) {
      std::string_view count = trim(rest.substr(star + 1));
      if (!parse_count(count, device.streams) || device.streams < 1 || device.streams > kMaxCudaStreams)
        fail(fmt::format("'{}': the stream count must be a number from 1 to {} (cuda:N*S)", item, kMaxCudaStreams));
    }
    return device;
  }

  // A decimal number that fits an int.
  static bool parse_count(std::string_view digits, int& value) {
    if (digits.empty() || !std::all_of(digits.begin(), digits.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
      return false;
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    return ec == std::errc() && ptr == digits.data() + digits.size();
  }

  Range parse_range(std::string_view text) const {
    auto bad = [&] {
      fail(fmt::format("'{}' is not a core number or range (expected N or A-B, e.g. cpu:2 or cpu:0-3)", text));
    };
    if (text.empty()) bad();
    size_t dash = text.find('-');
    Range range;
    range.first = parse_core(trim(text.substr(0, dash)), bad);
    range.last = dash == std::string_view::npos ? range.first : parse_core(trim(text.substr(dash + 1)), bad);
    if (range.last < range.first) fail(fmt::format("range '{}' is empty (expected A-B with A <= B)", text));
    return range;
  }

  template <typename Bad>
  int parse_core(std::string_view digits, const Bad& bad) const {
    if (digits.empty() || !std::all_of(digits.begin(), digits.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
      bad();
    int value = 0;
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (ec != std::errc() || ptr != digits.data() + digits.size())
      fail(fmt::format("core {} does not exist on this machine (cores {})", digits, format_ranges(usable_, ",")));
    return value;
  }

  DeviceSpec resolve(const ParsedDevice& parsed) const {
    DeviceSpec device;
    device.kind = parsed.kind;
    if (parsed.kind == DeviceKind::kEmulated) {
      device.emulated = parsed.emulated;  // the platform file, not this machine, says whether it exists
      return device;
    }
    if (parsed.kind == DeviceKind::kCuda) {
      device.gpu = parsed.gpu;
      device.streams = parsed.streams;
      if (machine_.n_gpus == 0) fail(fmt::format("cannot use {}: {}", device.name(), machine_.no_gpu));
      if (parsed.gpu >= machine_.n_gpus)
        fail(fmt::format("{} does not exist on this machine (it has {} CUDA GPU{}: cuda:0{})", device.name(),
                         machine_.n_gpus, machine_.n_gpus == 1 ? "" : "s",
                         machine_.n_gpus == 1 ? "" : fmt::format(" to cuda:{}", machine_.n_gpus - 1)));
      return device;
    }
    if (parsed.all_cores) {
      if (usable_.empty()) fail("this process may run on no core");
      device.cores = usable_;
      return device;
    }
    std::set<int> cores;  // overlapping ranges inside one device merge
    for (const Range& r : parsed.ranges) {
      // The ends first, so that the message names a number the user typed
      // ("cpu:0-7": core 7), then any gap the affinity mask leaves inside.
      check_core(r.first);
      check_core(r.last);
      for (int c = r.first + 1; c < r.last; ++c) check_core(c);
      for (int c = r.first; c <= r.last; ++c) cores.insert(c);
    }
    device.cores.assign(cores.begin(), cores.end());
    return device;
  }

  void check_core(int core) const {
    if (std::binary_search(usable_.begin(), usable_.end(), core)) return;
    // A processor the machine has but our affinity mask excludes (taskset,
    // cgroup cpuset) gets its own message: the fix differs.
    if (core < get_nprocs_conf())
      fail(fmt::format("core {} is not available to this process (usable cores {})", core,
                       format_ranges(usable_, ",")));
    fail(fmt::format("core {} does not exist on this machine (cores {})", core, format_ranges(usable_, ",")));
  }

  const std::string& spec_;
  std::vector<int> usable_;
  const SpecMachine& machine_;
};

}  // namespace

std::string DeviceSpec::name() const {
  switch (kind) {
    case DeviceKind::kCpu: return cores.empty() ? "cpu" : "cpu:" + format_ranges(cores, "+");
    case DeviceKind::kEmulated: return "emu:" + emulated;
    case DeviceKind::kCuda: return "cuda:" + std::to_string(gpu);
  }
  return "?";
}

std::string cpu_spec_beside_gpu(const std::vector<int>& usable_cores) {
  if (usable_cores.size() < 2) return "";
  DeviceSpec rest;
  rest.cores.assign(usable_cores.begin() + 1, usable_cores.end());
  return rest.name();
}

std::string machine_devices_spec(const SpecMachine& machine) {
  const std::vector<int>& cores = machine.usable_cores;
  std::vector<std::string> devices;
  if (machine.n_gpus > 0) {
    if (std::string cpu = cpu_spec_beside_gpu(cores); !cpu.empty()) devices.push_back(cpu);
    for (int gpu = 0; gpu < machine.n_gpus; ++gpu) devices.push_back("cuda:" + std::to_string(gpu));
  } else if (cores.size() < 2) {
    devices.push_back("cpu");
  } else {
    auto middle = cores.begin() + static_cast<std::ptrdiff_t>((cores.size() + 1) / 2);
    DeviceSpec first, second;
    first.cores.assign(cores.begin(), middle);
    second.cores.assign(middle, cores.end());
    devices = {first.name(), second.name()};
  }
  return fmt::format("{}", fmt::join(devices, ","));
}

std::string machine_devices_spec() { return machine_devices_spec(this_machine_for_specs(true)); }

SpecMachine this_machine_for_specs(bool with_gpus) {
  SpecMachine machine;
  machine.usable_cores = usable_cores();
  if (with_gpus) {
    const GpuProbe& probe = probe_gpus();
    machine.n_gpus = static_cast<int>(probe.gpus.size());
    machine.no_gpu = probe.why_none;
  }
  return machine;
}

std::vector<DeviceSpec> parse_device_spec(const std::string& spec, const SpecMachine& machine) {
  return SpecParser(spec, machine).parse();
}

std::vector<DeviceSpec> parse_device_spec(const std::string& spec) {
  // The GPU probe only when the spec may name a GPU: CPU-only specs stay
  // free of the CUDA runtime's start-up.
  return parse_device_spec(spec, this_machine_for_specs(spec.find("cuda") != std::string::npos));
}

}  // namespace hetsched
