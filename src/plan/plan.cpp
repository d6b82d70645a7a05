// Plans as data: counting, fingerprints, JSON (docs/plans.md), the validator
// and the memory plan.
#include "hetsched/plan.h"

#include <algorithm>
#include <deque>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "hetsched/error.h"
#include "platform/gpu_probe.h"

namespace hetsched {

const char* step_kind_name(StepKind kind) {
  switch (kind) {
    case StepKind::kLaunch: return "launch";
    case StepKind::kCopy: return "copy";
    case StepKind::kRecord: return "record";
    case StepKind::kWait: return "wait";
  }
  return "?";
}

namespace {

int count_steps(const Plan& plan, StepKind kind) {
  int n = 0;
  for (const Lane& lane : plan.lanes)
    for (const PlanStep& step : lane.steps) n += step.kind == kind ? 1 : 0;
  return n;
}

}  // namespace

int Plan::n_launches() const { return count_steps(*this, StepKind::kLaunch); }
int Plan::n_copies() const { return count_steps(*this, StepKind::kCopy); }

std::vector<PlanDeviceWork> work_by_device(const Plan& plan, const Graph& graph) {
  std::vector<PlanDeviceWork> work(plan.devices.size());
  for (const Lane& lane : plan.lanes) {
    PlanDeviceWork& w = work.at(lane.device);
    ++w.lanes;
    for (const PlanStep& step : lane.steps) {
      if (step.kind != StepKind::kLaunch) continue;
      ++w.launches;
      w.nodes += static_cast<int>(step.nodes.size());
      for (NodeId id : step.nodes) w.flops += graph.nodes[id].cost.flops;
    }
  }
  return work;
}

// ---------------------------------------------------------------- fingerprint

namespace {

uint64_t fnv1a_64(std::string_view text) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

std::string describe_value(const Graph& graph, ValueId id) {
  if (id == kNoValue) return "-";
  const Value& v = graph.values[id];
  std::string shape = v.has_shape ? fmt::format("[{}]", fmt::join(v.shape, ",")) : "[?]";
  return fmt::format("{}:{}{}{}", v.name, dtype_name(v.dtype), shape, v.is_constant() ? ":const" : "");
}

// Attribute values take part in the structure; tensor attributes only by
// type and shape, like weights.
std::string describe_attribute(const Attribute& a) {
  switch (a.kind) {
    case Attribute::Kind::kInt: return fmt::format("i{}", a.i);
    case Attribute::Kind::kFloat: return fmt::format("f{}", a.f);
    case Attribute::Kind::kString: return fmt::format("s{}:{}", a.s.size(), a.s);
    case Attribute::Kind::kInts: return fmt::format("I[{}]", fmt::join(a.ints, ","));
    case Attribute::Kind::kFloats: return fmt::format("F[{}]", fmt::join(a.floats, ","));
    case Attribute::Kind::kStrings: {
      std::string out = "S[";
      for (const auto& s : a.strings) out += fmt::format("{}:{},", s.size(), s);
      return out + "]";
    }
    case Attribute::Kind::kTensor:
      return fmt::format("T{}[{}]", a.t.defined() ? dtype_name(a.t.dtype()) : "-",
                         a.t.defined() ? fmt::format("{}", fmt::join(a.t.shape(), ",")) : "");
    case Attribute::Kind::kGraph: return "G";
  }
  return "?";
}

}  // namespace

std::string graph_fingerprint(const Graph& graph) {
  std::string text;
  for (ValueId id : graph.inputs) text += "input " + describe_value(graph, id) + "\n";
  for (ValueId id : graph.outputs) text += "output " + describe_value(graph, id) + "\n";
  for (const Node& node : graph.nodes) {
    text += fmt::format("node {}:{}:{}:{}\n", node.name, node.domain, node.op_type, node.opset);
    for (ValueId id : node.inputs) text += " in " + describe_value(graph, id) + "\n";
    for (ValueId id : node.outputs) text += " out " + describe_value(graph, id) + "\n";
    for (const auto& [key, attr] : node.attributes) text += " attr " + key + "=" + describe_attribute(attr) + "\n";
  }
  return fmt::format("{:016x}", fnv1a_64(text));
}

// ---------------------------------------------------------------- JSON

namespace {

using nlohmann::json;
using nlohmann::ordered_json;

constexpr const char* kPlanFormat = "hetsched-plan";
constexpr int kPlanVersion = 1;

ordered_json step_to_json(const PlanStep& step, const Graph& graph) {
  ordered_json j;
  switch (step.kind) {
    case StepKind::kLaunch: {
      ordered_json names = ordered_json::array();
      for (NodeId id : step.nodes) names.push_back(graph.nodes[id].name);
      j["launch"] = names;
      break;
    }
    case StepKind::kCopy:
      j["copy"] = graph.values[step.value].name;
      j["from"] = step.from_space;
      j["to"] = step.to_space;
      break;
    case StepKind::kRecord: j["record"] = step.event; break;
    case StepKind::kWait: j["wait"] = step.event; break;
  }
  return j;
}

}  // namespace

// One line per step and per placement, so plans read (and diff) well.
std::string plan_to_json(const Plan& plan, const Graph& graph) {
  auto device_name = [&](int device) {
    if (device < 0 || device >= static_cast<int>(plan.devices.size()))
      throw Error(ErrorCode::kUsage, fmt::format("plan '{}': device index {} is not one of its {} devices",
                                                 plan.scheduler, device, plan.devices.size()));
    return plan.devices[device];
  };
  auto field = [](const char* key, const ordered_json& value) {
    return fmt::format(" {}: {}", ordered_json(key).dump(), value.dump());
  };
  std::vector<std::string> fields = {
      field("format", kPlanFormat),
      field("version", kPlanVersion),
      field("scheduler", plan.scheduler),
      field("model", plan.model),
      field("model_hash", plan.model_hash),
      field("platform_signature", plan.platform_signature),
      field("devices", plan.devices),
  };

  std::vector<std::string> lanes;
  for (const Lane& lane : plan.lanes) {
    std::vector<std::string> steps;
    for (const PlanStep& step : lane.steps) steps.push_back("    " + step_to_json(step, graph).dump());
    ordered_json head = {{"device", device_name(lane.device)}, {"stream", lane.stream}};
    std::string text = head.dump();
    text.pop_back();
    if (steps.empty())
      lanes.push_back(fmt::format("  {},\"steps\":[]}}", text));
    else
      lanes.push_back(fmt::format("  {},\"steps\":[\n{}\n  ]}}", text, fmt::join(steps, ",\n")));
  }
  fields.push_back(lanes.empty() ? " \"lanes\": []" : fmt::format(" \"lanes\": [\n{}\n ]", fmt::join(lanes, ",\n")));
  fields.push_back(field("n_events", plan.n_events));

  std::vector<std::string> placement;
  for (size_t i = 0; i < plan.placement.size() && i < graph.nodes.size(); ++i) {
    const Placement& p = plan.placement[i];
    if (p.device < 0 && p.reason.empty()) continue;
    ordered_json entry = ordered_json::object();
    if (p.device >= 0) entry["device"] = device_name(p.device);
    entry["reason"] = p.reason;
    placement.push_back(fmt::format("  {}: {}", ordered_json(graph.nodes[i].name).dump(), entry.dump()));
  }
  fields.push_back(placement.empty() ? " \"placement\": {}"
                                     : fmt::format(" \"placement\": {{\n{}\n }}", fmt::join(placement, ",\n")));
  if (plan.predicted_ms >= 0) fields.push_back(field("predicted_ms", plan.predicted_ms));
  fields.push_back(field("notes", plan.notes));
  return fmt::format("{{\n{}\n}}\n", fmt::join(fields, ",\n"));
}

namespace {

// Reads one plan document, naming `source` and the JSON path of the field in
// every error.
class PlanReader {
 public:
  PlanReader(const Graph& graph, std::string source) : graph_(graph), source_(std::move(source)) {
    for (size_t i = 0; i < graph.nodes.size(); ++i) node_ids_[graph.nodes[i].name] = static_cast<NodeId>(i);
    for (size_t i = 0; i < graph.values.size(); ++i) value_ids_[graph.values[i].name] = static_cast<ValueId>(i);
  }

  Plan read(const std::string& text) {
    json doc;
    try {
      doc = json::parse(text);
    } catch (const json::exception& e) {  // parse_error, or out_of_range for a number like 1e400
      throw Error(ErrorCode::kInvalidFile, fmt::format("{}: not a JSON plan: {}", source_, e.what()));
    }
    if (!doc.is_object()) fail("", "expected a JSON object");
    if (!doc.contains("format") || !doc["format"].is_string() || doc["format"] != kPlanFormat)
      fail("format", fmt::format("expected \"{}\": not a hetsched plan", kPlanFormat));
    int version = integer(member(doc, "version", ""), "version");
    if (version != kPlanVersion)
      fail("version", fmt::format("version {} is not supported (this build reads version {})", version, kPlanVersion));
    static const std::set<std::string> known = {"format",  "version", "scheduler",  "model",        "model_hash",
                                                "platform_signature", "devices", "lanes", "n_events", "placement",
                                                "predicted_ms", "notes"};
    for (const auto& [key, unused] : doc.items())
      if (!known.count(key)) fail(key, "unknown field");

    Plan plan;
    plan.model = string(member(doc, "model", ""), "model");
    plan.model_hash = string(member(doc, "model_hash", ""), "model_hash");
    std::string graph_hash = graph_fingerprint(graph_);
    if (plan.model_hash != graph_hash)
      fail("model_hash", fmt::format("the plan was made for another graph ('{}', hash {}; this graph: hash {}): "
                                     "make the plan again for this model",
                                     plan.model, plan.model_hash, graph_hash));
    plan.scheduler = string(member(doc, "scheduler", ""), "scheduler");
    plan.platform_signature = string(member(doc, "platform_signature", ""), "platform_signature");
    const json& devices = array(member(doc, "devices", ""), "devices");
    for (size_t i = 0; i < devices.size(); ++i)
      plan.devices.push_back(string(devices[i], fmt::format("devices[{}]", i)));
    plan.n_events = integer(member(doc, "n_events", ""), "n_events");
    if (plan.n_events < 0) fail("n_events", "expected a count >= 0");

    const json& lanes = array(member(doc, "lanes", ""), "lanes");
    for (size_t l = 0; l < lanes.size(); ++l) plan.lanes.push_back(read_lane(lanes[l], fmt::format("lanes[{}]", l), plan));
    // Each event is recorded by one step; the validator sizes its tables by
    // n_events, which must not be a count the file merely claims.
    size_t n_steps = 0;
    for (const Lane& lane : plan.lanes) n_steps += lane.steps.size();
    if (static_cast<size_t>(plan.n_events) > n_steps)
      fail("n_events", fmt::format("{} events, but the plan has {} steps to record them", plan.n_events, n_steps));

    read_placement(member(doc, "placement", ""), plan);
    if (doc.contains("predicted_ms")) {
      if (!doc["predicted_ms"].is_number()) fail("predicted_ms", "expected a number");
      plan.predicted_ms = doc["predicted_ms"].get<double>();
    }
    if (doc.contains("notes")) {
      const json& notes = array(doc["notes"], "notes");
      for (size_t i = 0; i < notes.size(); ++i) plan.notes.push_back(string(notes[i], fmt::format("notes[{}]", i)));
    }
    return plan;
  }

 private:
  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    if (field.empty()) throw Error(ErrorCode::kInvalidFile, fmt::format("{}: {}", source_, what));
    throw Error(ErrorCode::kInvalidFile, fmt::format("{}: field '{}': {}", source_, field, what));
  }

  static std::string join_path(const std::string& parent, const std::string& key) {
    return parent.empty() ? key : parent + "." + key;
  }

  const json& member(const json& object, const std::string& key, const std::string& parent) const {
    auto it = object.find(key);
    if (it == object.end()) fail(join_path(parent, key), "missing");
    return *it;
  }
  std::string string(const json& j, const std::string& field) const {
    if (!j.is_string()) fail(field, fmt::format("expected a string, got {}", j.dump()));
    return j.get<std::string>();
  }
  int integer(const json& j, const std::string& field) const {
    if (!j.is_number_integer()) fail(field, fmt::format("expected an integer, got {}", j.dump()));
    return j.get<int>();
  }
  const json& array(const json& j, const std::string& field) const {
    if (!j.is_array()) fail(field, "expected an array");
    return j;
  }

  int device_index(const Plan& plan, const json& j, const std::string& field) const {
    std::string name = string(j, field);
    auto it = std::find(plan.devices.begin(), plan.devices.end(), name);
    if (it == plan.devices.end())
      fail(field, fmt::format("'{}' is not one of the plan's devices ({})", name, fmt::join(plan.devices, ", ")));
    return static_cast<int>(it - plan.devices.begin());
  }

  Lane read_lane(const json& j, const std::string& path, const Plan& plan) const {
    if (!j.is_object()) fail(path, "expected an object {device, stream, steps}");
    for (const auto& [key, unused] : j.items())
      if (key != "device" && key != "stream" && key != "steps") fail(join_path(path, key), "unknown field");
    Lane lane;
    lane.device = device_index(plan, member(j, "device", path), join_path(path, "device"));
    lane.stream = integer(member(j, "stream", path), join_path(path, "stream"));
    const json& steps = array(member(j, "steps", path), join_path(path, "steps"));
    for (size_t s = 0; s < steps.size(); ++s)
      lane.steps.push_back(read_step(steps[s], fmt::format("{}.steps[{}]", path, s)));
    return lane;
  }

  PlanStep read_step(const json& j, const std::string& path) const {
    if (!j.is_object()) fail(path, "expected an object: {launch}, {copy, from, to}, {record} or {wait}");
    PlanStep step;
    if (j.contains("launch")) {
      expect_keys(j, path, {"launch"});
      step.kind = StepKind::kLaunch;
      const json& names = array(j["launch"], join_path(path, "launch"));
      for (size_t i = 0; i < names.size(); ++i) {
        std::string field = fmt::format("{}.launch[{}]", path, i);
        std::string name = string(names[i], field);
        auto it = node_ids_.find(name);
        if (it == node_ids_.end()) fail(field, fmt::format("the model has no node '{}'", name));
        step.nodes.push_back(it->second);
      }
    } else if (j.contains("copy")) {
      expect_keys(j, path, {"copy", "from", "to"});
      step.kind = StepKind::kCopy;
      std::string name = string(j["copy"], join_path(path, "copy"));
      auto it = value_ids_.find(name);
      if (it == value_ids_.end()) fail(join_path(path, "copy"), fmt::format("the model has no value '{}'", name));
      step.value = it->second;
      step.from_space = string(member(j, "from", path), join_path(path, "from"));
      step.to_space = string(member(j, "to", path), join_path(path, "to"));
    } else if (j.contains("record") || j.contains("wait")) {
      bool record = j.contains("record");
      const char* key = record ? "record" : "wait";
      expect_keys(j, path, {key});
      step.kind = record ? StepKind::kRecord : StepKind::kWait;
      step.event = integer(j[key], join_path(path, key));
      if (step.event < 0) fail(join_path(path, key), "expected an event number >= 0");
    } else {
      fail(path, "expected one of launch, copy, record, wait");
    }
    return step;
  }

  void expect_keys(const json& j, const std::string& path, std::initializer_list<const char*> keys) const {
    for (const auto& item : j.items())  // not a structured binding: clang 14 cannot capture one
      if (std::none_of(keys.begin(), keys.end(), [&](const char* k) { return item.key() == k; }))
        fail(join_path(path, item.key()), "unknown field");
  }

  // Devices and lanes come from the launches; the file adds the reasons.
  void read_placement(const json& j, Plan& plan) const {
    if (!j.is_object()) fail("placement", "expected an object {node name: {device, reason}}");
    plan.placement.assign(graph_.nodes.size(), Placement{});
    for (size_t l = 0; l < plan.lanes.size(); ++l)
      for (const PlanStep& step : plan.lanes[l].steps)
        for (NodeId id : step.nodes)
          if (plan.placement[id].lane < 0) {
            plan.placement[id].lane = static_cast<int>(l);
            plan.placement[id].device = plan.lanes[l].device;
          }
    for (const auto& [name, entry] : j.items()) {
      std::string path = "placement." + name;
      auto it = node_ids_.find(name);
      if (it == node_ids_.end()) fail(path, fmt::format("the model has no node '{}'", name));
      if (!entry.is_object()) fail(path, "expected an object {device, reason}");
      expect_keys(entry, path, {"device", "reason"});
      Placement& p = plan.placement[it->second];
      if (entry.contains("device")) p.device = device_index(plan, entry["device"], join_path(path, "device"));
      if (entry.contains("reason")) p.reason = string(entry["reason"], join_path(path, "reason"));
    }
  }

  const Graph& graph_;
  std::string source_;
  std::unordered_map<std::string, NodeId> node_ids_;
  std::unordered_map<std::string, ValueId> value_ids_;
};

}  // namespace

Plan plan_from_json(const std::string& text, const Graph& graph, const std::string& source) {
  Plan plan = PlanReader(graph, source).read(text);
  plan.source = source;
  return plan;
}

void write_plan_file(const Plan& plan, const Graph& graph, const std::string& path) {
  std::string text = plan_to_json(plan, graph);
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) throw Error(ErrorCode::kIo, fmt::format("{}: cannot write the plan", path));
}

Plan read_plan_file(const std::string& path, const Graph& graph) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kIo, fmt::format("{}: cannot read the plan file", path));
  std::stringstream text;
  text << in.rdbuf();
  return plan_from_json(text.str(), graph, path);
}

// ---------------------------------------------------------------- validation

namespace {

struct StepRef {
  int lane = 0;
  int index = 0;
};

class PlanValidator {
 public:
  PlanValidator(const Plan& plan, const Graph& graph, const Platform& platform)
      : plan_(plan), graph_(graph), platform_(platform) {}

  void run() {
    check_identity();
    check_lanes();
    index_steps();
    check_steps();
    order_steps();
    check_exclusion();
    check_data();
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    std::string name = plan_.model.empty() ? fmt::format("plan '{}'", plan_.scheduler)
                                           : fmt::format("plan '{}' for {}", plan_.scheduler, plan_.model);
    // A plan read from a file names the file: that is what the user edits or remakes.
    if (!plan_.source.empty()) name = plan_.source + ": " + name;
    throw Error(ErrorCode::kInvalidFile, name + ": " + what);
  }

  std::string lane_name(int lane) const {
    const Lane& l = plan_.lanes[lane];
    return fmt::format("lane {} ({} stream {})", lane, plan_.devices[l.device], l.stream);
  }

  std::string step_name(int global) const {
    StepRef ref = steps_[global];
    const PlanStep& step = plan_.lanes[ref.lane].steps[ref.index];
    std::string what;
    switch (step.kind) {
      case StepKind::kLaunch:
        what = step.nodes.empty() ? "launch of nothing" : "launch " + graph_.nodes[step.nodes[0]].label();
        if (step.nodes.size() > 1) what += fmt::format(" +{} more", step.nodes.size() - 1);
        break;
      case StepKind::kCopy:
        what = fmt::format("copy '{}' {}->{}", graph_.values[step.value].name, step.from_space, step.to_space);
        break;
      case StepKind::kRecord: what = fmt::format("record e{}", step.event); break;
      case StepKind::kWait: what = fmt::format("wait e{}", step.event); break;
    }
    return fmt::format("{} step {} ({})", lane_name(ref.lane), ref.index, what);
  }

  const PlatformDevice& device_of_lane(int lane) const {
    return platform_.devices[platform_device_[plan_.lanes[lane].device]];
  }

  void check_identity() {
    std::string signature = platform_.signature();
    if (plan_.platform_signature != signature)
      fail(fmt::format("made for another platform (signature '{}', this platform '{}'): make the plan again "
                       "for these devices",
                       plan_.platform_signature, signature));
    std::string graph_hash = graph_fingerprint(graph_);
    if (plan_.model_hash != graph_hash)
      fail(fmt::format("made for another graph (model_hash '{}', this graph '{}')", plan_.model_hash, graph_hash));
    std::set<std::string> seen;
    for (const std::string& name : plan_.devices) {
      int index = platform_.find_device(name);
      if (index < 0) fail(fmt::format("device '{}' is not on this platform", name));
      if (!seen.insert(name).second) fail(fmt::format("device '{}' is listed twice in 'devices'", name));
      platform_device_.push_back(index);
    }
  }

  void check_lanes() {
    std::map<std::pair<int, int>, int> lane_of;
    for (size_t l = 0; l < plan_.lanes.size(); ++l) {
      const Lane& lane = plan_.lanes[l];
      if (lane.device < 0 || lane.device >= static_cast<int>(plan_.devices.size()))
        fail(fmt::format("lane {}: device index {} is not one of the plan's {} devices", l, lane.device,
                         plan_.devices.size()));
      const PlatformDevice& device = platform_.devices[platform_device_[lane.device]];
      if (lane.stream < 0 || lane.stream >= device.n_streams)
        fail(fmt::format("lane {}: stream {} is out of range: {} has {} stream{}", l, lane.stream, device.name,
                         device.n_streams, device.n_streams == 1 ? "" : "s"));
      auto [it, fresh] = lane_of.emplace(std::make_pair(lane.device, lane.stream), static_cast<int>(l));
      if (!fresh)
        fail(fmt::format("lanes {} and {} are both {} stream {}: one lane per (device, stream)", it->second, l,
                         device.name, lane.stream));
    }
  }

  void index_steps() {
    for (size_t l = 0; l < plan_.lanes.size(); ++l) {
      for (size_t i = 0; i < plan_.lanes[l].steps.size(); ++i)
        steps_.push_back({static_cast<int>(l), static_cast<int>(i)});
    }
  }

  const PlanStep& step_at(int global) const {
    return plan_.lanes[steps_[global].lane].steps[steps_[global].index];
  }

  void check_steps() {
    int n_nodes = static_cast<int>(graph_.nodes.size());
    int n_values = static_cast<int>(graph_.values.size());
    launch_of_node_.assign(n_nodes, -1);
    record_of_event_.assign(plan_.n_events, -1);
    for (int s = 0; s < static_cast<int>(steps_.size()); ++s) {
      const PlanStep& step = step_at(s);
      switch (step.kind) {
        case StepKind::kLaunch: {
          if (step.nodes.empty()) fail(step_name(s) + ": launches no node");
          const PlatformDevice& device = device_of_lane(steps_[s].lane);
          for (NodeId id : step.nodes) {
            if (id < 0 || id >= n_nodes) fail(fmt::format("{}: node id {} is not in the graph", step_name(s), id));
            if (launch_of_node_[id] >= 0)
              fail(fmt::format("{} is launched twice: at {} and at {}", graph_.nodes[id].label(),
                               step_name(launch_of_node_[id]), step_name(s)));
            launch_of_node_[id] = s;
            if (!device.supports(graph_.nodes[id]))
              fail(fmt::format("{}: {} does not run {} ({})", step_name(s), device.name, graph_.nodes[id].label(),
                               device.why_not(graph_.nodes[id])));
            // A GPU kernel may decline one node of an op type it has (a
            // dtype, a shape): the GPU would fail to prepare it.
            if (device.kind == DeviceKind::kCuda) {
              std::string why = gpu_declines_node(graph_, graph_.nodes[id]);
              if (!why.empty())
                fail(fmt::format("{}: {} does not run {} ({})", step_name(s), device.name, graph_.nodes[id].label(),
                                 why));
            }
          }
          break;
        }
        case StepKind::kCopy:
          if (step.value < 0 || step.value >= n_values)
            fail(fmt::format("{}: value id {} is not in the graph", step_name(s), step.value));
          if (step.from_space == step.to_space)
            fail(fmt::format("{}: copies within one memory space", step_name(s)));
          if (!platform_.link(step.from_space, step.to_space))
            fail(fmt::format("{}: the platform has no link from '{}' to '{}'", step_name(s), step.from_space,
                             step.to_space));
          break;
        case StepKind::kRecord:
          check_event(s, step.event);
          if (record_of_event_[step.event] >= 0)
            fail(fmt::format("event e{} is recorded twice: at {} and at {}", step.event,
                             step_name(record_of_event_[step.event]), step_name(s)));
          record_of_event_[step.event] = s;
          break;
        case StepKind::kWait: check_event(s, step.event); break;
      }
    }
    for (NodeId id = 0; id < n_nodes; ++id)
      if (launch_of_node_[id] < 0) fail(fmt::format("{} is never launched", graph_.nodes[id].label()));
    for (int e = 0; e < plan_.n_events; ++e)
      if (record_of_event_[e] < 0) fail(fmt::format("event e{} is never recorded", e));
  }

  void check_event(int s, int event) const {
    if (event < 0 || event >= plan_.n_events)
      fail(fmt::format("{}: event e{} is out of range (the plan has n_events = {})", step_name(s), event,
                       plan_.n_events));
  }

  // The steps' happens-before order (lane order plus Record -> Wait) must be
  // acyclic. Along the way each step gets its vector clock: per lane, how
  // many of that lane's steps have finished before the step starts. Lanes
  // are sequences, so this count is the whole happens-before relation.
  void order_steps() {
    int n = static_cast<int>(steps_.size());
    int n_lanes = static_cast<int>(plan_.lanes.size());
    std::vector<std::vector<int>> waits_of_event(plan_.n_events);
    std::vector<int> pending(n, 0);
    for (int s = 0; s < n; ++s) {
      if (steps_[s].index > 0) ++pending[s];
      const PlanStep& step = step_at(s);
      if (step.kind == StepKind::kWait) {
        ++pending[s];
        waits_of_event[step.event].push_back(s);
      }
    }
    clock_.assign(static_cast<size_t>(n) * n_lanes, 0);
    std::deque<int> ready;
    for (int s = 0; s < n; ++s)
      if (pending[s] == 0) ready.push_back(s);
    int n_done = 0;
    while (!ready.empty()) {
      int s = ready.front();
      ready.pop_front();
      ++n_done;
      StepRef ref = steps_[s];
      int* clock = &clock_[static_cast<size_t>(s) * n_lanes];
      if (ref.index > 0) std::copy_n(&clock_[static_cast<size_t>(s - 1) * n_lanes], n_lanes, clock);
      clock[ref.lane] = ref.index;
      const PlanStep& step = step_at(s);
      if (step.kind == StepKind::kWait) {
        int record = record_of_event_[step.event];
        const int* recorded = &clock_[static_cast<size_t>(record) * n_lanes];
        for (int l = 0; l < n_lanes; ++l) clock[l] = std::max(clock[l], recorded[l]);
        clock[steps_[record].lane] = std::max(clock[steps_[record].lane], steps_[record].index + 1);
      }
      auto release = [&](int next) {
        if (--pending[next] == 0) ready.push_back(next);
      };
      if (s + 1 < n && steps_[s + 1].lane == ref.lane) release(s + 1);
      if (step.kind == StepKind::kRecord)
        for (int w : waits_of_event[step.event]) release(w);
    }
    if (n_done < n) report_deadlock(pending);
  }

  // Every step left over has a predecessor left over: walking back from one
  // must close a cycle.
  [[noreturn]] void report_deadlock(const std::vector<int>& pending) const {
    int s = 0;
    while (pending[s] == 0) ++s;
    std::vector<int> position(steps_.size(), -1);
    std::vector<int> path;
    while (position[s] < 0) {
      position[s] = static_cast<int>(path.size());
      path.push_back(s);
      const PlanStep& step = step_at(s);
      if (step.kind == StepKind::kWait && pending[record_of_event_[step.event]] > 0)
        s = record_of_event_[step.event];
      else
        s = s - 1;
    }
    std::vector<std::string> waits;
    for (size_t i = position[s]; i < path.size(); ++i)
      if (step_at(path[i]).kind == StepKind::kWait) waits.push_back(step_name(path[i]));
    if (waits.size() == 1)
      fail(fmt::format("deadlock: {} waits for an event its own lane records later", waits[0]));
    fail(fmt::format("deadlock: {} wait for each other", fmt::join(waits, " and ")));
  }

  bool happens_before(int earlier, int later) const {
    size_t n_lanes = plan_.lanes.size();
    return clock_[static_cast<size_t>(later) * n_lanes + steps_[earlier].lane] > steps_[earlier].index;
  }

  // Launches on overlapping devices (a union device and one it is the
  // union of) share cores: every two of them must be ordered by
  // happens-before. For a launch b, the launches of another lane finished
  // before b starts are a prefix of that lane; the first launch past it must
  // start after b ends, and the lane's order then covers the rest.
  void check_exclusion() const {
    std::vector<int> first_step(plan_.lanes.size(), 0);
    for (int s = 1; s < static_cast<int>(steps_.size()); ++s)
      if (steps_[s].lane != steps_[s - 1].lane) first_step[steps_[s].lane] = s;
    for (size_t la = 0; la < plan_.lanes.size(); ++la)
      for (size_t lb = 0; lb < plan_.lanes.size(); ++lb) {
        if (la == lb || !platform_.overlapping(platform_device_[plan_.lanes[la].device],
                                               platform_device_[plan_.lanes[lb].device]))
          continue;
        const std::vector<PlanStep>& a_steps = plan_.lanes[la].steps;
        const std::vector<PlanStep>& b_steps = plan_.lanes[lb].steps;
        for (size_t bi = 0; bi < b_steps.size(); ++bi) {
          if (b_steps[bi].kind != StepKind::kLaunch) continue;
          int b = first_step[lb] + static_cast<int>(bi);
          size_t ai = static_cast<size_t>(clock_[static_cast<size_t>(b) * plan_.lanes.size() + la]);
          while (ai < a_steps.size() && a_steps[ai].kind != StepKind::kLaunch) ++ai;
          if (ai == a_steps.size()) continue;
          int a = first_step[la] + static_cast<int>(ai);
          if (!happens_before(b, a))
            fail(fmt::format("{} and {} may run at once on overlapping devices (they share cores): a Wait must "
                             "order them",
                             step_name(std::min(a, b)), step_name(std::max(a, b))));
        }
      }
  }

  const std::string& space_of_lane(int lane) const { return device_of_lane(lane).memory_space; }

  // Where a value becomes available in a memory space: launches producing
  // it there and copies to there.
  using Availability = std::map<std::pair<ValueId, std::string>, std::vector<int>>;

  // Constants (weights) are held by every device from the start.
  bool is_constant(ValueId v) const { return graph_.values[v].is_constant(); }

  bool available(ValueId v, const std::string& space, int s) const {
    if (graph_.is_graph_input(v) && space == kHostMemory) return true;
    auto it = available_at_.find({v, space});
    if (it == available_at_.end()) return false;
    return std::any_of(it->second.begin(), it->second.end(), [&](int a) { return happens_before(a, s); });
  }

  [[noreturn]] void report_unavailable(ValueId v, const std::string& space, int s) const {
    const std::string& name = graph_.values[v].name;
    auto it = available_at_.find({v, space});
    if (it == available_at_.end()) {
      std::string source = graph_.is_graph_input(v) ? "it is a graph input, in 'host'" : "";
      NodeId producer = graph_.values[v].producer;
      if (producer != kNoNode)
        source = fmt::format("produced at {}, in '{}'", step_name(launch_of_node_[producer]),
                             space_of_lane(steps_[launch_of_node_[producer]].lane));
      fail(fmt::format("{}: reads '{}' in memory space '{}', where it never is ({}): a Copy to '{}' is missing",
                       step_name(s), name, space, source, space));
    }
    fail(fmt::format("{}: reads '{}' before it is available in '{}': it becomes available at {}, and no Wait on "
                     "an event recorded after that comes first",
                     step_name(s), name, space, step_name(it->second.front())));
  }

  void check_data() {
    for (int s = 0; s < static_cast<int>(steps_.size()); ++s) {
      const PlanStep& step = step_at(s);
      if (step.kind == StepKind::kLaunch) {
        for (NodeId id : step.nodes)
          for (ValueId v : graph_.nodes[id].outputs)
            if (v != kNoValue) available_at_[{v, space_of_lane(steps_[s].lane)}].push_back(s);
      } else if (step.kind == StepKind::kCopy) {
        available_at_[{step.value, step.to_space}].push_back(s);
      }
    }
    for (int s = 0; s < static_cast<int>(steps_.size()); ++s) {
      const PlanStep& step = step_at(s);
      if (step.kind == StepKind::kLaunch) {
        const std::string& space = space_of_lane(steps_[s].lane);
        for (size_t k = 0; k < step.nodes.size(); ++k)
          for (ValueId v : graph_.nodes[step.nodes[k]].inputs) {
            if (v == kNoValue || is_constant(v)) continue;
            NodeId producer = graph_.values[v].producer;
            auto in_launch = std::find(step.nodes.begin(), step.nodes.end(), producer);
            if (in_launch != step.nodes.end()) {
              if (in_launch - step.nodes.begin() >= static_cast<long>(k))
                fail(fmt::format("{}: {} reads '{}' before {} produces it in the same launch", step_name(s),
                                 graph_.nodes[step.nodes[k]].label(), graph_.values[v].name,
                                 graph_.nodes[producer].label()));
              continue;
            }
            if (!available(v, space, s)) report_unavailable(v, space, s);
          }
      } else if (step.kind == StepKind::kCopy) {
        if (!is_constant(step.value) && !available(step.value, step.from_space, s))
          report_unavailable(step.value, step.from_space, s);
      }
    }
    for (ValueId v : graph_.outputs) {
      if (is_constant(v) || graph_.is_graph_input(v)) continue;
      if (!available_at_.count({v, kHostMemory})) {
        NodeId producer = graph_.values[v].producer;
        fail(fmt::format("graph output '{}' never reaches 'host' memory (produced at {}): a Copy to 'host' is "
                         "missing",
                         graph_.values[v].name, step_name(launch_of_node_[producer])));
      }
    }
  }

  const Plan& plan_;
  const Graph& graph_;
  const Platform& platform_;
  std::vector<int> platform_device_;  // per plan device
  std::vector<StepRef> steps_;        // every step, lane after lane
  std::vector<int> launch_of_node_;
  std::vector<int> record_of_event_;
  std::vector<int> clock_;  // steps_ x lanes
  Availability available_at_;
};

}  // namespace

void validate_plan(const Plan& plan, const Graph& graph, const Platform& platform) {
  PlanValidator(plan, graph, platform).run();
}

// ---------------------------------------------------------------- memory

namespace {

int64_t value_bytes(const Value& v) {
  if (!v.shape_is_static()) return 0;
  int64_t n = 1;
  for (int64_t d : v.shape) n *= d;
  return n * static_cast<int64_t>(dtype_size(v.dtype));
}

}  // namespace

MemoryPlan plan_memory(const Plan& plan, const Graph& graph, const Platform& platform) {
  std::vector<std::string> lane_space;
  for (const Lane& lane : plan.lanes) {
    int index = lane.device >= 0 && lane.device < static_cast<int>(plan.devices.size())
                    ? platform.find_device(plan.devices[lane.device])
                    : -1;
    if (index < 0)
      throw Error(ErrorCode::kInvalidFile,
                  fmt::format("plan '{}': a lane's device is not on this platform", plan.scheduler));
    lane_space.push_back(platform.devices[index].memory_space);
  }

  // Per value: the lanes touching it and the spaces it is held in.
  size_t n_values = graph.values.size();
  std::vector<std::set<int>> lanes_of(n_values);
  std::vector<std::set<std::string>> spaces_of(n_values);
  std::vector<int> producer_lane(n_values, -1);
  for (size_t l = 0; l < plan.lanes.size(); ++l)
    for (const PlanStep& step : plan.lanes[l].steps) {
      if (step.kind == StepKind::kLaunch) {
        for (NodeId id : step.nodes) {
          for (ValueId v : graph.nodes[id].inputs)
            if (v != kNoValue) lanes_of[v].insert(static_cast<int>(l));
          for (ValueId v : graph.nodes[id].outputs)
            if (v != kNoValue) {
              lanes_of[v].insert(static_cast<int>(l));
              spaces_of[v].insert(lane_space[l]);
              producer_lane[v] = static_cast<int>(l);
            }
        }
      } else if (step.kind == StepKind::kCopy) {
        lanes_of[step.value].insert(static_cast<int>(l));
        spaces_of[step.value].insert(step.to_space);
      }
    }

  MemoryPlan memory;
  memory.lane_local.assign(plan.lanes.size(), 0);
  auto space_entry = [&](const std::string& name) -> MemoryPlan::Space& {
    for (auto& s : memory.spaces)
      if (s.name == name) return s;
    memory.spaces.push_back({name, 0, 0});
    return memory.spaces.back();
  };
  space_entry(kHostMemory);
  for (const std::string& space : lane_space) space_entry(space);

  for (size_t v = 0; v < n_values; ++v) {
    const Value& value = graph.values[v];
    if (value.is_constant()) continue;
    ValueId id = static_cast<ValueId>(v);
    if (graph.is_graph_input(id)) {
      // The caller holds inputs in host memory; copies elsewhere are held.
      for (const std::string& space : spaces_of[v])
        if (space != kHostMemory) {
          auto& entry = space_entry(space);
          ++entry.n_values;
          entry.bytes += value_bytes(value);
        }
      continue;
    }
    if (producer_lane[v] < 0) continue;
    bool local = lanes_of[v].size() == 1 && spaces_of[v].size() == 1 && !graph.is_graph_output(id);
    if (local) {
      ++memory.lane_local[producer_lane[v]];
      continue;
    }
    for (const std::string& space : spaces_of[v]) {
      auto& entry = space_entry(space);
      ++entry.n_values;
      entry.bytes += value_bytes(value);
    }
  }
  return memory;
}

}  // namespace hetsched
