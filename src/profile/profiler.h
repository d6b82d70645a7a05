// The profiler: measures every launch unit of a graph on every real device,
// as the backend really runs it, and stores the results in the ProfileDB.
// ProfileOptions and ProfileReport are public (hetsched/profile.h), with
// profile_model(), which opens the database and calibrates first.
#pragma once

#include "hetsched/graph.h"
#include "hetsched/platform.h"
#include "hetsched/profile.h"
#include "profile/profile_db.h"

namespace hetsched {

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
