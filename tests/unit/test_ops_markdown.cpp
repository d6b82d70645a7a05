// `hetsched ops --markdown` (docs/ops.md): rows from the reference kernels'
// registry, the CPU column from the CPU lowerings' registry, one column per
// emulated device kind and ops list of the platform files.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/lowering_info.h"
#include "cli_test_util.h"
#include "kernels/kernel.h"

namespace fs = std::filesystem;
using hetsched::testing::run_cli;

namespace {

// The table: header cells, then op -> cells (the op's own cell first).
struct Table {
  std::vector<std::string> header;
  std::map<std::string, std::vector<std::string>> rows;
};

std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out;
  std::string inner = line.substr(2, line.size() - 4);  // "| a | b |" -> "a | b"
  size_t start = 0;
  for (size_t bar; (bar = inner.find(" | ", start)) != std::string::npos; start = bar + 3)
    out.push_back(inner.substr(start, bar - start));
  out.push_back(inner.substr(start));
  return out;
}

Table parse_table(const std::string& markdown) {
  Table t;
  std::istringstream in(markdown);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("| ", 0) != 0) continue;
    if (t.header.empty()) {
      t.header = cells(line);
      continue;
    }
    auto row = cells(line);
    t.rows[row[0]] = row;
  }
  return t;
}

// A fresh folder of platform files, removed at the end of the test.
class PlatformFolder {
 public:
  PlatformFolder() {
    dir_ = fs::temp_directory_path() /
           ("hetsched-ops-md-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  ~PlatformFolder() { fs::remove_all(dir_); }
  void add(const std::string& file, const std::string& json) const { std::ofstream(dir_ / file) << json; }
  std::string path() const { return dir_.string(); }

 private:
  fs::path dir_;
};

std::string device(const std::string& name, const std::string& kind, const std::string& ops_json) {
  return "{\"name\": \"" + name + "\", \"kind\": \"" + kind +
         "\", \"peak_gflops\": 1, \"bandwidth_gbps\": 1" + (ops_json.empty() ? "" : ", \"ops\": " + ops_json) + "}";
}

std::string platform(const std::string& name, const std::vector<std::string>& devices) {
  std::string json = "{\"name\": \"" + name + "\", \"devices\": [";
  for (size_t i = 0; i < devices.size(); ++i) json += (i ? ", " : "") + devices[i];
  return json + "]}";
}

}  // namespace

TEST(OpsMarkdown, RowsAreTheReferenceOpsAndTheCpuColumnFollowsTheLoweringRegistry) {
  auto r = run_cli(std::string("ops --markdown --platforms ") + HETSCHED_SOURCE_DIR + "/platforms");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  Table t = parse_table(r.output);
  ASSERT_GE(t.header.size(), 3u) << r.output;
  EXPECT_EQ(t.header[1], "reference");
  EXPECT_EQ(t.header[2], "CPU");

  std::vector<std::string> ops = hetsched::kernels::reference_op_types();
  std::set<std::string> rows;
  for (const auto& [op, row] : t.rows) rows.insert(op);
  EXPECT_EQ(rows, std::set<std::string>(ops.begin(), ops.end()));

  std::map<std::string, hetsched::cpu::LoweringInfo> lowerings;
  for (const auto& info : hetsched::cpu::cpu_lowerings()) lowerings[info.op_type] = info;
  ASSERT_TRUE(lowerings.count("Conv"));
  for (const auto& [op, row] : t.rows) {
    ASSERT_EQ(row.size(), t.header.size()) << op;
    EXPECT_EQ(row[1], "yes") << op;
    auto it = lowerings.find(op);
    if (it == lowerings.end()) {
      EXPECT_EQ(row[2], "reference fallback") << op;
    } else {
      EXPECT_EQ(row[2].rfind(it->second.kernel, 0), 0u) << op << ": " << row[2];
      if (!it->second.reference_when.empty()) {
        EXPECT_NE(row[2].find("reference fallback for: " + it->second.reference_when), std::string::npos) << op;
      }
    }
  }
  // Spot checks against what the backend is known to do.
  EXPECT_NE(t.rows["Conv"][2].find("oneDNN convolution"), std::string::npos);
  EXPECT_NE(t.rows["Conv"][2].find("not float32"), std::string::npos);
  ASSERT_TRUE(t.rows.count("Gather"));
  EXPECT_EQ(t.rows["Gather"][2], "reference fallback");
}

TEST(OpsMarkdown, EmulatedColumnsFollowThePlatformFilesOpsLists) {
  PlatformFolder folder;
  folder.add("a.json", platform("a", {device("acc", "npu", R"(["Conv", "Relu"])"), device("big", "cpu", "")}));
  folder.add("b.json", platform("b", {device("gpu", "gpu", ""), device("tiny", "npu", R"(["Relu"])")}));
  folder.add("c.json", platform("c", {device("acc2", "npu", R"(["Relu", "Conv"])")}));
  folder.add("notes.txt", "not a platform file");
  auto r = run_cli("ops --markdown --platforms " + folder.path());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  Table t = parse_table(r.output);
  ASSERT_EQ(t.header, (std::vector<std::string>{"op", "reference", "CPU", "emu cpu", "emu gpu", "emu npu (1)",
                                                 "emu npu (2)"}));
  // Devices of one kind with the same ops (in any order) share a column.
  EXPECT_NE(r.output.find("emu npu (1): `a.json` acc, `c.json` acc2 (2 ops listed)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("emu npu (2): `b.json` tiny (1 ops listed)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("emu gpu: `b.json` gpu (all ops)"), std::string::npos) << r.output;
  EXPECT_EQ(t.rows["Conv"], (std::vector<std::string>{"Conv", "yes", t.rows["Conv"][2], "yes", "yes", "yes", "—"}));
  EXPECT_EQ(t.rows["Relu"], (std::vector<std::string>{"Relu", "yes", t.rows["Relu"][2], "yes", "yes", "yes", "yes"}));
  EXPECT_EQ(t.rows["Abs"], (std::vector<std::string>{"Abs", "yes", t.rows["Abs"][2], "yes", "yes", "—", "—"}));
}

TEST(OpsMarkdown, Errors) {
  auto r = run_cli("ops --platforms /tmp");
  EXPECT_EQ(r.exit_code, 2) << r.output;  // --platforms needs --markdown

  r = run_cli("ops --markdown --platforms /nonexistent/hetsched-platforms");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("/nonexistent/hetsched-platforms"), std::string::npos) << r.output;

  PlatformFolder folder;
  r = run_cli("ops --markdown --platforms " + folder.path());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("no platform files"), std::string::npos) << r.output;

  folder.add("bad.json", platform("bad", {device("x", "npu", R"(["NoSuchOp"])")}));
  r = run_cli("ops --markdown --platforms " + folder.path());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("bad.json"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("NoSuchOp"), std::string::npos) << r.output;
}
