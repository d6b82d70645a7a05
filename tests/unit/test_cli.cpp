// The hetsched command line: exit codes 0/1/2, one-line errors, outputs.
#include <sys/wait.h>

#include <array>
#include <cstdio>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli_test_util.h"
#include <nlohmann/json.hpp>

#include "hetsched/device.h"
#include "hetsched/tensor_io.h"
#include "onnx_model_util.h"

namespace hetsched {
namespace {

using ::testing::HasSubstr;
using namespace hetsched::testing;

using hetsched::testing::CliResult;
using hetsched::testing::run_cli;

// The one error line the CLI prints for a failure.
std::string error_line(const CliResult& r) {
  auto pos = r.output.find("hetsched: error: ");
  if (pos == std::string::npos) return "";
  auto end = r.output.find('\n', pos);
  EXPECT_EQ(end, r.output.size() - 1) << "the error must be the last and only error line: " << r.output;
  return r.output.substr(pos, end - pos);
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = temp_dir(std::string("cli_") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    model_ = (dir_ / "model.onnx").string();
    write_model(relu_add_model(), model_);
    // `run` without --devices profiles into the default database: the
    // test's own, not the user's.
    setenv("XDG_CACHE_HOME", (dir_ / "cache").c_str(), 1);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
  std::string model_;
};

TEST_F(CliTest, UsageErrorsExitTwo) {
  EXPECT_EQ(run_cli("").exit_code, 2);
  EXPECT_EQ(run_cli("frobnicate").exit_code, 2);
  EXPECT_EQ(run_cli("run").exit_code, 2);
  EXPECT_EQ(run_cli("run " + model_ + " -n notanumber").exit_code, 2);
  CliResult bad_shape = run_cli("run " + model_ + " --shape x=2by3");
  EXPECT_EQ(bad_shape.exit_code, 2);
  EXPECT_THAT(error_line(bad_shape), HasSubstr("--shape 'x=2by3'"));
  CliResult unknown_zoo = run_cli("run zoo:nosuchnet");
  EXPECT_EQ(unknown_zoo.exit_code, 2);
  EXPECT_THAT(error_line(unknown_zoo), HasSubstr("nosuchnet"));
  EXPECT_EQ(run_cli("run " + model_ + " --input nope=x.npy").exit_code, 2);
}

TEST_F(CliTest, HelpExitsZero) {
  CliResult r = run_cli("run --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.output, HasSubstr("--output-dir"));
}

TEST_F(CliTest, MissingModelExitsOneWithOneLine) {
  CliResult r = run_cli("run " + (dir_ / "absent.onnx").string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(error_line(r), HasSubstr("absent.onnx: no such file"));
}

TEST_F(CliTest, RunWritesOutputsAndJson) {
  Tensor x = Tensor::from_vector<float>({2, 3}, {-1, 2, -3, 4, -5, 6});
  write_npy((dir_ / "x.npy").string(), x);
  auto out_dir = dir_ / "out";
  auto json_path = dir_ / "timing.json";
  CliResult r = run_cli("run " + model_ + " --input x=" + (dir_ / "x.npy").string() + " --output-dir " +
                        out_dir.string() + " -n 5 -w 1 --json " + json_path.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("first run:"));
  EXPECT_THAT(r.output, HasSubstr("p99:"));
  Tensor y = read_npy((out_dir / "y.npy").string());
  EXPECT_EQ(y.to_double_vector(), std::vector<double>({1, 4, 3, 5, 2, 9}));
  std::ifstream in(json_path);
  auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["runs"], 5);
  for (const char* key : {"p50_ms", "p90_ms", "p99_ms"}) {
    ASSERT_TRUE(j.contains(key)) << key;
    EXPECT_GE(j[key].get<double>(), 0.0);
  }
  EXPECT_LE(j["p50_ms"].get<double>(), j["p99_ms"].get<double>());
}

// Without --devices, `run` schedules with auto over this machine's devices
// and keeps its measured choice in the profile database: the second run
// runs it without measuring. An input file that is wrong is refused before
// anything is profiled.
TEST_F(CliTest, RunWithoutDevicesUsesAutoOverTheMachineAndKeepsItsChoice) {
  std::string devices = machine_devices_spec();
  if (devices.find(',') == std::string::npos) GTEST_SKIP() << "one device on this machine: " << devices;
  std::filesystem::path db = dir_ / "cache" / "hetsched" / "profile.db";
  write_npy((dir_ / "bad.npy").string(), Tensor(DType::kFloat32, {3, 3}));
  CliResult refused = run_cli("run " + model_ + " --input x=" + (dir_ / "bad.npy").string());
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_FALSE(std::filesystem::exists(db)) << "profiled before refusing the input";

  CliResult first = run_cli("run " + model_ + " -n 2");
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_THAT(first.output, HasSubstr("devices: " + devices + ", this machine's"));
  EXPECT_THAT(first.output, HasSubstr("\nauto: "));
  EXPECT_THAT(first.output, HasSubstr("interleaved rounds"));
  EXPECT_THAT(first.output, ::testing::Not(HasSubstr("kept in the profile database")));
  EXPECT_TRUE(std::filesystem::exists(db));
  CliResult second = run_cli("run " + model_ + " -n 2");
  ASSERT_EQ(second.exit_code, 0) << second.output;
  // A profile taken under load (ctest -j beside it) is measured again by the
  // next run, and the choice with it: as it should, and the run says so.
  bool under_load = first.output.find("taken under load") != std::string::npos ||
                    second.output.find("taken under load") != std::string::npos;
  if (!under_load) EXPECT_THAT(second.output, HasSubstr("kept in the profile database"));
  CliResult again = run_cli("run " + model_ + " -n 2 --remeasure");
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_THAT(again.output, HasSubstr("interleaved rounds"));
  EXPECT_THAT(again.output, ::testing::Not(HasSubstr("kept in the profile database")));

  // Devices given: sequential on them, as before, nothing measured.
  CliResult given = run_cli("run " + model_ + " --devices cpu -n 2");
  ASSERT_EQ(given.exit_code, 0) << given.output;
  EXPECT_THAT(given.output, ::testing::Not(HasSubstr("auto: ")));
  EXPECT_THAT(given.output, ::testing::Not(HasSubstr("this machine's")));
}

TEST_F(CliTest, InputOfWrongShapeOrDtype) {
  write_npy((dir_ / "bad.npy").string(), Tensor(DType::kFloat32, {3, 3}));
  CliResult r = run_cli("run " + model_ + " --input x=" + (dir_ / "bad.npy").string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(error_line(r), HasSubstr("input 'x': expected float32 2x3, got float32 3x3"));
  write_npy((dir_ / "ints.npy").string(), Tensor(DType::kInt64, {2, 3}));
  r = run_cli("run " + model_ + " --input x=" + (dir_ / "ints.npy").string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(error_line(r), HasSubstr("got int64 2x3"));
  std::ofstream((dir_ / "junk.npy").string()) << "not numpy";
  r = run_cli("run " + model_ + " --input x=" + (dir_ / "junk.npy").string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(error_line(r), HasSubstr("junk.npy"));
}

TEST_F(CliTest, ExportZooModelLoadsBack) {
  auto path = dir_ / "resnet18.onnx";
  CliResult r = run_cli("export zoo:resnet18 -o " + path.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_TRUE(std::filesystem::exists(path));
  CliResult run = run_cli("run " + path.string() + " --devices cpu -n 0");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("output output: float32 1x1000"));
}

TEST_F(CliTest, ConformanceCountsPassFailSkip) {
  // Three cases: one passes, one has a wrong expected output, one uses an
  // op the engine refuses (skipped).
  auto make_case = [&](const std::string& name, const onnx::ModelProto& m, const std::vector<float>& expected) {
    auto c = dir_ / "suite" / name;
    std::filesystem::create_directories(c / "test_data_set_0");
    write_model(m, c / "model.onnx");
    write_tensor_pb((c / "test_data_set_0" / "input_0.pb").string(),
                    Tensor::from_vector<float>({2, 3}, {-1, 2, -3, 4, -5, 6}), "x");
    write_tensor_pb((c / "test_data_set_0" / "output_0.pb").string(), Tensor::from_vector<float>({2, 3}, expected),
                    "y");
  };
  make_case("test_good", relu_add_model(), {1, 4, 3, 5, 2, 9});
  make_case("test_bad", relu_add_model(), {1, 4, 3, 5, 2, 10});
  auto unsupported = relu_add_model();
  unsupported.mutable_graph()->mutable_node(0)->set_op_type("Bernoulli");
  make_case("test_skip", unsupported, {0, 0, 0, 0, 0, 0});
  CliResult r = run_cli("conformance " + (dir_ / "suite").string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("FAIL test_bad"));
  EXPECT_THAT(r.output, HasSubstr("1 passed, 1 failed, 1 skipped"));
  CliResult filtered = run_cli("conformance " + (dir_ / "suite").string() + " --filter good --min-passed 1");
  EXPECT_EQ(filtered.exit_code, 0);
  EXPECT_THAT(filtered.output, HasSubstr("1 passed, 0 failed, 0 skipped"));
  EXPECT_EQ(run_cli("conformance " + (dir_ / "suite").string() + " --filter good --min-passed 2").exit_code, 1);
}

}  // namespace
}  // namespace hetsched
