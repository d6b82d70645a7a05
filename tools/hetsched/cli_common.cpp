#include "cli_common.h"

namespace hetsched::cli {

Platform make_cli_platform(const ModelOptions& options) {
  SessionOptions o = options.session_options();
  return make_platform(o.devices, o.platform);
}

std::shared_ptr<const CostModel> make_cli_cost_model(Platform& platform, const std::string& db_path) {
  std::vector<std::string> warnings;
  auto cost = open_cost_model(platform, db_path, &warnings);
  for (const auto& w : warnings) fmt::print(stderr, "hetsched: warning: {}\n", w);
  return cost;
}

}  // namespace hetsched::cli
