// "type-based": a static op-type -> device table, the baseline PartitionTuner
// compares with and what capability-based assignment (ONNX Runtime's
// execution providers, OpenVINO HETERO) amounts to: compute-heavy ops
// (Conv, ConvTranspose, Gemm, MatMul and their integer forms QLinearConv,
// QLinearMatMul, ConvInteger, MatMulInteger) on the accelerator, everything
// else on the host CPU. No cost model is consulted.
//
// Parameters: accelerator=DEVICE (default: the first device modelling an
// npu, gpu or dsa), cpu=DEVICE (default: the first CPU device), and
// table="Op=DEVICE,Op=DEVICE" overriding entries. A fusion unit goes where
// its head op's entry says; when that device cannot run the whole unit it
// falls back to the CPU device. A pinned unit goes where its pin says.
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "hetsched/error.h"
#include "hetsched/scheduler.h"
#include "plan/plan_builder.h"

namespace hetsched {

namespace {

const std::set<std::string> kKnownParams = {"accelerator", "cpu", "table"};
const std::vector<std::string> kAcceleratedOps = {"Conv",          "ConvTranspose", "Gemm",        "MatMul",
                                                   "QLinearConv",   "QLinearMatMul", "ConvInteger", "MatMulInteger"};

std::string trim(const std::string& text) {
  size_t begin = text.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  size_t end = text.find_last_not_of(" \t");
  return text.substr(begin, end - begin + 1);
}

int named_device(const Platform& platform, const std::string& param, const std::string& device_name) {
  int index = platform.find_device(device_name);
  if (index < 0)
    throw Error(ErrorCode::kUsage,
                fmt::format("scheduler 'type-based': parameter {}: '{}' is not a device of this platform", param,
                            device_name));
  return index;
}

int default_accelerator(const Platform& platform) {
  for (size_t d = 0; d < platform.devices.size(); ++d) {
    const std::string& kind = platform.devices[d].model_kind;
    if (kind == "npu" || kind == "gpu" || kind == "dsa") return static_cast<int>(d);
  }
  return -1;
}

int default_cpu(const Platform& platform) {
  for (size_t d = 0; d < platform.devices.size(); ++d)
    if (platform.devices[d].kind == DeviceKind::kCpu || platform.devices[d].model_kind == "cpu")
      return static_cast<int>(d);
  return -1;
}

// "Conv=emu:npu, Relu=cpu:0" -> {Conv: npu index, Relu: cpu index}.
std::map<std::string, int> parse_table(const Platform& platform, const std::string& text) {
  std::map<std::string, int> table;
  std::stringstream entries(text);
  std::string entry;
  while (std::getline(entries, entry, ',')) {
    entry = trim(entry);
    if (entry.empty()) continue;
    size_t equals = entry.find('=');
    std::string op = equals == std::string::npos ? "" : trim(entry.substr(0, equals));
    std::string device = equals == std::string::npos ? "" : trim(entry.substr(equals + 1));
    if (op.empty() || device.empty())
      throw Error(ErrorCode::kUsage,
                  fmt::format("scheduler 'type-based': parameter table: entry '{}' is not OP=DEVICE", entry));
    table[op] = named_device(platform, "table", device);
  }
  return table;
}

bool runs_unit(const Graph& graph, const std::vector<NodeId>& unit, const PlatformDevice& device) {
  for (NodeId id : unit)
    if (!device.supports(graph.nodes[id])) return false;
  return true;
}

// The device a node of `unit` is pinned to (apply_pins), or -1.
int pinned_device(const Graph& graph, const Platform& platform, const std::vector<NodeId>& unit) {
  for (NodeId id : unit) {
    auto pin = platform.pinned.find(graph.nodes[id].name);
    if (pin != platform.pinned.end()) return platform.find_device(pin->second.device);
  }
  return -1;
}

std::string unit_ops(const Graph& graph, const std::vector<NodeId>& unit) {
  std::vector<std::string> ops;
  for (NodeId id : unit) ops.push_back(graph.nodes[id].op_type);
  return fmt::format("{}", fmt::join(ops, "+"));
}

class TypeBasedScheduler : public Scheduler {
 public:
  Plan schedule(const Graph& graph, const Platform& platform, const CostModel&,
                const ScheduleOptions& options) const override {
    for (const auto& [key, value] : options.params)
      if (!kKnownParams.count(key))
        throw Error(ErrorCode::kUsage,
                    fmt::format("scheduler 'type-based': unknown parameter '{}' (known: accelerator, cpu, table)", key));
    auto param = [&](const std::string& key) -> const std::string* {
      auto found = options.params.find(key);
      return found == options.params.end() ? nullptr : &found->second;
    };

    std::vector<std::string> notes;
    int cpu = param("cpu") ? named_device(platform, "cpu", *param("cpu")) : default_cpu(platform);
    if (cpu < 0)
      throw Error(ErrorCode::kUnsupported,
                  "scheduler 'type-based': this platform has no CPU device for the ops the table keeps on the host "
                  "(give one with --sched-param cpu=DEVICE)");
    int accelerator =
        param("accelerator") ? named_device(platform, "accelerator", *param("accelerator")) : default_accelerator(platform);
    if (accelerator < 0) {
      notes.push_back("no npu, gpu or dsa device: the accelerator's ops stay on the CPU device");
      accelerator = cpu;
    }
    std::map<std::string, int> table;
    for (const std::string& op : kAcceleratedOps) table[op] = accelerator;
    if (param("table"))
      for (const auto& [op, device] : parse_table(platform, *param("table"))) table[op] = device;

    const PlatformDevice& cpu_device = platform.devices[cpu];
    std::vector<LaunchAssignment> launches;
    for (auto& unit : fusion_units(graph)) {
      const std::string& head_op = graph.nodes[unit[0]].op_type;
      auto entry = table.find(head_op);
      int chosen = entry == table.end() ? cpu : entry->second;
      const PlatformDevice& device = platform.devices[chosen];
      std::string reason;
      int pinned = pinned_device(graph, platform, unit);
      if (pinned >= 0) {
        chosen = pinned;  // the user's pin overrides the table (the plan builder says so)
      } else if (runs_unit(graph, unit, device)) {
        reason = fmt::format("type-based: {} -> {} (the table's choice)", head_op, device.name);
      } else {
        if (!runs_unit(graph, unit, cpu_device))
          throw Error(ErrorCode::kUnsupported,
                      fmt::format("scheduler 'type-based': neither {} nor the CPU device {} runs {} ({})", device.name,
                                  cpu_device.name, graph.nodes[unit[0]].label(), unit_ops(graph, unit)));
        reason = fmt::format("type-based: {} -> {} ({} not supported on {}, fell back to {})", head_op,
                             cpu_device.name, unit_ops(graph, unit), device.name, cpu_device.name);
        chosen = cpu;
      }
      launches.push_back(LaunchAssignment{std::move(unit), chosen, 0, std::move(reason)});
    }
    Plan plan = build_plan(graph, platform, launches, "type-based");
    plan.notes = std::move(notes);
    return plan;
  }
};

}  // namespace

HETSCHED_SCHEDULER("type-based",
                   "static op-type table: Conv/ConvTranspose/Gemm/MatMul on the accelerator, the rest on the CPU "
                   "(params accelerator, cpu, table=\"Op=DEVICE,...\")",
                   TypeBasedScheduler);

}  // namespace hetsched
