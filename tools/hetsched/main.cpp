// hetsched — the command-line interface.
//
// Exit codes: 0 success, 1 error (bad model, input, run failure), 2 usage.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <system_error>

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "hetsched/device.h"
#include "hetsched/scheduler.h"
#include "hetsched/session.h"
#include "hetsched/throughput.h"
#include "hetsched/trace.h"
#include "hetsched/tensor_io.h"
#include "hetsched/zoo.h"
#include "cli_common.h"
#include "compare_command.h"
#include "demo_command.h"
#include "devices_command.h"
#include "plan_commands.h"
#include "profile_command.h"
#include "quantize_command.h"
#include "schedule_dag_command.h"
#include "serve_command.h"
#include "simulate_command.h"
#include "kernels/kernel.h"
#include "ops_markdown.h"

namespace fs = std::filesystem;
using namespace hetsched;
using hetsched::cli::ModelOptions;

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

std::string mib(size_t bytes) { return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20)); }

// One line on what runs where, then one per fallback when verbose.
void print_summary(const ExecutionSummary& s, bool verbose) {
  for (const auto& w : s.warnings) fmt::print(stderr, "hetsched: warning: {}\n", w);
  if (s.device == "reference") {
    fmt::print("device: reference kernels, {} nodes\n", s.n_nodes);
    return;
  }
  fmt::print("device {}: {} nodes in {} steps ({} fused), {} reorders, {} on reference kernels; "
             "intermediates {}, weights {}\n",
             s.device, s.n_nodes, s.n_steps, s.n_fused_nodes, s.n_reorders, s.n_fallbacks, mib(s.arena_bytes),
             mib(s.weight_bytes));
  if (s.n_lanes > 1 || s.emulated)
    fmt::print("plan: {} over {} lanes, {} copies between memory spaces, {} events{}\n", s.scheduler, s.n_lanes,
               s.n_copies, s.n_events, s.emulated ? " (emulated devices)" : "");
  if (!s.cuda_graph.empty()) fmt::print("CUDA Graph: {}\n", s.cuda_graph);
  if (!s.note.empty()) fmt::print("note: {}\n", s.note);
  if (!s.choice.empty()) fmt::print("{}\n", s.choice);
  if (s.shapes.free_dims && !s.shapes.kept.empty())
    fmt::print("free dims: compiled for {} in {:.1f} ms at its first run ({} shapes kept, {} dropped)\n",
               s.shapes.kept.front(), s.shapes.last_compile_ms, s.shapes.kept.size(), s.shapes.n_evictions);
  if (!s.float_chains.empty())
    fmt::print("quantized chains in float32: {}{}\n", s.float_chains.size(), verbose ? "" : " (-v lists them)");
  if (verbose) {
    for (const auto& f : s.fallbacks) fmt::print("  reference: {}\n", f);
    for (const auto& c : s.float_chains) fmt::print("  float32: {}\n", c);
  }
}

// ---------------------------------------------------------------- run
struct RunCommand {
  ModelOptions model;
  std::vector<std::string> inputs;
  std::string output_dir;
  int iterations = 10;
  int warmups = 1;
  std::string json_path;
  std::string trace_path;
  uint64_t seed = 0;
  bool verbose = false;
  std::string mode = "latency";
  int concurrency = 0;
  bool remeasure = false;
  std::string precision = "float32";
  CLI::App* cmd = nullptr;
  CLI::Option* iterations_option = nullptr;

  void add_to(CLI::App& app) {
    cmd = app.add_subcommand("run", "run a model and report its latency, or its throughput with --mode throughput");
    model.add_to(cmd);
    cmd->get_option("--devices")
        ->description("where to run: cpu, cpu:0-1, ... (see `hetsched devices`); default: this machine's devices, "
                      "scheduled by auto")
        ->default_str("");
    model.add_reference_flag(cmd);
    model.add_plan_options(cmd);
    cmd->get_option("--scheduler")
        ->description("how to spread the graph over the devices (see `hetsched schedulers`); default: auto without "
                      "--devices, else sequential")
        ->default_str("");
    cmd->add_flag("--remeasure", remeasure,
                  "with auto: measure its plans again instead of running the choice the profile database keeps "
                  "for this model, devices and options");
    model.add_cuda_graph_option(cmd);
    cmd->add_option("--precision", precision,
                    "bfloat16: compute float32 convolutions and matrix products in bfloat16 where the CPU has it "
                    "(faster, less exact; "
                    "the outputs are compared with float32's on the same input)")
        ->check(CLI::IsMember({"float32", "bfloat16"}))
        ->capture_default_str();
    cmd->add_option("--trace", trace_path, "write the last timed run's timeline as a Chrome trace (Perfetto)");
    cmd->add_flag("-v,--verbose", verbose, "list the nodes that run on reference kernels");
    cmd->add_option("--input", inputs, "input tensor NAME=FILE (.npy or .pb); random data when omitted (repeatable)");
    cmd->add_option("--output-dir", output_dir, "write each output as NAME.npy into this folder");
    // CLI::Range, not CLI::NonNegativeNumber, whose message spells out DBL_MAX.
    iterations_option =
        cmd->add_option("-n,--iterations", iterations, "timed runs (requests with --mode throughput: 100 by default)")
            ->check(CLI::Range(0, 1000000))
            ->capture_default_str();
    cmd->add_option("--mode", mode,
                    "latency: one request at a time over the devices; throughput: many requests at once, each on a "
                    "device of its own, the flow chosen by measurement (docs/throughput.md)")
        ->check(CLI::IsMember({"latency", "throughput"}))
        ->capture_default_str();
    cmd->add_option("--concurrency", concurrency,
                    "with --mode throughput: requests kept in flight (default: one per worker of the chosen flow)")
        ->check(CLI::Range(1, 4096));
    cmd->add_option("-w,--warmup", warmups, "untimed warm-up runs after the first run")
        ->check(CLI::Range(0, 1000000))
        ->capture_default_str();
    cmd->add_option("--json", json_path, "write the timings as JSON to this file");
    cmd->add_option("--seed", seed, "seed of the random inputs")->capture_default_str();
    cmd->callback([this] { exit_code = execute(); });
  }

  int exit_code = 0;

  int execute() {
    std::error_code ec;  // refused before the runs, not after them
    if (!output_dir.empty() && fs::exists(output_dir, ec) && !fs::is_directory(output_dir, ec))
      throw Error(ErrorCode::kIo, fmt::format("--output-dir {}: exists and is not a folder", output_dir));
    auto load_start = Clock::now();
    SessionOptions session_options = model.session_options();
    bool throughput = mode == "throughput";
    if (throughput) {
      if (!trace_path.empty())
        throw Error(ErrorCode::kUsage, "--trace: a timeline of one request is for --mode latency");
      session_options.mode = RunMode::kThroughput;
      session_options.concurrency = concurrency;
    } else if (concurrency > 0) {
      throw Error(ErrorCode::kUsage, "--concurrency: only with --mode throughput");
    }
    // The default: auto over this machine's devices (docs/schedulers.md);
    // its choice is kept in the profile database for the next run.
    bool machine_default = !cmd->count("--devices") && !cmd->count("--platform") && !cmd->count("--scheduler") &&
                           model.plan.empty() && !model.reference && !throughput;
    if (machine_default) {
      session_options.devices = machine_devices_spec();
      session_options.scheduler = "auto";
    }
    session_options.remeasure = remeasure;
    session_options.precision = precision;
    Graph graph = load_model(model.model, model.load_options());

    // Input files are read and checked before the session is made: a bad
    // one is refused before any profiling or measuring.
    TensorMap feeds = random_inputs(graph, seed);
    for (const auto& spec : inputs) {
      auto eq = spec.find('=');
      if (eq == std::string::npos || eq == 0)
        throw Error(ErrorCode::kUsage, fmt::format("--input '{}': expected NAME=FILE", spec));
      std::string name = spec.substr(0, eq);
      if (!feeds.count(name))
        throw Error(ErrorCode::kUsage, fmt::format("--input {}: the model has no input '{}'", name, name));
      std::string file = spec.substr(eq + 1);
      try {
        feeds[name] = read_tensor_file(file);
      } catch (const Error& e) {
        throw Error(e.code() == ErrorCode::kUsage ? ErrorCode::kUsage : ErrorCode::kInvalidInput,
                    fmt::format("--input {}: {}", name, e.what()));
      }
      // A wrong shape or dtype is the file's fault: name it, before anything runs.
      try {
        check_inputs(graph, feeds);
      } catch (const Error& e) {
        throw Error(e.code(), fmt::format("--input {}: {}: {}", name, file, e.what()));
      }
    }

    cli::ProgressBar bar;  // auto profiles what the database lacks first
    session_options.progress = [&bar](int done, int total, const std::string& what) { bar.update(done, total, what); };
    Session session(std::move(graph), session_options);
    bar.clear();
    double load_ms = ms_since(load_start);
    const Graph& g = session.graph();

    // Free dims: the session compiles at the first run, for its shapes; what
    // it runs is known after it.
    bool free_dims = session.summary().shapes.free_dims;
    if (free_dims)
      fmt::print("model: {} ({} nodes, free dims), loaded in {:.1f} ms\n", model.model, g.nodes.size(), load_ms);
    else
      fmt::print("model: {} ({} nodes, {:.2f} GFLOPs), loaded in {:.1f} ms\n", model.model, g.nodes.size(),
                 g.total_flops() / 1e9, load_ms);
    if (machine_default)
      fmt::print("devices: {}, this machine's (--devices to choose others), scheduled by auto\n",
                 session_options.devices);
    if (!free_dims) print_summary(session.summary(), verbose);
    auto first_start = Clock::now();
    TensorMap outputs = session.run(feeds);
    double first_ms = ms_since(first_start);
    if (free_dims) print_summary(session.summary(), verbose);
    const std::vector<std::string> before_runs = session.summary().warnings;
    if (throughput) return execute_throughput(session, feeds, outputs, load_ms);
    for (int i = 0; i < warmups; ++i) session.run(feeds);
    std::vector<double> times;
    Trace trace;
    bool tracing = !trace_path.empty();
    auto total_start = Clock::now();
    for (int i = 0; i < iterations; ++i) {
      auto start = Clock::now();
      session.run(feeds, tracing && i + 1 == iterations ? &trace : nullptr);
      times.push_back(ms_since(start));
    }
    if (tracing && iterations == 0) session.run(feeds, &trace);
    double total_ms = ms_since(total_start);
    // What the runs taught the session (auto's kept choice found slower).
    std::vector<std::string> warned = session.summary().warnings;
    for (size_t w = before_runs.size(); w < warned.size(); ++w)
      fmt::print(stderr, "hetsched: warning: {}\n", warned[w]);
    double p50 = percentile(times, 50), p90 = percentile(times, 90), p99 = percentile(times, 99);
    double runs_per_s = iterations > 0 && total_ms > 0 ? iterations / (total_ms / 1000.0) : 0;

    fmt::print("first run: {:.2f} ms\n", first_ms);
    if (iterations > 0)
      fmt::print("runs: {}  p50: {:.2f} ms  p90: {:.2f} ms  p99: {:.2f} ms  runs/s: {:.2f}\n", iterations, p50, p90,
                 p99, runs_per_s);
    for (const auto& [name, t] : outputs) fmt::print("output {}: {}\n", name, t.description());
    if (precision != "float32") print_precision_change(session, session_options, feeds, outputs);
    if (session.summary().emulated)
      fmt::print("note: timings include emulated devices: their steps are held to modeled durations ({} overran)\n",
                 session.summary().n_emulation_overruns);
    if (tracing) {
      write_chrome_trace(trace, trace_path);
      fmt::print("trace ({}) written to {}\n", trace.kind, trace_path);
    }

    write_outputs(outputs);
    if (!json_path.empty()) {
      nlohmann::json j = {{"model", model.model},       {"nodes", g.nodes.size()}, {"load_ms", load_ms},
                          {"first_run_ms", first_ms},    {"runs", iterations},      {"warmups", warmups},
                          {"p50_ms", p50},               {"p90_ms", p90},           {"p99_ms", p99},
                          {"runs_per_s", runs_per_s},    {"times_ms", times}};
      if (free_dims) j["compile_ms"] = session.summary().shapes.last_compile_ms;
      write_json(j);
    }
    return 0;
  }

  // The outputs of a reduced-precision run against float32's on the same
  // input (the same devices, run sequentially).
  static void print_precision_change(const Session& session, SessionOptions options, const TensorMap& feeds,
                                     const TensorMap& outputs) {
    const auto& devices = session.platform().devices;
    if (std::none_of(devices.begin(), devices.end(),
                     [&](const PlatformDevice& d) { return d.precision == options.precision; }))
      return;  // no device computed in it (the reference kernels, no CPU, or a warning says why)
    const std::string reduced = options.precision;
    options.precision = "float32";
    options.scheduler = "sequential";
    options.profile_first = false;
    TensorMap want = Session(session.graph(), options).run(feeds);
    for (const auto& [name, got] : outputs) {
      if (got.dtype() != DType::kFloat32 || !want.count(name)) continue;
      std::vector<double> a = got.to_double_vector(), b = want.at(name).to_double_vector();
      double dot = 0, na = 0, nb = 0, max_diff = 0, max_b = 0;
      for (size_t i = 0; i < a.size(); ++i) {
        dot += a[i] * b[i];
        na += a[i] * a[i];
        nb += b[i] * b[i];
        max_diff = std::max(max_diff, std::fabs(a[i] - b[i]));
        max_b = std::max(max_b, std::fabs(b[i]));
      }
      double cosine = na > 0 && nb > 0 ? dot / std::sqrt(na * nb) : 1.0;
      fmt::print("precision {}: output {} against float32 on the same input: max |difference| {:.3g} ({:.2g} of "
                 "its largest value), cosine {:.6f}\n",
                 reduced, name, max_diff,
                 max_b > 0 ? max_diff / max_b : 0.0, cosine);
    }
  }

  // --mode throughput: N requests, K in flight, on the session's flow.
  int execute_throughput(const Session& session, const TensorMap& feeds, const TensorMap& outputs, double load_ms) {
    int n = iterations_option->count() ? iterations : 100;
    ExecutionSummary summary = session.summary();
    int in_flight = concurrency > 0 ? concurrency : static_cast<int>(summary.workers.size());
    // Distinct random inputs (16 at most, cycled) unless inputs were given.
    std::vector<TensorMap> requests{feeds};
    if (inputs.empty())
      for (uint64_t i = 1; i < static_cast<uint64_t>(std::min(n, 16)); ++i)
        requests.push_back(session.random_inputs(seed + i));
    auto request = [&](int i) { session.run(requests[static_cast<size_t>(i) % requests.size()]); };
    if (warmups > 0) run_closed_loop(warmups * in_flight, in_flight, request);
    std::vector<WorkerLoad> before = session.loads();
    LoadResult r;
    if (n > 0) r = run_closed_loop(n, in_flight, request);
    std::vector<WorkerLoad> after = session.loads();
    fmt::print("throughput: {}, {} request{} in flight\n", summary.flow, in_flight, in_flight > 1 ? "s" : "");
    if (n > 0)
      fmt::print("requests: {}  throughput: {:.1f} requests/s  latency p50: {:.2f} ms  p90: {:.2f} ms  "
                 "p99: {:.2f} ms\n",
                 r.n_requests, r.per_s, r.p50_ms, r.p90_ms, r.p99_ms);
    nlohmann::json served = nlohmann::json::array();
    std::vector<std::string> shares;
    for (size_t w = 0; w < after.size(); ++w) {
      int64_t count = after[w].n_requests - before[w].n_requests;
      double busy = after[w].busy_s - before[w].busy_s;
      shares.push_back(fmt::format("{} {} ({:.0f}% busy)", after[w].device, count,
                                   r.seconds > 0 ? 100 * busy / r.seconds : 0));
      served.push_back({{"device", after[w].device}, {"requests", count}, {"busy_s", busy}});
    }
    if (n > 0) fmt::print("served: {}\n", fmt::join(shares, ", "));
    for (const auto& [name, t] : outputs) fmt::print("output {}: {}\n", name, t.description());
    write_outputs(outputs);
    if (!json_path.empty()) {
      nlohmann::json j = {{"model", model.model},
                          {"mode", "throughput"},
                          {"load_ms", load_ms},
                          {"flow", summary.flow},
                          {"workers", summary.workers},
                          {"choice", summary.choice},
                          {"requests", r.n_requests},
                          {"in_flight", in_flight},
                          {"seconds", r.seconds},
                          {"throughput_per_s", r.per_s},
                          {"p50_ms", r.p50_ms},
                          {"p90_ms", r.p90_ms},
                          {"p99_ms", r.p99_ms},
                          {"served", served},
                          {"latencies_ms", r.latencies_ms}};
      write_json(j);
    }
    return 0;
  }

  void write_json(const nlohmann::json& j) const {
    std::ofstream out(json_path);
    if (!out) throw Error(ErrorCode::kIo, fmt::format("{}: cannot open for writing", json_path));
    out << j.dump(2) << "\n";
  }

  void write_outputs(const TensorMap& outputs) const {
    std::error_code ec;
    if (!output_dir.empty()) {
      fs::create_directories(output_dir, ec);
      if (ec)
        throw Error(ErrorCode::kIo,
                    fmt::format("--output-dir {}: cannot create the folder: {}", output_dir, ec.message()));
      for (const auto& [name, t] : outputs) {
        std::string file = (fs::path(output_dir) / (sanitize(name) + ".npy")).string();
        write_npy(file, t);
      }
      fmt::print("outputs written to {}\n", output_dir);
    }
  }

  // Output names may hold '/' or ':'; file names may not.
  static std::string sanitize(std::string name) {
    for (char& c : name)
      if (c == '/' || c == '\\' || c == ':') c = '_';
    return name;
  }
};

// ---------------------------------------------------------------- export
struct ExportCommand {
  ModelOptions model;
  std::string output;
  int exit_code = 0;

  void add_to(CLI::App& app) {
    auto* cmd = app.add_subcommand("export", "write a model (e.g. zoo:resnet50) as an .onnx file");
    model.add_model(cmd);
    cmd->add_option("-o,--output", output, "the .onnx file to write")->required();
    cmd->callback([this] { exit_code = execute(); });
  }

  int execute() {
    std::string bytes = model_to_onnx_bytes(model.model, model.load_options());
    std::ofstream out(output, std::ios::binary);
    if (!out) throw Error(ErrorCode::kIo, fmt::format("{}: cannot open for writing", output));
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) throw Error(ErrorCode::kIo, fmt::format("{}: write failed", output));
    fmt::print("wrote {} ({} bytes)\n", output, bytes.size());
    return 0;
  }
};

// ---------------------------------------------------------------- conformance
struct ConformanceCommand {
  std::string dir;
  std::string filter;
  bool verbose = false;
  double rtol = 1e-3, atol = 1e-7;
  int min_passed = 0;
  std::string devices = "cpu";
  bool reference = false;
  int exit_code = 0;

  void add_to(CLI::App& app) {
    auto* cmd = app.add_subcommand(
        "conformance", "run ONNX backend node tests (DIR/test_*/model.onnx + test_data_set_*/*.pb)");
    cmd->add_option("dir", dir, "folder of test cases, e.g. /usr/share/libonnx-testdata/data/node")->required();
    cmd->add_option("--filter", filter, "only test folders whose name matches this regex");
    cmd->add_flag("-v,--verbose", verbose, "print every test, and why skipped tests were skipped");
    cmd->add_option("--rtol", rtol, "relative tolerance")->capture_default_str();
    cmd->add_option("--atol", atol, "absolute tolerance")->capture_default_str();
    cmd->add_option("--min-passed", min_passed, "fail unless at least this many tests pass");
    cmd->add_option("--devices", devices, "where to run each test (see `hetsched devices`)")->capture_default_str();
    cmd->add_flag("--reference", reference, "run on the reference kernels");
    cmd->callback([this] { exit_code = execute(); });
  }

  // Why a data set cannot be run as given, if so: an input whose shape
  // contradicts the model's declared static shape (ONNX 1.12's CastLike
  // bfloat16 cases give 'like' as [1] where the model declares [3, 4];
  // ONNX Runtime refuses such an input too). Empty when the data fit.
  static std::string data_contradicts_model(const Graph& g, const fs::path& data_dir) {
    for (size_t i = 0; i < g.inputs.size(); ++i) {
      fs::path file = data_dir / fmt::format("input_{}.pb", i);
      if (!fs::exists(file)) break;
      const Value& v = g.values[g.inputs[i]];
      Tensor t = read_tensor_pb(file.string(), nullptr, v.dtype);
      if (v.shape_is_static() && t.shape() != v.shape)
        return fmt::format("{}: the test data contradict the model: input '{}' is declared {}, given {}",
                           data_dir.filename().string(), v.name, shape_to_string(v.shape),
                           shape_to_string(t.shape()));
    }
    return "";
  }

  // Empty on pass, else why it failed.
  std::string run_case(const Session& session, const fs::path& data_dir) const {
    const Graph& g = session.graph();
    TensorMap feeds;
    for (size_t i = 0;; ++i) {
      fs::path file = data_dir / fmt::format("input_{}.pb", i);
      if (!fs::exists(file)) break;
      std::string name;
      DType expected = i < g.inputs.size() ? g.values[g.inputs[i]].dtype : DType::kUndefined;
      Tensor t = read_tensor_pb(file.string(), &name, expected);
      if (name.empty() || g.find_value(name) == kNoValue) {
        if (i >= g.inputs.size()) return fmt::format("{} has no graph input to feed", file.filename().string());
        name = g.values[g.inputs[i]].name;
      }
      feeds[name] = t;
    }
    TensorMap outputs = session.run(feeds);
    for (size_t i = 0;; ++i) {
      fs::path file = data_dir / fmt::format("output_{}.pb", i);
      if (!fs::exists(file)) break;
      if (i >= g.outputs.size()) return fmt::format("{} has no graph output", file.filename().string());
      std::string name = g.values[g.outputs[i]].name;
      Tensor want = read_tensor_pb(file.string(), nullptr, g.values[g.outputs[i]].dtype);
      std::string diff = cli::tensor_difference(outputs.at(name), want, rtol, atol);
      if (!diff.empty()) return fmt::format("output '{}': {}", name, diff);
    }
    return "";
  }

  int execute() {
    if (!fs::is_directory(dir)) throw Error(ErrorCode::kIo, fmt::format("{}: no such folder", dir));
    std::regex re(filter.empty() ? ".*" : filter);
    std::vector<fs::path> cases;
    for (const auto& entry : fs::directory_iterator(dir))
      if (entry.is_directory() && fs::exists(entry.path() / "model.onnx") &&
          std::regex_search(entry.path().filename().string(), re))
        cases.push_back(entry.path());
    std::sort(cases.begin(), cases.end());
    int passed = 0, failed = 0, skipped = 0;
    for (const auto& c : cases) {
      std::string test = c.filename().string();
      std::optional<Session> session;
      try {
        SessionOptions options;
        options.devices = devices;
        options.reference = reference;
        session.emplace(Session::load((c / "model.onnx").string(), {}, options));
      } catch (const Error& e) {
        if (e.code() == ErrorCode::kUnsupported) {
          ++skipped;
          if (verbose) fmt::print("SKIP {}: {}\n", test, e.what());
          continue;
        }
        ++failed;
        fmt::print("FAIL {}: load: {}\n", test, e.what());
        continue;
      }
      std::string why;
      std::vector<fs::path> sets;
      for (const auto& entry : fs::directory_iterator(c))
        if (entry.is_directory() && entry.path().filename().string().rfind("test_data_set_", 0) == 0)
          sets.push_back(entry.path());
      std::sort(sets.begin(), sets.end());
      std::string contradiction;
      for (const auto& set : sets)
        if (contradiction.empty()) contradiction = data_contradicts_model(session->graph(), set);
      if (!contradiction.empty()) {
        ++skipped;
        if (verbose) fmt::print("SKIP {}: {}\n", test, contradiction);
        continue;
      }
      for (const auto& set : sets) {
        try {
          why = run_case(*session, set);
        } catch (const std::exception& e) {
          why = std::string("run: ") + e.what();
        }
        if (!why.empty()) {
          why = set.filename().string() + ": " + why;
          break;
        }
      }
      if (why.empty()) {
        ++passed;
        if (verbose) fmt::print("PASS {}\n", test);
      } else {
        ++failed;
        fmt::print("FAIL {}: {}\n", test, why);
      }
    }
    fmt::print("{} passed, {} failed, {} skipped\n", passed, failed, skipped);
    if (passed < min_passed) {
      fmt::print(stderr, "hetsched: error: {} tests passed, fewer than --min-passed {}\n", passed, min_passed);
      return 1;
    }
    return failed == 0 ? 0 : 1;
  }
};

// ---------------------------------------------------------------- zoo / ops
struct ListCommands {
  bool ops_as_markdown = false;
  std::string ops_platforms_dir;

  void add_to(CLI::App& app) {
    app.add_subcommand("zoo", "list the built-in models (zoo:NAME)")->callback([] {
      for (const auto& m : zoo::zoo_models())
        fmt::print("zoo:{:<14} {}{}\n", m.name, m.description, m.params.empty() ? "" : "  [" + m.params + "]");
    });
    auto* ops = app.add_subcommand("ops", "list the ONNX ops the reference kernels run");
    auto* markdown = ops->add_flag("--markdown", ops_as_markdown,
                                   "print a Markdown table of the ops per device: reference, CPU, the emulated "
                                   "device kinds of the platform files (docs/ops.md)");
    ops->add_option("--platforms", ops_platforms_dir,
                    "folder of platform files for --markdown (default: the installed or source tree's platforms)")
        ->needs(markdown);
    ops->callback([this] {
      if (ops_as_markdown) {
        if (ops_platforms_dir.empty()) ops_platforms_dir = cli::default_platforms_dir();
        fmt::print("{}", cli::ops_markdown(ops_platforms_dir));
        return;
      }
      for (const auto& op : kernels::reference_op_types()) fmt::print("{}\n", op);
    });
    app.add_subcommand("schedulers", "list the schedulers (--scheduler NAME)")->callback([] {
      for (const auto& [name, summary] : scheduler_names()) fmt::print("{:<16} {}\n", name, summary);
    });
  }
};

}  // namespace

int main(int argc, char** argv) {
  // libgomp has read its settings already; it reads them again in the same
  // process started anew (see prefer_active_openmp_waits in device.h). Not
  // when the dynamic loader started it (`ld-linux.so hetsched ...`): that is
  // what /proc/self/exe names then. Where exec fails, libgomp keeps its
  // defaults, and `hetsched devices` says so.
  std::error_code error;
  std::string exe = std::filesystem::read_symlink("/proc/self/exe", error).filename().string();
  if (!error && exe.rfind("ld-", 0) != 0 && hetsched::prefer_active_openmp_waits()) execv("/proc/self/exe", argv);
  CLI::App app{"hetsched: schedule and run ONNX models across a machine's processing units"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "hetsched 0.1.0");
  RunCommand run;
  ExportCommand export_cmd;
  ConformanceCommand conformance;
  ListCommands lists;
  run.add_to(app);
  export_cmd.add_to(app);
  conformance.add_to(app);
  lists.add_to(app);
  int demo_exit_code = 0, devices_exit_code = 0, plan_exit_code = 0, profile_exit_code = 0, simulate_exit_code = 0, compare_exit_code = 0,
      schedule_dag_exit_code = 0, serve_exit_code = 0, quantize_exit_code = 0;
  add_demo_command(app, &demo_exit_code);
  add_devices_command(app, &devices_exit_code);
  add_plan_commands(app, &plan_exit_code);
  add_profile_command(app, &profile_exit_code);
  add_simulate_command(app, &simulate_exit_code);
  add_compare_command(app, &compare_exit_code);
  add_schedule_dag_command(app, &schedule_dag_exit_code);
  add_serve_command(app, &serve_exit_code);
  add_quantize_command(app, &quantize_exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // One line, like every other error, instead of CLI11's two.
    std::string what = e.what();
    std::replace(what.begin(), what.end(), '\n', ' ');
    if (app.get_subcommands().empty() && !app.remaining().empty()) {  // "A subcommand is required" would hide it
      std::vector<std::string> commands;
      for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
        commands.push_back(sub->get_name());
      std::string first = app.remaining().front();
      what = fmt::format("unknown {} '{}' (commands: {})", first.rfind('-', 0) == 0 ? "option" : "command", first,
                         fmt::join(commands, ", "));
    }
    std::string where;
    for (const CLI::App* sub : app.get_subcommands()) where = " " + sub->get_name();
    fmt::print(stderr, "hetsched: error: {} (see hetsched{} --help)\n", what, where);
    return 2;
  } catch (const Error& e) {
    std::fflush(stdout);
    fmt::print(stderr, "hetsched: error: {}\n", e.what());
    return e.code() == ErrorCode::kUsage ? 2 : 1;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    fmt::print(stderr, "hetsched: error: {}\n", e.what());
    return 1;
  }
  return run.exit_code | export_cmd.exit_code | conformance.exit_code | demo_exit_code | devices_exit_code |
         plan_exit_code | profile_exit_code | simulate_exit_code | compare_exit_code |
         schedule_dag_exit_code | serve_exit_code | quantize_exit_code;
}
