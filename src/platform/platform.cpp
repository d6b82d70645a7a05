// Platforms: discovery of this machine's CPU devices, platform files
// (docs/platforms.md) and the combination of both.
#include "hetsched/platform.h"

#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <oneapi/dnnl/dnnl.hpp>
#include <nlohmann/json.hpp>

#include "backends/cpu/cpu_device.h"
#include "hetsched/error.h"
#include "kernels/kernel.h"
#include "platform/gpu_probe.h"

namespace hetsched {

namespace {

bool is_float_precision(const std::string& precision) {
  return precision == "float32" || precision == "float16" || precision == "bfloat16" || precision == "float64";
}

}  // namespace

bool PlatformDevice::computes(const Node& node) const {
  const std::string& p = node.cost.precision;
  if (precisions.empty() || p.empty() || std::find(precisions.begin(), precisions.end(), p) != precisions.end())
    return true;
  return is_float_precision(p) && std::any_of(precisions.begin(), precisions.end(), is_float_precision);
}

double PlatformDevice::peak_equivalent_flops(const Node& node) const {
  bool int8 = node.cost.precision == "int8" && int8_peak_gops > 0 && peak_gflops > 0;
  return int8 ? node.cost.flops * peak_gflops / int8_peak_gops : node.cost.flops;
}

bool PlatformDevice::supports(const Node& node) const {
  return (ops.empty() || std::find(ops.begin(), ops.end(), node.op_type) != ops.end()) && computes(node) &&
         !pinned_elsewhere.count(node.name) && !declined.count(node.name);
}

bool PlatformDevice::supports_all(const Graph& graph) const {
  return std::all_of(graph.nodes.begin(), graph.nodes.end(), [&](const Node& node) { return supports(node); });
}

bool PlatformDevice::supports_all_unpinned(const Graph& graph) const {
  return std::all_of(graph.nodes.begin(), graph.nodes.end(),
                     [&](const Node& node) { return supports(node) || pinned_elsewhere.count(node.name); });
}

int Platform::find_device(const std::string& device_name) const {
  for (size_t i = 0; i < devices.size(); ++i)
    if (devices[i].name == device_name) return static_cast<int>(i);
  return -1;
}

bool Platform::overlapping(int a, int b) const {
  const std::vector<std::string>& names = devices[a].overlaps;
  return a != b && std::find(names.begin(), names.end(), devices[b].name) != names.end();
}

bool Platform::has_overlaps() const {
  return std::any_of(devices.begin(), devices.end(), [](const PlatformDevice& d) { return !d.overlaps.empty(); });
}

const Link* Platform::link(const std::string& from_space, const std::string& to_space) const {
  for (const Link& l : links)
    if (l.from_space == from_space && l.to_space == to_space) return &l;
  return nullptr;
}

const SharedResource* Platform::resource(const std::string& resource_name) const {
  for (const SharedResource& r : resources)
    if (r.name == resource_name) return &r;
  return nullptr;
}

bool Platform::has_emulated() const {
  return std::any_of(devices.begin(), devices.end(), [](const PlatformDevice& d) { return d.is_emulated(); });
}

namespace {

constexpr const char* kHostDram = "host-dram";
const std::vector<std::string> kModelKinds = {"cpu", "gpu", "npu", "dsa"};
const std::vector<std::string> kPrecisions = {"float32", "float16", "bfloat16", "int8"};

std::string fnv1a_hex(const std::string& text) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char ch : text) {
    hash ^= ch;
    hash *= 1099511628211ull;
  }
  return fmt::format("{:016x}", hash);
}

const char* kind_word(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::kCpu: return "cpu";
    case DeviceKind::kEmulated: return "emu";
    case DeviceKind::kCuda: return "cuda";
  }
  return "?";
}

std::string join(const std::vector<std::string>& items, const char* separator) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += separator;
    out += item;
  }
  return out;
}

}  // namespace

// Devices are sorted by name and links by their spaces: plans name devices
// rather than number them, so listing the same devices in another order
// must not turn a plan away. A file link's latency and bandwidth are model
// parameters and count; a measured link's would change with every
// measurement, like the peaks, and do not.
std::string Platform::signature() const {
  std::vector<std::string> device_lines;
  for (const PlatformDevice& d : devices)
    device_lines.push_back(fmt::format("device|{}|{}|{}|{}|{}|{}|{}", d.name, kind_word(d.kind),
                                       d.model_kind, d.signature, d.memory_space, d.n_streams, join(d.ops, ",")));
  std::sort(device_lines.begin(), device_lines.end());
  std::vector<std::string> link_lines;
  for (const Link& l : links) {
    std::string line = fmt::format("link|{}|{}", l.from_space, l.to_space);
    if (l.source == "file") line += fmt::format("|{}|{}", l.latency_us, l.bandwidth_gbps);
    link_lines.push_back(line);
  }
  std::sort(link_lines.begin(), link_lines.end());
  return fnv1a_hex(join(device_lines, "\n") + "\n" + join(link_lines, "\n"));
}

namespace {

// ---------------------------------------------------------------- platform files

// Checks one platform file's JSON and builds its Platform. Every error names
// the file and the field's path ("devices[2].peak_gflops").
class PlatformFileReader {
 public:
  explicit PlatformFileReader(std::string path) : path_(std::move(path)) {}

  Platform read(const nlohmann::json& root) {
    check_object(root, "", {"name", "description", "devices", "links", "resources"});
    Platform platform;
    platform.name = required_name(root, "", "name");
    optional_string(root, "", "description");

    // Resources and devices first: links are checked against the memory
    // spaces the devices declare.
    if (root.contains("resources")) {
      const auto& resources = array_field(root, "", "resources");
      for (size_t i = 0; i < resources.size(); ++i)
        platform.resources.push_back(read_resource(resources[i], fmt::format("resources[{}]", i), platform));
    }
    const auto& devices = array_field(root, "", "devices");
    if (devices.empty()) fail("devices", "expected at least one device");
    for (size_t i = 0; i < devices.size(); ++i)
      platform.devices.push_back(read_device(devices[i], fmt::format("devices[{}]", i), platform));
    if (root.contains("links")) {
      const auto& links = array_field(root, "", "links");
      for (size_t i = 0; i < links.size(); ++i) read_link(links[i], fmt::format("links[{}]", i), platform);
    }
    for (size_t i = 0; i < platform.devices.size(); ++i) {
      const PlatformDevice& d = platform.devices[i];
      if (d.memory_space == kHostMemory) continue;
      for (auto [from, to] : {std::pair{kHostMemory, d.memory_space.c_str()}, {d.memory_space.c_str(), kHostMemory}})
        if (!platform.link(from, to))
          fail(fmt::format("devices[{}].memory_space", i),
               fmt::format("'{}' needs a link from {} to {} (add it to links, or \"bidirectional\": true)",
                           d.memory_space, from, to));
    }
    return platform;
  }

 private:
  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw Error(ErrorCode::kInvalidFile, fmt::format("{}: {}: {}", path_, field, what));
  }

  static std::string field_path(const std::string& parent, const std::string& key) {
    return parent.empty() ? key : parent + "." + key;
  }

  // Unknown keys are refused so that a typo ("bandwith_gbps") cannot
  // silently leave a parameter at its default.
  void check_object(const nlohmann::json& value, const std::string& where,
                    const std::vector<std::string>& allowed) const {
    if (!value.is_object()) fail(where.empty() ? "(top level)" : where, "expected an object");
    for (const auto& [key, _] : value.items())
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end())
        fail(field_path(where, key), fmt::format("unknown key (expected one of {})", join(allowed, ", ")));
  }

  const nlohmann::json& required(const nlohmann::json& object, const std::string& where,
                                 const std::string& key) const {
    if (!object.contains(key)) fail(field_path(where, key), "missing (required)");
    return object[key];
  }

  // The optional `key` of `object`: a non-empty array of distinct strings,
  // each of which `unknown` accepts ("") or refuses (why); empty when the
  // key is left out (meaning `left_out`, which the error for an empty array
  // says).
  template <typename Unknown>
  std::vector<std::string> distinct_names(const nlohmann::json& object, const std::string& where,
                                          const std::string& key, const std::string& what,
                                          const std::string& left_out, Unknown unknown) const {
    std::vector<std::string> names;
    if (!object.contains(key)) return names;
    const auto& items = array_field(object, where, key);
    if (items.empty())
      fail(field_path(where, key), fmt::format("expected at least one {} (leave {} out for {})", what, key, left_out));
    for (size_t i = 0; i < items.size(); ++i) {
      std::string field = fmt::format("{}.{}[{}]", where, key, i);
      std::string name = string_value(items[i], field);
      if (std::string why = unknown(name); !why.empty()) fail(field, why);
      if (std::find(names.begin(), names.end(), name) != names.end())
        fail(field, fmt::format("'{}' is listed twice", name));
      names.push_back(name);
    }
    return names;
  }

  const nlohmann::json& array_field(const nlohmann::json& object, const std::string& where,
                                    const std::string& key) const {
    const auto& value = required(object, where, key);
    if (!value.is_array()) fail(field_path(where, key), "expected an array");
    return value;
  }

  std::string string_value(const nlohmann::json& value, const std::string& field) const {
    if (!value.is_string() || value.get<std::string>().empty()) fail(field, "expected a non-empty string");
    return value.get<std::string>();
  }

  std::string optional_string(const nlohmann::json& object, const std::string& where, const std::string& key,
                              std::string fallback = "") const {
    if (!object.contains(key)) return fallback;
    return string_value(object[key], field_path(where, key));
  }

  // Names end up in signatures split on '|' and, for devices, in --devices
  // specs ("emu:NAME"), whose grammar has no '.'.
  std::string required_name(const nlohmann::json& object, const std::string& where, const std::string& key,
                            bool allow_dot = true) const {
    std::string field = field_path(where, key);
    std::string name = string_value(required(object, where, key), field);
    bool valid = std::all_of(name.begin(), name.end(), [&](char ch) {
      return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' || (allow_dot && ch == '.');
    });
    if (!valid)
      fail(field, fmt::format("'{}' is not a name (expected letters, digits, '_', '-'{})", name,
                              allow_dot ? " and '.'" : ""));
    return name;
  }

  double positive_number(const nlohmann::json& object, const std::string& where, const std::string& key) const {
    const auto& value = required(object, where, key);
    if (!value.is_number() || value.get<double>() <= 0) fail(field_path(where, key), "expected a positive number");
    return value.get<double>();
  }

  double non_negative_number(const nlohmann::json& object, const std::string& where, const std::string& key) const {
    if (!object.contains(key)) return 0;
    const auto& value = object[key];
    if (!value.is_number() || value.get<double>() < 0)
      fail(field_path(where, key), "expected a number >= 0");
    return value.get<double>();
  }

  int64_t integer(const nlohmann::json& object, const std::string& where, const std::string& key, int64_t fallback,
                  int64_t minimum) const {
    if (!object.contains(key)) return fallback;
    const auto& value = object[key];
    bool fits = value.is_number_integer() &&
                (value.is_number_unsigned() ? value.get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX) : true);
    if (!fits || value.get<int64_t>() < minimum)
      fail(field_path(where, key),
           minimum > 0 ? "expected a positive integer" : fmt::format("expected an integer >= {}", minimum));
    return value.get<int64_t>();
  }

  SharedResource read_resource(const nlohmann::json& value, const std::string& where, const Platform& platform) const {
    check_object(value, where, {"name", "bandwidth_gbps"});
    SharedResource resource;
    resource.name = required_name(value, where, "name");
    if (platform.resource(resource.name))
      fail(field_path(where, "name"), fmt::format("'{}' is listed twice", resource.name));
    resource.bandwidth_gbps = positive_number(value, where, "bandwidth_gbps");
    return resource;
  }

  PlatformDevice read_device(const nlohmann::json& value, const std::string& where, const Platform& platform) const {
    check_object(value, where,
                 {"name", "kind", "memory_space", "streams", "peak_gflops", "bandwidth_gbps", "launch_overhead_us",
                  "ops", "precisions", "int8_peak_gops", "shared_resource", "onchip_bytes", "description"});
    PlatformDevice device;
    std::string name = required_name(value, where, "name", false);
    device.name = "emu:" + name;
    if (platform.find_device(device.name) >= 0)
      fail(field_path(where, "name"), fmt::format("'{}' is listed twice", name));
    device.kind = DeviceKind::kEmulated;
    device.model_kind = string_value(required(value, where, "kind"), field_path(where, "kind"));
    if (std::find(kModelKinds.begin(), kModelKinds.end(), device.model_kind) == kModelKinds.end())
      fail(field_path(where, "kind"),
           fmt::format("unknown kind '{}' (expected one of {})", device.model_kind, join(kModelKinds, ", ")));
    device.memory_space = optional_string(value, where, "memory_space", kHostMemory);
    device.n_streams = static_cast<int>(integer(value, where, "streams", 1, 1));
    if (device.n_streams > 1024) fail(field_path(where, "streams"), "expected at most 1024 streams");
    device.peak_gflops = positive_number(value, where, "peak_gflops");
    device.bandwidth_gbps = positive_number(value, where, "bandwidth_gbps");
    device.launch_overhead_us = non_negative_number(value, where, "launch_overhead_us");
    device.ops = distinct_names(value, where, "ops", "op type", "every op", [](const std::string& op) {
      return kernels::find_reference_kernel(op)
                 ? ""
                 : fmt::format("unknown op type '{}' (expected an ONNX op type hetsched runs, see `hetsched ops`)", op);
    });
    device.precisions =
        distinct_names(value, where, "precisions", "number format", "every one", [](const std::string& precision) {
          return std::find(kPrecisions.begin(), kPrecisions.end(), precision) != kPrecisions.end()
                     ? ""
                     : fmt::format("unknown precision '{}' (expected one of {})", precision, join(kPrecisions, ", "));
        });
    if (value.contains("int8_peak_gops")) {
      if (!device.precisions.empty() &&
          std::find(device.precisions.begin(), device.precisions.end(), "int8") == device.precisions.end())
        fail(field_path(where, "int8_peak_gops"), "the device's precisions do not list int8");
      device.int8_peak_gops = positive_number(value, where, "int8_peak_gops");
    }
    device.shared_resource = optional_string(value, where, "shared_resource");
    if (!device.shared_resource.empty() && !platform.resource(device.shared_resource)) {
      std::vector<std::string> names;
      for (const auto& r : platform.resources) names.push_back(r.name);
      fail(field_path(where, "shared_resource"),
           fmt::format("'{}' is not listed in resources ({})", device.shared_resource,
                       names.empty() ? "there are none" : "it lists " + join(names, ", ")));
    }
    device.onchip_bytes = integer(value, where, "onchip_bytes", 0, 0);
    device.description = optional_string(value, where, "description");
    device.signature = fmt::format(
        "emu|{}|{}|kind={}|space={}|streams={}|gflops={}|gbps={}|launch_us={}|ops={}|shares={}|onchip={}",
        platform.name, name, device.model_kind, device.memory_space, device.n_streams, device.peak_gflops,
        device.bandwidth_gbps, device.launch_overhead_us, join(device.ops, ","), device.shared_resource,
        device.onchip_bytes);
    // Only where given: the signatures of files without them stay as they were.
    if (!device.precisions.empty()) device.signature += "|precisions=" + join(device.precisions, ",");
    if (device.int8_peak_gops > 0) device.signature += fmt::format("|int8_gops={}", device.int8_peak_gops);
    return device;
  }

  void read_link(const nlohmann::json& value, const std::string& where, Platform& platform) const {
    check_object(value, where, {"from", "to", "latency_us", "bandwidth_gbps", "bidirectional"});
    std::set<std::string> spaces = {kHostMemory};
    for (const auto& d : platform.devices) spaces.insert(d.memory_space);
    auto space = [&](const std::string& key) {
      std::string field = field_path(where, key);
      std::string name = string_value(required(value, where, key), field);
      if (!spaces.count(name))
        fail(field, fmt::format("unknown memory space '{}' (expected one of {})", name,
                                join(std::vector<std::string>(spaces.begin(), spaces.end()), ", ")));
      return name;
    };
    Link link;
    link.from_space = space("from");
    link.to_space = space("to");
    if (link.from_space == link.to_space)
      fail(field_path(where, "to"), fmt::format("a link joins two memory spaces, not '{}' to itself", link.to_space));
    link.latency_us = non_negative_number(value, where, "latency_us");
    link.bandwidth_gbps = positive_number(value, where, "bandwidth_gbps");
    link.source = "file";
    bool bidirectional = false;
    if (value.contains("bidirectional")) {
      if (!value["bidirectional"].is_boolean()) fail(field_path(where, "bidirectional"), "expected true or false");
      bidirectional = value["bidirectional"].get<bool>();
    }
    std::vector<Link> added = {link};
    if (bidirectional) {
      Link back = link;
      std::swap(back.from_space, back.to_space);
      added.push_back(back);
    }
    for (const Link& l : added) {
      if (platform.link(l.from_space, l.to_space))
        fail(where, fmt::format("a second link from {} to {}", l.from_space, l.to_space));
      platform.links.push_back(l);
    }
  }

  std::string path_;
};

// nlohmann keeps the last of two equal keys; a file saying "peak_gflops"
// twice is a mistake worth naming.
nlohmann::json parse_rejecting_duplicate_keys(const std::string& text, const std::string& path) {
  std::vector<std::set<std::string>> open_objects;
  auto callback = [&](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    if (event == Event::object_start) open_objects.emplace_back();
    if (event == Event::object_end && !open_objects.empty()) open_objects.pop_back();
    if (event == Event::key && !open_objects.empty() && !open_objects.back().insert(parsed.get<std::string>()).second)
      throw Error(ErrorCode::kInvalidFile,
                  fmt::format("{}: key '{}' appears twice in one object", path, parsed.get<std::string>()));
    return true;
  };
  try {
    return nlohmann::json::parse(text, callback);
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for a number like 1e400
    std::string what = e.what();
    size_t bracket = what.find("] ");  // drop nlohmann's "[json.exception.parse_error.101] "
    throw Error(ErrorCode::kInvalidFile,
                fmt::format("{}: not valid JSON: {}", path, bracket == std::string::npos ? what : what.substr(bracket + 2)));
  }
}

// ---------------------------------------------------------------- this machine

std::string onednn_version() {
  const dnnl_version_t* v = dnnl_version();
  return fmt::format("{}.{}.{}", v->major, v->minor, v->patch);
}

// A core group's on-chip memory: the L2 instances its cores cover. L2 is
// private to a core (or a small cluster) on current x86 and Arm CPUs, so the
// group's kernels can keep values there while they run on those cores; L3
// is shared with the other core groups and is not counted. 0 when hwloc did
// not report L2.
int64_t l2_bytes_of(const std::vector<int>& cores, const MachineInfo& machine) {
  for (const CacheInfo& cache : machine.caches) {
    if (cache.level != 2) continue;
    int64_t covered = 0;
    for (const std::vector<int>& served : cache.instances)
      if (std::any_of(cores.begin(), cores.end(),
                      [&](int core) { return std::find(served.begin(), served.end(), core) != served.end(); }))
        ++covered;
    return covered * static_cast<int64_t>(cache.size_bytes);
  }
  return 0;
}

PlatformDevice real_cpu_device(const DeviceSpec& spec, const MachineInfo& machine) {
  const std::string& cpu_model = machine.cpu_model;
  PlatformDevice device;
  device.name = spec.name();
  device.kind = DeviceKind::kCpu;
  device.cores = spec.cores;
  device.memory_space = kHostMemory;
  device.n_streams = 1;
  device.shared_resource = kHostDram;
  // Derived from the machine, like the cores: not part of the signature,
  // which already names the CPU model and the cores.
  device.onchip_bytes = l2_bytes_of(spec.cores, machine);
  std::string core_list = device.name.substr(device.name.find(':') + 1);
  device.description = fmt::format("{}, cores {}", cpu_model, core_list);
  device.signature = fmt::format("cpu|{}|cores={}|{}|onednn={}", cpu_model, spec.cores.size(), core_list,
                                 onednn_version());
  return device;
}

// Nominal until the CUDA backend measures them: a kernel launch, and a
// PCIe 4.0 x16 link's achievable bandwidth each way.
constexpr double kCudaLaunchOverheadUs = 5;
constexpr double kPcieLatencyUs = 10;
constexpr double kPcieBandwidthGbps = 25;

// A CUDA GPU: its own memory space ("cuda:N"), linked to host memory both
// ways; `spec.streams` streams sharing its compute.
PlatformDevice real_cuda_device(const DeviceSpec& spec, const GpuInfo& gpu, const std::string& libraries) {
  PlatformDevice device;
  device.name = spec.name();
  device.kind = DeviceKind::kCuda;
  device.model_kind = "gpu";
  device.memory_space = spec.name();
  device.n_streams = spec.streams;
  device.peak_gflops = gpu.peak_gflops;
  device.bandwidth_gbps = gpu.bandwidth_gbps;
  device.launch_overhead_us = kCudaLaunchOverheadUs;
  device.onchip_bytes = gpu.l2_bytes;
  device.description = fmt::format("{}, {:.1f} GiB, compute capability {}.{}, {} stream{}", gpu.name,
                                   static_cast<double>(gpu.memory_bytes) / (1 << 30), gpu.cc_major, gpu.cc_minor,
                                   spec.streams, spec.streams == 1 ? "" : "s");
  device.signature = fmt::format("cuda|{}|cc={}.{}|sms={}|mem={}|{}", gpu.name, gpu.cc_major, gpu.cc_minor,
                                 gpu.multiprocessors, gpu.memory_bytes, libraries);
  // Schedulers keep ops without a GPU kernel off the GPU; what a kernel
  // declines for one node (a dtype, a shape) validate_plan refuses.
  device.ops = gpu_kernel_op_types();
  return device;
}

}  // namespace

Platform load_platform_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error(ErrorCode::kIo, fmt::format("{}: cannot read platform file (it is a directory)", path));
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error(ErrorCode::kIo, fmt::format("{}: cannot read platform file ({})", path, std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw Error(ErrorCode::kIo, fmt::format("{}: cannot read platform file (read error)", path));
  return PlatformFileReader(path).read(parse_rejecting_duplicate_keys(text.str(), path));
}

std::string cpu_beside_gpu_warning(const Platform& platform, const std::vector<int>& usable_cores) {
  const PlatformDevice* gpu = nullptr;
  for (const PlatformDevice& d : platform.devices)
    if (d.kind == DeviceKind::kCuda) gpu = &d;
  if (!gpu || usable_cores.size() < 2) return "";
  std::set<int> all(usable_cores.begin(), usable_cores.end());
  for (const PlatformDevice& d : platform.devices) {
    if (d.kind != DeviceKind::kCpu || std::set<int>(d.cores.begin(), d.cores.end()) != all) continue;
    std::string rest = cpu_spec_beside_gpu(usable_cores);
    return fmt::format("{} takes every core beside {}: the threads driving the GPU's streams will take cores from "
                       "its kernels; leave one free (e.g. --devices {},{})",
                       d.name, gpu->name, rest, gpu->name);
  }
  return "";
}

std::string set_precision(Platform& platform, const std::string& precision) {
  if (precision != "float32" && precision != "bfloat16")
    throw Error(ErrorCode::kUsage, fmt::format("precision '{}': expected float32 or bfloat16", precision));
  if (precision == "float32") return "";
  // oneDNN's bfloat16 convolutions and matrix products on a CPU without
  // them are emulated, slower than float32.
  // cpu_isa values are bit masks of features, not an order.
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto bf16 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
  if ((isa & bf16) != bf16)
    return "precision bfloat16: this CPU has no bfloat16 instructions (AVX512-BF16, AMX); computing in float32";
  for (PlatformDevice& d : platform.devices) {
    if (d.kind != DeviceKind::kCpu || d.precision == precision) continue;
    d.precision = precision;
    d.signature += "|precision=" + precision;
  }
  return "";
}

Platform make_platform(const std::string& device_spec, const std::string& platform_file) {
  bool has_spec = device_spec.find_first_not_of(" \t") != std::string::npos;
  if (!has_spec && platform_file.empty())
    throw Error(ErrorCode::kUsage, "no devices: give a device spec (--devices) or a platform file (--platform)");
  if (!has_spec) return load_platform_file(platform_file);

  std::vector<DeviceSpec> specs = parse_device_spec(device_spec);
  Platform file;
  if (!platform_file.empty()) file = load_platform_file(platform_file);
  for (const DeviceSpec& spec : specs)
    if (spec.kind == DeviceKind::kEmulated) {
      if (platform_file.empty())
        throw Error(ErrorCode::kUsage,
                    fmt::format("--devices '{}': {} needs --platform FILE (the platform file describing it)",
                                device_spec, spec.name()));
      if (file.find_device(spec.name()) < 0) {
        std::vector<std::string> names;
        for (const auto& d : file.devices) names.push_back(d.name);
        throw Error(ErrorCode::kUsage, fmt::format("--devices '{}': {} is not a device of {} (it has {})", device_spec,
                                                   spec.name(), platform_file, join(names, ", ")));
      }
    }

  Platform platform;
  platform.name = platform_file.empty() ? "this machine" : file.name;
  MachineInfo machine;
  bool has_real = false;
  std::set<std::string> spaces = {kHostMemory};
  std::set<std::string> shared;
  for (const DeviceSpec& spec : specs) {
    if (spec.kind == DeviceKind::kCpu) {
      if (!has_real) machine = describe_cpus();
      has_real = true;
      platform.devices.push_back(real_cpu_device(spec, machine));
    } else if (spec.kind == DeviceKind::kCuda) {
      // parse_device_spec() has checked that the GPU exists.
      const GpuProbe& probe = probe_gpus();
      platform.devices.push_back(real_cuda_device(spec, probe.gpus.at(static_cast<size_t>(spec.gpu)), probe.libraries));
      for (auto [from, to] : {std::pair{std::string(kHostMemory), spec.name()}, {spec.name(), std::string(kHostMemory)}})
        platform.links.push_back(Link{from, to, kPcieLatencyUs, kPcieBandwidthGbps, "default"});
    } else {
      platform.devices.push_back(file.devices[file.find_device(spec.name())]);
    }
    spaces.insert(platform.devices.back().memory_space);
    shared.insert(platform.devices.back().shared_resource);
  }
  // parse_device_spec() allowed only union devices to share cores.
  for (PlatformDevice& a : platform.devices)
    for (const PlatformDevice& b : platform.devices) {
      if (&a == &b || a.kind != DeviceKind::kCpu || b.kind != DeviceKind::kCpu) continue;
      if (std::any_of(a.cores.begin(), a.cores.end(),
                      [&](int core) { return std::find(b.cores.begin(), b.cores.end(), core) != b.cores.end(); }))
        a.overlaps.push_back(b.name);
    }
  // Only what the chosen devices use: a link or resource of a device left
  // out would otherwise change the platform's signature.
  for (const Link& l : file.links)
    if (spaces.count(l.from_space) && spaces.count(l.to_space)) platform.links.push_back(l);
  for (const SharedResource& r : file.resources)
    if (shared.count(r.name)) platform.resources.push_back(r);
  if (has_real && !platform.resource(kHostDram)) platform.resources.push_back(SharedResource{kHostDram, 0});
  return platform;
}

std::string PlatformDevice::first_refusal(const Graph& graph, bool pinned_ok) const {
  for (const Node& node : graph.nodes) {
    if (supports(node) || (pinned_ok && pinned_elsewhere.count(node.name))) continue;
    return fmt::format("{} does not run {} ({})", name, node.label(), why_not(node));
  }
  return "";
}

std::string Platform::refusals(const Graph& graph, bool pinned_ok) const {
  std::vector<std::string> parts;
  for (const PlatformDevice& device : devices)
    if (std::string why = device.first_refusal(graph, pinned_ok); !why.empty()) parts.push_back(why);
  return join(parts, "; ");
}

std::string PlatformDevice::why_not(const Node& node) const {
  if (!ops.empty() && std::find(ops.begin(), ops.end(), node.op_type) == ops.end())
    return kind == DeviceKind::kCuda ? fmt::format("no CUDA kernel for {}", node.op_type)
                                     : fmt::format("it runs only {}", join(ops, ", "));
  if (!computes(node))
    return fmt::format("it computes only in {}; the node computes in {}", join(precisions, ", "),
                       node.cost.precision);
  auto pin = pinned_elsewhere.find(node.name);
  if (pin != pinned_elsewhere.end()) return fmt::format("the node is pinned elsewhere by {}", pin->second);
  auto declines = declined.find(node.name);
  if (declines != declined.end()) return fmt::format("the GPU kernel declines it: {}", declines->second);
  return "";
}

}  // namespace hetsched
