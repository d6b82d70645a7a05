// The scheduler registry: schedulers register themselves from their own
// files at static initialisation (HETSCHED_SCHEDULER).
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

std::map<std::string, std::string> scheduler_names() {
  std::map<std::string, std::string> names;
  for (const auto& [name, entry] : registry()) names[name] = entry.summary;
  return names;
}

}  // namespace hetsched
