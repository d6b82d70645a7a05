// The scheduler registry: schedulers register themselves from their own
// files at static initialisation (HETSCHED_SCHEDULER).
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "hetsched/error.h"
#include "hetsched/scheduler.h"

namespace hetsched {

namespace {

struct RegisteredScheduler {
  std::string summary;
  SchedulerFactory factory;
};

// A function-local static: registrars in other files may run before any
// namespace-scope object of this file is initialised.
std::map<std::string, RegisteredScheduler>& registry() {
  static std::map<std::string, RegisteredScheduler> schedulers;
  return schedulers;
}

}  // namespace

void register_scheduler(const std::string& name, const std::string& summary, SchedulerFactory factory) {
  if (!registry().emplace(name, RegisteredScheduler{summary, std::move(factory)}).second)
    throw std::logic_error("scheduler '" + name + "' is registered twice");
}

std::unique_ptr<Scheduler> make_scheduler(const std::string& name) {
  auto it = registry().find(name);
  if (it == registry().end()) {
    std::vector<std::string> known;
    for (const auto& [known_name, entry] : registry()) known.push_back(known_name);
    throw Error(ErrorCode::kUsage, fmt::format("unknown scheduler '{}' (known: {})", name, fmt::join(known, ", ")));
  }
  return it->second.factory();
}

std::vector<std::vector<NodeId>> Scheduler::profile_units(const Graph&, const Platform&) const { return {}; }

std::vector<std::vector<NodeId>> all_profile_units(const Graph& graph, const Platform& platform) {
  std::set<std::vector<NodeId>> seen;
  std::vector<std::vector<NodeId>> units;
  for (const auto& [name, entry] : registry())
    for (auto& unit : entry.factory()->profile_units(graph, platform))
      if (seen.insert(unit).second) units.push_back(std::move(unit));
  return units;
}

std::map<std::string, std::string> scheduler_names() {
  std::map<std::string, std::string> names;
  for (const auto& [name, entry] : registry()) names[name] = entry.summary;
  return names;
}

}  // namespace hetsched
