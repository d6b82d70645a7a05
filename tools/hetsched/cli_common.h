// Pieces every CLI command shares: model-loading options and the platform
// and cost model a command works against.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "hetsched/cost_model.h"
#include "hetsched/platform.h"
#include "hetsched/session.h"

namespace hetsched::cli {

// Options every command that loads a model shares.
struct ModelOptions {
  std::string model;
  std::vector<std::string> shapes;
  std::vector<std::string> params;
  bool no_optimize = false;

  std::string devices = "cpu";
  std::string platform;  // a platform file (see docs/platforms.md)
  bool reference = false;
  // How to spread the graph (add_plan_options).
  std::string scheduler = "sequential";
  std::string plan;
  std::string db;
  std::vector<std::string> pins;  // --pin NODE_OR_OP=DEVICE
  std::string cuda_graph;         // --cuda-graph on|off; "": on when the plan is on one GPU

  // The model and how to load it, then --devices and --platform.
  void add_to(CLI::App* cmd) {
    add_model(cmd);
    cmd->add_option("--devices", devices, "where to run: cpu, cpu:0-1, ... (see `hetsched devices`)")
        ->capture_default_str();
    cmd->add_option("--platform", platform, "a platform file describing devices to emulate or simulate (platforms/)");
  }

  // The model and how to load it only (`export`).
  void add_model(CLI::App* cmd) {
    cmd->add_option("model", model, "model: an .onnx file or zoo:NAME (see `hetsched zoo`)")->required();
    cmd->add_option("--shape", shapes, "fix a free input dim: NAME=1x3x224x224 (repeatable)");
    cmd->add_option("--param", params, "zoo model parameter KEY=VALUE, e.g. layers=2 (repeatable)");
    cmd->add_flag("--no-optimize", no_optimize, "skip load-time graph optimisations");
  }

  // --reference: for commands that run the model (`run`).
  void add_reference_flag(CLI::App* cmd) {
    cmd->add_flag("--reference", reference, "run with the plain C++ reference kernels (the ground truth)");
  }

  // --scheduler, --plan, --db: for commands that run or plan.
  void add_plan_options(CLI::App* cmd) {
    cmd->add_option("--scheduler", scheduler, "how to spread the graph over the devices (see `hetsched schedulers`)")
        ->capture_default_str();
    cmd->add_option("--plan", plan, "run this plan file (from `hetsched plan`) instead of scheduling");
    add_db_option(cmd, db);
    add_pin_option(cmd);
  }

  // --db, one wording for every command that reads or writes profiles.
  static void add_db_option(CLI::App* cmd, std::string& path) {
    cmd->add_option("--db", path, "profile database (default: $XDG_CACHE_HOME or ~/.cache, then hetsched/profile.db)");
  }

  // --pin: for commands that plan (the scheduler must honour it).
  void add_pin_option(CLI::App* cmd) {
    cmd->add_option("--pin", pins,
                    "run a node, or every node of an op type, on a device: NODE_OR_OP=DEVICE, e.g. Conv=cpu:0 "
                    "(repeatable)");
  }

  // --cuda-graph: for commands that run a plan (`run`).
  void add_cuda_graph_option(CLI::App* cmd) {
    cmd->add_option("--cuda-graph", cuda_graph,
                    "on: capture a plan on one GPU into one CUDA Graph and replay it; off: enqueue step by step "
                    "(default: on when every lane of the plan is on one GPU)")
        ->check(CLI::IsMember({"on", "off"}));
  }

  LoadOptions load_options() const {
    LoadOptions opts;
    for (const auto& s : shapes) {
      auto [name, shape] = parse_shape_override(s);
      opts.input_shapes[name] = shape;
    }
    for (const auto& p : params) {
      auto eq = p.find('=');
      if (eq == std::string::npos || eq == 0)
        throw Error(ErrorCode::kUsage, fmt::format("--param '{}': expected KEY=VALUE", p));
      // (An empty model is explain's: the plan's own, checked when loaded.)
      if (!model.empty() && model.rfind("zoo:", 0) != 0)
        throw Error(ErrorCode::kUsage,
                    fmt::format("--param '{}': {} is a file; parameters are for zoo:NAME models only", p, model));
      opts.zoo_params[p.substr(0, eq)] = p.substr(eq + 1);
    }
    opts.optimize = !no_optimize;
    return opts;
  }

  SessionOptions session_options() const {
    SessionOptions o;
    // --platform alone means the file's devices only.
    o.devices = !platform.empty() && devices == "cpu" ? "" : devices;
    o.platform = platform;
    o.reference = reference;
    o.scheduler = scheduler;
    o.plan = plan;
    o.profile_db = db;
    o.pins = pins;
    o.cuda_graph = cuda_graph == "on" ? CudaGraphMode::kOn : cuda_graph == "off" ? CudaGraphMode::kOff
                                                                                  : CudaGraphMode::kAuto;
    return o;
  }
};


// The platform for --devices / --platform: with --platform and --devices
// left at its default, the file's devices alone (see session_options());
// --pin applied for `graph`.
// The model loaded for a command that plans or profiles it (`command`):
// shapes must be static there, so free input dims are a usage error that
// names them and says to fix them with --shape.
Graph load_static_model(const ModelOptions& options, const std::string& command);

Platform make_cli_platform(const ModelOptions& options, const Graph& graph);

// Opens the profile database (--db, or the default) and returns the combined
// cost model for `platform`, calibrating real devices' peaks first (stored in
// the database). Warnings of the database go to stderr.
std::shared_ptr<const CostModel> make_cli_cost_model(Platform& platform, const std::string& db_path);

// "" when `got` equals `want` within |got - want| <= atol + rtol * |want|
// (NaN matches NaN; rtol = atol = 0 asks for equality), else the first
// difference: "element 7: 0.25 != expected 0.5", a dtype or shape mismatch.
std::string tensor_difference(const Tensor& got, const Tensor& want, double rtol, double atol);

// Rows of cells, the first row the header; columns padded to their widest
// cell, numbers (the columns marked in `right`) aligned right.
void print_table(const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& right,
                 const std::string& indent = "  ");

// One self-overwriting line on stderr for long steps: a bar, done/total,
// the ETA and what is being done. Only drawn when stderr is a terminal, so
// logs and pipes get no control characters.
class ProgressBar {
 public:
  ProgressBar();
  ~ProgressBar() { clear(); }
  void update(int done, int total, const std::string& what);
  void clear();

 private:
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace hetsched::cli
