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
// fits each pair of real CPU devices' hand-over cost (latency per value +
// bytes / bandwidth, what the simulator charges a reader) in context: the
// graph's fusion units alternating between the two devices, each launch
// that read the other device's values timed against its time alone; where
// the graph has too few such launches, from a microbenchmark of the
// reader's wake-up and remote read. Fitted again whenever either device is
// measured anew.
ProfileReport profile_graph(const Graph& graph, const Platform& platform, ProfileDB& db,
                            const ProfileOptions& options);

// A launch that read values another device wrote, as the hand-over pass
// times it.
struct HandoverPoint {
  double n_values = 0;  // values read from the other device
  double bytes = 0;     // their size
  double extra_us = 0;  // its time there minus its time alone
};

// The hand-over cost that explains `points`: extra = n_values x latency +
// bytes / bandwidth (what the simulator charges a reader per value handed
// over), least squares through the origin. Neither part is negative: where
// the joint fit makes one so, the one part alone that fits better is kept
// (no per-byte part: a bandwidth too high to matter).
LinkFit fit_handover(const std::vector<HandoverPoint>& points);

}  // namespace hetsched
