// The fuzzers' inputs replayed in the normal build: every input a fuzzer
// found a bug with (tests/data/fuzz_regressions/<target>/) and the seed
// corpus (fuzz/corpus/<target>/), fed to the loaders exactly as the fuzz
// target does (fuzz/fuzz_inputs.h). Each must load or be refused with a
// hetsched::Error; any other exception fails the test, a crash fails the
// binary. What only sanitizers see (an allocation the input merely claims,
// a read past a buffer that happens not to crash) is checked when
// `make fuzz` replays the same files under them first.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

// Not on the include path: the fuzz folder is built only with clang.
#include "../../fuzz/fuzz_common.h"
#include "../../fuzz/fuzz_inputs.h"

namespace hetsched {
namespace {

namespace fs = std::filesystem;

const fs::path kRegressions = fs::path(HETSCHED_TEST_DATA) / "fuzz_regressions";
const fs::path kSeeds = fs::path(HETSCHED_SOURCE_DIR) / "fuzz" / "corpus";
const fs::path kFuzzData = fs::path(HETSCHED_SOURCE_DIR) / "fuzz" / "data";

std::vector<fs::path> files_in(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.is_regular_file()) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

struct Outcome {
  int loaded = 0;
  int refused = 0;
};

// Feeds every file of `dir` to `feed`; any exception but hetsched::Error is
// a failure naming the file.
template <typename Feed>
Outcome replay(const fs::path& dir, Feed feed) {
  Outcome outcome;
  for (const fs::path& file : files_in(dir)) {
    try {
      feed(file);
      ++outcome.loaded;
    } catch (const Error&) {
      ++outcome.refused;
    } catch (const std::exception& e) {
      ADD_FAILURE() << file << ": " << fuzz::exception_type_name(e)
                    << " escaped (expected hetsched::Error or success): " << e.what();
    }
  }
  return outcome;
}

class FuzzRegressions : public ::testing::Test {
 protected:
  void SetUp() override {
    scratch_ = fs::temp_directory_path() /
               ("hetsched-fuzz-regressions-" + std::to_string(::getpid()) + "-" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(scratch_);
  }
  void TearDown() override { fs::remove_all(scratch_); }

  // The regression inputs of `target`, then its seeds: each folder must hold
  // inputs (an empty or renamed folder would test nothing), and some seeds
  // must load, or the corpus no longer reaches past the loader's first checks.
  template <typename Feed>
  void replay_target(const std::string& target, Feed feed, bool has_regressions) {
    if (has_regressions) {
      SCOPED_TRACE("regressions of " + target);
      Outcome found = replay(kRegressions / target, feed);
      EXPECT_GT(found.loaded + found.refused, 0) << "no inputs in " << kRegressions / target;
    }
    SCOPED_TRACE("seeds of " + target);
    Outcome seeds = replay(kSeeds / target, feed);
    EXPECT_GT(seeds.loaded, 0) << "no seed in " << kSeeds / target << " loads";
    EXPECT_GT(seeds.refused, 0) << "no seed in " << kSeeds / target << " takes an error path";
  }

  std::string scratch(const std::string& name) const { return (scratch_ / name).string(); }

  fs::path scratch_;
};

TEST_F(FuzzRegressions, OnnxModel) {
  replay_target("onnx_model", [](const fs::path& file) { fuzz::onnx_model_input(file.string()); }, true);
}

TEST_F(FuzzRegressions, PlanJson) {
  static const fuzz::PlanFixture fixture(kFuzzData.string());
  replay_target("plan_json", [&](const fs::path& file) { fuzz::plan_json_input(read_bytes(file), fixture); }, true);
}

TEST_F(FuzzRegressions, TaskGraph) {
  replay_target("task_graph", [](const fs::path& file) { fuzz::task_graph_input(read_bytes(file)); }, false);
}

TEST_F(FuzzRegressions, PlatformFile) {
  replay_target("platform_file", [](const fs::path& file) { fuzz::platform_file_input(file.string()); }, true);
}

TEST_F(FuzzRegressions, Npy) {
  std::string copy = scratch("copy.npy");
  replay_target("npy", [&](const fs::path& file) { fuzz::npy_input(file.string(), copy); }, true);
}

TEST_F(FuzzRegressions, TensorPb) {
  std::string copy = scratch("copy.pb");
  replay_target("tensor_pb", [&](const fs::path& file) { fuzz::tensor_pb_input(file.string(), copy); }, true);
}

}  // namespace
}  // namespace hetsched
