// Reading abstract task graphs (see task_graph_io.h).
#include "sched/task_graph_io.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "hetsched/error.h"

namespace hetsched {

namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::string& source, const std::string& what) {
  throw Error(ErrorCode::kInvalidFile, fmt::format("{}: {}", source, what));
}

const json& field(const json& object, const char* name, const std::string& where, const std::string& source) {
  if (!object.is_object()) bad(source, fmt::format("{}: expected an object", where));
  auto it = object.find(name);
  if (it == object.end()) bad(source, fmt::format("{}: missing field \"{}\"", where, name));
  return *it;
}

std::string id_of(const json& value, const std::string& where, const std::string& source) {
  // Papers number their tasks; both "3" and 3 are accepted as ids.
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number_integer()) return std::to_string(value.get<long long>());
  bad(source, fmt::format("{}: expected a string or integer id", where));
}

double time_of(const json& value, const std::string& where, const std::string& source) {
  if (!value.is_number()) bad(source, fmt::format("{}: expected a number", where));
  double t = value.get<double>();
  if (!std::isfinite(t) || t < 0) bad(source, fmt::format("{}: expected a finite number >= 0, got {}", where, t));
  return t;
}

}  // namespace

NamedTaskGraph parse_task_graph(const std::string& text, const std::string& source) {
  json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded()) bad(source, "not valid JSON");
  if (!doc.is_object()) bad(source, "expected a JSON object with \"devices\", \"tasks\" and \"edges\"");
  NamedTaskGraph out;
  TaskGraph& g = out.graph;

  const json& devices = field(doc, "devices", "top level", source);
  if (!devices.is_array() || devices.empty()) bad(source, "devices: expected a non-empty array of names");
  std::set<std::string> device_names;
  for (size_t i = 0; i < devices.size(); ++i) {
    if (!devices[i].is_string()) bad(source, fmt::format("devices[{}]: expected a string", i));
    if (!device_names.insert(devices[i].get<std::string>()).second)
      bad(source, fmt::format("devices[{}]: '{}' is listed twice", i, devices[i].get<std::string>()));
    out.devices.push_back(devices[i].get<std::string>());
  }
  g.n_procs = static_cast<int>(out.devices.size());

  const json& tasks = field(doc, "tasks", "top level", source);
  if (!tasks.is_array() || tasks.empty()) bad(source, "tasks: expected a non-empty array");
  std::map<std::string, int> index;
  for (size_t t = 0; t < tasks.size(); ++t) {
    std::string where = fmt::format("tasks[{}]", t);
    std::string id = id_of(field(tasks[t], "id", where, source), where + ".id", source);
    if (!index.emplace(id, static_cast<int>(t)).second) bad(source, fmt::format("{}: id '{}' is used twice", where, id));
    out.task_ids.push_back(id);
    const json& cost = field(tasks[t], "cost", where, source);
    if (!cost.is_array() || cost.size() != out.devices.size())
      bad(source, fmt::format("{}.cost: expected an array of {} times, one per device", where, out.devices.size()));
    std::vector<double> row;
    bool runs_somewhere = false;
    for (size_t d = 0; d < cost.size(); ++d) {
      // null: the device cannot run the task.
      if (cost[d].is_null()) {
        row.push_back(std::numeric_limits<double>::infinity());
        continue;
      }
      row.push_back(time_of(cost[d], fmt::format("{}.cost[{}]", where, d), source));
      runs_somewhere = true;
    }
    if (!runs_somewhere) bad(source, fmt::format("{} ('{}'): no device can run it (every cost is null)", where, id));
    g.cost.push_back(std::move(row));
  }
  g.n_tasks = static_cast<int>(tasks.size());
  g.succ.assign(static_cast<size_t>(g.n_tasks), {});

  const json* edges = nullptr;
  if (doc.contains("edges")) edges = &doc["edges"];
  if (edges && !edges->is_array()) bad(source, "edges: expected an array");
  std::vector<int> in_degree(static_cast<size_t>(g.n_tasks), 0);
  std::set<std::pair<int, int>> seen;
  for (size_t e = 0; edges && e < edges->size(); ++e) {
    const json& edge = (*edges)[e];
    std::string where = fmt::format("edges[{}]", e);
    int ends[2];
    const char* names[2] = {"from", "to"};
    for (int k = 0; k < 2; ++k) {
      std::string id = id_of(field(edge, names[k], where, source), fmt::format("{}.{}", where, names[k]), source);
      auto it = index.find(id);
      if (it == index.end()) bad(source, fmt::format("{}.{}: no task has id '{}'", where, names[k], id));
      ends[k] = it->second;
    }
    if (ends[0] == ends[1]) bad(source, fmt::format("{}: task '{}' depends on itself", where, out.task_ids[ends[0]]));
    if (!seen.insert({ends[0], ends[1]}).second)
      bad(source, fmt::format("{}: edge '{}' -> '{}' is listed twice", where, out.task_ids[ends[0]],
                              out.task_ids[ends[1]]));
    double comm = edge.contains("comm") ? time_of(edge["comm"], where + ".comm", source) : 0;
    g.succ[static_cast<size_t>(ends[0])].emplace_back(ends[1], comm);
    ++in_degree[static_cast<size_t>(ends[1])];
  }

  // Kahn's algorithm: tasks left over lie on a cycle.
  std::vector<int> ready;
  for (int t = 0; t < g.n_tasks; ++t)
    if (in_degree[static_cast<size_t>(t)] == 0) ready.push_back(t);
  int n_done = 0;
  while (!ready.empty()) {
    int t = ready.back();
    ready.pop_back();
    ++n_done;
    for (auto [s, comm] : g.succ[static_cast<size_t>(t)])
      if (--in_degree[static_cast<size_t>(s)] == 0) ready.push_back(s);
  }
  if (n_done != g.n_tasks)
    for (int t = 0; t < g.n_tasks; ++t)
      if (in_degree[static_cast<size_t>(t)] > 0)
        bad(source, fmt::format("edges: they form a cycle (task '{}' is on or after it)",
                                out.task_ids[static_cast<size_t>(t)]));
  return out;
}

NamedTaskGraph read_task_graph_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kIo, fmt::format("{}: cannot read the task graph file", path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  return parse_task_graph(buffer.str(), path);
}

}  // namespace hetsched
