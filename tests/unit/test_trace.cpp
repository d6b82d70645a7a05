// Chrome traces: chrome_trace_json's events, metadata and kind label, and
// write_chrome_trace's file and errors.
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include "hetsched/error.h"
#include "hetsched/trace.h"

namespace hetsched {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;

// Two devices: a CPU core group and an emulated GPU with two streams.
Trace sample_trace(const std::string& kind) {
  Trace trace;
  trace.kind = kind;
  trace.devices = {"cpu:0", "emu:gpu (emulated)"};
  trace.makespan_us = 250;
  TraceEvent conv;
  conv.name = "Conv 'c1' + Relu 'r1'";
  conv.category = "launch";
  conv.start_us = 0;
  conv.duration_us = 120.5;
  conv.device = 0;
  conv.stream = 0;
  conv.op_name = "Conv+Relu";
  conv.provider = "cpu:0";
  conv.node_index = 3;
  TraceEvent copy;
  copy.name = "copy 'x' host->gpu-vram";
  copy.category = "copy";
  copy.start_us = 120.5;
  copy.duration_us = 30;
  copy.device = 1;
  copy.stream = 1;
  copy.provider = "emu:gpu";
  TraceEvent gemm;
  gemm.name = "Gemm 'fc'";
  gemm.category = "launch";
  gemm.start_us = 150.5;
  gemm.duration_us = 99.5;
  gemm.device = 1;
  gemm.stream = 0;
  gemm.op_name = "Gemm";
  gemm.provider = "emu:gpu";
  gemm.node_index = 7;
  trace.events = {conv, copy, gemm};
  return trace;
}

std::vector<json> events_with_phase(const json& root, const std::string& phase) {
  std::vector<json> out;
  for (const auto& e : root.at("traceEvents"))
    if (e.at("ph") == phase) out.push_back(e);
  return out;
}

// name of each "M" event called `metadata` -> (pid, tid) -> args.name
std::map<std::pair<int, int>, std::string> metadata_names(const json& root, const std::string& metadata) {
  std::map<std::pair<int, int>, std::string> names;
  for (const auto& e : events_with_phase(root, "M"))
    if (e.at("name") == metadata)
      names[{e.at("pid").get<int>(), e.at("tid").get<int>()}] = e.at("args").at("name").get<std::string>();
  return names;
}

TEST(ChromeTraceTest, CompleteEventsCarryEveryField) {
  Trace trace = sample_trace("measured");
  json root = json::parse(chrome_trace_json(trace));
  ASSERT_TRUE(root.is_object());
  ASSERT_TRUE(root.at("traceEvents").is_array());
  EXPECT_EQ(root.at("displayTimeUnit"), "ms");
  auto complete = events_with_phase(root, "X");
  ASSERT_EQ(complete.size(), trace.events.size());
  for (size_t i = 0; i < complete.size(); ++i) {
    const json& e = complete[i];
    const TraceEvent& want = trace.events[i];
    EXPECT_EQ(e.at("name"), want.name);
    EXPECT_EQ(e.at("cat"), want.category);
    EXPECT_DOUBLE_EQ(e.at("ts").get<double>(), want.start_us);
    EXPECT_DOUBLE_EQ(e.at("dur").get<double>(), want.duration_us);
    EXPECT_EQ(e.at("pid").get<int>(), want.device);
    EXPECT_EQ(e.at("tid").get<int>(), want.stream);
    EXPECT_EQ(e.at("args").at("op_name"), want.op_name);
    EXPECT_EQ(e.at("args").at("provider"), want.provider);
    EXPECT_EQ(e.at("args").at("node_index").get<int>(), want.node_index);
  }
}

TEST(ChromeTraceTest, ProcessesAndThreadsAreNamed) {
  json root = json::parse(chrome_trace_json(sample_trace("emulated")));
  auto processes = metadata_names(root, "process_name");
  ASSERT_EQ(processes.size(), 2u);
  EXPECT_EQ(processes.at({0, 0}), "cpu:0");
  EXPECT_EQ(processes.at({1, 0}), "emu:gpu (emulated)");
  auto threads = metadata_names(root, "thread_name");
  EXPECT_EQ(threads.size(), 3u) << "stream 0 of each device and stream 1 of the GPU";
  EXPECT_EQ(threads.at({0, 0}), "stream 0");
  EXPECT_EQ(threads.at({1, 0}), "stream 0");
  EXPECT_EQ(threads.at({1, 1}), "stream 1");
  for (const auto& e : events_with_phase(root, "M")) EXPECT_TRUE(e.at("args").is_object());
}

TEST(ChromeTraceTest, KindIsLabelled) {
  for (const char* kind : {"measured", "emulated", "simulated"}) {
    json root = json::parse(chrome_trace_json(sample_trace(kind)));
    EXPECT_EQ(root.at("otherData").at("kind"), kind);
    EXPECT_DOUBLE_EQ(root.at("otherData").at("makespan_us").get<double>(), 250);
  }
  // A simulated trace says so on every device track, once.
  Trace simulated = sample_trace("simulated");
  simulated.devices[1] = "emu:gpu (simulated)";
  auto processes = metadata_names(json::parse(chrome_trace_json(simulated)), "process_name");
  EXPECT_EQ(processes.at({0, 0}), "cpu:0 (simulated)");
  EXPECT_EQ(processes.at({1, 0}), "emu:gpu (simulated)");
  auto measured = metadata_names(json::parse(chrome_trace_json(sample_trace("measured"))), "process_name");
  EXPECT_EQ(measured.at({0, 0}), "cpu:0");
}

TEST(ChromeTraceTest, EmptyTraceIsValid) {
  Trace trace;
  json root = json::parse(chrome_trace_json(trace));
  EXPECT_TRUE(root.at("traceEvents").empty());
  EXPECT_EQ(root.at("otherData").at("kind"), "measured");
}

TEST(ChromeTraceTest, NamesThatAreNotUtf8StillGiveJson) {
  Trace trace = sample_trace("measured");
  trace.events[0].name = "Conv '\xff\xfe'";
  json root = json::parse(chrome_trace_json(trace));
  EXPECT_EQ(events_with_phase(root, "X").size(), 3u);
}

TEST(ChromeTraceTest, WritesTheFile) {
  auto path = std::filesystem::temp_directory_path() / fmt::format("hetsched_test_trace_{}.json", getpid());
  Trace trace = sample_trace("simulated");
  write_chrome_trace(trace, path.string());
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::filesystem::remove(path);
  EXPECT_EQ(json::parse(text.str()), json::parse(chrome_trace_json(trace)));
}

TEST(ChromeTraceTest, UnwritablePathIsAnIoError) {
  std::string path = (std::filesystem::temp_directory_path() / "hetsched_no_such_dir" / "trace.json").string();
  try {
    write_chrome_trace(sample_trace("measured"), path);
    ADD_FAILURE() << "wrote into a missing folder";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_THAT(e.what(), HasSubstr(path));
    EXPECT_THAT(e.what(), HasSubstr("cannot write trace"));
  }
}

}  // namespace
}  // namespace hetsched
