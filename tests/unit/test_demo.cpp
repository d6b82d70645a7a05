// `hetsched demo`: the main job end to end on a small model, on this
// machine's cores and on an emulated platform.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "cli_test_util.h"

namespace hetsched {
namespace {

namespace fs = std::filesystem;
using testing::run_cli;

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A private folder per test; the CLI's cache folder (the profile database)
// inside it while the test runs.
struct DemoFolder {
  fs::path root;
  std::string saved_cache;
  bool had_cache = false;
  explicit DemoFolder(const std::string& name) : root(fs::temp_directory_path() / ("hetsched_test_demo_" + name)) {
    fs::remove_all(root);
    fs::create_directories(root);
    if (const char* cache = std::getenv("XDG_CACHE_HOME")) {
      had_cache = true;
      saved_cache = cache;
    }
    setenv("XDG_CACHE_HOME", (root / "cache").c_str(), 1);
  }
  ~DemoFolder() {
    if (had_cache)
      setenv("XDG_CACHE_HOME", saved_cache.c_str(), 1);
    else
      unsetenv("XDG_CACHE_HOME");
    fs::remove_all(root);
  }
};

void expect_contains(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "missing '" << part << "' in:\n" << text;
}

TEST(DemoCli, ProfilesPlansRunsChecksAndReportsOnThisMachine) {
  DemoFolder folder("real");
  std::string report = (folder.root / "report").string();
  std::string trace = (folder.root / "best.json").string();
  auto r = run_cli("demo zoo:squeezenet1_0 --schedulers heft,sequential -w 0 -n 2 --report " + report + " --trace " +
                   trace);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* part : {"[1/6] devices", "[2/6] profiling", "launch units measured", "[3/6] planning",
                           "[4/6] running the fastest", "fastest: ", "outputs identical to sequential on",
                           "[5/6] comparison", "lower bound:", "best sequential:", "heft", "[6/6] many requests",
                           "throughput: ", "requests/s, request latency p50", "one request at a time on",
                           "report written to"})
    expect_contains(r.output, part);
  std::string page = read_file(fs::path(report) / "index.html");
  expect_contains(page, "many requests at once: ");
  expect_contains(page, "Many requests at once (throughput mode)");
  expect_contains(page, "side by side on ");
  expect_contains(page, "<svg");
  expect_contains(page, "heft");
  expect_contains(page, "outputs identical to sequential");
  expect_contains(read_file(trace), "traceEvents");
}

TEST(DemoCli, EmulatedPlatformAndBadInput) {
  DemoFolder folder("emulated");
  std::string platform = std::string(HETSCHED_SOURCE_DIR) + "/platforms/phone-soc.json";
  auto r = run_cli("demo zoo:squeezenet1_0 --platform " + platform +
                   " --schedulers heft,type-based -w 0 -n 1 --report " + (folder.root / "report").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_contains(r.output, "emu:npu");
  expect_contains(r.output, "(emulated)");
  expect_contains(r.output, "skipped: emulated devices serve no real requests");
  expect_contains(r.output, "outputs ");

  auto missing = run_cli("demo " + (folder.root / "nope.onnx").string());
  EXPECT_EQ(missing.exit_code, 1) << missing.output;
  expect_contains(missing.output, "nope.onnx");
  auto bad_scheduler = run_cli("demo zoo:squeezenet1_0 --schedulers fastest");
  EXPECT_EQ(bad_scheduler.exit_code, 2) << bad_scheduler.output;
}

}  // namespace
}  // namespace hetsched
