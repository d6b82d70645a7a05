// Cost models: how long a launch takes on a device, how long a value takes to
// move between devices, and how much of shared resources a launch uses (so
// the simulator can slow down kernels that co-run).
//
// Every estimate says where it came from; `explain` and `simulate` count
// them by source, so a guess is never mistaken for a measurement.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hetsched/graph.h"
#include "hetsched/platform.h"

namespace hetsched {

class ProfileDB;

enum class CostSource {
  kMeasured,  // the ProfileDB holds a measurement of exactly this launch on this device
  kMeasuredSum,  // sum of measurements of the launch's parts (a group never run as one)
  // From the device's peaks: a launch's kernels (fusion groups, and
  // same-input convolutions IOS merges into one) run one after another, each
  // its launch overhead + max(its FLOPs / peak, its bytes / bandwidth). The
  // values between them go through memory unless the device's on-chip
  // memory holds them all: a real core group's caches then keep them; an
  // emulated accelerator runs the launch as one kernel (one overhead, one
  // max over all its nodes).
  kRoofline,
  kLink,      // a link's latency + bytes / bandwidth
  kFree,      // nothing to do (no bytes to move, a value already there)
};
const char* cost_source_name(CostSource source);  // "measured", "measured-sum", "roofline", "link", "free"

struct Estimate {
  double us = 0;
  CostSource source = CostSource::kRoofline;
};

// A launch's use of shared resources while it runs alone, as fractions:
// `compute` of its device's peak FLOP/s, `memory` of its device's bandwidth.
// Two launches on one device's streams share its compute; launches on devices
// naming the same SharedResource share that resource's bandwidth.
struct ResourceDemand {
  double compute = 0;
  double memory = 0;
};

class CostModel {
 public:
  virtual ~CostModel() = default;
  // `nodes` run as one launch on `device`, alone on the machine. Nodes the
  // device does not support give +infinity.
  virtual Estimate launch(const Graph& graph, const std::vector<NodeId>& nodes,
                          const PlatformDevice& device) const = 0;
  // Handing `bytes` from a launch on `from` to a launch on `to`: between
  // memory spaces, the link's latency + bytes / bandwidth (+infinity without
  // a link); within one space, the hand-over cost between two devices
  // (measured for CPU core groups, else free); nothing on one device.
  virtual Estimate transfer(double bytes, const PlatformDevice& from, const PlatformDevice& to) const = 0;
  // Demand of a launch that takes `us` alone (from launch()); from the
  // nodes' FLOPs and bytes against the device's peaks.
  virtual ResourceDemand demand(const Graph& graph, const std::vector<NodeId>& nodes, const PlatformDevice& device,
                                double us) const;
  // How long `nodes` take as one launch on `device` while the other devices
  // naming its SharedResource are busy too (the profiler's co-run pass:
  // every such device running the graph at once). The simulator slows a
  // launch that overlaps another device's by this over launch(), at least,
  // where the fluid model from demand() predicts less. nullopt when not
  // measured (the default; the combined model reads the ProfileDB's
  // op_signature + "|corun" entry for the device).
  virtual std::optional<double> corun_us(const Graph& graph, const std::vector<NodeId>& nodes,
                                         const PlatformDevice& device) const;
};

// Memory traffic of `nodes` run as one launch: values it reads from outside
// (weights included) and values it leaves for readers outside. Values passed
// between its own nodes stay in the kernel (registers, caches) and are not
// counted.
double launch_bytes(const Graph& graph, const std::vector<NodeId>& nodes);

// Roofline only: needs every device's peaks (see calibrate.h for real ones).
std::unique_ptr<CostModel> make_roofline_cost_model(const Platform& platform);
// Measurements from `db` where there are some, the roofline elsewhere: the
// measured one wins. Transfers use measured links where stored.
std::unique_ptr<CostModel> make_combined_cost_model(const Platform& platform, std::shared_ptr<const ProfileDB> db);

// Remembers every launch(), corun_us() and demand() answer of `inner`
// (which must outlive it), for searches that ask about the same launches
// thousands of times (auto's local search). Not safe to share between
// threads.
std::unique_ptr<CostModel> make_memoizing_cost_model(const CostModel& inner);

// The cost model commands and sessions use: opens the profile database at
// `db_path` ("" = the default path), calibrates the platform's real devices
// (peaks measured once, then read from the database) and returns the
// combined model. The database's warnings (a broken file rebuilt) are
// appended to `warnings`.
std::shared_ptr<const CostModel> open_cost_model(Platform& platform, const std::string& db_path,
                                                 std::vector<std::string>* warnings);

}  // namespace hetsched
