#include "hetsched/cost_model.h"
#include "profile/calibrate.h"
#include "profile/profile_db.h"

namespace hetsched {

std::shared_ptr<const CostModel> open_cost_model(Platform& platform, const std::string& db_path,
                                                 std::vector<std::string>* warnings) {
  auto db = std::make_shared<ProfileDB>(db_path.empty() ? ProfileDB::default_path() : db_path);
  if (warnings) warnings->insert(warnings->end(), db->warnings().begin(), db->warnings().end());
  calibrate_platform(platform, *db);
  return make_combined_cost_model(platform, db);
}

}  // namespace hetsched
