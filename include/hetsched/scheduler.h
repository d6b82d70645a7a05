// Schedulers: a graph, a platform and a cost model in, a Plan out.
//
// Each algorithm lives in its own file under src/sched/ and registers itself
// by name with HETSCHED_SCHEDULER; there is no central list. Schedulers
// return data and never run anything; the plan they return must pass
// validate_plan(). Every node's Placement carries the reason it went there.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "hetsched/cost_model.h"
#include "hetsched/plan.h"

namespace hetsched {

struct ScheduleOptions {
  uint64_t seed = 0;                          // for randomised schedulers
  std::map<std::string, std::string> params;  // scheduler-specific, e.g. {"device", "cpu:1"}
};

class Scheduler {
 public:
  virtual ~Scheduler() = default;
  virtual Plan schedule(const Graph& graph, const Platform& platform, const CostModel& cost,
                        const ScheduleOptions& options) const = 0;
  // Launch units beyond the fusion units that this scheduler will ask the
  // cost model about (e.g. DUET's coarse subgraphs), so that `hetsched
  // profile` measures each as the backend runs it as one launch. Default: none.
  virtual std::vector<std::vector<NodeId>> profile_units(const Graph& graph, const Platform& platform) const;
};

using SchedulerFactory = std::function<std::unique_ptr<Scheduler>()>;
void register_scheduler(const std::string& name, const std::string& summary, SchedulerFactory factory);
// An unknown name is ErrorCode::kUsage listing the known ones.
std::unique_ptr<Scheduler> make_scheduler(const std::string& name);
// name -> one-line summary, sorted by name.
std::map<std::string, std::string> scheduler_names();
// Every registered scheduler's profile_units(), without repeats: what a
// profile must measure for any scheduler to find its units measured.
std::vector<std::vector<NodeId>> all_profile_units(const Graph& graph, const Platform& platform);

struct SchedulerRegistrar {
  SchedulerRegistrar(const char* name, const char* summary, SchedulerFactory factory) {
    register_scheduler(name, summary, std::move(factory));
  }
};

}  // namespace hetsched

#define HETSCHED_SCHEDULER(NAME, SUMMARY, CLASS)                                                     \
  static ::hetsched::SchedulerRegistrar HETSCHED_SCHED_CONCAT(hetsched_scheduler_, __LINE__)(         \
      NAME, SUMMARY, [] { return std::unique_ptr<::hetsched::Scheduler>(new CLASS()); })
#define HETSCHED_SCHED_CONCAT_INNER(a, b) a##b
#define HETSCHED_SCHED_CONCAT(a, b) HETSCHED_SCHED_CONCAT_INNER(a, b)
