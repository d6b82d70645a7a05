// Resource limits (docs/reliability.md): memory that cannot be had — a
// tensor, a CPU program's arena or a folded constant larger than the machine,
// or an allocation over an address-space limit — is ErrorCode::kResource
// with the bytes requested and what they were for, never a crash.
#include <cstdlib>
#include <filesystem>
#include <future>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "cli_test_util.h"
#include "core/allocation.h"
#include "hetsched/session.h"
#include "onnx_model_util.h"

namespace hetsched {
namespace {

namespace fs = std::filesystem;
using testing::make_model;
using testing::int64_tensor;
using testing::make_node;
using testing::tensor_info;

constexpr int64_t kHuge = int64_t{1} << 20;  // [kHuge, kHuge] float: 4 TiB
const std::string kHugeBytes = "4398046511104 bytes (4.0 TiB)";

// x[1,1] -> Expand to [rows, cols] -> `reduce` -> y[1,1]: a small model
// whose one intermediate value is as large as asked.
onnx::ModelProto expand_model(int64_t rows, int64_t cols, const std::string& reduce = "ReduceSum") {
  onnx::ModelProto m = make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto_DataType_FLOAT, {1, 1});
  *g->add_output() = tensor_info("y", onnx::TensorProto_DataType_FLOAT, {1, 1});
  *g->add_initializer() = int64_tensor("shape", {rows, cols});
  *g->add_node() = make_node("Expand", {"x", "shape"}, {"big"}, "expand");
  *g->add_node() = make_node(reduce, {"big"}, {"y"}, "reduce");
  return m;
}

Graph load_proto(const onnx::ModelProto& m, const std::string& tag) {
  fs::path dir = testing::temp_dir(tag);
  testing::write_model(m, dir / "model.onnx");
  Graph graph = load_model((dir / "model.onnx").string());
  fs::remove_all(dir);
  return graph;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// `hetsched run MODEL --devices cpu:0` with its address space limited to
// `kib` KiB (RLIMIT_AS, set by the shell's ulimit before it execs the CLI).
testing::CliResult run_cli_under_address_limit(const std::string& model, long kib) {
  return testing::run_shell(
      fmt::format("ulimit -v {} && exec {} run {} --devices cpu:0 -n 1 -w 0 2>&1", kib, HETSCHED_CLI, model));
}

TEST(ResourceLimits, ATensorLargerThanMemoryIsRefusedWithItsSize) {
  ASSERT_GT(physical_memory_bytes(), 0u);
  try {
    Tensor t(DType::kFloat32, {kHuge, kHuge});
    FAIL() << "a 4 TiB tensor was allocated";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kResource);
    EXPECT_TRUE(contains(e.what(), "cannot allocate " + kHugeBytes + " for a float32 tensor of shape 1048576x1048576: "
                                   "more than this machine's " + format_bytes(physical_memory_bytes()) + " of memory"))
        << e.what();
  }
  // Sizes whose byte count overflows are refused before any arithmetic wraps.
  try {
    Tensor t(DType::kInt64, {int64_t{1} << 31, int64_t{1} << 31});
    FAIL() << "a tensor of 2^65 bytes was allocated";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kResource);
    EXPECT_TRUE(contains(e.what(), "too large")) << e.what();
  }
}

TEST(ResourceLimits, AnInjectedAllocationFailureHitsOnlyTheNextAllocationOnItsThread) {
  fail_next_allocation_for_testing();
  // Another thread allocates as usual meanwhile.
  EXPECT_NO_THROW(std::async(std::launch::async, [] { Tensor(DType::kFloat32, {4, 4}); }).get());
  try {
    Tensor t(DType::kFloat32, {2, 3});
    FAIL() << "the injected allocation failure did not happen";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kResource);
    EXPECT_TRUE(contains(e.what(), "cannot allocate 24 bytes for a float32 tensor of shape 2x3")) << e.what();
  }
  EXPECT_NO_THROW(Tensor(DType::kFloat32, {2, 3}));
}

TEST(ResourceLimits, AnIntermediateLargerThanMemoryFailsTheArenaWithItsSize) {
  Graph graph = load_proto(expand_model(kHuge, kHuge), "huge_arena");
  try {
    Session session(graph, SessionOptions{"cpu:0"});
    FAIL() << "a 4 TiB arena was allocated";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kResource);
    EXPECT_TRUE(contains(e.what(), "on cpu:0: cannot allocate " + kHugeBytes + " for the arena")) << e.what();
    EXPECT_TRUE(contains(e.what(), "more than this machine's")) << e.what();
  }
}

TEST(ResourceLimits, AnIntermediateLargerThanMemoryFailsTheReferenceRunWithItsSize) {
  Graph graph = load_proto(expand_model(kHuge, kHuge), "huge_reference");
  Session session(graph, SessionOptions{"cpu:0", true});
  TensorMap inputs = session.random_inputs(1);
  try {
    session.run(inputs);
    FAIL() << "a 4 TiB intermediate was allocated";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kResource);
    EXPECT_TRUE(contains(e.what(), "Expand 'expand': cannot allocate " + kHugeBytes)) << e.what();
  }
  // The session stays usable: the same graph with a small intermediate runs.
  Graph small = load_proto(expand_model(4, 5), "small_reference");
  Session again(small, SessionOptions{"cpu:0", true});
  TensorMap out = again.run(inputs);
  EXPECT_FLOAT_EQ(out.at("y").data<float>()[0], 20 * inputs.at("x").data<float>()[0]);
}

TEST(ResourceLimits, AConstantLargerThanMemoryIsNotFoldedAndFailsTheSessionWithItsSize) {
  // ConstantOfShape of a constant shape is folded at load unless its output
  // would be far larger than its inputs (optimize.cpp): then it is left to
  // run time, where the memory it needs is an error with the size.
  onnx::ModelProto m = make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto_DataType_FLOAT, {1, 1});
  *g->add_output() = tensor_info("y", onnx::TensorProto_DataType_FLOAT, {1, 1});
  *g->add_initializer() = int64_tensor("shape", {kHuge, kHuge});
  *g->add_node() = make_node("ConstantOfShape", {"shape"}, {"big"}, "fill");
  *g->add_node() = make_node("ReduceSum", {"big"}, {"s"}, "sum");
  *g->add_node() = make_node("Add", {"s", "x"}, {"y"}, "add");
  Graph graph = load_proto(m, "huge_constant");
  EXPECT_FALSE(graph.values[graph.find_value("big")].is_constant()) << "a 4 TiB constant was folded";
  try {
    Session session(graph, SessionOptions{"cpu:0"});
    FAIL() << "a 4 TiB intermediate was allocated";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kResource);
    EXPECT_TRUE(contains(e.what(), "on cpu:0: cannot allocate")) << e.what();
    EXPECT_TRUE(contains(e.what(), "the largest " + kHugeBytes)) << e.what();
  }
}

TEST(ResourceLimits, FoldingTheShapeOfAHugeInputAllocatesNothing) {
  // Shape reads only the input's dims: folding it must not allocate the input.
  onnx::ModelProto m = make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto_DataType_FLOAT, {kHuge, kHuge});
  *g->add_output() = tensor_info("s", onnx::TensorProto_DataType_INT64, {2});
  *g->add_node() = make_node("Shape", {"x"}, {"s"}, "shape");
  Graph graph = load_proto(m, "huge_shape");
  ValueId s = graph.find_value("s");
  ASSERT_NE(s, kNoValue);
  ASSERT_TRUE(graph.values[s].is_constant());
  EXPECT_EQ(graph.values[s].initializer->to_int64_vector(), (std::vector<int64_t>{kHuge, kHuge}));
}

TEST(ResourceLimits, AnAddressSpaceLimitFailsTheCliCleanlyWithTheSize) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "the sanitizers reserve terabytes of address space: no address-space limit can apply";
#endif
  // A 4 GiB intermediate (less than most machines' memory, so that the
  // allocation itself is tried) under a 1.5 GiB address-space limit. (ReduceMax
  // runs on oneDNN with no constant operand: the arena is the one large
  // allocation.)
  fs::path dir = testing::temp_dir("rlimit");
  testing::write_model(expand_model(int64_t{1} << 15, int64_t{1} << 15, "ReduceMax"), dir / "model.onnx");
  if (physical_memory_bytes() <= (size_t{4} << 30)) GTEST_SKIP() << "needs more than 4 GiB of memory";
  testing::write_model(expand_model(4, 5, "ReduceMax"), dir / "small.onnx");
  // The limit leaves the CLI room enough for a small model...
  auto small = run_cli_under_address_limit((dir / "small.onnx").string(), 1536 * 1024);
  EXPECT_EQ(small.exit_code, 0) << small.output;
  // ... and not for a 4 GiB arena.
  auto r = run_cli_under_address_limit((dir / "model.onnx").string(), 1536 * 1024);
  fs::remove_all(dir);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "hetsched: error: ")) << r.output;
  EXPECT_TRUE(contains(r.output, "on cpu:0: cannot allocate 4294967296 bytes (4.0 GiB) for the arena")) << r.output;
  EXPECT_TRUE(contains(r.output, "address-space limit")) << r.output;
}

}  // namespace
}  // namespace hetsched
