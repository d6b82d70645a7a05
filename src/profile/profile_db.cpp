#include "profile/profile_db.h"

#include <pwd.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <functional>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "hetsched/error.h"

namespace hetsched {

namespace fs = std::filesystem;

namespace {

constexpr const char* kFormat = "hetsched-profile-db";
constexpr int kSchemaVersion = 1;
// Long enough for another process's batch to commit, short enough that a
// wedged writer is reported instead of hanging the command.
constexpr int kBusyTimeoutMs = 10000;

constexpr const char* kSchema = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE launches(
  device_signature TEXT NOT NULL,
  op_signature TEXT NOT NULL,
  description TEXT NOT NULL,
  median_us REAL NOT NULL,
  spread_us REAL NOT NULL,
  n_repeats INTEGER NOT NULL,
  measured_at TEXT NOT NULL,
  waited REAL NOT NULL DEFAULT 0,
  stale INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY(device_signature, op_signature));
CREATE TABLE peaks(
  device_signature TEXT PRIMARY KEY,
  peak_gflops REAL NOT NULL,
  bandwidth_gbps REAL NOT NULL,
  launch_overhead_us REAL NOT NULL,
  measured_at TEXT NOT NULL);
CREATE TABLE links(
  from_signature TEXT NOT NULL,
  to_signature TEXT NOT NULL,
  latency_us REAL NOT NULL,
  bandwidth_gbps REAL NOT NULL,
  measured_at TEXT NOT NULL,
  PRIMARY KEY(from_signature, to_signature));
)sql";

// Choices kept for later sessions (ProfileDB::choice). Added to a database of
// any age when opened, like the load columns (add_later_columns_and_tables):
// a build without it still reads and writes the other tables.
constexpr const char* kChoicesTable = R"sql(
CREATE TABLE IF NOT EXISTS choices(
  key TEXT PRIMARY KEY,
  plan TEXT NOT NULL,
  reason TEXT NOT NULL,
  measured_at TEXT NOT NULL,
  measured_ms REAL NOT NULL DEFAULT 0);
)sql";

const char* const kTables[] = {"meta", "launches", "peaks", "links"};

// The file is not a usable profile database: the constructor moves it aside.
struct NotAProfileDb {
  std::string reason;
};

// Which file a path names, so that a file another process has already
// replaced with a fresh database is not moved aside in its turn.
struct FileIdentity {
  dev_t device = 0;
  ino_t inode = 0;
  bool exists = false;
  bool operator==(const FileIdentity&) const = default;
};

FileIdentity identity_of(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return {};
  return {st.st_dev, st.st_ino, true};
}

// SQLite result codes that say the file cannot be reached at all (renaming it
// would not help), as opposed to a file whose content is wrong.
bool is_access_error(int code) {
  switch (code & 0xff) {
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_READONLY:
    case SQLITE_IOERR:
    case SQLITE_FULL:
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return true;
    default:
      return false;
  }
}

std::string utc_now(const char* format) {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof(text), format, &tm);
  return text;
}

class Statement {
 public:
  Statement(sqlite3* db, const std::string& sql, const std::string& path) : db_(db), path_(path) {
    int rc = sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt_, nullptr);
    if (rc != SQLITE_OK) fail(rc, "prepare");
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int index, const std::string& text) {
    sqlite3_bind_text(stmt_, index, text.c_str(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Statement& bind(int index, double value) {
    sqlite3_bind_double(stmt_, index, value);
    return *this;
  }
  Statement& bind(int index, int value) {
    sqlite3_bind_int(stmt_, index, value);
    return *this;
  }
  // True while there is a row to read.
  bool step() {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    fail(rc, "step");
  }
  void reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  double real(int column) const { return sqlite3_column_double(stmt_, column); }
  int integer(int column) const { return sqlite3_column_int(stmt_, column); }
  std::string text(int column) const {
    const unsigned char* t = sqlite3_column_text(stmt_, column);
    return t ? reinterpret_cast<const char*>(t) : "";
  }

 private:
  [[noreturn]] void fail(int rc, const char* what) {
    if (is_access_error(rc))
      throw Error(ErrorCode::kIo, fmt::format("{}: profile database: {}", path_, sqlite3_errmsg(db_)));
    throw NotAProfileDb{sqlite3_errmsg(db_)};
  }

  sqlite3* db_;
  const std::string& path_;
  sqlite3_stmt* stmt_ = nullptr;
};

void exec(sqlite3* db, const std::string& sql, const std::string& path) {
  char* message = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message);
  if (rc == SQLITE_OK) return;
  std::string text = message ? message : sqlite3_errstr(rc);
  sqlite3_free(message);
  if (is_access_error(rc)) throw Error(ErrorCode::kIo, fmt::format("{}: profile database: {}", path, text));
  throw NotAProfileDb{text};
}

// Runs `body` inside one IMMEDIATE transaction: the write lock is taken up
// front, so concurrent writers queue on the busy timeout instead of failing
// with a deadlock when both upgrade a read lock.
void in_write_transaction(sqlite3* db, const std::string& path, const std::function<void()>& body) {
  exec(db, "BEGIN IMMEDIATE", path);
  try {
    body();
    exec(db, "COMMIT", path);
  } catch (...) {
    sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

// Read-only checks before anything is written to the file: a foreign
// database must not be converted to WAL or given our tables.
void check_existing_content(sqlite3* db, const std::string& path) {
  {
    Statement check(db, "PRAGMA integrity_check", path);
    std::string verdict = check.step() ? check.text(0) : "no answer";
    if (verdict != "ok") throw NotAProfileDb{"integrity check: " + verdict};
  }
  std::set<std::string> tables;
  {
    Statement list(db, "SELECT name FROM sqlite_master WHERE type = 'table'", path);
    while (list.step()) tables.insert(list.text(0));
  }
  if (tables.empty()) return;  // new, or being created by another process right now
  if (!tables.count("meta")) throw NotAProfileDb{"no meta table"};
  std::string format, version;
  {
    Statement meta(db, "SELECT key, value FROM meta", path);
    while (meta.step()) {
      if (meta.text(0) == "format") format = meta.text(1);
      if (meta.text(0) == "schema_version") version = meta.text(1);
    }
  }
  if (format != kFormat) throw NotAProfileDb{fmt::format("format '{}', expected '{}'", format, kFormat)};
  if (version != std::to_string(kSchemaVersion))
    throw NotAProfileDb{fmt::format("schema version '{}', expected '{}'", version, kSchemaVersion)};
  for (const char* table : kTables)
    if (!tables.count(table)) throw NotAProfileDb{fmt::format("table '{}' missing", table)};
}

// A database written before entries kept their load gets the columns, with
// the defaults of a quiet, current entry (additive: a build without them
// still reads and writes the table), and one written before choices were
// kept the table for them.
std::set<std::string> table_columns(sqlite3* db, const std::string& table, const std::string& path) {
  std::set<std::string> columns;
  Statement info(db, "PRAGMA table_info(" + table + ")", path);
  while (info.step()) columns.insert(info.text(1));
  return columns;
}

void add_later_columns_and_tables(sqlite3* db, const std::string& path) {
  in_write_transaction(db, path, [&] {
    std::set<std::string> columns = table_columns(db, "launches", path);
    if (!columns.count("waited")) exec(db, "ALTER TABLE launches ADD COLUMN waited REAL NOT NULL DEFAULT 0", path);
    if (!columns.count("stale")) exec(db, "ALTER TABLE launches ADD COLUMN stale INTEGER NOT NULL DEFAULT 0", path);
    exec(db, kChoicesTable, path);
    if (!table_columns(db, "choices", path).count("measured_ms"))
      exec(db, "ALTER TABLE choices ADD COLUMN measured_ms REAL NOT NULL DEFAULT 0", path);
  });
}

// Switching to WAL takes an exclusive lock, and SQLite answers SQLITE_BUSY at
// once, without the busy handler, when another process holds a lock at that
// moment (one creating the file, say). So wait here, up to the busy timeout.
void switch_to_wal(sqlite3* db, const std::string& path) {
  const char* kWal = "PRAGMA journal_mode=WAL";
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyTimeoutMs);
  while ((sqlite3_exec(db, kWal, nullptr, nullptr, nullptr) & 0xff) == SQLITE_BUSY &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  exec(db, kWal, path);  // reports what is still wrong, if anything
}

void create_schema_if_empty(sqlite3* db, const std::string& path) {
  in_write_transaction(db, path, [&] {
    int n_tables = 0;
    {
      Statement count(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table'", path);
      if (count.step()) n_tables = count.integer(0);
    }
    if (n_tables > 0) return;  // another process created it first
    exec(db, kSchema, path);
    Statement meta(db, "INSERT INTO meta(key, value) VALUES (?1, ?2)", path);
    meta.bind(1, std::string("format")).bind(2, std::string(kFormat)).step();
    meta.reset();
    meta.bind(1, std::string("schema_version")).bind(2, std::to_string(kSchemaVersion)).step();
    meta.reset();
    meta.bind(1, std::string("created_at")).bind(2, utc_now("%Y-%m-%dT%H:%M:%SZ")).step();
  });
}

sqlite3* open_checked(const std::string& path) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                           nullptr);
  if (rc != SQLITE_OK) {
    std::string message = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    if (is_access_error(rc))
      throw Error(ErrorCode::kIo, fmt::format("{}: cannot open or create the profile database: {}", path, message));
    throw NotAProfileDb{message};
  }
  try {
    sqlite3_busy_timeout(db, kBusyTimeoutMs);
    check_existing_content(db, path);
    switch_to_wal(db, path);
    create_schema_if_empty(db, path);
    check_existing_content(db, path);
    add_later_columns_and_tables(db, path);
  } catch (...) {
    sqlite3_close(db);
    throw;
  }
  return db;
}

// Moves PATH (and its -wal/-shm companions) to PATH.broken-<time>; returns
// the new name. Another process may have moved it already: then nothing is
// left to move, which is fine.
std::string move_aside(const std::string& path) {
  std::string stamp = utc_now("%Y%m%dT%H%M%SZ");
  std::string target = fmt::format("{}.broken-{}", path, stamp);
  for (int n = 2; fs::exists(target); ++n) target = fmt::format("{}.broken-{}-{}", path, stamp, n);
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    std::error_code ec;
    fs::rename(path + suffix, target + suffix, ec);
    if (ec && fs::exists(path + suffix))
      throw Error(ErrorCode::kIo,
                  fmt::format("{}{}: cannot move the broken profile database aside: {}", path, suffix, ec.message()));
  }
  return target;
}

std::string dtype_short_name(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return "f32";
    case DType::kFloat64: return "f64";
    case DType::kFloat16: return "f16";
    case DType::kInt8: return "i8";
    case DType::kUInt8: return "u8";
    case DType::kInt16: return "i16";
    case DType::kInt32: return "i32";
    case DType::kInt64: return "i64";
    case DType::kBool: return "bool";
    case DType::kBFloat16: return "bf16";
    case DType::kUInt16: return "u16";
    case DType::kUInt32: return "u32";
    case DType::kUInt64: return "u64";
    case DType::kUndefined: break;
  }
  return "?";
}

std::string value_type(const Value& value) {
  if (!value.has_shape) return dtype_short_name(value.dtype) + "[*]";
  std::string dims;
  for (size_t i = 0; i < value.shape.size(); ++i)
    dims += fmt::format("{}{}", i ? "," : "", value.shape[i] < 0 ? std::string("?") : std::to_string(value.shape[i]));
  return fmt::format("{}[{}]", dtype_short_name(value.dtype), dims);
}

uint64_t fnv1a64(const std::string& text, uint64_t hash = 0xcbf29ce484222325ULL) {
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

// Floats as their exact bit patterns: two attributes differing in the last
// bit are different kernels' inputs.
std::string exact_float(float f) { return fmt::format("{:a}", f); }

std::string attribute_text(const Attribute& a) {
  std::string out;
  switch (a.kind) {
    case Attribute::Kind::kInt: return fmt::format("i:{}", a.i);
    case Attribute::Kind::kFloat: return "f:" + exact_float(a.f);
    case Attribute::Kind::kString: return fmt::format("s:{}:{}", a.s.size(), a.s);
    case Attribute::Kind::kInts: return fmt::format("ints:[{}]", fmt::join(a.ints, ","));
    case Attribute::Kind::kFloats:
      out = "floats:[";
      for (size_t i = 0; i < a.floats.size(); ++i) out += (i ? "," : "") + exact_float(a.floats[i]);
      return out + "]";
    case Attribute::Kind::kStrings:
      out = "strings:[";
      for (const auto& s : a.strings) out += fmt::format("{}:{},", s.size(), s);
      return out + "]";
    case Attribute::Kind::kTensor:
      if (!a.t.defined()) return "tensor:undefined";
      return fmt::format("tensor:{}[{}]:{:016x}", dtype_name(a.t.dtype()), shape_to_string(a.t.shape()),
                         fnv1a64(std::string(static_cast<const char*>(a.t.raw()), a.t.nbytes())));
    case Attribute::Kind::kGraph: return "graph";
  }
  return "?";
}

}  // namespace

std::string ProfileDB::default_path() {
  fs::path base;
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && *xdg) {
    base = xdg;
  } else {
    const char* home = std::getenv("HOME");
    if (!home || !*home) {
      const passwd* pw = getpwuid(getuid());
      home = pw ? pw->pw_dir : nullptr;
    }
    if (!home || !*home)
      throw Error(ErrorCode::kIo, "profile database: neither XDG_CACHE_HOME nor HOME is set; give a database path");
    base = fs::path(home) / ".cache";
  }
  fs::path dir = base / "hetsched";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error(ErrorCode::kIo, fmt::format("{}: cannot create the folder: {}", dir.string(), ec.message()));
  return (dir / "profile.db").string();
}

ProfileDB::ProfileDB(const std::string& path) : path_(path) {
  fs::path parent = fs::path(path).parent_path();
  if (!parent.empty()) {
    std::error_code ec;
    fs::create_directories(parent, ec);
    if (ec) throw Error(ErrorCode::kIo, fmt::format("{}: cannot create the folder: {}", parent.string(), ec.message()));
  }
  // Two attempts: a second process may swap in a fresh file between our
  // move and our reopen; if even that one is unusable, give up.
  for (int attempt = 0;; ++attempt) {
    FileIdentity opened = identity_of(path_);
    try {
      db_ = open_checked(path_);
      return;
    } catch (const NotAProfileDb& broken) {
      if (attempt >= 2)
        throw Error(ErrorCode::kIo, fmt::format("{}: cannot create a profile database: {}", path_, broken.reason));
      if (opened.exists && identity_of(path_) != opened) continue;  // replaced meanwhile: look again
      std::string moved_to = move_aside(path_);
      warnings_.push_back(fmt::format("{}: not a hetsched profile database ({}); moved to {}; starting a new one",
                                      path_, broken.reason, moved_to));
    }
  }
}

ProfileDB::~ProfileDB() { sqlite3_close(db_); }

namespace {

// Errors after the file was accepted are I/O problems (disk full, file
// replaced underneath, lock held too long), never a reason to move it.
template <typename Fn>
auto guarded(const std::string& path, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const NotAProfileDb& e) {
    throw Error(ErrorCode::kIo, fmt::format("{}: profile database: {}", path, e.reason));
  }
}

}  // namespace

std::optional<ProfiledTime> ProfileDB::find(const std::string& device_signature,
                                           const std::string& op_signature) const {
  return guarded(path_, [&]() -> std::optional<ProfiledTime> {
    Statement q(db_,
                "SELECT median_us, spread_us, n_repeats, waited, stale FROM launches WHERE device_signature = ?1 "
                "AND op_signature = ?2",
                path_);
    q.bind(1, device_signature).bind(2, op_signature);
    if (!q.step()) return std::nullopt;
    return ProfiledTime{q.real(0), q.real(1), q.integer(2), q.real(3), q.integer(4) != 0};
  });
}

void ProfileDB::put(const std::string& device_signature, const std::vector<Entry>& entries) {
  guarded(path_, [&] {
    in_write_transaction(db_, path_, [&] {
      Statement insert(db_,
                       "INSERT OR REPLACE INTO launches(device_signature, op_signature, description, median_us, "
                       "spread_us, n_repeats, measured_at, waited, stale) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 0)",
                       path_);
      std::string now = utc_now("%Y-%m-%dT%H:%M:%SZ");
      for (const Entry& e : entries) {
        insert.bind(1, device_signature)
            .bind(2, e.op_signature)
            .bind(3, e.description)
            .bind(4, e.measurement.median_us)
            .bind(5, e.measurement.spread_us)
            .bind(6, e.measurement.n_repeats)
            .bind(7, now)
            .bind(8, e.measurement.waited);
        insert.step();
        insert.reset();
      }
    });
  });
}

int ProfileDB::mark_stale(const std::string& device_signature, const std::vector<std::string>& op_signatures) {
  return guarded(path_, [&] {
    int n = 0;
    in_write_transaction(db_, path_, [&] {
      Statement update(db_, "UPDATE launches SET stale = 1 WHERE device_signature = ?1 AND op_signature = ?2", path_);
      for (const std::string& sig : op_signatures) {
        update.bind(1, device_signature).bind(2, sig);
        update.step();
        n += sqlite3_changes(db_);
        update.reset();
      }
    });
    return n;
  });
}

int ProfileDB::count(const std::string& device_signature) const {
  return guarded(path_, [&] {
    Statement q(db_, "SELECT count(*) FROM launches WHERE device_signature = ?1", path_);
    q.bind(1, device_signature);
    return q.step() ? q.integer(0) : 0;
  });
}

std::optional<DevicePeaks> ProfileDB::peaks(const std::string& device_signature) const {
  return guarded(path_, [&]() -> std::optional<DevicePeaks> {
    Statement q(db_,
                "SELECT peak_gflops, bandwidth_gbps, launch_overhead_us FROM peaks WHERE device_signature = ?1",
                path_);
    q.bind(1, device_signature);
    if (!q.step()) return std::nullopt;
    return DevicePeaks{q.real(0), q.real(1), q.real(2)};
  });
}

void ProfileDB::put_peaks(const std::string& device_signature, const DevicePeaks& peaks) {
  guarded(path_, [&] {
    in_write_transaction(db_, path_, [&] {
      Statement insert(db_,
                       "INSERT OR REPLACE INTO peaks(device_signature, peak_gflops, bandwidth_gbps, "
                       "launch_overhead_us, measured_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                       path_);
      insert.bind(1, device_signature)
          .bind(2, peaks.peak_gflops)
          .bind(3, peaks.bandwidth_gbps)
          .bind(4, peaks.launch_overhead_us)
          .bind(5, utc_now("%Y-%m-%dT%H:%M:%SZ"));
      insert.step();
    });
  });
}

std::optional<StoredChoice> ProfileDB::choice(const std::string& key) const {
  return guarded(path_, [&]() -> std::optional<StoredChoice> {
    Statement q(db_, "SELECT plan, reason, measured_at, measured_ms FROM choices WHERE key = ?1", path_);
    q.bind(1, key);
    if (!q.step()) return std::nullopt;
    return StoredChoice{q.text(0), q.text(1), q.text(2), q.real(3)};
  });
}

void ProfileDB::put_choice(const std::string& key, const std::string& plan, const std::string& reason,
                           double measured_ms) {
  guarded(path_, [&] {
    in_write_transaction(db_, path_, [&] {
      Statement insert(db_,
                       "INSERT OR REPLACE INTO choices(key, plan, reason, measured_at, measured_ms) "
                       "VALUES (?1, ?2, ?3, ?4, ?5)",
                       path_);
      insert.bind(1, key).bind(2, plan).bind(3, reason).bind(4, utc_now("%Y-%m-%dT%H:%M:%SZ")).bind(5, measured_ms);
      insert.step();
    });
  });
}

void ProfileDB::delete_choice(const std::string& key) {
  guarded(path_, [&] {
    in_write_transaction(db_, path_, [&] {
      Statement remove(db_, "DELETE FROM choices WHERE key = ?1", path_);
      remove.bind(1, key);
      remove.step();
    });
  });
}

std::optional<LinkFit> ProfileDB::link(const std::string& from_signature, const std::string& to_signature) const {
  return guarded(path_, [&]() -> std::optional<LinkFit> {
    Statement q(db_, "SELECT latency_us, bandwidth_gbps FROM links WHERE from_signature = ?1 AND to_signature = ?2",
                path_);
    q.bind(1, from_signature).bind(2, to_signature);
    if (!q.step()) return std::nullopt;
    return LinkFit{q.real(0), q.real(1)};
  });
}

void ProfileDB::put_link(const std::string& from_signature, const std::string& to_signature, const LinkFit& fit) {
  guarded(path_, [&] {
    in_write_transaction(db_, path_, [&] {
      Statement insert(db_,
                       "INSERT OR REPLACE INTO links(from_signature, to_signature, latency_us, bandwidth_gbps, "
                       "measured_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                       path_);
      insert.bind(1, from_signature)
          .bind(2, to_signature)
          .bind(3, fit.latency_us)
          .bind(4, fit.bandwidth_gbps)
          .bind(5, utc_now("%Y-%m-%dT%H:%M:%SZ"));
      insert.step();
    });
  });
}

std::string op_signature(const Graph& graph, const std::vector<NodeId>& nodes) {
  std::string text;
  for (size_t k = 0; k < nodes.size(); ++k) {
    const Node& node = graph.nodes.at(static_cast<size_t>(nodes[k]));
    text += fmt::format("node {}:{}:{}\n", k, node.domain, node.op_type);
    for (const auto& [name, attribute] : node.attributes)  // std::map: sorted by name
      text += fmt::format(" attr {}={}\n", name, attribute_text(attribute));
    for (ValueId input : node.inputs) {
      if (input == kNoValue) {
        text += " in none\n";
        continue;
      }
      const Value& value = graph.values.at(static_cast<size_t>(input));
      std::string from;
      for (size_t j = 0; j < k && from.empty(); ++j) {
        const Node& earlier = graph.nodes.at(static_cast<size_t>(nodes[j]));
        for (size_t o = 0; o < earlier.outputs.size(); ++o)
          if (earlier.outputs[o] == input) from = fmt::format("node {} output {}", j, o);
      }
      if (!from.empty())
        text += " in " + from + "\n";
      else
        text += fmt::format(" in {} {}\n", value.is_constant() ? "constant" : "external", value_type(value));
    }
    // Output shapes stand for the values of small shape-like constants
    // (Reshape's shape, Slice's bounds), which decide how much work there is.
    for (ValueId output : node.outputs)
      text += output == kNoValue ? " out none\n"
                                 : " out " + value_type(graph.values.at(static_cast<size_t>(output))) + "\n";
  }
  return fmt::format("{:016x}", fnv1a64(text));
}

std::string launch_description(const Graph& graph, const std::vector<NodeId>& nodes) {
  std::string ops;
  for (size_t k = 0; k < nodes.size(); ++k) ops += (k ? "+" : "") + graph.nodes.at(static_cast<size_t>(nodes[k])).op_type;
  if (nodes.empty()) return ops;
  const Node& first = graph.nodes.at(static_cast<size_t>(nodes.front()));
  ValueId input = first.input(0);
  if (input == kNoValue) return ops;
  return ops + " " + value_type(graph.values.at(static_cast<size_t>(input)));
}

}  // namespace hetsched
