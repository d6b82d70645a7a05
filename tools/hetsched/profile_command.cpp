// `hetsched profile` (see profile_command.h).
#include "profile_command.h"


#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli_common.h"
#include "hetsched/scheduler.h"
#include "profile/calibrate.h"
#include "profile/profile_db.h"
#include "profile/profiler.h"

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
    if (model.reference)
      throw Error(ErrorCode::kUsage, "profile: --reference does not apply: profiling times the devices' own kernels");
    auto start = Clock::now();
    Graph graph = load_model(model.model, model.load_options());
    Platform platform = cli::make_cli_platform(model);
    ProfileDB db(db_path.empty() ? ProfileDB::default_path() : db_path);
    for (const auto& w : db.warnings()) fmt::print(stderr, "hetsched: warning: {}\n", w);
    fmt::print("model: {} ({} nodes, {:.2f} GFLOPs)\n", model.model, graph.nodes.size(), graph.total_flops() / 1e9);
    fmt::print("database: {}\n", db.path());

    std::vector<bool> stored_before(platform.devices.size(), false);
    for (size_t d = 0; d < platform.devices.size(); ++d)
      stored_before[d] = !platform.devices[d].signature.empty() && db.peaks(platform.devices[d].signature);
    auto calibration_start = Clock::now();
    calibrate_platform(platform, db);
    double calibration_s = seconds_since(calibration_start);
    for (size_t d = 0; d < platform.devices.size(); ++d) {
      const PlatformDevice& device = platform.devices[d];
      if (device.is_emulated()) continue;
      fmt::print("{}: {:.1f} GFLOP/s, {:.1f} GB/s, {:.1f} us per launch ({})\n", device.name, device.peak_gflops,
                 device.bandwidth_gbps, device.launch_overhead_us,
                 stored_before[d] ? "from the database" : "calibrated now");
    }
    if (calibration_s >= 0.05) fmt::print("calibration took {:.1f} s\n", calibration_s);

    ProfileReport report;
    {
      ProgressBar bar;
      // Every scheduler's proposed units too (DUET's subgraphs...), so that
      // each finds its launches measured as the backend runs them.
      options.extra_units = all_profile_units(graph, platform);
      options.progress = [&bar](int done, int total, const std::string& what) { bar.update(done, total, what); };
      report = profile_graph(graph, platform, db, options);
    }
    for (const ProfileReport::Device& d : report.devices) {
      if (d.skipped) {
        fmt::print("{}: skipped (emulated: its costs come from the platform file)\n", d.name);
        continue;
      }
      fmt::print("{}: {} launch units measured, {} reused from the database, {:.1f} s\n", d.name, d.n_measured,
                 d.n_reused, d.seconds);
      if (d.n_corun_measured + d.n_corun_reused > 0)
        fmt::print("{}: {} co-run times measured, {} reused\n", d.name, d.n_corun_measured, d.n_corun_reused);
    }
    if (report.n_links_measured > 0) fmt::print("hand-over between devices: {} measured\n", report.n_links_measured);
    fmt::print("profiled in {:.1f} s; stored in {}\n", seconds_since(start), db.path());
  }
};

}  // namespace

void add_profile_command(CLI::App& app, int* exit_code) {
  auto state = std::make_shared<ProfileCommand>();
  auto* cmd = app.add_subcommand(
      "profile", "time every launch unit of a model on the real devices and store it in the profile database");
  state->model.add_to(cmd);
  cmd->add_option("--db", state->db_path, "profile database file (default: $XDG_CACHE_HOME or ~/.cache, then hetsched/profile.db)");
  cmd->add_option("-w,--warmup", state->options.warmups, "untimed runs before the timed ones, per pass")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  cmd->add_option("-r,--repeats", state->options.repeats, "timed runs per pass (median and spread)")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  cmd->add_flag("--force", state->options.force, "measure again what the database already holds");
  cmd->callback([state, exit_code] {
    state->execute();
    *exit_code = 0;
  });
}
