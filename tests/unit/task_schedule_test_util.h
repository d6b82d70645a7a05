// Checking schedules of abstract task graphs (sched/list_scheduling.h) in tests.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "sched/list_scheduling.h"

namespace hetsched::testing {

// Every task once on a processor that runs it, for its cost (plus, when the
// receiver pays, its inputs' communication from other processors), after
// its predecessors finished (plus the communication when it is a delay),
// never overlapping another task on its processor; `order` is topological
// (and by start when `order_by_start`: HEFT's is its scheduling order);
// makespan is the last finish.
inline void expect_valid_schedule(const TaskGraph& g, const TaskSchedule& s, bool order_by_start) {
  constexpr double kEps = 1e-9;
  ASSERT_EQ(static_cast<int>(s.proc.size()), g.n_tasks);
  ASSERT_EQ(static_cast<int>(s.start.size()), g.n_tasks);
  ASSERT_EQ(static_cast<int>(s.finish.size()), g.n_tasks);
  ASSERT_EQ(static_cast<int>(s.order.size()), g.n_tasks);
  std::vector<int> position(g.n_tasks, -1);
  for (int i = 0; i < g.n_tasks; ++i) {
    ASSERT_GE(s.order[i], 0);
    ASSERT_LT(s.order[i], g.n_tasks);
    ASSERT_EQ(position[s.order[i]], -1) << "task " << s.order[i] << " ordered twice";
    position[s.order[i]] = i;
    if (order_by_start && i > 0) {
      EXPECT_LE(s.start[s.order[i - 1]], s.start[s.order[i]]) << "order is not by start";
    }
  }
  double last_finish = 0;
  for (int t = 0; t < g.n_tasks; ++t) {
    ASSERT_GE(s.proc[t], 0);
    ASSERT_LT(s.proc[t], g.n_procs);
    ASSERT_TRUE(std::isfinite(g.cost[t][s.proc[t]])) << "task " << t << " on a processor that cannot run it";
    EXPECT_GE(s.start[t], 0);
    last_finish = std::max(last_finish, s.finish[t]);
    double duration = g.cost[t][s.proc[t]];
    for (int m = 0; m < g.n_tasks; ++m)
      for (auto [succ, comm] : g.succ[m]) {
        if (succ != t) continue;
        double crossing = s.proc[m] == s.proc[t] ? 0 : comm;
        EXPECT_LT(position[m], position[t]) << "order not topological: " << m << " -> " << t;
        if (g.receiver_pays_communication) {
          duration += crossing;
          crossing = 0;
        }
        EXPECT_GE(s.start[t] + kEps, s.finish[m] + crossing) << "task " << t << " starts before the data of " << m;
      }
    EXPECT_NEAR(s.finish[t] - s.start[t], duration, kEps) << "task " << t;
  }
  EXPECT_NEAR(s.makespan, last_finish, kEps);
  for (int p = 0; p < g.n_procs; ++p) {
    std::vector<int> on_p;
    for (int t = 0; t < g.n_tasks; ++t)
      if (s.proc[t] == p) on_p.push_back(t);
    std::sort(on_p.begin(), on_p.end(), [&](int a, int b) { return s.start[a] < s.start[b]; });
    for (size_t i = 1; i < on_p.size(); ++i)
      EXPECT_LE(s.finish[on_p[i - 1]], s.start[on_p[i]] + kEps)
          << "tasks " << on_p[i - 1] << " and " << on_p[i] << " overlap on processor " << p;
  }
}

}  // namespace hetsched::testing
