// profile_model (see hetsched/profile.h): the database, the calibration and
// every scheduler's launch units around profile_graph.
#include <chrono>

#include <fmt/format.h>

#include "hetsched/profile.h"
#include "hetsched/scheduler.h"
#include "profile/calibrate.h"
#include "profile/profile_db.h"
#include "profile/profiler.h"

namespace hetsched {

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
