// The `explain` report (see hetsched/explain.h).
#include "hetsched/explain.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "report/text_table.h"

namespace hetsched {

namespace {

// Appends to a string what the CLI would print, so that the CLI and the
// Python binding show the same bytes.
class Report {
 public:
  template <typename... Args>
  void print(fmt::format_string<Args...> format, Args&&... args) {
    fmt::format_to(std::back_inserter(text_), format, std::forward<Args>(args)...);
  }

  void table(const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& right) {
    text_ += format_table(rows, right);
  }

  std::string take() { return std::move(text_); }

 private:
  std::string text_;
};

std::string format_bytes(double bytes) {
  if (bytes >= 1 << 30) return fmt::format("{:.2f} GiB", bytes / (1 << 30));
  if (bytes >= 1 << 20) return fmt::format("{:.1f} MiB", bytes / (1 << 20));
  if (bytes >= 1 << 10) return fmt::format("{:.1f} KiB", bytes / (1 << 10));
  return fmt::format("{:.0f} B", bytes);
}

std::string percent(double part, double whole) {
  return whole > 0 ? fmt::format("{:.1f}%", 100.0 * part / whole) : "-";
}

void overview(Report& out, const Plan& plan, const Graph& graph, const std::string& model_name) {
  int n_waits = 0;
  double copy_bytes = 0;
  for (const Lane& lane : plan.lanes)
    for (const PlanStep& step : lane.steps) {
      if (step.kind == StepKind::kWait) ++n_waits;
      if (step.kind == StepKind::kCopy) copy_bytes += graph.values[step.value].nbytes();
    }
  out.print("plan '{}' for {} ({} nodes, {:.3f} GFLOPs)\n", plan.scheduler, model_name, graph.nodes.size(),
            graph.total_flops() / 1e9);
  out.print("  {} lane{} on {}\n", plan.lanes.size(), plan.lanes.size() == 1 ? "" : "s", devices_used(plan));
  out.print("  {} launches, {} copies ({}), {} events ({} waits)\n", plan.n_launches(), plan.n_copies(),
            format_bytes(copy_bytes), plan.n_events, n_waits);
  if (plan.predicted_ms >= 0) out.print("  predicted by the scheduler: {:.3f} ms\n", plan.predicted_ms);
}

void devices(Report& out, const Plan& plan, const Graph& graph) {
  std::vector<PlanDeviceWork> work = work_by_device(plan, graph);
  double total_flops = graph.total_flops();
  std::vector<std::vector<std::string>> rows = {{"device", "lanes", "launches", "share", "nodes", "GFLOPs", "share"}};
  for (size_t d = 0; d < work.size(); ++d)
    rows.push_back({plan.devices[d], std::to_string(work[d].lanes), std::to_string(work[d].launches),
                    percent(work[d].launches, plan.n_launches()), std::to_string(work[d].nodes),
                    fmt::format("{:.3f}", work[d].flops / 1e9), percent(work[d].flops, total_flops)});
  out.print("\ndevices:\n");
  out.table(rows, {false, true, true, true, true, true, true});
}

// "Conv+Relu" for a few nodes; "40 nodes: Conv x20, Relu x18, ..." for many.
std::string launch_ops(const PlanStep& step, const Graph& graph) {
  if (step.nodes.size() <= 4) {
    std::vector<std::string> ops;
    for (NodeId id : step.nodes) ops.push_back(graph.nodes[id].op_type);
    return fmt::format("{}", fmt::join(ops, "+"));
  }
  std::map<std::string, int> counts;
  for (NodeId id : step.nodes) ++counts[graph.nodes[id].op_type];
  std::vector<std::pair<int, std::string>> sorted;
  for (const auto& [op, count] : counts) sorted.emplace_back(-count, op);
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::string> parts;
  for (size_t i = 0; i < sorted.size() && i < 3; ++i)
    parts.push_back(fmt::format("{} x{}", sorted[i].second, -sorted[i].first));
  if (sorted.size() > 3) parts.push_back("...");
  return fmt::format("{} nodes: {}", step.nodes.size(), fmt::join(parts, ", "));
}

std::string launch_names(const PlanStep& step, const Graph& graph) {
  std::vector<std::string> names;
  for (size_t i = 0; i < step.nodes.size() && i < 3; ++i) names.push_back(graph.nodes[step.nodes[i]].name);
  std::string out = fmt::format("{}", fmt::join(names, ", "));
  if (step.nodes.size() > 3) out += fmt::format(" +{} more", step.nodes.size() - 3);
  return out;
}

// "1.234 ms measured": the cost model's estimate and where it came from.
std::string estimate_text(const Estimate& e) {
  return fmt::format("{:.3f} ms {}", e.us / 1e3, cost_source_name(e.source));
}

void lanes(Report& out, const Plan& plan, const Graph& graph, const Platform& platform, const CostModel& cost) {
  std::map<std::string, int> sources;  // estimates by source
  std::map<int, std::pair<int, int>> recorded_at;  // event -> (lane, step)
  for (size_t l = 0; l < plan.lanes.size(); ++l)
    for (size_t s = 0; s < plan.lanes[l].steps.size(); ++s)
      if (plan.lanes[l].steps[s].kind == StepKind::kRecord)
        recorded_at[plan.lanes[l].steps[s].event] = {static_cast<int>(l), static_cast<int>(s)};
  for (size_t l = 0; l < plan.lanes.size(); ++l) {
    const Lane& lane = plan.lanes[l];
    out.print("\nlane {}: {} stream {}, {} steps\n", l, plan.devices[lane.device], lane.stream, lane.steps.size());
    const PlatformDevice& device = platform.devices[platform.find_device(plan.devices[lane.device])];
    std::vector<std::vector<std::string>> rows = {{"step", "kind", "what", "estimate", "detail"}};
    for (size_t s = 0; s < lane.steps.size(); ++s) {
      const PlanStep& step = lane.steps[s];
      std::string what, estimate, detail;
      switch (step.kind) {
        case StepKind::kLaunch: {
          what = launch_ops(step, graph);
          Estimate e = cost.launch(graph, step.nodes, device);
          estimate = estimate_text(e);
          ++sources[cost_source_name(e.source)];
          detail = launch_names(step, graph);
          break;
        }
        case StepKind::kCopy: {
          what = fmt::format("'{}' {}->{}", graph.values[step.value].name, step.from_space, step.to_space);
          const Link* link = platform.link(step.from_space, step.to_space);
          if (link) {
            double bytes = graph.values[step.value].nbytes();
            estimate = fmt::format("{:.3f} ms link", (link->latency_us + bytes / (link->bandwidth_gbps * 1e3)) / 1e3);
            ++sources["link"];
          }
          detail = format_bytes(graph.values[step.value].nbytes());
          break;
        }
        case StepKind::kRecord: what = fmt::format("e{}", step.event); break;
        case StepKind::kWait: {
          what = fmt::format("e{}", step.event);
          auto at = recorded_at[step.event];
          detail = fmt::format("recorded at lane {} step {}", at.first, at.second);
          break;
        }
      }
      rows.push_back({std::to_string(s), step_kind_name(step.kind), what, estimate, detail});
    }
    out.table(rows, {true, false, false, true, false});
  }
  std::vector<std::string> counts;
  for (const auto& [source, n] : sources) counts.push_back(fmt::format("{} {}", source, n));
  out.print("\nestimates by source: {}\n", fmt::join(counts, ", "));
}

void nodes(Report& out, const Plan& plan, const Graph& graph) {
  out.print("\nnodes:\n");
  std::vector<std::vector<std::string>> rows = {{"node", "op", "device", "lane", "reason"}};
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Placement& p = plan.placement[i];
    rows.push_back({graph.nodes[i].name, graph.nodes[i].op_type, p.device >= 0 ? plan.devices[p.device] : "-",
                    p.lane >= 0 ? std::to_string(p.lane) : "-", p.reason});
  }
  out.table(rows, {false, false, false, true, false});
}

void memory(Report& out, const Plan& plan, const Graph& graph, const Platform& platform) {
  MemoryPlan memory = plan_memory(plan, graph, platform);
  out.print("\nmemory: values crossing lanes or memory spaces, held for the whole run:\n");
  std::vector<std::vector<std::string>> rows = {{"space", "values", "bytes"}};
  for (const auto& space : memory.spaces)
    rows.push_back({space.name, std::to_string(space.n_values), format_bytes(static_cast<double>(space.bytes))});
  out.table(rows, {false, true, true});
  std::vector<std::string> local;
  for (size_t l = 0; l < memory.lane_local.size(); ++l)
    local.push_back(fmt::format("lane {}: {}", l, memory.lane_local[l]));
  out.print("  lane-local values (memory reused after their last read): {}\n", fmt::join(local, ", "));
}

}  // namespace

std::string explain_plan(const Plan& plan, const Graph& graph, const Platform& platform, const CostModel& cost,
                         const std::string& model_name) {
  Report out;
  overview(out, plan, graph, model_name);
  devices(out, plan, graph);
  lanes(out, plan, graph, platform, cost);
  nodes(out, plan, graph);
  memory(out, plan, graph, platform);
  if (!plan.notes.empty()) {
    out.print("\nnotes:\n");
    for (const auto& note : plan.notes) out.print("  {}\n", note);
  }
  return out.take();
}

}  // namespace hetsched
