// HTML reports of a comparison (see hetsched/report.h).
//
// The page is built as text: a few small writers for tables and SVG charts.
// Charts are SVG drawn here rather than by a JavaScript library so that the
// page is one file that needs nothing else and renders with scripts off.
#include "hetsched/report.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "hetsched/device.h"
#include "hetsched/error.h"

namespace hetsched {

namespace {

// ------------------------------------------------------------------ text

// HTML-escapes `text` for element content and quoted attributes alike.
// Model files need not hold UTF-8: invalid bytes become U+FFFD so that the
// page stays valid; control characters (but tab and newline) become spaces.
std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 16);
  size_t i = 0;
  while (i < text.size()) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&#39;"; break;
        default: out += (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f ? ' ' : static_cast<char>(c);
      }
      ++i;
      continue;
    }
    // A UTF-8 sequence: its length from the lead byte, then continuation
    // bytes; overlong forms, surrogates and code points past U+10FFFF count
    // as invalid.
    size_t n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    bool valid = n > 0 && i + n <= text.size();
    uint32_t code = valid ? (n == 2 ? c & 0x1f : n == 3 ? c & 0x0f : c & 0x07) : 0;
    for (size_t k = 1; valid && k < n; ++k) {
      unsigned char cc = static_cast<unsigned char>(text[i + k]);
      if ((cc & 0xc0) != 0x80) valid = false;
      code = (code << 6) | (cc & 0x3f);
    }
    if (valid) {
      valid = (n == 2 && code >= 0x80) || (n == 3 && code >= 0x800 && (code < 0xd800 || code > 0xdfff)) ||
              (n == 4 && code >= 0x10000 && code <= 0x10ffff);
    }
    if (valid) {
      out.append(text.substr(i, n));
      i += n;
    } else {
      out += "\xef\xbf\xbd";
      ++i;
    }
  }
  return out;
}

std::string ms_text(double ms) { return ms >= 0 ? fmt::format("{:.3f}", ms) : "–"; }
std::string ratio_text(double num, double den) {
  return num > 0 && den > 0 ? fmt::format("{:.2f}×", num / den) : "–";
}
std::string measured_text(const Measurement& m) {
  return m.p50_ms >= 0 ? fmt::format("{:.3f} <span class=\"range\">({:.3f}–{:.3f})</span>", m.p50_ms, m.min_ms, m.max_ms)
                       : "–";
}
std::string percent(double part, double whole) { return whole > 0 ? fmt::format("{:.0f}%", 100 * part / whole) : "–"; }

// "Conv" -> fits in `width` pixels at the chart font, else cut with an
// ellipsis; "" when not even two characters fit.
std::string fit_label(const std::string& text, double width) {
  constexpr double kCharPx = 6.2;  // 10.5 px system sans-serif, average
  size_t fits = static_cast<size_t>(std::max(0.0, (width - 6) / kCharPx));
  if (fits >= text.size()) return text;
  if (fits < 3) return "";
  size_t cut = fits - 1;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xc0) == 0x80) --cut;  // not inside a UTF-8 character
  return text.substr(0, cut) + "…";
}

std::string now_text() {
  std::time_t t = std::time(nullptr);
  std::tm local{};
  localtime_r(&t, &local);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M %Z", &local);
  return buf;
}

// The device name without the " (emulated)" / " (simulated)" a trace adds.
std::string base_device(const std::string& name) {
  for (std::string_view suffix : {" (emulated)", " (simulated)"})
    if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      return name.substr(0, name.size() - suffix.size());
  return name;
}

// A tick step of 1, 2 or 5 times a power of ten giving about `target` ticks.
double nice_step(double range, int target) {
  if (range <= 0) return 1;
  double raw = range / target;
  double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * power) return m * power;
  return 10 * power;
}

std::string tick_text(double value, double step) {
  if (value == 0) return "0";
  int decimals = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
  return fmt::format("{:.{}f}", value, std::min(decimals, 4));
}

// ---------------------------------------------------------------- colours

// One colour per device, in the platform's order (Tableau 10: distinct hues
// of similar weight that stay apart for most colour-blind readers); the
// grey and the slate of the charts are kept for predicted/measured bars.
constexpr const char* kDeviceColours[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1",
                                          "#76b7b2", "#edc948", "#ff9da7", "#9c755f", "#86bcb6"};
constexpr int kNumColours = sizeof(kDeviceColours) / sizeof(kDeviceColours[0]);

// Whether white text reads on `hex` (else dark text does).
bool dark_colour(const std::string& hex) {
  unsigned r = 0, g = 0, b = 0;
  if (std::sscanf(hex.c_str(), "#%02x%02x%02x", &r, &g, &b) != 3) return true;
  return 0.299 * r + 0.587 * g + 0.114 * b < 150;
}

struct DevicePalette {
  std::vector<std::string> names;  // index = colour class "dN"

  int index(const std::string& device) {
    std::string name = base_device(device);
    auto it = std::find(names.begin(), names.end(), name);
    if (it != names.end()) return static_cast<int>(it - names.begin());
    names.push_back(name);
    return static_cast<int>(names.size()) - 1;
  }
  static std::string colour(int i) { return kDeviceColours[i % kNumColours]; }
};

// ------------------------------------------------------------ the plans

// One row of the page: a scheduler's plan or a single-device baseline.
struct PlanRow {
  std::string name;  // the scheduler, or the device for a baseline
  bool baseline = false;
  std::string error;
  double predicted_ms = -1;
  double plan_ms = -1;
  Measurement measured;
  const Plan* plan = nullptr;  // schedulers only
  const Trace* predicted = nullptr;
  const Trace* measured_trace = nullptr;
  std::string anchor;  // the id of its timeline section

  // What "fastest" means: measured when measured, else predicted.
  double key() const { return measured.p50_ms >= 0 ? measured.p50_ms : predicted_ms; }
  std::string display() const { return baseline ? name + " alone" : name; }
};

std::string anchor_for(const std::string& name, int i) {
  std::string id = "plan-" + std::to_string(i) + "-";
  for (char c : name) id += std::isalnum(static_cast<unsigned char>(c)) ? c : '-';
  return id;
}

struct Context {
  const ReportInput& in;
  const Graph& graph;
  const Platform& platform;
  const Comparison& c;
  bool measured = false;      // some plan was run
  std::string measured_word;  // "measured" or "emulated"
  double best_predicted_baseline_ms = -1;
  std::string best_predicted_baseline;
  std::vector<PlanRow> plans;      // schedulers with a plan, fastest first
  std::vector<PlanRow> failed;     // schedulers without one
  std::vector<PlanRow> baselines;  // single devices, fastest first
  DevicePalette palette;

  explicit Context(const ReportInput& input)
      : in(input), graph(*input.graph), platform(*input.platform), c(*input.comparison) {
    measured_word = platform.has_emulated() ? "emulated" : "measured";
    for (const PlatformDevice& d : platform.devices) palette.index(d.name);
    for (const SequentialBaseline& b : c.sequential) {
      PlanRow row;
      row.name = b.device;
      row.baseline = true;
      row.predicted_ms = b.predicted_ms;
      row.measured = b.measured;
      row.predicted = b.predicted_trace.events.empty() ? nullptr : &b.predicted_trace;
      row.measured_trace = b.measured_trace.events.empty() ? nullptr : &b.measured_trace;
      baselines.push_back(row);
      palette.index(b.device);
      if (b.measured.p50_ms >= 0) measured = true;
      if (b.predicted_ms >= 0 && (best_predicted_baseline_ms < 0 || b.predicted_ms < best_predicted_baseline_ms)) {
        best_predicted_baseline_ms = b.predicted_ms;
        best_predicted_baseline = b.device;
      }
    }
    for (const SchedulerOutcome& s : c.schedulers) {
      PlanRow row;
      row.name = s.name;
      row.error = s.error;
      row.predicted_ms = s.predicted_ms;
      row.plan_ms = s.plan_ms;
      row.measured = s.measured;
      row.plan = s.plan.get();
      row.predicted = s.predicted_trace.events.empty() ? nullptr : &s.predicted_trace;
      row.measured_trace = s.measured_trace.events.empty() ? nullptr : &s.measured_trace;
      if (s.measured.p50_ms >= 0) measured = true;
      (s.plan ? plans : failed).push_back(row);
    }
    auto faster = [](const PlanRow& a, const PlanRow& b) {
      return a.key() != b.key() ? a.key() < b.key() : a.name < b.name;
    };
    std::stable_sort(plans.begin(), plans.end(), faster);
    std::stable_sort(baselines.begin(), baselines.end(), faster);
    int i = 0;
    for (PlanRow& row : plans) row.anchor = anchor_for(row.name, i++);
    for (PlanRow& row : baselines) row.anchor = anchor_for(row.name + "-alone", i++);
  }

  // Speed-ups compare like with like: predicted over the best predicted
  // baseline, measured over the best measured one.
  double predicted_speedup(const PlanRow& row) const {
    return row.predicted_ms > 0 && best_predicted_baseline_ms > 0 ? best_predicted_baseline_ms / row.predicted_ms : -1;
  }
  double measured_speedup(const PlanRow& row) const {
    return row.measured.p50_ms > 0 && measured ? c.best_sequential_ms / row.measured.p50_ms : -1;
  }
};

// ----------------------------------------------------------------- style

constexpr const char* kStyle = R"CSS(
:root { --ink:#1f2933; --muted:#64707d; --line:#e3e7ec; --card:#ffffff; --page:#f4f6f8; --accent:#2f6fb0;
        --best:#fff6d6; --best-line:#e8c14a; }
* { box-sizing: border-box; }
body { margin:0; background:var(--page); color:var(--ink);
       font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", "DejaVu Sans", sans-serif; }
main { max-width: 1180px; margin: 0 auto; padding: 28px 28px 60px; }
header.top { background: linear-gradient(135deg, #1d3557 0%, #2f6fb0 100%); color:#fff; }
header.top .inner { max-width:1180px; margin:0 auto; padding: 28px 28px 22px; }
.kicker { text-transform: uppercase; letter-spacing: .12em; font-size: 12px; opacity: .8; }
h1 { margin: 4px 0 6px; font-size: 30px; font-weight: 650; letter-spacing: -.01em; }
h2 { font-size: 20px; margin: 0 0 4px; font-weight: 650; }
h3 { font-size: 16px; margin: 18px 0 6px; font-weight: 620; }
.meta { opacity: .9; font-size: 14px; }
.badges { margin-top: 10px; }
.badge { display:inline-block; border-radius: 999px; padding: 2px 10px; font-size: 12.5px; font-weight: 600;
         margin: 0 6px 4px 0; border: 1px solid rgba(255,255,255,.5); }
.badge.predicted { background: rgba(255,255,255,.15); }
.badge.emulated { background: #f6d365; color:#3d2c00; border-color:#f6d365; }
.badge.measured { background: #7bd389; color:#0b3314; border-color:#7bd389; }
nav.toc { margin-top: 14px; font-size: 13.5px; }
nav.toc a { color:#dbe8f6; margin-right: 14px; text-decoration: none; border-bottom: 1px dotted #dbe8f6; }
section.card { background: var(--card); border: 1px solid var(--line); border-radius: 10px; padding: 20px 22px;
               margin: 18px 0; box-shadow: 0 1px 2px rgba(16,24,40,.04); }
.lead { color: var(--muted); margin: 0 0 12px; font-size: 14px; }
.devices { display:flex; flex-wrap: wrap; gap: 10px; margin-top: 12px; }
.device { background:#fff; color:var(--ink); border-radius: 8px; padding: 8px 12px; min-width: 200px; flex: 1 1 220px;
          max-width: 370px; font-size: 13px; border-left: 6px solid #999; }
.device b { font-size: 14px; }
.device .spec { color: var(--muted); }
.summary { font-size: 18px; line-height: 1.55; }
.summary .big { font-size: 30px; font-weight: 700; color: var(--accent); }
.summary .sub { font-size: 14.5px; color: var(--muted); }
ul.notes { margin: 10px 0 0; padding-left: 20px; font-size: 14px; }
table { border-collapse: collapse; width: 100%; font-size: 13.5px; font-variant-numeric: tabular-nums; }
th, td { padding: 6px 10px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
th.group { text-align: center; border-bottom: 1px solid var(--line); }
th { font-size: 12px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); font-weight: 600;
     border-bottom: 2px solid var(--line); }
td.num, th.num { text-align: right; white-space: nowrap; }
tr.best td { background: var(--best); }
tr.best td:first-child { box-shadow: inset 4px 0 0 var(--best-line); font-weight: 650; }
tr.failed td { color: var(--muted); }
.range { color: var(--muted); font-size: 12px; }
.star { color: #c99a06; }
.note { color: var(--muted); font-size: 12.5px; max-width: 420px; }
.swatch { display:inline-block; width: 11px; height: 11px; border-radius: 3px; vertical-align: -1px; margin-right: 5px; }
svg { display:block; max-width: 100%; height: auto; font-family: inherit; }
svg text { font-size: 11px; fill: var(--ink); }
svg .axis text { fill: var(--muted); font-size: 10.5px; }
svg .grid { stroke: #edf0f3; stroke-width: 1; }
svg .bar text, svg text.in { font-size: 10.5px; pointer-events: none; }
svg rect.ev:hover, svg rect.seg:hover, svg rect.sp:hover { stroke: #111; stroke-width: 1.2; }
svg .lanebg { fill: #f7f9fb; }
svg .cp { fill-opacity: .55; }
svg .wt { fill: #c3c9d0; }
svg .pred { fill: #9aa9bc; }
svg .meas { fill: #33415c; }
svg .bestband { fill: var(--best); }
.panel { margin: 8px 0 2px; font-size: 13px; color: var(--muted); }
.panel b { color: var(--ink); }
.plan-head { display:flex; align-items: baseline; gap: 12px; flex-wrap: wrap; margin-top: 22px; }
.plan-head h3 { margin: 0; }
.plan-head .figs { color: var(--muted); font-size: 13.5px; }
.legend { font-size: 13px; color: var(--muted); margin: 6px 0 10px; }
.legend span.item { margin-right: 16px; white-space: nowrap; }
details { margin-top: 14px; }
details > summary { cursor: pointer; font-weight: 600; color: var(--accent); }
.plannotes { font-size: 12.5px; color: var(--muted); margin: 4px 0 0; }
.nodes td { font-size: 12.5px; }
.nodes td.reason { color: var(--muted); }
footer { color: var(--muted); font-size: 12.5px; text-align: center; margin-top: 30px; }
@media print { section.card { break-inside: avoid; box-shadow:none; } }
)CSS";

// Device colour classes: bars (fill) and swatches (background).
std::string colour_css(const DevicePalette& palette) {
  std::string css;
  for (size_t i = 0; i < palette.names.size(); ++i) {
    std::string colour = DevicePalette::colour(static_cast<int>(i));
    css += fmt::format(".d{0}{{fill:{1}}} .bg{0}{{background:{1}}} .bl{0}{{border-left-color:{1}}} ", i, colour);
    css += fmt::format("svg text.t{}{{fill:{}}} ", i, dark_colour(colour) ? "#fff" : "#1f2933");
  }
  return css;
}

// ----------------------------------------------------------- the header

std::string machine_line() {
  try {
    MachineInfo m = describe_machine();
    return fmt::format("{} ({} cores usable)", m.cpu_model, m.n_logical_cores);
  } catch (const std::exception&) {
    return "";
  }
}

std::string device_kind_text(const PlatformDevice& d) {
  if (d.kind == DeviceKind::kCuda) return fmt::format("CUDA GPU, {} stream{}", d.n_streams, d.n_streams == 1 ? "" : "s");
  if (!d.is_emulated()) return fmt::format("CPU core group, {} core{}", d.cores.size(), d.cores.size() == 1 ? "" : "s");
  return fmt::format("{} (emulated)", d.model_kind.empty() ? "device" : d.model_kind);
}

std::string header(Context& x) {
  const Graph& g = x.graph;
  std::string title = x.in.title.empty() ? fmt::format("{} on {}", x.in.model, x.platform.name) : x.in.title;
  std::string out = "<header class=\"top\"><div class=\"inner\">\n";
  out += "<div class=\"kicker\">hetsched · scheduler comparison</div>\n";
  out += fmt::format("<h1>{}</h1>\n", escape(title));
  bool real_cpu = std::any_of(x.platform.devices.begin(), x.platform.devices.end(),
                              [](const PlatformDevice& d) { return !d.is_emulated(); });
  std::string machine = x.measured || real_cpu ? machine_line() : "";
  out += fmt::format("<div class=\"meta\">model <b>{}</b> · {} nodes · {:.2f} GFLOPs · platform <b>{}</b> · {}{}</div>\n",
                     escape(x.in.model), g.nodes.size(), g.total_flops() / 1e9, escape(x.platform.name), now_text(),
                     machine.empty() ? "" : " · ran on " + escape(machine));
  out += "<div class=\"badges\"><span class=\"badge predicted\">predicted = simulated with one cost model</span>";
  if (x.measured && x.measured_word == "emulated")
    out += "<span class=\"badge emulated\">runs emulated: modeled devices held to their modeled times</span>";
  else if (x.measured)
    out += "<span class=\"badge measured\">runs measured on this machine</span>";
  else
    out += "<span class=\"badge predicted\">not run (no --measure): predictions only</span>";
  out += "</div>\n<div class=\"devices\">\n";
  for (size_t i = 0; i < x.platform.devices.size(); ++i) {
    const PlatformDevice& d = x.platform.devices[i];
    int colour = x.palette.index(d.name);
    std::string spec;
    if (d.peak_gflops > 0) spec += fmt::format("{:.0f} GFLOP/s · ", d.peak_gflops);
    if (d.int8_peak_gops > 0) spec += fmt::format("{:.0f} int8 GOP/s · ", d.int8_peak_gops);
    if (!d.precisions.empty()) spec += fmt::format("computes in {} · ", fmt::join(d.precisions, ", "));
    if (d.bandwidth_gbps > 0) spec += fmt::format("{:.0f} GB/s · ", d.bandwidth_gbps);
    spec += fmt::format("{} stream{} · memory {}", d.n_streams, d.n_streams == 1 ? "" : "s", d.memory_space);
    if (!d.ops.empty()) spec += fmt::format(" · runs {} op types only", d.ops.size());
    out += fmt::format(
        "<div class=\"device bl{0}\" data-device=\"{1}\" data-device-color=\"{2}\"><span class=\"swatch bg{0}\"></span>"
        "<b>{1}</b> · {3}<br><span class=\"spec\">{4}</span>{5}</div>\n",
        colour, escape(d.name), DevicePalette::colour(colour), escape(device_kind_text(d)), escape(spec),
        d.description.empty() ? "" : "<br><span class=\"spec\">" + escape(d.description) + "</span>");
  }
  // The union of the CPU core groups is a baseline device of its own.
  for (const PlanRow& b : x.baselines)
    if (x.platform.find_device(b.name) < 0) {
      int colour = x.palette.index(b.name);
      out += fmt::format(
          "<div class=\"device bl{0}\" data-device=\"{1}\" data-device-color=\"{2}\"><span class=\"swatch bg{0}\"></span>"
          "<b>{1}</b> · every CPU core group as one device<br><span class=\"spec\">a baseline only</span></div>\n",
          colour, escape(b.name), DevicePalette::colour(colour));
    }
  out += "</div>\n<nav class=\"toc\"><a href=\"#summary\">Summary</a><a href=\"#table\">Comparison</a>"
         "<a href=\"#speedups\">Speed-ups</a><a href=\"#timelines\">Timelines</a><a href=\"#placement\">Placement</a>"
         "<a href=\"#bound\">Lower bound</a></nav>\n</div></header>\n";
  return out;
}

// ----------------------------------------------------------- the summary

// The median over the plans and baselines of emulated time / predicted
// time; 0 when nothing ran emulated.
double emulation_overrun(const Context& x) {
  if (!x.measured || x.measured_word != "emulated") return 0;
  std::vector<double> ratios;
  for (const std::vector<PlanRow>* rows : {&x.plans, &x.baselines})
    for (const PlanRow& r : *rows)
      if (r.measured.p50_ms > 0 && r.predicted_ms > 0) ratios.push_back(r.measured.p50_ms / r.predicted_ms);
  if (ratios.empty()) return 0;
  std::sort(ratios.begin(), ratios.end());
  return ratios[ratios.size() / 2];
}

std::string summary(Context& x) {
  std::string out = "<section class=\"card\" id=\"summary\"><h2>Summary</h2>\n<div class=\"summary\">";
  if (x.plans.empty()) {
    out += "No scheduler made a plan; see the table for each one's error.";
  } else {
    const PlanRow& best = x.plans.front();
    double predicted = x.predicted_speedup(best);
    double measured = x.measured_speedup(best);
    double headline = measured > 0 ? measured : predicted;
    // Below 1x the best single device wins: say so first, as `demo` and
    // `auto` then run on that device alone.
    if (headline < 1)
      out += fmt::format("No plan beat the best single device, <b>{}</b>. ",
                         escape(measured > 0 ? x.c.best_sequential_device : x.best_predicted_baseline));
    out += fmt::format("Fastest plan: <b>{}</b> — <span class=\"big\">{:.2f}×</span> the best single device", escape(best.name),
                       headline);
    if (measured > 0)
      out += fmt::format(" ({}, {} {} ms against {} ms).", escape(x.c.best_sequential_device), x.measured_word,
                         ms_text(best.measured.p50_ms), ms_text(x.c.best_sequential_ms));
    else
      out += fmt::format(" ({}, predicted {} ms against {} ms).", escape(x.best_predicted_baseline),
                         ms_text(best.predicted_ms), ms_text(x.best_predicted_baseline_ms));
    out += "<div class=\"sub\">";
    if (measured > 0)
      out += fmt::format("Predicted: {:.2f}× ({} ms against {} ms on {}). ", predicted, ms_text(best.predicted_ms),
                         ms_text(x.best_predicted_baseline_ms), escape(x.best_predicted_baseline));
    out += fmt::format("Its predicted makespan is {} the lower bound ({} ms): no plan can be predicted faster than the "
                       "bound. Plans are ordered fastest first ({}).",
                       ratio_text(best.predicted_ms, x.c.lower_bound_ms), ms_text(x.c.lower_bound_ms),
                       x.measured ? x.measured_word + " median" : "predicted");
    double overrun = emulation_overrun(x);
    if (overrun > 2)
      out += fmt::format(
          " <b>The emulated runs took {:.0f}× as long as predicted</b>: where a reference kernel on this machine "
          "outlasts its modeled time, the emulated step takes the longer time, so these runs say more about this "
          "machine than about the modeled devices; the predictions are the platform's figures.",
          overrun);
    out += "</div>";
  }
  out += "</div>\n";
  if (!x.in.notes.empty()) {
    out += "<ul class=\"notes\">";
    for (const std::string& note : x.in.notes) out += "<li>" + escape(note) + "</li>";
    out += "</ul>\n";
  }
  out += "</section>\n";
  return out;
}

// ------------------------------------------------------------ the table

// A table cell: text already escaped; `num` right-aligns it.
std::string cell(const std::string& html, bool num = true, const std::string& cls = "") {
  std::string classes = (num ? std::string("num") : std::string()) + (cls.empty() || !num ? cls : " " + cls);
  return classes.empty() ? "<td>" + html + "</td>" : "<td class=\"" + classes + "\">" + html + "</td>";
}

std::string comparison_table(Context& x) {
  const std::string& what = x.measured_word;
  std::string out = "<section class=\"card\" id=\"table\"><h2>Comparison</h2>\n";
  std::string lead = fmt::format(
      "Predicted: the plan's makespan simulated with one cost model for all. Speed-ups compare like with like: "
      "predicted over the best single device predicted ({} ms on {})",
      ms_text(x.best_predicted_baseline_ms), escape(x.best_predicted_baseline));
  if (x.measured)
    lead += fmt::format(", {} over the best single device {} ({} ms on {}, the median of the rounds)", what, what,
                        ms_text(x.c.best_sequential_ms), escape(x.c.best_sequential_device));
  lead += ". / bound: predicted over the lower bound (1.00× would be optimal under the model).";
  if (!x.measured) lead += " Not run: <code>hetsched compare --measure</code> adds measured times.";
  out += "<p class=\"lead\">" + lead + "</p>\n";

  // Columns as `hetsched compare` prints them, the measured ones only when
  // something was measured.
  out += "<table class=\"cmp\"><thead><tr><th rowspan=\"2\">scheduler</th><th colspan=\"3\" class=\"group\">"
         "predicted (simulated)</th>";
  if (x.measured) out += fmt::format("<th colspan=\"2\" class=\"group\">{}</th>", what);
  out += "<th rowspan=\"2\" class=\"num\">plan ms</th><th rowspan=\"2\">note</th></tr>\n<tr><th class=\"num\">ms</th>"
         "<th class=\"num\">speed-up</th><th class=\"num\">/ bound</th>";
  if (x.measured) out += "<th class=\"num\">p50 ms (min–max)</th><th class=\"num\">speed-up</th>";
  out += "</tr></thead><tbody>\n";
  // The best figure of each time column in bold.
  double best_predicted = -1, best_measured = -1;
  for (const PlanRow& s : x.plans) {
    if (s.predicted_ms >= 0 && (best_predicted < 0 || s.predicted_ms < best_predicted)) best_predicted = s.predicted_ms;
    if (s.measured.p50_ms >= 0 && (best_measured < 0 || s.measured.p50_ms < best_measured))
      best_measured = s.measured.p50_ms;
  }
  auto bold_if = [](bool bold, const std::string& text) { return bold ? "<b>" + text + "</b>" : text; };
  for (size_t i = 0; i < x.plans.size(); ++i) {
    const PlanRow& s = x.plans[i];
    out += fmt::format("<tr class=\"{}\" data-scheduler=\"{}\"><td>{}<a href=\"#{}\">{}</a></td>",
                       i == 0 ? "best" : "", escape(s.name), i == 0 ? "<span class=\"star\">★</span> " : "",
                       s.anchor, escape(s.name));
    out += cell(bold_if(s.predicted_ms == best_predicted, ms_text(s.predicted_ms)));
    out += cell(ratio_text(x.best_predicted_baseline_ms, s.predicted_ms));
    out += cell(ratio_text(s.predicted_ms, x.c.lower_bound_ms));
    if (x.measured) {
      out += cell(bold_if(s.measured.p50_ms >= 0 && s.measured.p50_ms == best_measured, measured_text(s.measured)));
      out += cell(ratio_text(x.c.best_sequential_ms, s.measured.p50_ms));
    }
    out += cell(fmt::format("{:.1f}", s.plan_ms));
    out += cell(i == 0 ? "fastest" : "", false, "note");
    out += "</tr>\n";
  }
  for (const PlanRow& s : x.failed) {
    out += fmt::format("<tr class=\"failed\" data-scheduler=\"{0}\"><td>{0}</td>", escape(s.name));
    for (int k = 0; k < (x.measured ? 6 : 4); ++k) out += cell("–");
    out += cell(escape(s.error), false, "note") + "</tr>\n";
  }
  out += "</tbody></table>\n";

  out += "<h3>One device, one launch after another</h3>\n<table class=\"baselines\"><thead><tr><th>device</th>"
         "<th class=\"num\">predicted ms</th>";
  if (x.measured) out += fmt::format("<th class=\"num\">{} p50 ms (min–max)</th>", what);
  out += "<th>note</th></tr></thead><tbody>\n";
  for (const PlanRow& b : x.baselines) {
    std::string note;
    if (x.measured && b.name == x.c.best_sequential_device) note = "best single device (" + what + ")";
    if (b.name == x.best_predicted_baseline)
      note += std::string(note.empty() ? "" : "; ") + "best single device (predicted)";
    out += fmt::format("<tr><td><span class=\"swatch bg{}\"></span><a href=\"#{}\">{}</a></td>",
                       x.palette.index(b.name), b.anchor, escape(b.name));
    out += cell(ms_text(b.predicted_ms));
    if (x.measured) out += cell(measured_text(b.measured));
    out += cell(escape(note), false, "note") + "</tr>\n";
  }
  out += "</tbody></table>\n</section>\n";
  return out;
}

// -------------------------------------------------------- speed-up chart

std::string speedup_chart(Context& x) {
  std::string out = "<section class=\"card\" id=\"speedups\"><h2>Speed-ups over the best single device</h2>\n";
  out += fmt::format(
      "<p class=\"lead\">Each plan against the fastest device alone{}. Right of the 1.0× line a plan beats that "
      "device; the dotted line is the most any plan can be predicted to reach (the best single device over the lower "
      "bound).</p>\n",
      x.measured ? fmt::format(": light bars predicted, dark bars {}", x.measured_word) : ", predicted");
  std::vector<const PlanRow*> rows;
  for (const PlanRow& p : x.plans) rows.push_back(&p);
  for (const PlanRow& b : x.baselines) rows.push_back(&b);
  if (rows.empty()) return out + "</section>\n";

  double bound_speedup = x.c.lower_bound_ms > 0 && x.best_predicted_baseline_ms > 0
                             ? x.best_predicted_baseline_ms / x.c.lower_bound_ms
                             : -1;
  double top = 1;
  for (const PlanRow* r : rows) top = std::max({top, x.predicted_speedup(*r), x.measured_speedup(*r)});
  bool bound_on_scale = bound_speedup > 0 && bound_speedup <= top * 1.6;
  if (bound_on_scale) top = std::max(top, bound_speedup);
  top *= 1.12;

  const double label_w = 170, chart_w = 840, right = 60, row_h = x.measured ? 26 : 20, top_pad = 24, axis_h = 26;
  double width = label_w + chart_w + right, height = top_pad + row_h * rows.size() + axis_h;
  auto px = [&](double v) { return label_w + chart_w * v / top; };
  out += fmt::format("<svg class=\"speedup\" viewBox=\"0 0 {0:.0f} {1:.0f}\" width=\"{0:.0f}\" height=\"{1:.0f}\" "
                     "role=\"img\" aria-label=\"speed-ups\">\n",
                     width, height);
  double step = nice_step(top, 8);
  out += "<g class=\"axis\">";
  for (double t = 0; t <= top + 1e-9; t += step)
    out += fmt::format("<line class=\"grid\" x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1:.0f}\" y2=\"{2:.0f}\"/>"
                       "<text x=\"{0:.1f}\" y=\"{3:.0f}\" text-anchor=\"middle\">{4}×</text>",
                       px(t), top_pad - 4, height - axis_h, height - 8, tick_text(t, step));
  out += "</g>\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const PlanRow& r = *rows[i];
    double y = top_pad + row_h * i;
    if (i == 0 && !x.plans.empty())
      out += fmt::format("<rect class=\"bestband\" x=\"0\" y=\"{:.1f}\" width=\"{:.0f}\" height=\"{:.1f}\"/>", y,
                         width, row_h);
    if (!x.plans.empty() && i == x.plans.size())
      out += fmt::format("<line x1=\"0\" x2=\"{:.0f}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#d5dbe1\" "
                         "stroke-dasharray=\"3 3\"/>",
                         width, y, y);
    std::string label = r.display();
    out += fmt::format("<text x=\"{:.0f}\" y=\"{:.1f}\" text-anchor=\"end\"{}>{}</text>", label_w - 10, y + row_h / 2 + 4,
                       i == 0 && !r.baseline ? " font-weight=\"700\"" : "", escape(label));
    double bar_h = x.measured ? 9 : 11;
    double yp = x.measured ? y + row_h / 2 - bar_h - 1 : y + (row_h - bar_h) / 2;
    double p = x.predicted_speedup(r), m = x.measured_speedup(r);
    if (p > 0)
      out += fmt::format("<rect class=\"sp pred\" x=\"{0:.1f}\" y=\"{1:.1f}\" width=\"{2:.1f}\" height=\"{3:.0f}\" rx=\"2\">"
                         "<title>{4}: {5:.2f}× predicted ({6} ms against {7} ms)</title></rect>"
                         "<text x=\"{8:.1f}\" y=\"{9:.1f}\" font-size=\"10\">{5:.2f}×</text>",
                         label_w, yp, px(p) - label_w, bar_h, escape(label), p, ms_text(r.predicted_ms),
                         ms_text(x.best_predicted_baseline_ms), px(p) + 4, yp + bar_h - 1.5);
    if (m > 0) {
      double ym = y + row_h / 2 + 1;
      out += fmt::format("<rect class=\"sp meas\" x=\"{0:.1f}\" y=\"{1:.1f}\" width=\"{2:.1f}\" height=\"{3:.0f}\" rx=\"2\">"
                         "<title>{4}: {5:.2f}× {6} (median {7} ms against {8} ms)</title></rect>"
                         "<text x=\"{9:.1f}\" y=\"{10:.1f}\" font-size=\"10\" font-weight=\"600\">{5:.2f}×</text>",
                         label_w, ym, px(m) - label_w, bar_h, escape(label), m, x.measured_word,
                         ms_text(r.measured.p50_ms), ms_text(x.c.best_sequential_ms), px(m) + 4, ym + bar_h - 1.5);
    }
  }
  double y0 = top_pad - 2, y1 = height - axis_h + 2;
  out += fmt::format("<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1:.0f}\" y2=\"{2:.0f}\" stroke=\"#1f2933\" "
                     "stroke-width=\"1.5\"/><text x=\"{0:.1f}\" y=\"{3:.0f}\" text-anchor=\"middle\" "
                     "font-weight=\"600\">1.0×</text>",
                     px(1), y0, y1, 12.0);
  if (bound_on_scale)
    out += fmt::format("<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1:.0f}\" y2=\"{2:.0f}\" stroke=\"#b23b3b\" "
                       "stroke-width=\"1.5\" stroke-dasharray=\"2 3\"/><text x=\"{0:.1f}\" y=\"{3:.0f}\" "
                       "text-anchor=\"middle\" fill=\"#b23b3b\">bound {4:.2f}×</text>",
                       px(bound_speedup), y0, y1, 12.0, bound_speedup);
  else if (bound_speedup > 0)
    out += fmt::format("<text x=\"{:.0f}\" y=\"12\" text-anchor=\"end\" fill=\"#b23b3b\">bound {:.2f}× →</text>",
                       width - 4, bound_speedup);
  out += "</svg>\n";
  out += fmt::format("<div class=\"legend\"><span class=\"item\"><span class=\"swatch\" style=\"background:#9aa9bc\">"
                     "</span>predicted (simulated)</span>{}</div>\n",
                     x.measured ? fmt::format("<span class=\"item\"><span class=\"swatch\" style=\"background:#33415c\">"
                                              "</span>{} (median of the rounds)</span>",
                                              x.measured_word)
                                : "");
  out += "</section>\n";
  return out;
}

// ---------------------------------------------------------- lower bound

std::string bound_section(Context& x) {
  const Comparison& c = x.c;
  std::string out = "<section class=\"card\" id=\"bound\"><h2>Lower bound</h2>\n";
  out += fmt::format(
      "<p class=\"lead\">No plan of this graph on this platform can be <em>predicted</em> faster than <b>{} ms</b>, "
      "under the same cost model: the largest of the critical path ({} ms: the longest chain of nodes, each on its "
      "fastest device, with the hand-overs between devices), the capacity bound ({} ms: the work spread "
      "fractionally over every device's streams, compute and bandwidth) and the combined bound ({} ms: the "
      "capacity bound with the chains of nodes on the same fractional placement). It bounds predictions, not {} "
      "times.</p>\n",
      ms_text(c.lower_bound_ms), ms_text(c.critical_path_ms), ms_text(c.capacity_ms), ms_text(c.combined_ms),
      x.measured_word);
  struct Bar {
    std::string label;
    double ms;
    std::string fill;
    std::string title;
  };
  std::vector<Bar> bars = {
      {"critical path", c.critical_path_ms, "#c9a3a3", "critical path: the longest chain of nodes, hand-overs included"},
      {"capacity", c.capacity_ms, "#c9a3a3", "capacity: an LP over the devices' streams, compute and bandwidth"},
      {"combined", c.combined_ms, "#c9a3a3", "combined: the capacity LP with the chains on its placement"},
      {"lower bound", c.lower_bound_ms, "#b23b3b", "the largest of the three"}};
  if (!x.plans.empty())
    bars.push_back({"best plan: " + x.plans.front().name, x.plans.front().predicted_ms, "#9aa9bc",
                    "the fastest plan, predicted"});
  if (x.best_predicted_baseline_ms > 0)
    bars.push_back({"best device: " + x.best_predicted_baseline, x.best_predicted_baseline_ms, "#9aa9bc",
                    "the fastest single device, predicted"});
  double top = 0;
  for (const Bar& b : bars) top = std::max(top, b.ms);
  top = top > 0 ? top * 1.15 : 1;
  const double label_w = 210, chart_w = 760, row_h = 24, axis_h = 24;
  double width = label_w + chart_w + 40, height = row_h * bars.size() + axis_h + 6;
  auto px = [&](double v) { return label_w + chart_w * v / top; };
  out += fmt::format("<svg class=\"bound\" viewBox=\"0 0 {0:.0f} {1:.0f}\" width=\"{0:.0f}\" height=\"{1:.0f}\" "
                     "role=\"img\" aria-label=\"lower bound\">\n<g class=\"axis\">",
                     width, height);
  double step = nice_step(top, 8);
  for (double t = 0; t <= top + 1e-9; t += step)
    out += fmt::format("<line class=\"grid\" x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"4\" y2=\"{1:.0f}\"/>"
                       "<text x=\"{0:.1f}\" y=\"{2:.0f}\" text-anchor=\"middle\">{3} ms</text>",
                       px(t), height - axis_h, height - 8, tick_text(t, step));
  out += "</g>\n";
  for (size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    double y = 6 + row_h * i;
    out += fmt::format("<text x=\"{:.0f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>", label_w - 10, y + 13,
                       escape(b.label));
    if (b.ms > 0)
      out += fmt::format("<rect class=\"sp\" x=\"{0:.0f}\" y=\"{1:.1f}\" width=\"{2:.1f}\" height=\"14\" rx=\"2\" "
                         "fill=\"{3}\"><title>{4}: {5} ms</title></rect><text x=\"{6:.1f}\" y=\"{7:.1f}\">{5} ms</text>",
                         label_w, y + 2, px(b.ms) - label_w, b.fill, escape(b.title), ms_text(b.ms), px(b.ms) + 5,
                         y + 13);
  }
  out += "</svg>\n</section>\n";
  return out;
}

// --------------------------------------------------------------- Gantt

struct GanttLane {
  int device = 0;  // index into the trace's (plan's) devices
  int stream = 0;
  std::string device_name;
};

// One row per device stream: the plan's lanes when there is a plan (so an
// idle lane still shows), else those the trace's events use.
std::vector<GanttLane> gantt_lanes(const Plan* plan, const Trace& trace) {
  std::set<std::pair<int, int>> keys;
  std::vector<std::string> devices = plan ? plan->devices : trace.devices;
  if (plan)
    for (const Lane& lane : plan->lanes) keys.insert({lane.device, lane.stream});
  for (const TraceEvent& e : trace.events) keys.insert({e.device, e.stream});
  std::vector<GanttLane> lanes;
  for (auto [device, stream] : keys)
    lanes.push_back({device, stream,
                     device >= 0 && device < static_cast<int>(devices.size()) ? base_device(devices[device])
                                                                              : fmt::format("device {}", device)});
  return lanes;
}

// A lane's events drawn as bars; events too short to be told apart at this
// scale are merged into one bar (its tooltip counts and names them), which
// keeps big plans' pages small.
struct GanttBar {
  double start_us = 0, end_us = 0;
  std::string category;
  std::vector<const TraceEvent*> events;
};

std::vector<GanttBar> lane_bars(std::vector<const TraceEvent*> events, double us_per_px) {
  std::sort(events.begin(), events.end(),
            [](const TraceEvent* a, const TraceEvent* b) { return a->start_us < b->start_us; });
  constexpr double kMinPx = 3.0;  // narrower bars are merged with their thin neighbours
  std::vector<GanttBar> bars;
  bool open_merge = false;
  for (const TraceEvent* e : events) {
    double end = e->start_us + e->duration_us;
    bool thin = e->duration_us / us_per_px < kMinPx;
    if (thin && open_merge && bars.back().category == e->category &&
        (e->start_us - bars.back().end_us) / us_per_px < 1.0 && (end - bars.back().start_us) / us_per_px < 16) {
      bars.back().end_us = std::max(bars.back().end_us, end);
      bars.back().events.push_back(e);
      continue;
    }
    bars.push_back({e->start_us, end, e->category, {e}});
    open_merge = thin;
  }
  return bars;
}

// The row and the chart say the device and the kind; the tooltip, held by
// every bar, stays short.
std::string event_tooltip(const TraceEvent& e) {
  return fmt::format("{}\n{}start {:.3f} ms · duration {:.3f} ms", e.name,
                     e.category == "launch" ? e.op_name + " · " : "", e.start_us / 1e3, e.duration_us / 1e3);
}

std::string merged_tooltip(const GanttBar& bar, const std::string& lane_label, const std::string& kind) {
  std::string plural = bar.category == "launch" ? "launches" : bar.category == "copy" ? "copies" : bar.category + "s";
  std::string text = fmt::format("{} {}, too short to draw apart at this scale ({} · {})\n", bar.events.size(), plural,
                                 lane_label, kind);
  constexpr size_t kNamed = 6;
  for (size_t i = 0; i < bar.events.size() && i < kNamed; ++i) {
    const TraceEvent& e = *bar.events[i];
    text += fmt::format("{} — {:.3f} ms at {:.3f} ms\n", e.name, e.duration_us / 1e3, e.start_us / 1e3);
  }
  if (bar.events.size() > kNamed) text += fmt::format("… and {} more\n", bar.events.size() - kNamed);
  double busy = 0;
  for (const TraceEvent* e : bar.events) busy += e->duration_us;
  text += fmt::format("from {:.3f} to {:.3f} ms, {:.3f} ms busy", bar.start_us / 1e3, bar.end_us / 1e3, busy / 1e3);
  return text;
}

constexpr double kGanttLabelW = 150, kGanttChartW = 930, kGanttRight = 20, kLaneH = 24, kAxisH = 26;

// One timeline: a row per lane, bars coloured by device, copies paler and
// waits grey and thin, time ticks in ms; `scale_us` is the time the chart's
// width stands for (shared by the charts that should be compared).
std::string gantt_svg(Context& x, const PlanRow& row, const Trace& trace, const std::string& kind, double scale_us) {
  std::vector<GanttLane> lanes = gantt_lanes(row.plan, trace);
  double us_per_px = scale_us / kGanttChartW;
  double width = kGanttLabelW + kGanttChartW + kGanttRight;
  double height = kLaneH * lanes.size() + kAxisH + 4;
  auto px = [&](double us) { return kGanttLabelW + us / us_per_px; };
  std::map<int, int> streams_per_device;
  for (const GanttLane& lane : lanes) ++streams_per_device[lane.device];

  std::string out = fmt::format(
      "<svg class=\"gantt\" data-plan=\"{0}\" data-kind=\"{1}\" data-lanes=\"{2}\" viewBox=\"0 0 {3:.0f} {4:.0f}\" "
      "width=\"{3:.0f}\" height=\"{4:.0f}\" role=\"img\" aria-label=\"{1} timeline of {0}\">\n",
      escape(row.display()), kind, lanes.size(), width, height);
  // Grid and axis first, so that bars draw over them.
  double step = nice_step(scale_us / 1e3, 10);
  double bottom = kLaneH * lanes.size();
  out += "<g class=\"axis\">";
  for (double t = 0; t * 1e3 <= scale_us + 1e-6; t += step)
    out += fmt::format("<line class=\"grid\" x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"0\" y2=\"{1:.0f}\"/><text "
                       "x=\"{0:.1f}\" y=\"{2:.0f}\" text-anchor=\"middle\">{3}</text>",
                       px(t * 1e3), bottom + 4, bottom + 17, tick_text(t, step));
  out += fmt::format("<text x=\"{:.0f}\" y=\"{:.0f}\" text-anchor=\"end\">time (ms)</text></g>\n", kGanttLabelW - 16,
                     bottom + 17);

  for (size_t l = 0; l < lanes.size(); ++l) {
    const GanttLane& lane = lanes[l];
    int colour = x.palette.index(lane.device_name);
    std::string lane_label = streams_per_device[lane.device] > 1
                                 ? fmt::format("{} · stream {}", lane.device_name, lane.stream)
                                 : lane.device_name;
    double y = kLaneH * l;
    out += fmt::format("<g class=\"lane\" data-lane=\"{}\">", escape(lane_label));
    if (l % 2 == 0)
      out += fmt::format("<rect class=\"lanebg\" x=\"{:.0f}\" y=\"{:.0f}\" width=\"{:.0f}\" height=\"{:.0f}\"/>",
                         kGanttLabelW, y, kGanttChartW, kLaneH);
    out += fmt::format("<rect class=\"d{}\" x=\"4\" y=\"{:.1f}\" width=\"10\" height=\"10\" rx=\"2\"/>"
                       "<text x=\"19\" y=\"{:.1f}\">{}</text>",
                       colour, y + 7, y + 16, escape(fit_label(lane_label, kGanttLabelW - 22)));
    std::vector<const TraceEvent*> events;
    for (const TraceEvent& e : trace.events)
      if (e.device == lane.device && e.stream == lane.stream) events.push_back(&e);
    for (const GanttBar& bar : lane_bars(events, us_per_px)) {
      double x0 = px(bar.start_us), w = std::max(1.0, (bar.end_us - bar.start_us) / us_per_px);
      bool merged = bar.events.size() > 1;
      std::string tooltip = merged ? merged_tooltip(bar, lane_label, kind)
                                   : event_tooltip(*bar.events.front());
      double bar_y = y + 4, bar_h = kLaneH - 8;
      std::string cls = fmt::format("ev d{}", colour);
      if (bar.category == "copy") {
        bar_y = y + 7;
        bar_h = kLaneH - 14;
        cls += " cp";
      } else if (bar.category == "wait") {
        bar_y = y + kLaneH / 2 - 2;
        bar_h = 4;
        cls = "ev wt";
      }
      out += fmt::format("<rect class=\"{}\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.0f}\"{}><title>{}"
                         "</title></rect>",
                         cls, x0, bar_y, w, bar_h, bar.category == "launch" ? " rx=\"2\"" : "", escape(tooltip));
      if (!merged && bar.category == "launch") {
        std::string text = fit_label(bar.events.front()->op_name, w);
        if (!text.empty())
          out += fmt::format("<text class=\"in t{}\" x=\"{:.1f}\" y=\"{:.1f}\">{}</text>", colour, x0 + 3, y + 15.5,
                             escape(text));
      }
    }
    out += "</g>\n";
  }
  // The makespan, where the last lane finishes.
  double end = px(trace.makespan_us);
  out += fmt::format("<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"0\" y2=\"{1:.0f}\" stroke=\"#1f2933\" "
                     "stroke-dasharray=\"4 3\"><title>makespan {2:.3f} ms</title></line>\n",
                     end, bottom + 4, trace.makespan_us / 1e3);
  out += "</svg>\n";
  return out;
}

// The time the predicted and the measured charts of a group of plans span.
// Both share one scale, so that a bar's length means the same in each,
// unless the runs took far longer or shorter than predicted (emulated
// devices whose reference kernels on this machine outlast the modeled
// times): then the predicted chart would be a sliver, and each gets its own.
struct TimeScales {
  double predicted_us = 0, measured_us = 0;
  bool shared = true;
};

TimeScales time_scales(const std::vector<const PlanRow*>& rows) {
  constexpr double kMaxRatio = 3;
  TimeScales scales;
  for (const PlanRow* row : rows) {
    if (row->predicted) scales.predicted_us = std::max(scales.predicted_us, row->predicted->makespan_us);
    if (row->measured_trace) scales.measured_us = std::max(scales.measured_us, row->measured_trace->makespan_us);
  }
  double longer = std::max(scales.predicted_us, scales.measured_us);
  double shorter = std::min(scales.predicted_us, scales.measured_us);
  if (shorter <= 0 || longer <= kMaxRatio * shorter) {
    scales.predicted_us = scales.measured_us = longer;
  } else {
    scales.shared = false;
  }
  return scales;
}

std::string plan_timelines(Context& x, const PlanRow& row, const TimeScales& scales, bool best) {
  std::string out = fmt::format("<div class=\"plan-head\" id=\"{}\"><h3>{}{}</h3><span class=\"figs\">predicted {} ms",
                                row.anchor, best ? "<span class=\"star\">★</span> " : "", escape(row.display()),
                                ms_text(row.predicted_ms));
  if (row.measured.p50_ms >= 0) out += fmt::format(" · {} median {} ms", x.measured_word, ms_text(row.measured.p50_ms));
  if (row.plan)
    out += fmt::format(" · {} launches, {} copies on {} lanes", row.plan->n_launches(), row.plan->n_copies(),
                       row.plan->lanes.size());
  out += "</span></div>\n";
  if (row.plan && !row.plan->notes.empty()) {
    out += "<div class=\"plannotes\">";
    for (const std::string& note : row.plan->notes) out += escape(note) + "<br>";
    out += "</div>\n";
  }
  std::string own_scale = scales.shared ? "" : " · <i>own time scale</i>";
  if (row.predicted) {
    out += fmt::format("<div class=\"panel\"><b>predicted</b> — simulated by the cost model · makespan {} ms{}</div>\n",
                       ms_text(row.predicted->makespan_us / 1e3), row.measured_trace ? own_scale : "");
    out += gantt_svg(x, row, *row.predicted, "predicted", scales.predicted_us);
  }
  if (row.measured_trace) {
    const Trace& t = *row.measured_trace;
    std::string kind = t.kind == "emulated" ? "emulated" : "measured";
    out += fmt::format("<div class=\"panel\"><b>{}</b> — {} · the median round · makespan {} ms{}</div>\n", kind,
                       kind == "emulated" ? "run on this machine, modeled devices held to their modeled times"
                                          : "run on this machine",
                       ms_text(t.makespan_us / 1e3), row.predicted ? own_scale : "");
    out += gantt_svg(x, row, t, kind, scales.measured_us);
  }
  return out;
}

std::string timelines_section(Context& x) {
  std::string out = "<section class=\"card\" id=\"timelines\"><h2>Timelines</h2>\n";
  bool any = false;
  for (const PlanRow& p : x.plans) any = any || p.predicted || p.measured_trace;
  for (const PlanRow& b : x.baselines) any = any || b.predicted || b.measured_trace;
  if (!any) {
    out += "<p class=\"lead\">No timelines: the comparison was made without keeping them "
           "(CompareOptions::keep_traces).</p></section>\n";
    return out;
  }
  size_t n_open = std::min<size_t>(std::max(0, x.in.open_timelines), x.plans.size());
  std::vector<const PlanRow*> open;
  for (size_t i = 0; i < n_open; ++i) open.push_back(&x.plans[i]);
  TimeScales scales = time_scales(open);
  std::string lead =
      "Each plan's timeline, one row per device stream: what ran where and when. Hover a bar for its nodes, op "
      "types, start and duration; the dashed line is the makespan.";
  if (x.measured)
    lead += scales.shared ? fmt::format(" Predicted (simulated) above, {} below, on one time scale.", x.measured_word)
                          : fmt::format(" Predicted (simulated) above, {} below. The {} runs took far longer or shorter "
                                        "than predicted, so each has its own time scale.",
                                        x.measured_word, x.measured_word);
  if (n_open > 1) lead += fmt::format(" The first {} plans share their scales, so that their lengths compare.", n_open);
  out += "<p class=\"lead\">" + lead + "</p>\n";
  out += "<div class=\"legend\">";
  for (size_t i = 0; i < x.palette.names.size(); ++i)
    out += fmt::format("<span class=\"item\"><span class=\"swatch bg{}\"></span>{}</span>", i,
                       escape(x.palette.names[i]));
  out += "<span class=\"item\"><svg width=\"26\" height=\"12\" style=\"display:inline;vertical-align:-1px\">"
         "<rect x=\"0\" y=\"0\" width=\"26\" height=\"12\" rx=\"2\" fill=\"#8a96a3\"/></svg> launch</span>"
         "<span class=\"item\"><svg width=\"26\" height=\"12\" style=\"display:inline;vertical-align:-1px\">"
         "<rect x=\"0\" y=\"3\" width=\"26\" height=\"6\" fill=\"#8a96a3\" fill-opacity=\".55\"/></svg> copy</span>"
         "<span class=\"item\"><svg width=\"26\" height=\"12\" style=\"display:inline;vertical-align:-1px\">"
         "<rect x=\"0\" y=\"4\" width=\"26\" height=\"4\" fill=\"#c3c9d0\"/></svg> wait</span></div>\n";

  for (size_t i = 0; i < n_open; ++i) out += plan_timelines(x, x.plans[i], scales, i == 0);
  size_t n_rest = x.plans.size() - n_open + x.baselines.size();
  if (n_rest > 0) {
    out += fmt::format("<details><summary>Timelines of the other {} plans and of each device alone (each plan on its "
                       "own time scale)</summary>\n",
                       n_rest);
    for (size_t i = n_open; i < x.plans.size(); ++i)
      out += plan_timelines(x, x.plans[i], time_scales({&x.plans[i]}), false);
    for (const PlanRow& b : x.baselines)
      if (b.predicted || b.measured_trace) out += plan_timelines(x, b, time_scales({&b}), false);
    out += "</details>\n";
  }
  out += "</section>\n";
  return out;
}

// ------------------------------------------------------------ placement

// Busy time of each plan device: the union of its launches' and copies'
// intervals (streams of one device overlapping count once), as the
// simulator counts utilisation.
std::vector<double> busy_us(const Trace& trace, size_t n_devices) {
  std::vector<std::vector<std::pair<double, double>>> intervals(n_devices);
  for (const TraceEvent& e : trace.events)
    if (e.category != "wait" && e.device >= 0 && static_cast<size_t>(e.device) < n_devices)
      intervals[e.device].push_back({e.start_us, e.start_us + e.duration_us});
  std::vector<double> busy(n_devices, 0);
  for (size_t d = 0; d < n_devices; ++d) {
    std::sort(intervals[d].begin(), intervals[d].end());
    double covered = -1e300;
    for (auto [start, end] : intervals[d]) {
      double from = std::max(start, covered);
      if (end > from) busy[d] += end - from;
      covered = std::max(covered, end);
    }
  }
  return busy;
}

std::string placement_section(Context& x) {
  std::string out = "<section class=\"card\" id=\"placement\"><h2>Placement by device</h2>\n";
  out += "<p class=\"lead\">Where each plan put the work: the share of nodes, of FLOPs and of predicted busy time "
         "(launches and copies) on each device. Hover a segment for the figures.</p>\n";
  if (x.plans.empty()) return out + "</section>\n";
  const double label_w = 150, col_w = 300, gap = 24, row_h = 22, head_h = 22;
  double width = label_w + 3 * col_w + 2 * gap + 10, height = head_h + row_h * x.plans.size() + 4;
  out += fmt::format("<svg class=\"placement\" viewBox=\"0 0 {0:.0f} {1:.0f}\" width=\"{0:.0f}\" height=\"{1:.0f}\" "
                     "role=\"img\" aria-label=\"placement by device\">\n",
                     width, height);
  const char* heads[] = {"nodes", "FLOPs", "busy time (predicted)"};
  for (int k = 0; k < 3; ++k)
    out += fmt::format("<text x=\"{:.0f}\" y=\"14\" font-weight=\"600\" fill=\"#64707d\">{}</text>",
                       label_w + k * (col_w + gap), heads[k]);
  for (size_t i = 0; i < x.plans.size(); ++i) {
    const PlanRow& row = x.plans[i];
    const Plan& plan = *row.plan;
    double y = head_h + row_h * i;
    if (i == 0)
      out += fmt::format("<rect class=\"bestband\" x=\"0\" y=\"{:.0f}\" width=\"{:.0f}\" height=\"{:.0f}\"/>", y, width,
                         row_h);
    out += fmt::format("<text x=\"{:.0f}\" y=\"{:.1f}\" text-anchor=\"end\"{}>{}</text>", label_w - 10, y + 15,
                       i == 0 ? " font-weight=\"700\"" : "", escape(row.name));
    size_t n = plan.devices.size();
    std::vector<double> nodes(n, 0), flops(n, 0);
    std::vector<PlanDeviceWork> work = work_by_device(plan, x.graph);
    for (size_t d = 0; d < n; ++d) {
      nodes[d] = work[d].nodes;
      flops[d] = work[d].flops;
    }
    std::vector<double> busy = row.predicted ? busy_us(*row.predicted, n) : std::vector<double>(n, 0);
    const std::vector<double>* columns[] = {&nodes, &flops, &busy};
    for (int k = 0; k < 3; ++k) {
      const std::vector<double>& values = *columns[k];
      double total = 0;
      for (double v : values) total += v;
      double x0 = label_w + k * (col_w + gap);
      if (total <= 0) {
        out += fmt::format("<text x=\"{:.0f}\" y=\"{:.1f}\" fill=\"#64707d\">–</text>", x0, y + 15);
        continue;
      }
      double at = x0;
      for (size_t d = 0; d < n; ++d) {
        if (values[d] <= 0) continue;
        int colour = x.palette.index(plan.devices[d]);
        double w = col_w * values[d] / total;
        std::string figure = k == 0   ? fmt::format("{:.0f} of {:.0f} nodes", values[d], total)
                             : k == 1 ? fmt::format("{:.3f} of {:.3f} GFLOPs", values[d] / 1e9, total / 1e9)
                                      : fmt::format("busy {:.3f} ms of the {:.3f} ms makespan ({})", values[d] / 1e3,
                                                    row.predicted->makespan_us / 1e3,
                                                    percent(values[d], row.predicted->makespan_us));
        out += fmt::format("<rect class=\"seg d{}\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"14\"><title>{}: "
                           "{}: {} ({})</title></rect>",
                           colour, at, y + 4, w, escape(row.name), escape(plan.devices[d]), figure,
                           percent(values[d], total));
        if (w > 34)
          out += fmt::format("<text class=\"in t{}\" x=\"{:.1f}\" y=\"{:.1f}\">{}</text>", colour, at + 4, y + 15,
                             percent(values[d], total));
        at += w;
      }
    }
  }
  out += "</svg>\n";

  // Every node of the best plan, with the scheduler's reason.
  const PlanRow& best = x.plans.front();
  const Plan& plan = *best.plan;
  std::map<int, double> start_of_node;  // a launch's first node -> its predicted start
  if (best.predicted)
    for (const TraceEvent& e : best.predicted->events)
      if (e.category == "launch" && e.node_index >= 0) start_of_node[e.node_index] = e.start_us;
  struct NodeRow {
    NodeId node;
    int lane;
    int first;  // the launch's first node
  };
  std::vector<NodeRow> rows;
  for (size_t l = 0; l < plan.lanes.size(); ++l)
    for (const PlanStep& step : plan.lanes[l].steps)
      if (step.kind == StepKind::kLaunch)
        for (NodeId id : step.nodes) rows.push_back({id, static_cast<int>(l), step.nodes.front()});
  std::sort(rows.begin(), rows.end(), [](const NodeRow& a, const NodeRow& b) { return a.node < b.node; });
  out += fmt::format("<details><summary>Node → device: every node of the fastest plan, {} ({} nodes)</summary>\n"
                     "<table class=\"nodes\"><thead><tr><th class=\"num\">#</th><th>node</th><th>op</th><th>device"
                     "</th><th class=\"num\">predicted start ms</th><th>reason</th></tr></thead><tbody>\n",
                     escape(best.name), rows.size());
  for (const NodeRow& r : rows) {
    const Node& node = x.graph.nodes[r.node];
    const Lane& lane = plan.lanes[r.lane];
    const std::string& device = plan.devices[lane.device];
    auto start = start_of_node.find(r.first);
    std::string reason = static_cast<size_t>(r.node) < plan.placement.size() ? plan.placement[r.node].reason : "";
    bool streams = std::count_if(plan.lanes.begin(), plan.lanes.end(),
                                 [&](const Lane& other) { return other.device == lane.device; }) > 1;
    out += fmt::format(
        "<tr><td class=\"num\">{}</td><td>{}</td><td>{}</td><td><span class=\"swatch bg{}\"></span>{}{}</td>"
        "<td class=\"num\">{}</td><td class=\"reason\">{}</td></tr>\n",
        r.node, escape(node.name), escape(node.op_type), x.palette.index(device), escape(device),
        streams ? fmt::format(" · s{}", lane.stream) : "",
        start != start_of_node.end() ? fmt::format("{:.3f}", start->second / 1e3) : "–", escape(reason));
  }
  out += "</tbody></table></details>\n</section>\n";
  return out;
}

// -------------------------------------------------------- throughput flows

std::string flows_section(Context& x) {
  if (x.in.flows.empty()) return "";
  const std::string& what = x.measured_word;
  std::string out = "<section class=\"card\" id=\"flows\"><h2>Many requests at once (throughput mode)</h2>\n";
  out += fmt::format(
      "<p class=\"lead\">Each worker holds a device of its own and runs whole requests; a request goes to the worker "
      "that would finish it first. Predicted: each worker's request time beside the others, from the cost model. "
      "{}: served in interleaved rounds, one request per worker in flight. A flow of several workers is kept only "
      "when it serves clearly more than the fastest device alone.</p>\n",
      what == "emulated" ? "Emulated" : "Measured");
  out += fmt::format(
      "<table class=\"cmp\"><thead><tr><th>flow</th><th>workers</th><th class=\"num\">predicted requests/s</th>"
      "<th class=\"num\">{} requests/s</th><th class=\"num\">{} p50 ms</th><th>note</th></tr></thead><tbody>\n",
      what, what);
  for (const FlowOutcome& f : x.in.flows) {
    out += fmt::format("<tr class=\"{}\"><td>{}{}</td><td>{}</td>", f.chosen ? "best" : "",
                       f.chosen ? "<span class=\"star\">★</span> " : "", escape(f.name),
                       escape(fmt::format("{}", fmt::join(f.workers, ", "))));
    out += cell(fmt::format("{:.1f}", f.predicted_per_s)) + cell(fmt::format("{:.1f}", f.measured_per_s)) +
           cell(fmt::format("{:.2f}", f.measured_p50_ms)) + cell(f.chosen ? "kept" : "", false, "note") + "</tr>\n";
  }
  out += "</tbody></table>\n</section>\n";
  return out;
}

}  // namespace

std::string html_report(const ReportInput& input) {
  if (!input.graph || !input.platform || !input.comparison)
    throw Error(ErrorCode::kUsage, "html report: expected a graph, a platform and a comparison");
  Context x(input);
  // Sections first: they assign device colours the style sheet then lists.
  // The pictures before the explanation: the lower bound, which the
  // summary, table and speed-up chart already quote, comes last.
  std::string body = header(x) + "<main>\n" + summary(x) + comparison_table(x) + speedup_chart(x) +
                     flows_section(x) + timelines_section(x) + placement_section(x) + bound_section(x);
  body += "<footer>Generated by hetsched. Predicted figures come from the simulator with one cost model for every "
          "plan; emulated figures are real runs in which modeled devices are held to their modeled durations; "
          "measured figures are real runs on this machine.</footer>\n</main>\n";
  std::string title = input.title.empty() ? fmt::format("{} on {}", input.model, input.platform->name) : input.title;
  return fmt::format("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                     "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                     "<meta name=\"generator\" content=\"hetsched\">\n<title>{} · hetsched report</title>\n"
                     "<style>{}{}</style>\n</head>\n<body>\n{}</body>\n</html>\n",
                     escape(title), kStyle, colour_css(x.palette), body);
}

std::string write_html_report(const std::string& dir, const ReportInput& input) {
  std::string html = html_report(input);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error(ErrorCode::kIo, fmt::format("{}: cannot create the report folder ({})", dir, ec.message()));
  std::string path = (std::filesystem::path(dir) / "index.html").string();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Error(ErrorCode::kIo, fmt::format("{}: cannot write the report ({})", path, std::strerror(errno)));
  out << html;
  out.close();
  if (!out) throw Error(ErrorCode::kIo, fmt::format("{}: cannot write the report (write failed)", path));
  return path;
}

}  // namespace hetsched
