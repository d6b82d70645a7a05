// Abstract task graphs: the JSON loader and `hetsched schedule-dag`.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_test_util.h"
#include "hetsched/error.h"
#include "onnx_model_util.h"
#include "sched/task_graph_io.h"

namespace hetsched {
namespace {

const std::string kHeftPaper = std::string(HETSCHED_SOURCE_DIR) + "/examples/dags/heft_paper.json";

TEST(TaskGraphIo, ReadsThePapersFormat) {
  NamedTaskGraph dag = parse_task_graph(
      R"({"devices": ["p1", "p2"], "tasks": [{"id": "a", "cost": [14, 16]}, {"id": 7, "cost": [3, null]}],
          "edges": [{"from": "a", "to": "7", "comm": 18}]})",
      "t.json");
  EXPECT_EQ(dag.devices, (std::vector<std::string>{"p1", "p2"}));
  EXPECT_EQ(dag.task_ids, (std::vector<std::string>{"a", "7"}));
  ASSERT_EQ(dag.graph.n_tasks, 2);
  EXPECT_EQ(dag.graph.cost[0], (std::vector<double>{14, 16}));
  EXPECT_TRUE(std::isinf(dag.graph.cost[1][1])) << "null: the device cannot run the task";
  ASSERT_EQ(dag.graph.succ[0].size(), 1u);
  EXPECT_EQ(dag.graph.succ[0][0], std::make_pair(1, 18.0));
  EXPECT_FALSE(dag.graph.receiver_pays_communication) << "the papers' model: comm is a delay";
}

TEST(TaskGraphIo, RefusesMalformedFilesNamingTheField) {
  const std::pair<const char*, const char*> cases[] = {
      {"{", "not valid JSON"},
      {"[]", "expected a JSON object"},
      {R"({"tasks": []})", "missing field \"devices\""},
      {R"({"devices": [], "tasks": []})", "devices: expected a non-empty array"},
      {R"({"devices": ["a", "a"], "tasks": [{"id": 1, "cost": [1, 1]}]})", "devices[1]: 'a' is listed twice"},
      {R"({"devices": ["a"], "tasks": [{"cost": [1]}]})", "tasks[0]: missing field \"id\""},
      {R"({"devices": ["a"], "tasks": [{"id": 1.5, "cost": [1]}]})", "tasks[0].id: expected a string or integer"},
      {R"({"devices": ["a", "b"], "tasks": [{"id": 1, "cost": [1]}]})", "tasks[0].cost: expected an array of 2"},
      {R"({"devices": ["a"], "tasks": [{"id": 1, "cost": [-1]}]})", "tasks[0].cost[0]: expected a finite number >= 0"},
      {R"({"devices": ["a"], "tasks": [{"id": 1, "cost": ["x"]}]})", "tasks[0].cost[0]: expected a number"},
      {R"({"devices": ["a"], "tasks": [{"id": 1, "cost": [null]}]})", "no device can run it"},
      {R"({"devices": ["a"], "tasks": [{"id": 1, "cost": [1]}, {"id": "1", "cost": [1]}]})", "id '1' is used twice"},
      {R"({"devices": ["a"], "tasks": [{"id": 1, "cost": [1]}], "edges": [{"from": 1, "to": 2}]})",
       "edges[0].to: no task has id '2'"},
      {R"({"devices": ["a"], "tasks": [{"id": 1, "cost": [1]}], "edges": [{"from": 1, "to": 1}]})",
       "depends on itself"},
      {R"({"devices": ["a"], "tasks": [{"id": 1, "cost": [1]}, {"id": 2, "cost": [1]}],
           "edges": [{"from": 1, "to": 2, "comm": -3}]})",
       "edges[0].comm: expected a finite number >= 0"},
      {R"({"devices": ["a"], "tasks": [{"id": 1, "cost": [1]}, {"id": 2, "cost": [1]}],
           "edges": [{"from": 1, "to": 2}, {"from": 1, "to": 2}]})",
       "edges[1]: edge '1' -> '2' is listed twice"},
      {R"({"devices": ["a"], "tasks": [{"id": 1, "cost": [1]}, {"id": 2, "cost": [1]}],
           "edges": [{"from": 1, "to": 2}, {"from": 2, "to": 1}]})",
       "they form a cycle"},
  };
  for (const auto& [text, expected] : cases) {
    try {
      parse_task_graph(text, "dag.json");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidFile) << text;
      std::string message = e.what();
      EXPECT_EQ(message.rfind("dag.json: ", 0), 0u) << message;
      EXPECT_NE(message.find(expected), std::string::npos) << "'" << message << "' lacks '" << expected << "'";
    }
  }
}

TEST(ScheduleDagCli, HeftOnItsPapersExampleGivesMakespan80) {
  auto dir = testing::temp_dir("schedule_dag");
  std::string json_path = (dir / "s.json").string();
  auto r = testing::run_cli("schedule-dag " + kHeftPaper + " --scheduler heft --json " + json_path);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("\nmakespan 80\n"), std::string::npos) << r.output;
  std::ifstream in(json_path);
  nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["makespan"].get<double>(), 80);
  ASSERT_EQ(j["tasks"].size(), 10u);
  EXPECT_EQ(j["tasks"][0]["id"], "1");
  EXPECT_EQ(j["tasks"][0]["device"], "p3") << "task 1 finishes first on p3 (cost 9)";

  EXPECT_NE(testing::run_cli("schedule-dag " + kHeftPaper + " --scheduler peft").output.find("\nmakespan 85\n"),
            std::string::npos);
  // The optimum of that example is 73 (test_optimal.cpp checks it against
  // brute force).
  auto optimal = testing::run_cli("schedule-dag " + kHeftPaper + " --scheduler optimal");
  EXPECT_NE(optimal.output.find("proved optimal\nmakespan 73\n"), std::string::npos) << optimal.output;
  std::filesystem::remove_all(dir);
}

TEST(ScheduleDagCli, ErrorsExitOneOrTwo) {
  auto unknown = testing::run_cli("schedule-dag " + kHeftPaper + " --scheduler magic");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.output.find("unknown scheduler 'magic'"), std::string::npos) << unknown.output;
  auto missing = testing::run_cli("schedule-dag /nonexistent/dag.json");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.output.find("/nonexistent/dag.json: cannot read"), std::string::npos) << missing.output;
  EXPECT_EQ(testing::run_cli("schedule-dag").exit_code, 2);
}

}  // namespace
}  // namespace hetsched
