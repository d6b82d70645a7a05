// HTML reports of a comparison (`hetsched compare --report DIR`): one
// self-contained page — inline CSS and SVG, no external fetches, readable
// without JavaScript — showing the comparison table, a speed-up chart, the
// lower bound, each plan's timeline per device stream (predicted and, when
// measured, measured on one time scale) and where each plan put the nodes.
// Predicted, emulated and measured figures are labelled as such throughout.
#pragma once

#include <string>
#include <vector>

#include "hetsched/compare.h"
#include "hetsched/graph.h"
#include "hetsched/platform.h"
#include "hetsched/session.h"

namespace hetsched {

struct ReportInput {
  std::string title;  // the page's heading; empty: "MODEL on PLATFORM"
  std::string model;  // where the model came from ("zoo:googlenet", a path)
  const Graph* graph = nullptr;           // required: the graph the plans were made for
  const Platform* platform = nullptr;     // required: the platform they were made for
  const Comparison* comparison = nullptr; // required; timelines need CompareOptions::keep_traces
  // Lines shown under the summary, e.g. "outputs checked against sequential: identical".
  std::vector<std::string> notes;
  // Throughput mode's flows (ExecutionSummary::flows), shown in a section
  // of their own when given.
  std::vector<FlowOutcome> flows;
  // Plans whose timelines are shown open, fastest first; the others' are in
  // a collapsed section (they still make the file larger).
  int open_timelines = 3;
};

// The page itself. Text from the model (node, value and device names) is
// escaped. A missing graph, platform or comparison is ErrorCode::kUsage.
std::string html_report(const ReportInput& input);

// Writes DIR/index.html (creating DIR and its parents) and returns its
// path. ErrorCode::kIo when DIR cannot be created or the file written.
std::string write_html_report(const std::string& dir, const ReportInput& input);

}  // namespace hetsched
