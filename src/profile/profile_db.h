// The profile database: measured launch times per (device, op signature),
// device peaks and link fits, in one SQLite file.
//
// Contract:
//   - Default location: $XDG_CACHE_HOME/hetsched/profile.db, else
//     $HOME/.cache/hetsched/profile.db (folders created as needed).
//   - Keys: the device signature (PlatformDevice::signature: CPU model, core
//     set, library versions; GPU name and driver) and the op signature
//     (op_signature(): op types, input shapes and dtypes, attributes and the
//     fusion structure of a launch).
//   - Several processes may read and write one file at once: SQLite's
//     locking with a busy timeout and one transaction per batch.
//   - A file that is not a hetsched profile database (foreign, corrupt, or of
//     another schema version) is moved aside and rebuilt, with a warning
//     (warnings()).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hetsched/graph.h"

struct sqlite3;

namespace hetsched {

// One profiled launch: its time and how far it can be trusted. (Named apart
// from hetsched::Measurement in compare.h, a plan's measured run times.)
struct ProfiledTime {
  double median_us = 0;
  double spread_us = 0;  // (p90 - p10) / 2 of the repeats
  int n_repeats = 0;
  // The load it was taken under: the median share of their cores' time the
  // profiler's threads waited for a core in the runs kept (interference.h;
  // 0 on a quiet machine). At ProfileOptions::max_wait or more the next profile measures
  // it again.
  double waited = 0;
  // A measured run disagreed with predictions from it (compare, demo): the
  // next profile measures it again.
  bool stale = false;
};

struct DevicePeaks {
  double peak_gflops = 0;
  double bandwidth_gbps = 0;
  double launch_overhead_us = 0;
};

struct LinkFit {  // latency + bytes / bandwidth, fitted from several sizes
  double latency_us = 0;
  double bandwidth_gbps = 0;
};

// A plan chosen by measurement (choose.h), kept so that a later session of
// the same graph on the same devices with the same options runs it without
// measuring again.
struct StoredChoice {
  std::string plan;         // plan_to_json() of the winner
  std::string reason;       // MeasuredChoice::reason when it was measured
  std::string measured_at;  // UTC, "2026-11-28T18:04:11Z"
  double measured_ms = 0;   // the winner's median run when measured; 0: not known (an older entry)
};

class ProfileDB {
 public:
  static std::string default_path();
  // Opens (creating when absent) the database at `path`; ErrorCode::kIo when
  // it can be neither opened nor created.
  explicit ProfileDB(const std::string& path);
  ~ProfileDB();
  ProfileDB(const ProfileDB&) = delete;
  ProfileDB& operator=(const ProfileDB&) = delete;

  const std::string& path() const { return path_; }
  const std::vector<std::string>& warnings() const { return warnings_; }

  std::optional<ProfiledTime> find(const std::string& device_signature, const std::string& op_signature) const;
  struct Entry {
    std::string op_signature;
    std::string description;  // e.g. "Conv+Relu f32[1,64,56,56]"
    ProfiledTime measurement;
  };
  // Inserts or replaces, in one transaction.
  void put(const std::string& device_signature, const std::vector<Entry>& entries);
  int count(const std::string& device_signature) const;
  // Marks these entries of the device stale (ProfiledTime::stale); returns
  // how many there were.
  int mark_stale(const std::string& device_signature, const std::vector<std::string>& op_signatures);

  std::optional<DevicePeaks> peaks(const std::string& device_signature) const;
  void put_peaks(const std::string& device_signature, const DevicePeaks& peaks);
  // Choices by key (the session's choice_key); absent: none kept. A choice
  // put is stamped as measured now.
  std::optional<StoredChoice> choice(const std::string& key) const;
  void put_choice(const std::string& key, const std::string& plan, const std::string& reason, double measured_ms);
  // Forgets the choice kept under `key` (runs disagreed with it); the next
  // session measures again.
  void delete_choice(const std::string& key);

  std::optional<LinkFit> link(const std::string& from_signature, const std::string& to_signature) const;
  void put_link(const std::string& from_signature, const std::string& to_signature, const LinkFit& fit);

 private:
  std::string path_;
  sqlite3* db_ = nullptr;
  std::vector<std::string> warnings_;
};

// Signature of `nodes` run as one launch (16 hex digits, FNV-1a 64 of a
// canonical text: each node's domain, op type and attributes sorted by name
// with their full values; each input as an output of an earlier node of the
// launch, or as an external dtype+shape marked constant (weights, whose
// values are left out) or not; each output's dtype+shape). Value and node
// names are left out, so identical launches of different graphs match.
std::string op_signature(const Graph& graph, const std::vector<NodeId>& nodes);
// "Conv+Relu f32[1,64,56,56]": op types and the first input.
std::string launch_description(const Graph& graph, const std::vector<NodeId>& nodes);

}  // namespace hetsched
