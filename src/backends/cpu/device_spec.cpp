// Device specs: DeviceSpec::name() and parse_device_spec().
//
// Grammar (whitespace around any token is ignored):
//   spec   := device (',' device)*
//   device := 'cpu' | 'cpu' ':' cores | 'emu' ':' NAME
//   cores  := range ('+' range)*        '+' joins ranges, as name() prints them
//   range  := N | A '-' B               A <= B
//   NAME   := [A-Za-z0-9_-]+            a device of the platform file
// Overlapping ranges inside one device are merged; a core in two devices is
// an error, since two devices must never compete for one core. An emulated
// device listed twice is an error too: a spec names each device once.
#include <sched.h>
#include <sys/sysinfo.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "backends/cpu/cpu_device.h"
#include "hetsched/device.h"
#include "hetsched/error.h"

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
  explicit SpecParser(const std::string& spec) : spec_(spec), usable_(usable_cores()) {}

  // Syntax of the whole spec first, then cores against the machine, so a
  // typo is reported as a typo even when it sits next to a missing core.
  std::vector<DeviceSpec> parse() {
    if (trim(spec_).empty()) fail("empty device spec (expected e.g. cpu, cpu:0 or cpu:0,cpu:1)");
    std::vector<ParsedDevice> parsed;
    auto items = split(spec_, ',');
    for (size_t i = 0; i < items.size(); ++i) {
      std::string_view item = trim(items[i]);
      if (item.empty())
        fail(fmt::format("device {} is empty (expected cpu, cpu:CORES or emu:NAME between the commas)", i + 1));
      parsed.push_back(parse_device(item));
    }
    std::vector<DeviceSpec> devices;
    std::set<int> taken;
    std::set<std::string> emulated;
    for (const ParsedDevice& p : parsed) {
      if (p.kind == DeviceKind::kEmulated && !emulated.insert(p.emulated).second)
        fail(fmt::format("emu:{} is listed twice", p.emulated));
      DeviceSpec device = resolve(p);
      for (int core : device.cores)
        if (!taken.insert(core).second) fail(fmt::format("core {} is in two devices", core));
      devices.push_back(std::move(device));
    }
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
  };

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(ErrorCode::kUsage, fmt::format("--devices '{}': {}", spec_, what));
  }

  ParsedDevice parse_device(std::string_view item) const {
    size_t colon = item.find(':');
    std::string_view kind = trim(item.substr(0, colon));
    if (kind == "emu") return parse_emulated(item, colon);
    if (kind != "cpu")
      fail(fmt::format("unknown device kind '{}' (expected cpu or emu:NAME; cuda:N comes with its backend)",
                       kind));
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
};

}  // namespace

std::string DeviceSpec::name() const {
  switch (kind) {
    case DeviceKind::kCpu: return cores.empty() ? "cpu" : "cpu:" + format_ranges(cores, "+");
    case DeviceKind::kEmulated: return "emu:" + emulated;
  }
  return "?";
}

std::vector<DeviceSpec> parse_device_spec(const std::string& spec) { return SpecParser(spec).parse(); }

}  // namespace hetsched
