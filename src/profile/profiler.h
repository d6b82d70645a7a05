// The profiler: measures every launch unit of a graph on every real device,
// as the backend really runs it, and stores the results in the ProfileDB.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "hetsched/graph.h"
#include "hetsched/platform.h"
#include "profile/profile_db.h"

namespace hetsched {

struct ProfileOptions {
  int warmups = 3;
  int repeats = 10;
  bool force = false;  // re-measure what the database already holds
  // Extra launch units to measure (e.g. subgraphs a partitioner proposes).
  std::vector<std::vector<NodeId>> extra_units;
  // Called as work proceeds (done, total, what); the CLI draws a bar with ETA.
  std::function<void(int, int, const std::string&)> progress;
};

struct ProfileReport {
  struct Device {
    std::string name;
    int n_measured = 0;  // units timed now
    int n_reused = 0;    // units already in the database
    int n_corun_measured = 0;  // fusion units' co-run times measured now
    int n_corun_reused = 0;    // fusion units' co-run times already in the database
    bool skipped = false;  // emulated: its costs come from the platform file
    double seconds = 0;    // time spent measuring it
  };
  std::vector<Device> devices;
  int n_links_measured = 0;
  double seconds = 0;
};

// For each real device: runs the graph sequentially on it with each fusion
// unit (plan_builder.h) as one launch, then with each node alone, then each
// extra unit, timing every launch in context (warm-ups, then repeats;
// median and spread), and stores what the database lacks (or everything
// with `force`). Then, for each shared resource named by two or more real
// CPU devices, runs the fusion-unit pass on all of them at once (one
// executor each, every run started together) and stores each unit's median
// under co-run as op_signature + "|corun" under each device's signature,
// where missing (or all with `force`); CostModel::corun_us reads it. Then
// fits each pair of real devices' hand-over cost
// (latency + bytes / bandwidth from several sizes): the reader's wake-up
// after the writer's signal plus reading the bytes from the writer's caches.
ProfileReport profile_graph(const Graph& graph, const Platform& platform, ProfileDB& db,
                            const ProfileOptions& options);

}  // namespace hetsched
