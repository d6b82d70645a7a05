// `hetsched devices [--json]` (see devices_command.h).
#include "devices_command.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "hetsched/device.h"

namespace {

using hetsched::MachineInfo;

std::string format_bytes(long long bytes) {
  if (bytes >= (1LL << 30) && bytes % (1LL << 30) == 0) return fmt::format("{} GiB", bytes >> 30);
  if (bytes >= (1LL << 20)) {
    double mib = static_cast<double>(bytes) / (1 << 20);
    return bytes % (1LL << 20) == 0 ? fmt::format("{} MiB", bytes >> 20) : fmt::format("{:.1f} MiB", mib);
  }
  if (bytes >= 1024 && bytes % 1024 == 0) return fmt::format("{} KiB", bytes / 1024);
  return fmt::format("{} B", bytes);
}

// "0-3,6": the usable processors as ranges.
std::string format_cores(const std::vector<int>& cores) {
  hetsched::DeviceSpec all;
  all.cores = cores;
  std::string name = all.name();  // "cpu:0-3+6"
  auto colon = name.find(':');
  std::string list = colon == std::string::npos ? "" : name.substr(colon + 1);
  for (char& c : list)
    if (c == '+') c = ',';
  return list;
}

// Example specs built from this machine's own core numbers, so each one
// can be pasted as is: {spec, what it means}.
std::vector<std::pair<std::string, std::string>> example_specs(const MachineInfo& m) {
  std::vector<std::pair<std::string, std::string>> out;
  const auto& cores = m.usable_cores;
  if (cores.empty()) return out;
  hetsched::DeviceSpec all;
  all.cores = cores;
  out.emplace_back("cpu", fmt::format("one device on all {} cores ({})", cores.size(), all.name()));
  out.emplace_back(fmt::format("cpu:{}", cores[0]), fmt::format("one device on core {}", cores[0]));
  if (cores.size() >= 2)
    out.emplace_back(fmt::format("cpu:{},cpu:{}", cores[0], cores[1]), "two devices, one core each");
  if (!m.gpus.empty()) {
    out.emplace_back("cuda:0", fmt::format("GPU 0 with {} streams", hetsched::kDefaultCudaStreams));
    out.emplace_back("cuda:0*1", "GPU 0 with one stream");
    if (cores.size() >= 2) {
      out.emplace_back(hetsched::cpu_spec_beside_gpu(cores) + ",cuda:0",
                       fmt::format("GPU 0 and every core but {}, left to the GPU's host threads", cores[0]));
    } else {
      out.emplace_back(fmt::format("cpu:{},cuda:0", cores[0]), fmt::format("core {} and GPU 0", cores[0]));
    }
  }
  return out;
}

nlohmann::json machine_json(const MachineInfo& m) {
  nlohmann::json caches = nlohmann::json::array();
  for (const auto& c : m.caches)
    caches.push_back({{"level", c.level}, {"size_bytes", c.size_bytes}, {"sharing", c.n_sharing_cores}});
  nlohmann::json examples = nlohmann::json::array();
  for (const auto& [spec, meaning] : example_specs(m)) examples.push_back({{"spec", spec}, {"meaning", meaning}});
  return {{"cpu_model", m.cpu_model},         {"logical_cores", m.n_logical_cores},
          {"physical_cores", m.n_physical_cores}, {"numa_nodes", m.n_numa_nodes},
          {"cores", m.usable_cores},          {"caches", caches},
          {"gpus", m.gpus},                   {"gpu_note", m.gpu_note},
          {"gpu_libraries", m.gpu_libraries}, {"openmp_waits", m.openmp_waits}, {"example_specs", examples},
          {"run_default_devices", hetsched::machine_devices_spec()}};
}

void print_human(const MachineInfo& m) {
  fmt::print("CPU: {}\n", m.cpu_model);
  fmt::print("cores: {} logical (OS numbers {}), {} physical\n", m.n_logical_cores, format_cores(m.usable_cores),
             m.n_physical_cores);
  fmt::print("NUMA nodes: {}\n", m.n_numa_nodes);
  if (m.caches.empty()) {
    fmt::print("caches: unknown\n");
  } else {
    fmt::print("caches:\n");
    for (const auto& c : m.caches) {
      std::string level = c.level == 1 ? "L1d" : fmt::format("L{}", c.level);
      std::string sharing = c.n_sharing_cores <= 1 ? "per logical core"
                                                   : fmt::format("shared by {} logical cores", c.n_sharing_cores);
      fmt::print("  {:<4}{:>10}  {}\n", level, format_bytes(c.size_bytes), sharing);
    }
  }
  if (m.gpus.empty()) {
    fmt::print("GPUs: none ({})\n", m.gpu_note);
  } else {
    fmt::print("GPUs:\n");
    for (const auto& g : m.gpus) fmt::print("  {}\n", g);
    if (!m.gpu_libraries.empty()) fmt::print("  with {}\n", m.gpu_libraries);
  }
  fmt::print("OpenMP waits: {}\n", m.openmp_waits);
  fmt::print("device specs (--devices) for this machine:\n");
  for (const auto& [spec, meaning] : example_specs(m)) fmt::print("  {:<14} {}\n", spec, meaning);
  fmt::print("`hetsched run MODEL` without --devices: {}, scheduled by auto\n", hetsched::machine_devices_spec());
}

}  // namespace

void add_devices_command(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("devices", "show this machine's cores, caches and GPUs, and the device specs that fit it");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "print the description as one JSON object");
  cmd->callback([json, exit_code] {
    MachineInfo m = hetsched::describe_machine();
    if (*json)
      fmt::print("{}\n", machine_json(m).dump(2));
    else
      print_human(m);
    *exit_code = 0;
  });
}
