// `hetsched profile` (see profile_command.h).
#include "profile_command.h"

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli_common.h"
#include "hetsched/profile.h"

namespace {

using namespace hetsched;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

using cli::ProgressBar;

struct ProfileCommand {
  cli::ModelOptions model;
  std::string db_path;
  ProfileOptions options;

  void execute() {
    auto start = Clock::now();
    Graph graph = cli::load_static_model(model, "profile");
    Platform platform = cli::make_cli_platform(model, graph);

    // Printed before the units are timed, which takes minutes.
    auto print_calibration = [&](const ModelProfile& so_far) {
      for (const auto& w : so_far.warnings) fmt::print(stderr, "hetsched: warning: {}\n", w);
      fmt::print("model: {} ({} nodes, {:.2f} GFLOPs)\n", model.model, graph.nodes.size(), graph.total_flops() / 1e9);
      fmt::print("database: {}\n", so_far.db_path);
      for (const DeviceCalibration& c : so_far.calibration)
        fmt::print("{}: {:.1f} GFLOP/s, {:.1f} GB/s, {:.1f} us per launch ({})\n", c.name, c.peak_gflops,
                   c.bandwidth_gbps, c.launch_overhead_us, c.from_database ? "from the database" : "calibrated now");
      if (so_far.calibration_seconds >= 0.05) fmt::print("calibration took {:.1f} s\n", so_far.calibration_seconds);
    };

    ModelProfile profile;
    {
      ProgressBar bar;
      options.progress = [&bar](int done, int total, const std::string& what) { bar.update(done, total, what); };
      profile = profile_model(graph, platform, db_path, options, print_calibration);
    }
    for (const ProfileReport::Device& d : profile.report.devices) {
      if (d.skipped) {
        fmt::print("{}: skipped (emulated: its costs come from the platform file)\n", d.name);
        continue;
      }
      fmt::print("{}: {} launch units measured, {} reused from the database, {:.1f} s\n", d.name, d.n_measured,
                 d.n_reused, d.seconds);
      if (d.n_corun_measured + d.n_corun_reused > 0)
        fmt::print("{}: {} co-run times measured, {} reused\n", d.name, d.n_corun_measured, d.n_corun_reused);
    }
    for (const std::string& line : profile_load_warnings(profile.report)) fmt::print("warning: {}\n", line);
    if (profile.report.n_links_measured > 0)
      fmt::print("hand-over between devices: {} measured, {} of them in context\n", profile.report.n_links_measured,
                 profile.report.n_links_in_context);
    fmt::print("profiled in {:.1f} s; stored in {}\n", seconds_since(start), profile.db_path);
  }
};

}  // namespace

void add_profile_command(CLI::App& app, int* exit_code) {
  auto state = std::make_shared<ProfileCommand>();
  auto* cmd = app.add_subcommand(
      "profile", "time every launch unit of a model on the real devices and store it in the profile database");
  state->model.add_to(cmd);
  cli::ModelOptions::add_db_option(cmd, state->db_path);
  cmd->add_option("-w,--warmup", state->options.warmups, "untimed runs before the timed ones, per pass")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  cmd->add_option("-r,--repeats", state->options.repeats, "timed runs per pass (median and spread)")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  cmd->add_flag("--force", state->options.force, "measure again what the database already holds");
  cmd->add_option("--max-wait", state->options.max_wait,
                  "a timed run during which another process kept the cores this share of the time or more is "
                  "repeated, and its entries measured again next time; 1 keeps everything (a machine never quiet)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->callback([state, exit_code] {
    state->execute();
    *exit_code = 0;
  });
}
