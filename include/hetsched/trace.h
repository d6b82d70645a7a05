// Timelines of a plan — measured by the executor, or predicted by the
// simulator — in one format, written as a Chrome trace (opens in Perfetto
// and chrome://tracing).
#pragma once

#include <string>
#include <vector>

namespace hetsched {

struct TraceEvent {
  std::string name;      // "Conv 'c1' + Relu 'r1'", "copy 'x' host->gpu", "wait e3"
  std::string category;  // "launch", "copy", "wait"
  double start_us = 0;   // from the start of the run
  double duration_us = 0;
  int device = 0;        // index into Trace::devices (the trace's pid)
  int stream = 0;        // the trace's tid
  // Like ONNX Runtime's profiler: op types joined with '+', the device name,
  // the first node's index (-1 for copies and waits).
  std::string op_name;
  std::string provider;
  int node_index = -1;
};

struct Trace {
  // "measured", "emulated" (a real run with emulated devices: their times are
  // modeled), or "simulated" (predicted from the cost model).
  std::string kind = "measured";
  std::vector<std::string> devices;  // names, "(emulated)" appended where so
  std::vector<TraceEvent> events;
  double makespan_us = 0;
};

// Chrome trace JSON (object form, "traceEvents"): one "X" event per step,
// process/thread name metadata per device and stream ("stream N"), the trace
// kind and makespan in "otherData". A simulated trace's process names end in
// " (simulated)" (appended where Trace::devices lacks it).
std::string chrome_trace_json(const Trace& trace);
// Writes it; an unwritable path is ErrorCode::kIo.
void write_chrome_trace(const Trace& trace, const std::string& path);

}  // namespace hetsched
