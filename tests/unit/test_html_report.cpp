// HTML reports (hetsched/report.h) and the timelines compare keeps for them.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "cli_test_util.h"
#include "graph_test_util.h"
#include "hetsched/compare.h"
#include "hetsched/cost_model.h"
#include "hetsched/error.h"
#include "hetsched/report.h"
#include "hetsched/session.h"
#include "onnx_model_util.h"

namespace hetsched {
namespace {

using testing::add_float_value;
using testing::add_op;

const std::string kPlatforms = std::string(HETSCHED_SOURCE_DIR) + "/platforms/";

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The <svg class="gantt" ...> element of `plan` and `kind` ("" when absent).
std::string gantt_of(const std::string& html, const std::string& plan, const std::string& kind) {
  std::string head = fmt::format("<svg class=\"gantt\" data-plan=\"{}\" data-kind=\"{}\"", plan, kind);
  size_t start = html.find(head);
  if (start == std::string::npos) return "";
  size_t end = html.find("</svg>", start);
  return html.substr(start, end - start);
}

int launches_in(const Trace& trace) {
  return static_cast<int>(std::count_if(trace.events.begin(), trace.events.end(),
                                        [](const TraceEvent& e) { return e.category == "launch"; }));
}

TEST(HtmlReport, CompareKeepsTimelinesAndTheReportShowsEveryPlanLaneByLane) {
  Graph g = load_model("zoo:squeezenet1_0");
  Platform p = make_platform("", kPlatforms + "phone-soc.json");
  std::shared_ptr<const CostModel> cost = make_roofline_cost_model(p);
  CompareOptions options;
  options.schedulers = {"sequential", "heft", "type-based", "round-robin", "optimal"};
  options.measure = true;
  options.warmups = 0;
  options.rounds = 1;

  // Plain compare keeps no timelines.
  CompareOptions lean = options;
  lean.measure = false;
  Comparison plain = compare_schedulers(g, p, cost, "", lean);
  for (const SchedulerOutcome& s : plain.schedulers) {
    EXPECT_TRUE(s.predicted_trace.events.empty()) << s.name;
    EXPECT_TRUE(s.measured_trace.events.empty()) << s.name;
  }

  options.keep_traces = true;
  Comparison c = compare_schedulers(g, p, cost, "", options);
  ASSERT_EQ(c.schedulers.size(), 5u);
  for (const SchedulerOutcome& s : c.schedulers) {
    if (!s.plan) continue;
    EXPECT_EQ(s.predicted_trace.kind, "simulated") << s.name;
    EXPECT_EQ(launches_in(s.predicted_trace), s.plan->n_launches()) << s.name;
    EXPECT_NEAR(s.predicted_trace.makespan_us / 1e3, s.predicted_ms, 1e-9) << s.name;
    EXPECT_EQ(s.measured_trace.kind, "emulated") << s.name;
    EXPECT_EQ(launches_in(s.measured_trace), s.plan->n_launches()) << s.name;
    // One round: its run is the median, and its makespan is within the
    // round's time (which also covers starting and joining the lanes).
    EXPECT_LE(s.measured_trace.makespan_us / 1e3, s.measured.p50_ms * 1.0001) << s.name;
  }
  for (const SequentialBaseline& b : c.sequential) {
    EXPECT_EQ(b.predicted_trace.kind, "simulated") << b.device;
    EXPECT_FALSE(b.measured_trace.events.empty()) << b.device;
  }

  auto dir = testing::temp_dir("html_report");
  ReportInput input;
  input.model = "zoo:squeezenet1_0";
  input.graph = &g;
  input.platform = &p;
  input.comparison = &c;
  input.notes = {"outputs checked against sequential: identical"};
  input.open_timelines = 2;
  std::string path = write_html_report((dir / "out").string(), input);
  EXPECT_EQ(path, (dir / "out" / "index.html").string());
  std::string html = read_file(path);
  ASSERT_FALSE(html.empty());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(html.find("<script src"), std::string::npos) << "self-contained";
  EXPECT_EQ(html.find("<link"), std::string::npos) << "self-contained";
  EXPECT_NE(html.find("outputs checked against sequential: identical"), std::string::npos);

  // Every scheduler in the table, the failing one with its error.
  for (const SchedulerOutcome& s : c.schedulers)
    EXPECT_NE(html.find(fmt::format("data-scheduler=\"{}\"", s.name)), std::string::npos) << s.name;
  // Fastest first, by the emulated median: the table's rows in that order.
  std::vector<std::pair<double, std::string>> order;
  for (const SchedulerOutcome& s : c.schedulers)
    if (s.plan) order.push_back({s.measured.p50_ms, s.name});
  std::sort(order.begin(), order.end());
  size_t previous = 0;
  for (const auto& [ms, name] : order) {
    size_t at = html.find(fmt::format("data-scheduler=\"{}\"", name));
    EXPECT_GT(at, previous) << name << " out of order";
    previous = at;
  }
  EXPECT_NE(html.find(fmt::format("<tr class=\"best\" data-scheduler=\"{}\"", order.front().second)),
            std::string::npos);

  // A timeline per plan, predicted and emulated, with one row per lane.
  for (const SchedulerOutcome& s : c.schedulers) {
    if (!s.plan) continue;
    for (const char* kind : {"predicted", "emulated"}) {
      std::string svg = gantt_of(html, s.name, kind);
      ASSERT_FALSE(svg.empty()) << s.name << " " << kind;
      EXPECT_NE(svg.find(fmt::format("data-lanes=\"{}\"", s.plan->lanes.size())), std::string::npos) << svg.substr(0, 200);
      EXPECT_EQ(count(svg, "<g class=\"lane\""), s.plan->lanes.size()) << s.name << " " << kind;
      EXPECT_GT(count(svg, "<title>"), 0u);
    }
  }
  // Each device alone too, with one lane.
  for (const SequentialBaseline& b : c.sequential)
    EXPECT_EQ(count(gantt_of(html, b.device + " alone", "predicted"), "<g class=\"lane\""), 1u) << b.device;

  // The lower bound and its parts, as the CLI prints them.
  EXPECT_NE(html.find(fmt::format("<b>{:.3f} ms</b>", c.lower_bound_ms)), std::string::npos);
  EXPECT_NE(html.find(fmt::format("critical path ({:.3f} ms", c.critical_path_ms)), std::string::npos);
  EXPECT_NE(html.find(fmt::format("capacity bound ({:.3f} ms", c.capacity_ms)), std::string::npos);
  EXPECT_NE(html.find(fmt::format("combined bound ({:.3f} ms", c.combined_ms)), std::string::npos);
  // One colour per device, named in the legend.
  for (const PlatformDevice& d : p.devices)
    EXPECT_NE(html.find(fmt::format("data-device=\"{}\" data-device-color=\"#", d.name)), std::string::npos) << d.name;
  EXPECT_NE(html.find("emulated"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(HtmlReport, TextFromTheModelIsEscaped) {
  // Names with markup, quotes and a byte that is not UTF-8.
  Graph g;
  ValueId x = add_float_value(g, "x<0>", {1, 4096});
  ValueId a = add_float_value(g, "a&b", {1, 4096});
  ValueId b = add_float_value(g, "b\"'", {1, 4096});
  ValueId y = add_float_value(g, "y", {1, 4096});
  g.inputs.push_back(x);
  add_op(g, "Relu", "relu<script>alert(1)</script>", {x}, {a});
  add_op(g, "Relu", "r2 & \"quoted\"", {x}, {b});
  add_op(g, "Add", "add\xff", {a, b}, {y});
  g.outputs.push_back(y);
  g.finalize();
  g.annotate_costs();
  Platform p = make_platform("", kPlatforms + "phone-soc.json");
  std::shared_ptr<const CostModel> cost = make_roofline_cost_model(p);
  CompareOptions options;
  options.schedulers = {"heft", "round-robin"};
  options.keep_traces = true;
  Comparison c = compare_schedulers(g, p, cost, "", options);

  ReportInput input;
  input.model = "tiny <model> & co";
  input.graph = &g;
  input.platform = &p;
  input.comparison = &c;
  input.notes = {"a note with <b>markup</b>"};
  std::string html = html_report(input);
  EXPECT_EQ(html.find("<script>"), std::string::npos);
  EXPECT_EQ(html.find("relu<script"), std::string::npos);
  EXPECT_NE(html.find("relu&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("r2 &amp; &quot;quoted&quot;"), std::string::npos);
  EXPECT_EQ(html.find("r2 & \"quoted\""), std::string::npos);
  EXPECT_NE(html.find("tiny &lt;model&gt; &amp; co"), std::string::npos);
  EXPECT_NE(html.find("a note with &lt;b&gt;markup&lt;/b&gt;"), std::string::npos);
  EXPECT_EQ(html.find('\xff'), std::string::npos) << "invalid UTF-8 passed through";
  EXPECT_NE(html.find("add\xef\xbf\xbd"), std::string::npos) << "replaced by U+FFFD";
  // The node table names every node, escaped.
  EXPECT_NE(html.find("<td>relu&lt;script&gt;alert(1)&lt;/script&gt;</td>"), std::string::npos);
  // The NPU's number formats and int8 rate, from the platform file.
  EXPECT_NE(html.find("4000 int8 GOP/s · computes in float16, int8"), std::string::npos);
}

TEST(HtmlReport, ThinEventsMergeSoBigTimelinesStaySmall) {
  // A baseline timeline of 20000 launches of 1 us each: at a chart width of
  // under a thousand pixels they cannot be drawn apart.
  Graph g;
  ValueId x = add_float_value(g, "x", {1, 16});
  ValueId y = add_float_value(g, "y", {1, 16});
  g.inputs.push_back(x);
  add_op(g, "Relu", "relu", {x}, {y});
  g.outputs.push_back(y);
  g.finalize();
  g.annotate_costs();
  Platform p = make_platform("", kPlatforms + "phone-soc.json");
  Comparison c;
  c.lower_bound_ms = 0.01;
  SequentialBaseline b;
  b.device = "emu:big";
  b.predicted_ms = 20;
  b.predicted_trace.kind = "simulated";
  b.predicted_trace.devices = {"emu:big"};
  b.predicted_trace.makespan_us = 20000;
  for (int i = 0; i < 20000; ++i) {
    TraceEvent e;
    e.name = fmt::format("Relu 'n{}'", i);
    e.category = "launch";
    e.start_us = i;
    e.duration_us = 1;
    e.op_name = "Relu";
    b.predicted_trace.events.push_back(e);
  }
  c.sequential.push_back(b);
  c.best_sequential_device = "emu:big";
  c.best_sequential_ms = 20;
  SchedulerOutcome failed;
  failed.name = "optimal";
  failed.error = "scheduler 'optimal': too large";
  c.schedulers.push_back(failed);

  ReportInput input;
  input.model = "m";
  input.graph = &g;
  input.platform = &p;
  input.comparison = &c;
  std::string html = html_report(input);
  std::string svg = gantt_of(html, "emu:big alone", "predicted");
  ASSERT_FALSE(svg.empty());
  size_t bars = count(svg, "<rect class=\"ev");
  EXPECT_GT(bars, 10u);
  EXPECT_LT(bars, 1000u) << "thin events are merged";
  EXPECT_NE(svg.find(" launches, too short to draw apart"), std::string::npos);
  EXPECT_LT(html.size(), 400000u);
  EXPECT_NE(html.find("No scheduler made a plan"), std::string::npos);
  EXPECT_NE(html.find("scheduler &#39;optimal&#39;: too large"), std::string::npos);
}

TEST(HtmlReport, UnwritableFolderIsAnIoErrorAndMissingInputAUsageError) {
  Graph g = load_model("zoo:squeezenet1_0");
  Platform p = make_platform("", kPlatforms + "phone-soc.json");
  CompareOptions options;
  options.schedulers = {"sequential"};
  Comparison c = compare_schedulers(g, p, make_roofline_cost_model(p), "", options);
  ReportInput input;
  input.model = "zoo:squeezenet1_0";
  input.graph = &g;
  input.platform = &p;
  input.comparison = &c;

  // A folder under a regular file cannot be made, even by root.
  auto dir = testing::temp_dir("html_report_io");
  std::ofstream(dir / "file") << "x";
  try {
    write_html_report((dir / "file" / "report").string(), input);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find("file/report"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);

  input.comparison = nullptr;
  try {
    html_report(input);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUsage);
  }
}

TEST(HtmlReportCli, CompareWritesThePageAndRefusesAnUnwritableFolderBeforeAnyWork) {
  auto dir = testing::temp_dir("html_report_cli");
  std::string common = "compare zoo:squeezenet1_0 --platform " + kPlatforms + "phone-soc.json --schedulers heft,sequential " +
                       "--db " + (dir / "p.db").string();
  std::string report = (dir / "report").string();
  auto r = testing::run_cli(common + " --report " + report + " --json " + (dir / "c.json").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("report written to " + report + "/index.html"), std::string::npos) << r.output;
  std::string html = read_file(report + "/index.html");
  EXPECT_NE(html.find("data-scheduler=\"heft\""), std::string::npos);
  EXPECT_NE(html.find("<svg class=\"gantt\" data-plan=\"heft\" data-kind=\"predicted\""), std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(dir / "c.json")) << "--json still written";

  std::ofstream(dir / "file") << "x";
  r = testing::run_cli(common + " --report " + (dir / "file" / "report").string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("cannot create the report folder"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("schedulers (predicted"), std::string::npos) << "fails before comparing";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace hetsched
