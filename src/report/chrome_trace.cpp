// Chrome trace writer (the "Trace Event Format" that Perfetto and
// chrome://tracing read): devices are processes, streams are threads.
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "hetsched/error.h"
#include "hetsched/trace.h"

namespace hetsched {

namespace {

nlohmann::json metadata_event(const char* name, int pid, int tid, nlohmann::json args) {
  return {{"name", name}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", std::move(args)}};
}

// A predicted timeline must not be mistaken for a measured one when only
// the track names are on screen.
std::string process_label(const Trace& trace, const std::string& device) {
  const std::string suffix = " (simulated)";
  bool labelled = device.size() >= suffix.size() && device.compare(device.size() - suffix.size(), suffix.size(), suffix) == 0;
  return trace.kind == "simulated" && !labelled ? device + suffix : device;
}

}  // namespace

std::string chrome_trace_json(const Trace& trace) {
  nlohmann::json events = nlohmann::json::array();
  std::set<std::pair<int, int>> threads;
  for (size_t d = 0; d < trace.devices.size(); ++d) threads.insert({static_cast<int>(d), 0});
  for (const TraceEvent& e : trace.events) threads.insert({e.device, e.stream});

  for (size_t d = 0; d < trace.devices.size(); ++d) {
    int pid = static_cast<int>(d);
    events.push_back(metadata_event("process_name", pid, 0, {{"name", process_label(trace, trace.devices[d])}}));
    // Keeps the devices in the trace's order rather than sorted by name.
    events.push_back(metadata_event("process_sort_index", pid, 0, {{"sort_index", pid}}));
  }
  for (auto [pid, tid] : threads) {
    events.push_back(metadata_event("thread_name", pid, tid, {{"name", fmt::format("stream {}", tid)}}));
    events.push_back(metadata_event("thread_sort_index", pid, tid, {{"sort_index", tid}}));
  }
  for (const TraceEvent& e : trace.events) {
    events.push_back({{"name", e.name},
                      {"cat", e.category},
                      {"ph", "X"},
                      {"ts", e.start_us},
                      {"dur", e.duration_us},
                      {"pid", e.device},
                      {"tid", e.stream},
                      {"args", {{"op_name", e.op_name}, {"provider", e.provider}, {"node_index", e.node_index}}}});
  }
  nlohmann::json root = {
      {"traceEvents", std::move(events)},
      {"displayTimeUnit", "ms"},
      {"otherData", {{"kind", trace.kind}, {"makespan_us", trace.makespan_us}, {"generator", "hetsched"}}},
  };
  // Event names hold node names from the model, which need not be UTF-8.
  return root.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void write_chrome_trace(const Trace& trace, const std::string& path) {
  std::string json = chrome_trace_json(trace);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Error(ErrorCode::kIo, fmt::format("{}: cannot write trace ({})", path, std::strerror(errno)));
  out << json << '\n';
  out.close();
  if (!out) throw Error(ErrorCode::kIo, fmt::format("{}: cannot write trace (write failed)", path));
}

}  // namespace hetsched
