// The profile database (storage, concurrency, recovery from foreign files),
// op signatures, device calibration and the profiler.
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "backends/cpu/cpu_device.h"
#include "graph_test_util.h"
#include "hetsched/device.h"
#include "hetsched/error.h"
#include "hetsched/platform.h"
#include "hetsched/session.h"
#include "onnx_model_util.h"
#include "plan/plan_builder.h"
#include "profile/calibrate.h"
#include "profile/profile_db.h"
#include "profile/profiler.h"

namespace hetsched {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::relu_chain;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

class ProfileDbTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::temp_dir(std::string("profile_db_") +
                             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    path_ = (dir_ / "profile.db").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Files in the test folder whose name starts with `prefix`.
  std::vector<std::string> files_starting_with(const std::string& prefix) const {
    std::vector<std::string> out;
    for (const auto& entry : fs::directory_iterator(dir_)) {
      std::string name = entry.path().filename().string();
      if (name.rfind(prefix, 0) == 0) out.push_back(name);
    }
    return out;
  }

  static ProfileDB::Entry entry(const std::string& signature, double median_us) {
    return ProfileDB::Entry{signature, "Conv f32[1,3,8,8]", ProfiledTime{median_us, median_us / 10, 10}};
  }

  fs::path dir_;
  std::string path_;
};

TEST_F(ProfileDbTest, PutFindRoundTrip) {
  ProfileDB db(path_);
  EXPECT_TRUE(db.warnings().empty());
  EXPECT_EQ(db.path(), path_);
  EXPECT_FALSE(db.find("dev-a", "op1").has_value());
  EXPECT_EQ(db.count("dev-a"), 0);

  db.put("dev-a", {entry("op1", 12.5), entry("op2", 40)});
  db.put("dev-b", {entry("op1", 99)});
  auto m = db.find("dev-a", "op1");
  ASSERT_TRUE(m.has_value());
  EXPECT_DOUBLE_EQ(m->median_us, 12.5);
  EXPECT_DOUBLE_EQ(m->spread_us, 1.25);
  EXPECT_EQ(m->n_repeats, 10);
  EXPECT_DOUBLE_EQ(db.find("dev-b", "op1")->median_us, 99);
  EXPECT_FALSE(db.find("dev-b", "op2").has_value());
  EXPECT_EQ(db.count("dev-a"), 2);
  EXPECT_EQ(db.count("dev-b"), 1);

  db.put("dev-a", {entry("op1", 7)});  // replaces
  EXPECT_DOUBLE_EQ(db.find("dev-a", "op1")->median_us, 7);
  EXPECT_EQ(db.count("dev-a"), 2);

  EXPECT_FALSE(db.peaks("dev-a").has_value());
  db.put_peaks("dev-a", DevicePeaks{120, 15, 2.5});
  auto p = db.peaks("dev-a");
  ASSERT_TRUE(p.has_value());
  EXPECT_DOUBLE_EQ(p->peak_gflops, 120);
  EXPECT_DOUBLE_EQ(p->bandwidth_gbps, 15);
  EXPECT_DOUBLE_EQ(p->launch_overhead_us, 2.5);

  EXPECT_FALSE(db.link("dev-a", "dev-b").has_value());
  db.put_link("dev-a", "dev-b", LinkFit{3, 20});
  auto l = db.link("dev-a", "dev-b");
  ASSERT_TRUE(l.has_value());
  EXPECT_DOUBLE_EQ(l->latency_us, 3);
  EXPECT_DOUBLE_EQ(l->bandwidth_gbps, 20);
  EXPECT_FALSE(db.link("dev-b", "dev-a").has_value());  // directed
}

TEST_F(ProfileDbTest, PersistsAcrossReopen) {
  {
    ProfileDB db(path_);
    db.put("dev", {entry("op", 5)});
    db.put_peaks("dev", DevicePeaks{1, 2, 3});
    db.put_link("dev", "other", LinkFit{4, 5});
  }
  ProfileDB again(path_);
  EXPECT_TRUE(again.warnings().empty());
  EXPECT_DOUBLE_EQ(again.find("dev", "op")->median_us, 5);
  EXPECT_DOUBLE_EQ(again.peaks("dev")->launch_overhead_us, 3);
  EXPECT_DOUBLE_EQ(again.link("dev", "other")->bandwidth_gbps, 5);
}

TEST_F(ProfileDbTest, CreatesMissingFoldersAndRefusesUnusablePaths) {
  std::string nested = (dir_ / "a" / "b" / "profile.db").string();
  ProfileDB db(nested);
  db.put("dev", {entry("op", 1)});
  EXPECT_TRUE(fs::exists(nested));

  std::ofstream(dir_ / "plain_file") << "x";
  try {
    ProfileDB bad((dir_ / "plain_file" / "profile.db").string());
    FAIL() << "a path under a regular file must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_THAT(e.what(), HasSubstr("plain_file"));
  }
}

TEST_F(ProfileDbTest, DefaultPathFollowsXdgCacheHome) {
  const char* saved = std::getenv("XDG_CACHE_HOME");
  std::string saved_value = saved ? saved : "";
  setenv("XDG_CACHE_HOME", (dir_ / "cache").c_str(), 1);
  std::string path = ProfileDB::default_path();
  if (saved)
    setenv("XDG_CACHE_HOME", saved_value.c_str(), 1);
  else
    unsetenv("XDG_CACHE_HOME");
  EXPECT_EQ(path, (dir_ / "cache" / "hetsched" / "profile.db").string());
  EXPECT_TRUE(fs::is_directory(dir_ / "cache" / "hetsched"));
}

// Writers in two threads, each with its own connection, at the same time.
TEST_F(ProfileDbTest, TwoThreadsWriteAtOnce) {
  { ProfileDB create(path_); }  // up front, so both threads open an existing file
  constexpr int kBatches = 40, kPerBatch = 25;
  auto writer = [&](const std::string& device, std::string* failure) {
    try {
      ProfileDB db(path_);
      for (int b = 0; b < kBatches; ++b) {
        std::vector<ProfileDB::Entry> batch;
        for (int i = 0; i < kPerBatch; ++i) batch.push_back(entry(fmt::format("op{}_{}", b, i), b + i));
        db.put(device, batch);
        if (!db.find(device, fmt::format("op{}_0", b))) *failure = "a committed batch is not readable";
      }
    } catch (const std::exception& e) {
      *failure = e.what();
    }
  };
  std::string failure_a, failure_b;
  std::thread a(writer, "dev-a", &failure_a);
  std::thread b(writer, "dev-b", &failure_b);
  a.join();
  b.join();
  EXPECT_EQ(failure_a, "");
  EXPECT_EQ(failure_b, "");
  ProfileDB db(path_);
  EXPECT_TRUE(db.warnings().empty());
  EXPECT_EQ(db.count("dev-a"), kBatches * kPerBatch);
  EXPECT_EQ(db.count("dev-b"), kBatches * kPerBatch);
}

// Processes that start on a file that does not exist yet: one of them
// creates it, the others must wait for it rather than take it for foreign.
TEST_F(ProfileDbTest, SeveralProcessesCreateAndWriteAtOnce) {
  constexpr int kProcesses = 4, kBatches = 25, kPerBatch = 20;
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int code = 0;
      try {
        ProfileDB db(path_);
        if (!db.warnings().empty()) code = 3;
        for (int b = 0; b < kBatches; ++b) {
          std::vector<ProfileDB::Entry> batch;
          for (int i = 0; i < kPerBatch; ++i) batch.push_back(entry(fmt::format("op{}_{}", b, i), i));
          db.put(fmt::format("dev{}", p), batch);
          db.put_peaks(fmt::format("dev{}", p), DevicePeaks{double(b), 1, 1});
        }
      } catch (const std::exception& e) {
        std::fprintf(stderr, "process %d: %s\n", p, e.what());
        code = 2;
      }
      _exit(code);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "2: an error, 3: a warning about the new file";
  }
  ProfileDB db(path_);
  EXPECT_TRUE(db.warnings().empty());
  for (int p = 0; p < kProcesses; ++p) {
    EXPECT_EQ(db.count(fmt::format("dev{}", p)), kBatches * kPerBatch);
    auto peaks = db.peaks(fmt::format("dev{}", p));
    ASSERT_TRUE(peaks.has_value());
    EXPECT_DOUBLE_EQ(peaks->peak_gflops, kBatches - 1);
  }
  EXPECT_TRUE(files_starting_with("profile.db.broken").empty());
}

TEST_F(ProfileDbTest, CorruptFileIsMovedAsideWithAWarning) {
  {
    std::ofstream out(path_, std::ios::binary);
    std::mt19937 rng(42);
    for (int i = 0; i < 8192; ++i) out.put(static_cast<char>(rng() & 0xff));
  }
  ProfileDB db(path_);
  ASSERT_EQ(db.warnings().size(), 1u);
  EXPECT_THAT(db.warnings()[0], HasSubstr(path_ + ": not a hetsched profile database"));
  EXPECT_THAT(db.warnings()[0], HasSubstr("moved to " + path_ + ".broken-"));
  EXPECT_THAT(db.warnings()[0], HasSubstr("starting a new one"));
  auto moved = files_starting_with("profile.db.broken-");
  ASSERT_EQ(moved.size(), 1u);
  EXPECT_EQ(fs::file_size(dir_ / moved[0]), 8192u);  // kept as it was

  db.put("dev", {entry("op", 3)});
  EXPECT_DOUBLE_EQ(db.find("dev", "op")->median_us, 3);
  ProfileDB again(path_);
  EXPECT_TRUE(again.warnings().empty());
}

TEST_F(ProfileDbTest, ForeignSqliteFileIsMovedAside) {
  {
    sqlite3* foreign = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &foreign), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(foreign, "CREATE TABLE songs(title TEXT); INSERT INTO songs VALUES ('a');", nullptr,
                           nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(foreign);
  }
  ProfileDB db(path_);
  ASSERT_EQ(db.warnings().size(), 1u);
  EXPECT_THAT(db.warnings()[0], HasSubstr("no meta table"));
  db.put("dev", {entry("op", 3)});
  EXPECT_TRUE(db.find("dev", "op").has_value());

  // The foreign file is intact under its new name.
  auto moved = files_starting_with("profile.db.broken-");
  ASSERT_EQ(moved.size(), 1u);
  sqlite3* check = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ / moved[0]).c_str(), &check), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(check, "SELECT count(*) FROM songs", -1, &stmt, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(stmt, 0), 1);
  sqlite3_finalize(stmt);
  sqlite3_close(check);
}

TEST_F(ProfileDbTest, OtherSchemaVersionIsMovedAside) {
  {
    ProfileDB db(path_);
    db.put("dev", {entry("op", 3)});
  }
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &raw), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(raw, "UPDATE meta SET value = '99' WHERE key = 'schema_version'", nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(raw);
  }
  ProfileDB db(path_);
  ASSERT_EQ(db.warnings().size(), 1u);
  EXPECT_THAT(db.warnings()[0], HasSubstr("schema version '99', expected '1'"));
  EXPECT_FALSE(db.find("dev", "op").has_value());  // a fresh database
  EXPECT_EQ(files_starting_with("profile.db.broken-").size(), 1u);
}

// ------------------------------------------------------------ op signatures

ValueId add_value(Graph& g, const std::string& name, Shape shape, bool constant = false) {
  Value v;
  v.name = name;
  v.dtype = DType::kFloat32;
  v.has_shape = true;
  v.shape = shape;
  if (constant) {
    Tensor t(DType::kFloat32, shape);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(name.size() + i);
    v.initializer = t;
  }
  return g.add_value(std::move(v));
}

struct ConvSpec {
  Shape input{1, 3, 8, 8};
  int64_t stride = 1;
  bool weights_constant = true;
  std::string prefix = "a";  // node and value names differ between graphs
};

// x -> Conv(w, pads 1) -> c -> Relu -> y
Graph conv_relu(const ConvSpec& spec) {
  Graph g;
  ValueId x = add_value(g, spec.prefix + "x", spec.input);
  ValueId w = add_value(g, spec.prefix + "w", {4, spec.input[1], 3, 3}, spec.weights_constant);
  int64_t side = (spec.input[2] + 2 - 3) / spec.stride + 1;
  ValueId c = add_value(g, spec.prefix + "c", {1, 4, side, side});
  ValueId y = add_value(g, spec.prefix + "y", {1, 4, side, side});
  Node conv;
  conv.op_type = "Conv";
  conv.opset = 17;
  conv.name = spec.prefix + "conv";
  conv.inputs = {x, w};
  conv.outputs = {c};
  Attribute ints;
  ints.kind = Attribute::Kind::kInts;
  ints.ints = {1, 1, 1, 1};
  conv.attributes["pads"] = ints;
  ints.ints = {spec.stride, spec.stride};
  conv.attributes["strides"] = ints;
  ints.ints = {3, 3};
  conv.attributes["kernel_shape"] = ints;
  g.add_node(conv);
  Node relu;
  relu.op_type = "Relu";
  relu.opset = 17;
  relu.name = spec.prefix + "relu";
  relu.inputs = {c};
  relu.outputs = {y};
  g.add_node(relu);
  g.inputs = {x};
  if (!spec.weights_constant) g.inputs.push_back(w);
  g.outputs = {y};
  g.finalize();
  g.annotate_costs();
  return g;
}

std::string conv_signature(const ConvSpec& spec, bool with_relu = false) {
  Graph g = conv_relu(spec);
  std::vector<NodeId> nodes{g.find_node(spec.prefix + "conv")};
  if (with_relu) nodes.push_back(g.find_node(spec.prefix + "relu"));
  return op_signature(g, nodes);
}

TEST(ProfileDbSignatureTest, IdenticalConvsOnDifferentGraphsMatch) {
  ConvSpec a, b;
  b.prefix = "other_";  // other names and other weight values
  EXPECT_EQ(conv_signature(a), conv_signature(b));
  EXPECT_EQ(conv_signature(a, true), conv_signature(b, true));
  EXPECT_EQ(conv_signature(a).size(), 16u);
  EXPECT_EQ(conv_signature(a).find_first_not_of("0123456789abcdef"), std::string::npos);
}

TEST(ProfileDbSignatureTest, ShapesAttributesWeightsAndFusionChangeIt) {
  ConvSpec base;
  std::set<std::string> signatures{conv_signature(base)};
  ConvSpec wider = base;
  wider.input = {1, 3, 16, 16};
  signatures.insert(conv_signature(wider));
  ConvSpec more_channels = base;
  more_channels.input = {1, 8, 8, 8};
  signatures.insert(conv_signature(more_channels));
  ConvSpec strided = base;
  strided.stride = 2;
  signatures.insert(conv_signature(strided));
  ConvSpec runtime_weights = base;
  runtime_weights.weights_constant = false;
  signatures.insert(conv_signature(runtime_weights));
  signatures.insert(conv_signature(base, true));  // Conv+Relu as one launch
  EXPECT_EQ(signatures.size(), 6u);

  // Relu reading the Conv inside the launch differs from a Relu fed from outside.
  Graph g = conv_relu(base);
  NodeId relu = g.find_node("arelu");
  std::string relu_alone = op_signature(g, {relu});
  EXPECT_NE(relu_alone, op_signature(g, {g.find_node("aconv"), relu}));
}

TEST(ProfileDbSignatureTest, LaunchDescriptionNamesOpsAndFirstInput) {
  Graph g = conv_relu(ConvSpec{});
  EXPECT_EQ(launch_description(g, {g.find_node("aconv"), g.find_node("arelu")}), "Conv+Relu f32[1,3,8,8]");
  EXPECT_EQ(launch_description(g, {g.find_node("arelu")}), "Relu f32[1,4,8,8]");
}

// ------------------------------------------------------------ calibration

bool have_two_cores() { return usable_cores().size() >= 2; }

std::string core_spec(size_t index) { return fmt::format("cpu:{}", usable_cores().at(index)); }

TEST_F(ProfileDbTest, CalibrationMeasuresPlausiblePeaksThenReusesThem) {
  ProfileDB db(path_);
  Platform platform = make_platform(core_spec(0), "");
  ASSERT_EQ(platform.devices.size(), 1u);
  auto start = Clock::now();
  calibrate_platform(platform, db);
  double first_s = seconds_since(start);
  const PlatformDevice& d = platform.devices[0];
  EXPECT_GT(d.peak_gflops, 0.5);
  EXPECT_LT(d.peak_gflops, 5000);  // one core
  EXPECT_GT(d.bandwidth_gbps, 0.2);
  EXPECT_LT(d.bandwidth_gbps, 2000);
  EXPECT_GT(d.launch_overhead_us, 0.01);
  EXPECT_LT(d.launch_overhead_us, 1000);
  EXPECT_LT(first_s, 4.0);
  ASSERT_TRUE(db.peaks(d.signature).has_value());
  EXPECT_DOUBLE_EQ(db.peaks(d.signature)->peak_gflops, d.peak_gflops);
  // A lone device's share of the host memory is its own bandwidth.
  ASSERT_NE(platform.resource(d.shared_resource), nullptr);
  EXPECT_DOUBLE_EQ(platform.resource(d.shared_resource)->bandwidth_gbps, d.bandwidth_gbps);

  Platform again = make_platform(core_spec(0), "");
  start = Clock::now();
  calibrate_platform(again, db);
  EXPECT_LT(seconds_since(start), 0.2);
  EXPECT_DOUBLE_EQ(again.devices[0].peak_gflops, d.peak_gflops);
  EXPECT_DOUBLE_EQ(again.devices[0].bandwidth_gbps, d.bandwidth_gbps);
  EXPECT_DOUBLE_EQ(again.devices[0].launch_overhead_us, d.launch_overhead_us);
}

TEST_F(ProfileDbTest, CalibrationMeasuresSharedMemoryWithDevicesCopyingAtOnce) {
  if (!have_two_cores()) GTEST_SKIP() << "needs two usable cores";
  ProfileDB db(path_);
  Platform platform = make_platform(core_spec(0) + "," + core_spec(1), "");
  ASSERT_EQ(platform.devices.size(), 2u);
  calibrate_platform(platform, db);
  const std::string& resource_name = platform.devices[0].shared_resource;
  ASSERT_FALSE(resource_name.empty());
  const SharedResource* shared = platform.resource(resource_name);
  ASSERT_NE(shared, nullptr);
  EXPECT_GT(shared->bandwidth_gbps, 0.2);
  // Shared memory gives two devices together at most what each gets alone, twice.
  EXPECT_LT(shared->bandwidth_gbps, 2.5 * std::max(platform.devices[0].bandwidth_gbps, platform.devices[1].bandwidth_gbps));
  std::vector<std::string> sigs{platform.devices[0].signature, platform.devices[1].signature};
  std::sort(sigs.begin(), sigs.end());
  auto stored = db.peaks(fmt::format("resource|{}|{};{}", resource_name, sigs[0], sigs[1]));
  ASSERT_TRUE(stored.has_value());
  EXPECT_DOUBLE_EQ(stored->bandwidth_gbps, shared->bandwidth_gbps);

  Platform again = make_platform(core_spec(0) + "," + core_spec(1), "");
  auto start = Clock::now();
  calibrate_platform(again, db);
  EXPECT_LT(seconds_since(start), 0.2);
  EXPECT_DOUBLE_EQ(again.resource(resource_name)->bandwidth_gbps, shared->bandwidth_gbps);
}

TEST_F(ProfileDbTest, CalibrationLeavesEmulatedDevicesAlone) {
  ProfileDB db(path_);
  Platform platform;
  PlatformDevice npu;
  npu.name = "emu:npu";
  npu.kind = DeviceKind::kEmulated;
  npu.model_kind = "npu";
  npu.peak_gflops = 0;  // left as the file gave it
  npu.bandwidth_gbps = 30;
  npu.signature = "emu|npu";
  platform.devices.push_back(npu);
  calibrate_platform(platform, db);
  EXPECT_EQ(platform.devices[0].peak_gflops, 0);
  EXPECT_EQ(platform.devices[0].bandwidth_gbps, 30);
  EXPECT_FALSE(db.peaks("emu|npu").has_value());
}

// ------------------------------------------------------------ profiler

// Every distinct launch the profiler must time: fusion units and single nodes.
std::set<std::string> expected_signatures(const Graph& g) {
  std::set<std::string> out;
  for (const auto& unit : fusion_units(g)) out.insert(op_signature(g, unit));
  for (size_t n = 0; n < g.nodes.size(); ++n) out.insert(op_signature(g, {static_cast<NodeId>(n)}));
  return out;
}

TEST_F(ProfileDbTest, ProfilerMeasuresEveryUnitThenReusesThem) {
  Graph g = load_model("zoo:squeezenet1_0");
  Platform platform = make_platform(core_spec(0), "");
  ProfileDB db(path_);
  ProfileOptions options;
  options.warmups = 1;
  options.repeats = 3;
  options.max_wait = 1;  // reuse what ctest's other processes disturbed (test_profile_load.cpp tests that)
  int last_done = -1, last_total = -1;
  options.progress = [&](int done, int total, const std::string&) {
    EXPECT_GE(done, last_done);
    EXPECT_LE(done, total);
    last_done = done;
    last_total = total;
  };
  ProfileReport first = profile_graph(g, platform, db, options);
  std::set<std::string> expected = expected_signatures(g);
  ASSERT_EQ(first.devices.size(), 1u);
  EXPECT_FALSE(first.devices[0].skipped);
  EXPECT_EQ(first.devices[0].n_measured, static_cast<int>(expected.size()));
  EXPECT_EQ(first.devices[0].n_reused, 0);
  EXPECT_EQ(last_done, last_total);
  EXPECT_EQ(last_total, 2 * (options.warmups + options.repeats));  // the fusion pass and the single-node pass
  const std::string& sig = platform.devices[0].signature;
  EXPECT_EQ(db.count(sig), static_cast<int>(expected.size()));
  for (const std::string& s : expected) {
    auto m = db.find(sig, s);
    ASSERT_TRUE(m.has_value()) << s;
    EXPECT_GT(m->median_us, 0);
    EXPECT_GE(m->spread_us, 0);
    EXPECT_GE(m->n_repeats, options.repeats);
  }

  ProfileReport second = profile_graph(g, platform, db, options);
  EXPECT_EQ(second.devices[0].n_measured, 0);
  EXPECT_EQ(second.devices[0].n_reused, static_cast<int>(expected.size()));
  EXPECT_LT(second.seconds, first.seconds);
}

TEST_F(ProfileDbTest, ProfilerMeasuresExtraUnitsAndHonoursForce) {
  Graph g = load_model("zoo:squeezenet1_0");
  Platform platform = make_platform(core_spec(0), "");
  ProfileDB db(path_);
  ProfileOptions options;
  options.warmups = 0;
  options.repeats = 2;
  options.max_wait = 1;  // reuse what ctest's other processes disturbed (test_profile_load.cpp tests that)
  profile_graph(g, platform, db, options);
  int known = db.count(platform.devices[0].signature);

  // The first two fusion units together: a launch no pass has timed yet.
  auto units = fusion_units(g);
  ASSERT_GE(units.size(), 2u);
  std::vector<NodeId> merged = units[0];
  merged.insert(merged.end(), units[1].begin(), units[1].end());
  options.extra_units = {merged};
  ProfileReport extra = profile_graph(g, platform, db, options);
  EXPECT_EQ(extra.devices[0].n_measured, 1);
  EXPECT_EQ(extra.devices[0].n_reused, known);
  EXPECT_TRUE(db.find(platform.devices[0].signature, op_signature(g, merged)).has_value());

  options.force = true;
  ProfileReport forced = profile_graph(g, platform, db, options);
  EXPECT_EQ(forced.devices[0].n_measured, known + 1);
  EXPECT_EQ(forced.devices[0].n_reused, 0);
}

TEST_F(ProfileDbTest, ProfilerRefusesAnExtraUnitThatCannotBeOneLaunch) {
  Graph g = load_model("zoo:squeezenet1_0");
  Platform platform = make_platform(core_spec(0), "");
  ProfileDB db(path_);
  // The first node and a node two steps after it, without the node between:
  // a path leaves the unit and comes back.
  NodeId first = 0;
  ValueId out = g.nodes[0].outputs[0];
  NodeId middle = g.values[static_cast<size_t>(out)].consumers.at(0);
  ValueId middle_out = g.nodes[static_cast<size_t>(middle)].outputs[0];
  NodeId last = g.values[static_cast<size_t>(middle_out)].consumers.at(0);
  ProfileOptions options;
  options.extra_units = {{first, last}};
  try {
    profile_graph(g, platform, db, options);
    FAIL() << "a non-convex unit must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUsage);
    EXPECT_THAT(e.what(), HasSubstr("extra profile unit 0"));
  }
}

// A tiny graph so the test spends its time on the hand-over measurement.
Graph tiny_graph() { return conv_relu(ConvSpec{}); }

TEST_F(ProfileDbTest, ProfilerSkipsEmulatedDevicesAndFitsHandOverBetweenCoreGroups) {
  if (!have_two_cores()) GTEST_SKIP() << "needs two usable cores";
  Graph g = tiny_graph();
  Platform platform = make_platform(core_spec(0) + "," + core_spec(1), "");
  PlatformDevice npu;
  npu.name = "emu:npu";
  npu.kind = DeviceKind::kEmulated;
  npu.model_kind = "npu";
  npu.memory_space = "npu";
  npu.signature = "emu|npu";
  platform.devices.push_back(npu);
  ProfileDB db(path_);
  ProfileOptions options;
  options.warmups = 1;
  options.repeats = 2;
  options.max_wait = 1;  // reuse what ctest's other processes disturbed (test_profile_load.cpp tests that)
  ProfileReport report = profile_graph(g, platform, db, options);
  ASSERT_EQ(report.devices.size(), 3u);
  EXPECT_FALSE(report.devices[0].skipped);
  EXPECT_FALSE(report.devices[1].skipped);
  EXPECT_TRUE(report.devices[2].skipped);
  EXPECT_GT(report.devices[1].n_measured, 0);
  EXPECT_EQ(db.count("emu|npu"), 0);
  EXPECT_EQ(report.n_links_measured, 2);
  EXPECT_EQ(report.n_links_in_context, 0);  // one launch: nothing crosses, the microbenchmark fits them
  for (auto [a, b] : {std::pair{0, 1}, std::pair{1, 0}}) {
    auto fit = db.link(platform.devices[a].signature, platform.devices[b].signature);
    ASSERT_TRUE(fit.has_value());
    EXPECT_GE(fit->latency_us, 0);
    EXPECT_LT(fit->latency_us, 10000);
    EXPECT_GT(fit->bandwidth_gbps, 0.05);
  }
  ProfileReport again = profile_graph(g, platform, db, options);
  EXPECT_EQ(again.n_links_measured, 0);
  EXPECT_EQ(again.devices[0].n_measured, 0);
}

TEST_F(ProfileDbTest, ProfilerFitsTheHandOverInContextAndAgainForANewGraph) {
  if (!have_two_cores()) GTEST_SKIP() << "needs two usable cores";
  // 24 launches alternating between the devices: 11 and 12 read the other's
  // value, 256 KiB each.
  Graph chain = relu_chain(24, 64 << 10);
  Platform platform = make_platform(core_spec(0) + "," + core_spec(1), "");
  ProfileDB db(path_);
  ProfileOptions options;
  options.warmups = 1;
  options.repeats = 3;
  options.max_wait = 1;  // reuse what ctest's other processes disturbed (test_profile_load.cpp tests that)
  bool saw_pass = false;
  options.progress = [&](int, int, const std::string& what) {
    saw_pass = saw_pass || what == "hand-over cpu:0 <-> cpu:1";
  };
  ProfileReport first = profile_graph(chain, platform, db, options);
  EXPECT_TRUE(saw_pass);
  EXPECT_EQ(first.n_links_measured, 2);
  EXPECT_EQ(first.n_links_in_context, 2);
  for (auto [a, b] : {std::pair{0, 1}, std::pair{1, 0}}) {
    auto fit = db.link(platform.devices[a].signature, platform.devices[b].signature);
    ASSERT_TRUE(fit.has_value());
    EXPECT_GE(fit->latency_us, 0);
    EXPECT_GT(fit->bandwidth_gbps, 0);
  }

  // Nothing new on the devices: the fit stands.
  ProfileReport again = profile_graph(chain, platform, db, options);
  EXPECT_EQ(again.n_links_measured, 0);

  // A graph new to the database is measured, and the hand-over with it.
  ProfileReport other = profile_graph(relu_chain(20, 32 << 10), platform, db, options);
  EXPECT_GT(other.devices[0].n_measured, 0);
  EXPECT_EQ(other.n_links_in_context, 2);

  // A graph too small to fit from leaves a fit in context alone.
  ProfileReport tiny = profile_graph(tiny_graph(), platform, db, options);
  EXPECT_GT(tiny.devices[0].n_measured, 0);
  EXPECT_EQ(tiny.n_links_measured, 0);
}

TEST(HandoverFit, RecoversLatencyAndBandwidth) {
  // 12 us per value and 20 GB/s (20,000 bytes per us), read back exactly.
  std::vector<HandoverPoint> points;
  for (int k = 1; k <= 2; ++k)
    for (double bytes : {16e3, 200e3, 800e3, 3.2e6}) points.push_back({double(k), k * bytes, k * 12 + k * bytes / 20e3});
  LinkFit fit = fit_handover(points);
  EXPECT_NEAR(fit.latency_us, 12, 1e-6);
  EXPECT_NEAR(fit.bandwidth_gbps, 20, 1e-6);
}

TEST(HandoverFit, KeepsThePartThatFitsWhenTheOtherWouldBeNegative) {
  // Extra time that falls with size: no per-byte cost, a latency alone.
  std::vector<HandoverPoint> falling = {{1, 1e3, 30}, {1, 1e5, 25}, {1, 1e6, 20}};
  LinkFit fit = fit_handover(falling);
  EXPECT_NEAR(fit.latency_us, 25, 1e-9);
  EXPECT_GT(fit.bandwidth_gbps, 1e5);  // bytes cost nothing measurable
  // Extra time proportional to size and below zero for small values: bytes alone.
  std::vector<HandoverPoint> by_size = {{1, 1e3, -5}, {1, 1e6, 100}, {1, 2e6, 200}};
  fit = fit_handover(by_size);
  EXPECT_EQ(fit.latency_us, 0);
  EXPECT_GT(fit.bandwidth_gbps, 5);
  EXPECT_LT(fit.bandwidth_gbps, 20);
  // Launches no slower than alone: free.
  fit = fit_handover({{1, 1e3, -2}, {2, 1e5, -1}});
  EXPECT_EQ(fit.latency_us, 0);
  EXPECT_GT(fit.bandwidth_gbps, 1e5);
}

TEST_F(ProfileDbTest, ProfilerTimesFusionUnitsUnderCorunOnBothDevicesThenReusesThem) {
  if (describe_machine().usable_cores.size() < 2) GTEST_SKIP() << "needs two usable cores";
  Graph g = load_model("zoo:squeezenet1_0");
  Platform platform = make_platform(core_spec(0) + "," + core_spec(1), "");
  ASSERT_EQ(platform.devices.size(), 2u);
  ASSERT_FALSE(platform.devices[0].shared_resource.empty());
  ASSERT_EQ(platform.devices[0].shared_resource, platform.devices[1].shared_resource);
  ProfileDB db(path_);
  ProfileOptions options;
  options.warmups = 0;
  options.repeats = 2;
  options.max_wait = 1;  // reuse what ctest's other processes disturbed (test_profile_load.cpp tests that)
  int last_done = -1, last_total = -1;
  bool saw_corun = false;
  options.progress = [&](int done, int total, const std::string& what) {
    last_done = done;
    last_total = total;
    if (what.find("co-run") != std::string::npos) saw_corun = true;
  };
  ProfileReport first = profile_graph(g, platform, db, options);
  std::set<std::string> units;
  for (const auto& unit : fusion_units(g)) units.insert(op_signature(g, unit));
  ASSERT_EQ(first.devices.size(), 2u);
  for (size_t d = 0; d < 2; ++d) {
    EXPECT_EQ(first.devices[d].n_corun_measured, static_cast<int>(units.size()));
    EXPECT_EQ(first.devices[d].n_corun_reused, 0);
    for (const std::string& sig : units) {
      auto corun = db.find(platform.devices[d].signature, sig + "|corun");
      ASSERT_TRUE(corun.has_value()) << sig;
      EXPECT_GT(corun->median_us, 0);
      EXPECT_GE(corun->n_repeats, options.repeats);  // identical units pool their samples
      // Kept apart from the measurement alone.
      ASSERT_TRUE(db.find(platform.devices[d].signature, sig).has_value());
    }
  }
  EXPECT_TRUE(saw_corun);
  // Per device a fusion pass and a single-node pass, one co-run pass, one
  // hand-over pass for the pair.
  EXPECT_EQ(last_total, 6 * (options.warmups + options.repeats));
  EXPECT_EQ(last_done, last_total);

  saw_corun = false;
  last_total = -1;
  ProfileReport second = profile_graph(g, platform, db, options);
  for (size_t d = 0; d < 2; ++d) {
    EXPECT_EQ(second.devices[d].n_corun_measured, 0);
    EXPECT_EQ(second.devices[d].n_corun_reused, static_cast<int>(units.size()));
  }
  EXPECT_FALSE(saw_corun);
  EXPECT_LE(last_total, 0);  // nothing left to run

  // One device alone has nobody to co-run with.
  Platform alone = make_platform(core_spec(0), "");
  ProfileReport single = profile_graph(g, alone, db, options);
  EXPECT_EQ(single.devices[0].n_corun_measured, 0);
  EXPECT_EQ(single.devices[0].n_corun_reused, 0);
}

// ------------------------------------------------------------ `hetsched profile`

struct CliRun {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

CliRun run_cli(const std::string& args) {
  CliRun r;
  FILE* pipe = popen((std::string(HETSCHED_CLI) + " " + args + " 2>&1").c_str(), "r");
  if (!pipe) return r;
  char buf[4096];
  while (fgets(buf, sizeof(buf), pipe)) r.output += buf;
  int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

TEST_F(ProfileDbTest, ProfileCommandMeasuresThenReuses) {
  std::string args =
      fmt::format("profile zoo:squeezenet1_0 --devices {} --db {} -w 0 -r 1 --max-wait 1", core_spec(0), path_);
  CliRun first = run_cli(args);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_THAT(first.output, HasSubstr("(calibrated now)"));
  EXPECT_THAT(first.output, ::testing::ContainsRegex("[1-9][0-9]* launch units measured, 0 reused"));
  EXPECT_THAT(first.output, HasSubstr(path_));
  // Not a terminal: no progress bar, no control characters.
  EXPECT_EQ(first.output.find_first_of("\r\033"), std::string::npos) << first.output;

  CliRun second = run_cli(args);
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_THAT(second.output, HasSubstr("(from the database)"));
  EXPECT_THAT(second.output, HasSubstr(": 0 launch units measured"));

  EXPECT_EQ(run_cli(args + " --reference").exit_code, 2);
  EXPECT_EQ(run_cli(args + " -r 0").exit_code, 2);
}

}  // namespace
}  // namespace hetsched
