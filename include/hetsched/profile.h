// Profiling a model: timing every launch unit of a graph on the platform's
// real devices, as the backend runs them, into the profile database that
// cost models read (cost_model.h). What `hetsched profile` does and the
// Python binding's Session.profile() calls.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "hetsched/graph.h"
#include "hetsched/platform.h"

namespace hetsched {

struct ProfileOptions {
  int warmups = 3;
  int repeats = 10;
  bool force = false;  // re-measure what the database already holds
  // Other processes on the cores: a timed run during which the profiler's
  // threads waited for a core at least this share of their time (Linux's run
  // delay) is repeated, and an entry stored with such a share is measured
  // again by the next profile (ProfileReport::Device). 1 keeps every run
  // and every entry: for a machine that is never quiet.
  double max_wait = 0.05;
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
    // Timed runs (its passes and its co-run pass), and those during which
    // another process held its cores: its threads waited for a core for at
    // least ProfileOptions::max_wait of the time (Linux's run delay). Such a
    // run is repeated; where fewer than half the runs of a pass were quiet,
    // its times are stored with the load they were taken under
    // (`stored_under_load`; `waited`: the largest share stored, about 0 on a
    // quiet machine), and the next profile measures them again.
    int n_timed_runs = 0;
    int n_disturbed_runs = 0;
    double waited = 0;
    bool stored_under_load = false;
  };
  std::vector<Device> devices;
  // Hand-over costs stored, per ordered pair of CPU devices: fitted in
  // context (the graph's launches alternating between the two devices) or,
  // where too few of its launches cross, by a microbenchmark.
  int n_links_measured = 0;
  int n_links_in_context = 0;  // of them, fitted in context
  double seconds = 0;
};

// One line per device whose runs other processes disturbed: how many, how
// much its threads waited, and whether its times were stored as taken under
// load (then the next profile measures them again). Empty on a quiet
// machine. `only_stored_under_load`: just the devices whose times were
// stored as taken under load (what a session warns of: runs repeated until
// quiet left nothing to doubt).
std::vector<std::string> profile_load_warnings(const ProfileReport& report, bool only_stored_under_load = false);

// Marks the entries of `graph`'s launch units (those profile_model
// measures: fusion units, single nodes, every scheduler's units, co-run
// times) on `platform`'s device `device` stale in the database at `db_path`
// ("" = the default path): a run disagreed with them, and the next profile
// measures them again. Returns how many were marked.
int mark_profile_stale(const std::string& db_path, const Platform& platform, const std::string& device,
                       const Graph& graph);

// A real device's roofline parameters after calibration.
struct DeviceCalibration {
  std::string name;
  double peak_gflops = 0;
  double bandwidth_gbps = 0;
  double launch_overhead_us = 0;
  bool from_database = false;  // stored by an earlier run, not measured now
};

struct ModelProfile {
  std::string db_path;                    // the database written
  std::vector<std::string> warnings;      // the database's (a broken file moved aside and rebuilt)
  std::vector<DeviceCalibration> calibration;  // one per real device, in platform order
  double calibration_seconds = 0;
  ProfileReport report;                   // filled once the units are timed
};

// Opens the profile database at `db_path` ("" = the default path, see
// profile/profile_db.h), calibrates `platform`'s real devices (peaks read
// from the database, else measured and stored: they are written into
// `platform`), then times every launch unit any scheduler may ask about —
// the fusion units, each node alone, and every registered scheduler's
// profile_units() added to `options.extra_units` — on each real device, the
// co-run pass and the hand-over between devices (see profile/profiler.h).
// `calibrated`, when given, is called once the devices are calibrated and
// before anything is timed, with what is known so far (no report yet).
// Bad options are ErrorCode::kUsage; an unopenable database ErrorCode::kIo.
ModelProfile profile_model(const Graph& graph, Platform& platform, const std::string& db_path,
                           ProfileOptions options, const std::function<void(const ModelProfile&)>& calibrated = {});

}  // namespace hetsched
