// profile_model (see hetsched/profile.h): the database, the calibration and
// every scheduler's launch units around profile_graph.
#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "hetsched/error.h"
#include "hetsched/profile.h"
#include "hetsched/scheduler.h"
#include "plan/plan_builder.h"
#include "profile/calibrate.h"
#include "profile/profile_db.h"
#include "profile/profiler.h"

namespace hetsched {

int mark_profile_stale(const std::string& db_path, const Platform& platform, const std::string& device,
                       const Graph& graph) {
  int d = platform.find_device(device);
  if (d < 0) throw Error(ErrorCode::kUsage, fmt::format("no device '{}' to mark stale", device));
  std::vector<std::vector<NodeId>> units = fusion_units(graph);
  for (NodeId n = 0; n < static_cast<NodeId>(graph.nodes.size()); ++n) units.push_back({n});
  for (auto& unit : all_profile_units(graph, platform)) units.push_back(std::move(unit));
  std::vector<std::string> signatures;
  for (const auto& unit : units) {
    signatures.push_back(op_signature(graph, unit));
    signatures.push_back(signatures.back() + "|corun");
  }
  std::sort(signatures.begin(), signatures.end());
  signatures.erase(std::unique(signatures.begin(), signatures.end()), signatures.end());
  ProfileDB db(db_path.empty() ? ProfileDB::default_path() : db_path);
  return db.mark_stale(platform.devices[static_cast<size_t>(d)].signature, signatures);
}

std::vector<std::string> profile_load_warnings(const ProfileReport& report, bool only_stored_under_load) {
  std::vector<std::string> lines;
  for (const ProfileReport::Device& d : report.devices) {
    if (d.n_disturbed_runs == 0 || (only_stored_under_load && !d.stored_under_load)) continue;
    std::string what = d.stored_under_load
                           ? fmt::format("its times were stored as taken under load (its threads waited {:.0f}% of "
                                         "the time for a core), and the next `hetsched profile` on a quiet machine "
                                         "measures them again",
                                         100 * d.waited)
                           : "they were repeated, and only quiet runs were kept";
    lines.push_back(fmt::format("{}: {} of {} timed runs were slowed by another process on its cores: {}", d.name,
                                d.n_disturbed_runs, d.n_timed_runs, what));
  }
  return lines;
}

ModelProfile profile_model(const Graph& graph, Platform& platform, const std::string& db_path, ProfileOptions options,
                           const std::function<void(const ModelProfile&)>& calibrated) {
  using Clock = std::chrono::steady_clock;
  // Checked before calibrating, which may take seconds per device.
  if (options.warmups < 0 || options.repeats < 1)
    throw Error(ErrorCode::kUsage, fmt::format("profile: need warm-ups >= 0 and repeats >= 1 (got {} and {})",
                                               options.warmups, options.repeats));
  ProfileDB db(db_path.empty() ? ProfileDB::default_path() : db_path);
  ModelProfile result;
  result.db_path = db.path();
  result.warnings = db.warnings();

  std::vector<bool> stored_before(platform.devices.size(), false);
  for (size_t d = 0; d < platform.devices.size(); ++d)
    stored_before[d] = !platform.devices[d].signature.empty() && db.peaks(platform.devices[d].signature);
  auto calibration_start = Clock::now();
  calibrate_platform(platform, db);
  result.calibration_seconds = std::chrono::duration<double>(Clock::now() - calibration_start).count();
  for (size_t d = 0; d < platform.devices.size(); ++d) {
    const PlatformDevice& device = platform.devices[d];
    if (device.is_emulated()) continue;
    result.calibration.push_back(
        {device.name, device.peak_gflops, device.bandwidth_gbps, device.launch_overhead_us, stored_before[d]});
  }
  if (calibrated) calibrated(result);

  // Every scheduler's proposed units too (DUET's subgraphs...), so that each
  // finds its launches measured as the backend runs them.
  for (auto& unit : all_profile_units(graph, platform)) options.extra_units.push_back(std::move(unit));
  result.report = profile_graph(graph, platform, db, options);
  return result;
}

}  // namespace hetsched
