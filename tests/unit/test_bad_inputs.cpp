// Bad input at every entry point of the CLI, run for real: each is refused
// with exit code 1 (2 for a usage error) and exactly one line on stderr,
// "hetsched: error: ", that names the file, node or field and says what was
// expected; nothing crashes or hangs, nothing succeeds silently, and a
// refused command leaves none of the outputs it was asked for. The table of
// cases is docs/reliability.md's.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include "hetsched/plan.h"
#include "hetsched/platform.h"
#include "hetsched/session.h"
#include "hetsched/tensor_io.h"
#include "onnx_model_util.h"
#include "plan/plan_builder.h"

namespace hetsched {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using namespace hetsched::testing;

struct Outcome {
  int exit_code = -1;  // 124: it hung (stopped by timeout); 128 + N: killed by signal N
  std::string out, err;
};

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// `hetsched ARGS` run inside `dir` (so messages name files as the user typed
// them), with stdout and stderr kept apart (cli_test_util.h's run_cli joins
// them) and its own profile cache.
Outcome run_in(const fs::path& dir, const std::string& args) {
  std::string cmd = fmt::format("cd '{}' && XDG_CACHE_HOME='{}' timeout 60 {} {} >cli.stdout 2>cli.stderr",
                                dir.string(), (dir / "cache").string(), HETSCHED_CLI, args);
  int status = std::system(cmd.c_str());
  Outcome o;
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  o.out = read_text(dir / "cli.stdout");
  o.err = read_text(dir / "cli.stderr");
  fs::remove(dir / "cli.stdout");
  fs::remove(dir / "cli.stderr");
  return o;
}

// The one error line, or "" (with a failure) when stderr is anything else.
std::string the_error_line(const Outcome& o) {
  const std::string prefix = "hetsched: error: ";
  bool one_line = !o.err.empty() && o.err.back() == '\n' && o.err.find('\n') == o.err.size() - 1;
  EXPECT_TRUE(one_line && o.err.rfind(prefix, 0) == 0)
      << "expected exactly one line starting with '" << prefix << "' on stderr, got:\n"
      << o.err;
  return one_line ? o.err.substr(0, o.err.size() - 1) : "";
}

// ---------------------------------------------------------------- bad files

constexpr const char* kPlatform = R"({
  "name": "bad-inputs",
  "devices": [
    {"name": "host", "kind": "cpu", "streams": 1, "peak_gflops": 10, "bandwidth_gbps": 10, "launch_overhead_us": 2},
    {"name": "acc", "kind": "gpu", "memory_space": "acc-mem", "streams": 2, "peak_gflops": 100,
     "bandwidth_gbps": 50, "launch_overhead_us": 5}
  ],
  "links": [{"from": "host", "to": "acc-mem", "latency_us": 5, "bandwidth_gbps": 8, "bidirectional": true}]
})";

constexpr const char* kDag = R"({"devices": ["p1", "p2"],
  "tasks": [{"id": "a", "cost": [1, 2]}, {"id": "b", "cost": [3, 4]}],
  "edges": [{"from": "a", "to": "b"}]})";

void write_text(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

std::string random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string bytes(n, '\0');
  for (char& c : bytes) c = static_cast<char>(rng() & 0xff);
  return bytes;
}

std::string serialized(const onnx::ModelProto& m) {
  std::string bytes;
  m.SerializeToString(&bytes);
  return bytes;
}

onnx::AttributeProto ints_attribute(const std::string& name, const std::vector<int64_t>& values) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a.add_ints(v);
  return a;
}

// relu_add_model() with its bias in external data at `location`.
onnx::ModelProto external_bias_model(const std::string& location) {
  auto m = relu_add_model();
  auto* t = m.mutable_graph()->mutable_initializer(0);
  t->clear_float_data();
  t->set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);
  auto* kv = t->add_external_data();
  kv->set_key("location");
  kv->set_value(location);
  kv = t->add_external_data();
  kv->set_key("length");
  kv->set_value("12");
  return m;
}

// A .npy file with this header text and no data after it.
std::string npy_header_only(const std::string& header) {
  std::string text = header + "\n";
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(text.size() & 0xff);
  out += static_cast<char>(text.size() >> 8);
  return out + text;
}

// Every bad file of the table, made from valid ones, in one folder per
// process (ctest runs each case in its own process).
void make_bad_files(const fs::path& dir) {
  // Models.
  std::string good = serialized(relu_add_model());
  write_text(dir / "good.onnx", good);
  {  // its batch dim free, named
    onnx::ModelProto free = relu_add_model();
    auto* dim = free.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0);
    dim->set_dim_param("batch");
    write_text(dir / "free.onnx", serialized(free));
  }
  write_text(dir / "empty.onnx", "");
  fs::create_directories(dir / "folder.onnx");
  const std::pair<const char*, size_t> cuts[] = {{"1_byte", 1},
                                                 {"10_bytes", 10},
                                                 {"quarter", good.size() / 4},
                                                 {"half", good.size() / 2},
                                                 {"all_but_1_byte", good.size() - 1}};
  for (auto [name, n] : cuts) write_text(dir / fmt::format("cut_{}.onnx", name), good.substr(0, n));
  write_text(dir / "random.onnx", random_bytes(1000, 42));

  auto unknown_op = relu_add_model();
  unknown_op.mutable_graph()->mutable_node(0)->set_op_type("FancyOp");
  write_model(unknown_op, dir / "unknown_op.onnx");

  auto cycle = relu_add_model();  // relu reads y2, add writes it: relu -> add -> relu
  cycle.mutable_graph()->mutable_node(0)->set_input(0, "y2");
  cycle.mutable_graph()->mutable_node(1)->set_output(0, "y2");
  *cycle.mutable_graph()->add_node() = make_node("Identity", {"y2"}, {"y"}, "id");
  write_model(cycle, dir / "cycle.onnx");

  auto no_init = relu_add_model();
  no_init.mutable_graph()->clear_initializer();
  write_model(no_init, dir / "no_initializer.onnx");

  auto bad_shape = relu_add_model();  // bias [4] against x [2,3]
  *bad_shape.mutable_graph()->mutable_initializer(0) = float_tensor("bias", {4}, {1, 2, 3, 4});
  write_model(bad_shape, dir / "bad_shape.onnx");

  auto old_opset = relu_add_model();
  old_opset.mutable_opset_import(0)->set_version(5);
  write_model(old_opset, dir / "old_opset.onnx");

  // Conv whose kernel_shape (5x5) is not its weights' (3x3).
  auto conv = make_model();
  auto* g = conv.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto_DataType_FLOAT, {1, 3, 8, 8});
  *g->add_output() = tensor_info("y", onnx::TensorProto_DataType_FLOAT, {1, 4, 4, 4});
  *g->add_initializer() = float_tensor("W", {4, 3, 3, 3}, std::vector<float>(108, 0.5f));
  auto* node = g->add_node();
  *node = make_node("Conv", {"x", "W"}, {"y"}, "conv");
  *node->add_attribute() = ints_attribute("kernel_shape", {5, 5});
  write_model(conv, dir / "conv_attr.onnx");

  // A model already in the QDQ format: x -> QuantizeLinear -> DequantizeLinear -> y.
  auto qdq = make_model(13);
  auto* qg = qdq.mutable_graph();
  *qg->add_input() = tensor_info("x", onnx::TensorProto_DataType_FLOAT, {2, 3});
  *qg->add_output() = tensor_info("y", onnx::TensorProto_DataType_FLOAT, {2, 3});
  *qg->add_initializer() = float_tensor("scale", {}, {0.1f});
  *qg->add_node() = make_node("QuantizeLinear", {"x", "scale"}, {"q"}, "quantize");
  *qg->add_node() = make_node("DequantizeLinear", {"q", "scale"}, {"y"}, "dequantize");
  write_model(qdq, dir / "qdq.onnx");

  auto attr_type = relu_add_model();  // LeakyRelu's alpha as a string
  auto* leaky = attr_type.mutable_graph()->mutable_node(0);
  leaky->set_op_type("LeakyRelu");
  auto* alpha = leaky->add_attribute();
  alpha->set_name("alpha");
  alpha->set_type(onnx::AttributeProto::STRING);
  alpha->set_s("big");
  write_model(attr_type, dir / "attr_type.onnx");

  fs::create_directories(dir / "models");
  write_model(external_bias_model("../../etc/passwd"), dir / "models" / "ext_escape.onnx");
  write_model(external_bias_model("/etc/passwd"), dir / "models" / "ext_absolute.onnx");
  write_model(external_bias_model("absent.bin"), dir / "models" / "ext_missing.onnx");
  fs::create_directories(dir / "models" / "weights");
  write_model(external_bias_model("weights"), dir / "models" / "ext_folder.onnx");

  // Inputs for good.onnx's x (float32 2x3).
  write_npy((dir / "x_shape.npy").string(), Tensor(DType::kFloat32, {3, 3}));
  write_npy((dir / "x_dtype.npy").string(), Tensor(DType::kInt64, {2, 3}));
  write_tensor_pb((dir / "x_shape.pb").string(), Tensor(DType::kFloat32, {3, 2}), "x");
  write_text(dir / "x_junk.npy", "not numpy");
  std::string npy = read_text(dir / "x_shape.npy");
  write_text(dir / "x_short.npy", npy.substr(0, npy.size() - 10));
  // Headers that ask for more than any file holds: nothing may be allocated for them.
  write_text(dir / "x_huge.npy",
             npy_header_only("{'descr': '<f4', 'fortran_order': False, 'shape': (100000000000, 100000000000), }"));
  write_text(dir / "x_overflow.npy",
             npy_header_only("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999, 3), }"));
  write_text(dir / "x_no_data.npy",
             npy_header_only("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 30000000000), }"));
  write_text(dir / "x_junk.pb", random_bytes(300, 7));
  onnx::TensorProto no_data;  // dims of 4 TB and no values
  no_data.set_name("x");
  no_data.set_data_type(onnx::TensorProto_DataType_FLOAT);
  no_data.add_dims(1 << 20);
  no_data.add_dims(1 << 20);
  write_text(dir / "x_no_data.pb", no_data.SerializeAsString());
  no_data.add_dims(int64_t{1} << 40);
  write_text(dir / "x_huge.pb", no_data.SerializeAsString());
  write_text(dir / "x.txt", "1 2 3");

  // Platforms.
  write_text(dir / "platform.json", kPlatform);
  write_text(dir / "platform_garbage.json", "garbage");
  write_text(dir / "platform_cut.json", std::string(kPlatform).substr(0, 100));
  write_text(dir / "platform_random.json", random_bytes(500, 3));
  write_text(dir / "platform_typo.json",
             R"({"name": "x", "devices": [{"name": "a", "kind": "cpu", "peak_gflop": 1, "bandwidth_gbps": 1}]})");

  // Plans: a valid one for good.onnx on platform.json, then broken copies.
  Graph graph = load_model((dir / "good.onnx").string());
  graph.source = "good.onnx";
  Platform platform = make_platform("", (dir / "platform.json").string());
  std::vector<LaunchAssignment> launches;
  for (auto& unit : fusion_units(graph)) launches.push_back({unit, 0, 0, "test"});
  write_plan_file(build_plan(graph, platform, launches, "sequential"), graph, (dir / "plan.json").string());
  std::string plan = read_text(dir / "plan.json");
  write_text(dir / "plan_garbage.json", "garbage");
  write_text(dir / "plan_random.json", random_bytes(500, 5));
  write_text(dir / "plan_cut.json", plan.substr(0, plan.size() / 2));
  std::string unknown_node = plan;
  for (size_t at = unknown_node.find("\"relu\""); at != std::string::npos; at = unknown_node.find("\"relu\""))
    unknown_node.replace(at, 6, "\"nosuch\"");
  write_text(dir / "plan_unknown_node.json", unknown_node);
  auto other = relu_add_model();  // one more node: another graph
  other.mutable_graph()->mutable_node(1)->set_output(0, "s");
  *other.mutable_graph()->add_node() = make_node("Sigmoid", {"s"}, {"y"}, "sigmoid");
  write_model(other, dir / "other.onnx");
  Graph other_graph = load_model((dir / "other.onnx").string());
  launches.clear();
  for (auto& unit : fusion_units(other_graph)) launches.push_back({unit, 0, 0, "test"});
  write_plan_file(build_plan(other_graph, platform, launches, "sequential"), other_graph,
                  (dir / "plan_other_model.json").string());

  // Task graphs.
  write_text(dir / "dag.json", kDag);
  write_text(dir / "dag_garbage.json", random_bytes(200, 9));
  std::string dag_cycle = kDag;
  dag_cycle.replace(dag_cycle.find(R"([{"from": "a", "to": "b"}])"), 26,
                    R"([{"from": "a", "to": "b"}, {"from": "b", "to": "a"}])");
  write_text(dir / "dag_cycle.json", dag_cycle);

  fs::create_directories(dir / "db_folder");
  write_text(dir / "a_file", "");
  fs::create_directories(dir / "platforms_bad");
  write_text(dir / "platforms_bad" / "garbage.json", "garbage");
}

// ---------------------------------------------------------------- the table

struct BadInput {
  const char* name;                  // the case, as the test's name
  const char* args;                  // hetsched's arguments, run in the folder of bad files
  int exit_code;                     // 1, or 2 for a usage error
  std::vector<const char*> names;    // what the line must name: the file, node or field
  const char* expected;              // a key phrase of what was expected
  std::vector<const char*> outputs;  // the outputs asked for: none may exist afterwards
};

void PrintTo(const BadInput& c, std::ostream* os) { *os << c.name; }

// Emulated devices only, and a private profile database: no calibration.
#define EMU "--platform platform.json --db profile.db "

const BadInput kBadInputs[] = {
    // ONNX model files.
    {"onnx_missing", "run absent.onnx --output-dir out", 1, {"absent.onnx"}, "no such file", {"out"}},
    {"onnx_folder", "run folder.onnx", 1, {"folder.onnx"}, "is a directory, not a model file", {}},
    {"onnx_empty", "plan empty.onnx " EMU "-o out.json", 1, {"empty.onnx"}, "file is empty", {"out.json"}},
    {"onnx_truncated_1_byte", "run cut_1_byte.onnx --output-dir out", 1, {"cut_1_byte.onnx"},
     "not a valid ONNX model", {"out"}},
    {"onnx_truncated_10_bytes", "run cut_10_bytes.onnx", 1, {"cut_10_bytes.onnx"}, "not a valid ONNX model", {}},
    {"onnx_truncated_quarter", "export cut_quarter.onnx -o out.onnx", 1, {"cut_quarter.onnx"},
     "not a valid ONNX model", {"out.onnx"}},
    {"onnx_truncated_half", "simulate cut_half.onnx " EMU "--json out.json", 1, {"cut_half.onnx"},
     "not a valid ONNX model", {"out.json"}},
    {"onnx_truncated_all_but_1_byte", "run cut_all_but_1_byte.onnx", 1, {"cut_all_but_1_byte.onnx"},
     "not a valid ONNX model", {}},
    {"onnx_random_bytes", "run random.onnx --output-dir out", 1, {"random.onnx"}, "not a valid ONNX model", {"out"}},
    {"onnx_unknown_op", "plan unknown_op.onnx " EMU "-o out.json", 1, {"unknown_op.onnx", "'relu'"},
     "unknown op 'FancyOp' (not in ONNX opset 17)", {"out.json"}},
    {"onnx_old_opset", "run old_opset.onnx", 1, {"old_opset.onnx"}, "op Relu of opset 5 differs from its opset 7 form", {}},
    {"onnx_cycle", "run cycle.onnx --output-dir out", 1, {"cycle.onnx", "node"}, "has a cycle", {"out"}},
    {"onnx_missing_initializer", "run no_initializer.onnx", 1, {"no_initializer.onnx", "'bias'", "'add'"},
     "missing initializer", {}},
    {"onnx_mismatched_shapes", "run bad_shape.onnx", 1, {"bad_shape.onnx", "add"}, "shape inference", {}},
    {"onnx_mismatched_attribute", "plan conv_attr.onnx " EMU "-o out.json", 1, {"conv_attr.onnx", "conv"},
     "kernel_shape 5x5 does not match W's shape 4x3x3x3", {"out.json"}},
    {"onnx_attribute_of_wrong_type", "run attr_type.onnx", 1, {"attr_type.onnx", "alpha"}, "ONNX checker", {}},
    {"onnx_external_data_escaping", "run models/ext_escape.onnx --output-dir out", 1,
     {"models/ext_escape.onnx", "initializer 'bias'", "'../../etc/passwd'"}, "leaves the model's folder", {"out"}},
    {"onnx_external_data_absolute", "run models/ext_absolute.onnx", 1,
     {"models/ext_absolute.onnx", "initializer 'bias'", "'/etc/passwd'"}, "must be relative to the model's folder",
     {}},
    {"onnx_external_data_missing", "run models/ext_missing.onnx", 1,
     {"models/ext_missing.onnx", "initializer 'bias'", "'absent.bin'"}, "cannot be opened", {}},
    {"onnx_external_data_folder", "run models/ext_folder.onnx", 1,
     {"models/ext_folder.onnx", "initializer 'bias'", "'weights'"}, "is not a regular file", {}},

    // Input tensors (run --input).
    {"input_wrong_shape_npy", "run good.onnx --input x=x_shape.npy --output-dir out --json out.json", 1,
     {"--input x", "x_shape.npy"}, "expected float32 2x3, got float32 3x3", {"out", "out.json"}},
    {"input_wrong_dtype_npy", "run good.onnx --input x=x_dtype.npy --output-dir out", 1, {"--input x", "x_dtype.npy"},
     "expected float32 2x3, got int64 2x3", {"out"}},
    {"input_wrong_shape_pb", "run good.onnx --input x=x_shape.pb --output-dir out", 1, {"--input x", "x_shape.pb"},
     "expected float32 2x3, got float32 3x2", {"out"}},
    {"input_not_npy", "run good.onnx --input x=x_junk.npy --output-dir out", 1, {"x_junk.npy"},
     "not a valid .npy file", {"out"}},
    {"input_truncated_npy", "run good.onnx --input x=x_short.npy", 1, {"x_short.npy"},
     "data is shorter than the 36 bytes that float32 3x3 needs", {}},
    {"input_npy_shape_too_large", "run good.onnx --input x=x_huge.npy", 1, {"x_huge.npy"}, "is too large", {}},
    {"input_npy_dim_overflows", "run good.onnx --input x=x_overflow.npy", 1, {"x_overflow.npy"}, "is too large", {}},
    {"input_npy_header_without_data", "run good.onnx --input x=x_no_data.npy", 1, {"x_no_data.npy"},
     "data is shorter than the 240000000000 bytes", {}},
    {"input_random_bytes_pb", "run good.onnx --input x=x_junk.pb --output-dir out", 1, {"x_junk.pb"}, "", {"out"}},
    {"input_pb_without_data", "run good.onnx --input x=x_no_data.pb", 1, {"x_no_data.pb"},
     "float_data holds 0 values", {}},
    {"input_pb_shape_too_large", "run good.onnx --input x=x_huge.pb", 1, {"x_huge.pb"}, "is too large", {}},
    {"input_missing_file", "run good.onnx --input x=absent.npy --output-dir out", 1, {"absent.npy"},
     "cannot open for reading", {"out"}},
    {"input_unknown_file_type", "run good.onnx --input x=x.txt", 2, {"x.txt"}, "expected .npy or .pb", {}},
    {"input_unknown_name", "run good.onnx --input nope=x_shape.npy", 2, {"--input nope"}, "no input 'nope'", {}},
    {"input_without_name", "run good.onnx --input x_shape.npy", 2, {"--input 'x_shape.npy'"}, "expected NAME=FILE",
     {}},

    // Plan files.
    {"plan_garbage", "run good.onnx " EMU "--plan plan_garbage.json --output-dir out", 1, {"plan_garbage.json"},
     "not a JSON plan", {"out"}},
    {"plan_random_bytes", "simulate good.onnx " EMU "--plan plan_random.json --json out.json", 1,
     {"plan_random.json"}, "not a JSON plan", {"out.json"}},
    {"plan_truncated", "explain plan_cut.json good.onnx --platform platform.json --db profile.db", 1,
     {"plan_cut.json"}, "not a JSON plan", {}},
    {"plan_unknown_node", "run good.onnx " EMU "--plan plan_unknown_node.json", 1,
     {"plan_unknown_node.json", "field 'lanes[0].steps[0].launch[0]'"}, "the model has no node 'nosuch'", {}},
    {"plan_for_another_model", "run good.onnx " EMU "--plan plan_other_model.json --output-dir out", 1,
     {"plan_other_model.json", "field 'model_hash'"}, "the plan was made for another graph", {"out"}},
    {"plan_for_another_platform", "run good.onnx --devices cpu --db profile.db --plan plan.json --output-dir out", 1,
     {"plan.json"}, "made for another platform", {"out"}},
    {"plan_missing", "simulate good.onnx " EMU "--plan absent.json", 1, {"absent.json"},
     "cannot read the plan file", {}},

    // Platform files.
    {"platform_garbage", "run good.onnx --platform platform_garbage.json --output-dir out", 1,
     {"platform_garbage.json"}, "not valid JSON", {"out"}},
    {"platform_truncated", "plan good.onnx --platform platform_cut.json -o out.json", 1, {"platform_cut.json"},
     "not valid JSON", {"out.json"}},
    {"platform_random_bytes", "simulate good.onnx --platform platform_random.json", 1, {"platform_random.json"},
     "not valid JSON", {}},
    {"platform_unknown_key", "run good.onnx --platform platform_typo.json", 1,
     {"platform_typo.json", "devices[0].peak_gflop"}, "unknown key (expected one of name, kind", {}},
    {"platform_folder_with_garbage", "ops --markdown --platforms platforms_bad", 1, {"platforms_bad/garbage.json"},
     "not valid JSON", {}},
    {"platform_missing", "run good.onnx --platform absent.json", 1, {"absent.json"}, "cannot read platform file", {}},

    // Device specs.
    {"devices_unknown_kind", "run good.onnx --devices gpu:0 --output-dir out", 2, {"--devices 'gpu:0'"},
     "unknown device kind 'gpu' (expected cpu, cpu:CORES, emu:NAME or cuda:N", {"out"}},
    {"devices_missing_core", "plan good.onnx --devices cpu:4096 -o out.json", 2, {"--devices 'cpu:4096'"},
     "core 4096 does not exist", {"out.json"}},
    {"devices_unknown_emulated", "run good.onnx --devices emu:nope --platform platform.json", 2,
     {"--devices 'emu:nope'", "platform.json"}, "is not a device of", {}},
    {"devices_emulated_without_platform", "run good.onnx --devices emu:acc", 2, {"--devices 'emu:acc'"},
     "needs --platform FILE", {}},

    // Commands that plan need fixed shapes (`run` compiles each at its first run).
    {"free_dims_plan", "plan free.onnx " EMU "--scheduler heft -o out.json", 2, {"free.onnx", "x: [batch, 3]"},
     "give them with --shape NAME=DIMS", {"out.json"}},
    {"free_dims_compare", "compare free.onnx --devices cpu:0 --report out", 2, {"free.onnx", "x: [batch, 3]"},
     "`hetsched compare` works on fixed shapes", {"out"}},

    // Scheduler names.
    {"scheduler_unknown_run", "run good.onnx --scheduler fastest --output-dir out", 2, {"'fastest'"},
     "unknown scheduler 'fastest' (known: ", {"out"}},
    {"scheduler_unknown_plan", "plan good.onnx " EMU "--scheduler fastest -o out.json", 2, {"'fastest'"},
     "unknown scheduler 'fastest' (known: ", {"out.json"}},
    {"scheduler_unknown_simulate", "simulate good.onnx " EMU "--scheduler fastest --json out.json", 2, {"'fastest'"},
     "unknown scheduler 'fastest' (known: ", {"out.json"}},
    {"scheduler_unknown_compare", "compare good.onnx " EMU "--schedulers heft,fastest --report report --json out.json",
     2, {"'fastest'"}, "unknown scheduler 'fastest' (known: ", {"report", "out.json"}},
    {"scheduler_unknown_schedule_dag", "schedule-dag dag.json --scheduler magic --json out.json", 2, {"'magic'"},
     "(task-graph schedulers: heft, optimal, peft)", {"out.json"}},

    // Task graph files (schedule-dag).
    {"dag_random_bytes", "schedule-dag dag_garbage.json --json out.json", 1, {"dag_garbage.json"}, "not valid JSON",
     {"out.json"}},
    {"dag_cycle", "schedule-dag dag_cycle.json --json out.json", 1, {"dag_cycle.json", "edges"}, "form a cycle",
     {"out.json"}},
    {"dag_missing", "schedule-dag absent.json", 1, {"absent.json"}, "cannot read the task graph file", {}},

    // --pin.
    {"pin_malformed", "run good.onnx --pin Relu", 2, {"--pin 'Relu'"}, "expected NODE_OR_OP=DEVICE", {}},
    {"pin_unknown_node", "plan good.onnx " EMU "--pin Nope=emu:host -o out.json", 2, {"--pin Nope=emu:host"},
     "the model has no node or op type 'Nope'", {"out.json"}},
    {"pin_unknown_device", "run good.onnx " EMU "--scheduler heft --pin Relu=emu:gpu", 2, {"--pin Relu=emu:gpu"},
     "no device 'emu:gpu' (the devices are emu:host, emu:acc)", {}},

    // --shape and --param.
    {"shape_malformed", "run good.onnx --shape x=2by3", 2, {"--shape 'x=2by3'"}, "expected NAME=DIMS", {}},
    {"shape_unknown_input", "run good.onnx --shape nope=2x3", 2, {"--shape nope"}, "no input 'nope' (inputs: x)", {}},
    {"shape_wrong_rank", "run good.onnx --shape x=2x3x4", 2, {"--shape x"}, "the model's input has rank 2", {}},
    {"shape_against_fixed_dim", "export good.onnx --shape x=5x3 -o out.onnx", 2, {"--shape x"},
     "dim 0 is fixed to 2 in the model, got 5", {"out.onnx"}},
    {"param_malformed", "run zoo:bert --param layers", 2, {"--param 'layers'"}, "expected KEY=VALUE", {}},
    {"param_for_a_file_model", "run good.onnx --param layers=2", 2, {"--param 'layers=2'", "good.onnx"},
     "parameters are for zoo:NAME models only", {}},
    {"param_unknown_key", "run zoo:bert --param nope=2", 2, {"zoo:bert", "'nope'"}, "accepted: layers", {}},
    {"param_bad_value", "run zoo:bert --param layers=abc", 2, {"zoo:bert", "'layers'"}, "must be an integer in [1, 48]",
     {}},
    {"zoo_unknown_model", "export zoo:nosuch -o out.onnx", 2, {"'nosuch'"}, "known models: ", {"out.onnx"}},

    // Outputs that cannot be written: refused before anything runs.
    {"output_dir_is_a_file", "run good.onnx --output-dir a_file --json out.json", 1, {"--output-dir a_file"},
     "exists and is not a folder", {"out.json"}},

    // Command lines CLI11 refuses.
    {"cli_unknown_flag", "run good.onnx --bogus", 2, {"--bogus"}, "not expected", {}},
    {"cli_missing_model", "run --output-dir out", 2, {"model"}, "is required", {"out"}},
    {"cli_not_a_number", "run good.onnx -n many --output-dir out", 2, {"--iterations", "many"}, "not in range 0 to",
     {"out"}},
    {"cli_unknown_command", "frobnicate good.onnx", 2, {"'frobnicate'"}, "unknown command", {}},
    {"cli_unknown_top_level_option", "--bogus", 2, {"'--bogus'"}, "(commands: run, ", {}},
    {"conformance_missing_folder", "conformance absent_suite", 1, {"absent_suite"}, "no such folder", {}},
    {"run_unknown_precision", "run good.onnx --precision float16 --output-dir out", 2, {"--precision", "float16"},
     "not in {", {"out"}},
    {"quantize_already_quantized", "quantize qdq.onnx -o out.onnx", 1, {"qdq.onnx", "'quantize'"},
     "already quantized", {"out.onnx"}},
    {"quantize_unknown_method", "quantize good.onnx -o out.onnx --method kl", 2, {"--method", "kl"},
     "not in {minmax,percentile,entropy}", {"out.onnx"}},
    {"quantize_percentile_out_of_range", "quantize good.onnx -o out.onnx --method percentile --percentile 30", 2,
     {"--percentile", "30"}, "not in range", {"out.onnx"}},
    {"quantize_dynamic_with_method", "quantize good.onnx -o out.onnx --dynamic --method percentile", 2,
     {"--method"}, "its own data", {"out.onnx"}},
    {"quantize_calibration_without_file", "quantize good.onnx -o out.onnx --calibration x", 2, {"--calibration", "'x'"},
     "expected NAME=FILE", {"out.onnx"}},
    {"quantize_calibration_missing_file", "quantize good.onnx -o out.onnx --calibration x=absent.npy", 1,
     {"--calibration x", "absent.npy"}, "cannot open", {"out.onnx"}},
    {"quantize_calibration_wrong_shape", "quantize good.onnx -o out.onnx --calibration x=x_shape.npy", 1,
     {"calibration run 1", "'x'"}, "expected", {"out.onnx"}},
    {"quantize_nothing_to_quantize", "quantize good.onnx -o out.onnx", 1, {"good.onnx"},
     "no float32 Conv, MatMul or Gemm", {"out.onnx"}},
    {"quantize_dynamic_nothing_to_quantize", "quantize good.onnx -o out.onnx --dynamic", 1, {"good.onnx"},
     "no float32 MatMul", {"out.onnx"}},
    {"quantize_dynamic_with_calibration", "quantize good.onnx -o out.onnx --dynamic --calibration x=x.npy", 2,
     {"--calibration"}, "dynamic quantization", {"out.onnx"}},

    // Profile database: a path that cannot hold one (a corrupt file is
    // rebuilt instead: see BadProfileDatabase below).
    {"db_is_a_folder", "plan good.onnx --platform platform.json --db db_folder -o out.json", 1, {"db_folder"},
     "cannot open or create the profile database", {"out.json"}},
};

#undef EMU

// The folder of bad files, made once per process and removed at its exit.
const fs::path& bad_files() {
  struct Folder {
    fs::path path = temp_dir("bad_inputs");
    Folder() { make_bad_files(path); }
    ~Folder() { fs::remove_all(path); }
  };
  static const Folder folder;
  return folder.path;
}

class BadInputCli : public ::testing::TestWithParam<BadInput> {};

TEST_P(BadInputCli, RefusedWithOneLineAndNothingWritten) {
  const BadInput& c = GetParam();
  const fs::path& dir = bad_files();
  Outcome o = run_in(dir, c.args);
  EXPECT_EQ(o.exit_code, c.exit_code) << "hetsched " << c.args << "\nstdout:\n" << o.out << "stderr:\n" << o.err;
  std::string line = the_error_line(o);
  RecordProperty("error_line", line);  // --gtest_output=xml: the table's messages
  for (const char* name : c.names) EXPECT_THAT(line, HasSubstr(name)) << "the line must name it";
  EXPECT_THAT(line, HasSubstr(c.expected)) << "the line must say what was expected";
  for (const char* output : c.outputs) {
    EXPECT_FALSE(fs::exists(dir / output)) << output << " was written by a refused command";
    fs::remove_all(dir / output);
  }
}

INSTANTIATE_TEST_SUITE_P(Cli, BadInputCli, ::testing::ValuesIn(kBadInputs),
                         [](const ::testing::TestParamInfo<BadInput>& info) { return std::string(info.param.name); });

// A flipped byte may leave a valid model (a weight changed: ONNX files have
// no checksum), so a run may succeed; otherwise it is refused with one line
// naming the file. Never a crash, a hang or a usage error.
TEST(BadInputFlippedBytes, RunSucceedsOrRefusesWithOneLine) {
  const fs::path& dir = bad_files();
  std::string good = read_text(dir / "good.onnx");
  std::mt19937 rng(2024);
  int refused = 0;
  for (int i = 0; i < 16; ++i) {
    std::string bytes = good;
    size_t at = rng() % bytes.size();
    bytes[at] = static_cast<char>(bytes[at] ^ (1 << (rng() % 8)));
    write_text(dir / "flipped.onnx", bytes);
    Outcome o = run_in(dir, "run flipped.onnx --devices cpu -n 1 --output-dir flipped_out");
    SCOPED_TRACE(fmt::format("byte {} of {} flipped", at, bytes.size()));
    ASSERT_TRUE(o.exit_code == 0 || o.exit_code == 1) << "exit code " << o.exit_code << "\n" << o.err;
    if (o.exit_code == 0) {
      EXPECT_EQ(o.err, "");
    } else {
      ++refused;
      EXPECT_THAT(the_error_line(o), HasSubstr("flipped.onnx"));
      EXPECT_FALSE(fs::exists(dir / "flipped_out"));
    }
    fs::remove_all(dir / "flipped_out");
  }
  EXPECT_GT(refused, 0) << "no flip was refused: the test exercises nothing";
}

// ---------------------------------------------------------------- profile database

// A profile database that is not one (random bytes, another program's
// SQLite file) is a cache gone bad, not the user's input: it is moved aside
// with a warning and rebuilt, and the command goes on.
class BadProfileDatabase : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = temp_dir(std::string("bad_db_") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::copy_file(bad_files() / "good.onnx", dir_ / "good.onnx");
    fs::copy_file(bad_files() / "platform.json", dir_ / "platform.json");
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::vector<std::string> moved_aside() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir_))
      if (entry.path().filename().string().rfind("profile.db.broken-", 0) == 0)
        names.push_back(entry.path().filename().string());
    return names;
  }

  // The command succeeds with one warning naming the file and the reason.
  void expect_rebuilt(const std::string& args, const std::string& reason, uintmax_t old_size) {
    Outcome o = run_in(dir_, args);
    ASSERT_EQ(o.exit_code, 0) << o.out << o.err;
    EXPECT_EQ(o.err.find('\n'), o.err.size() - 1) << "one warning line:\n" << o.err;
    EXPECT_THAT(o.err, HasSubstr("hetsched: warning: profile.db: not a hetsched profile database (" + reason));
    EXPECT_THAT(o.err, HasSubstr("moved to profile.db.broken-"));
    auto moved = moved_aside();
    ASSERT_EQ(moved.size(), 1u);
    EXPECT_EQ(fs::file_size(dir_ / moved[0]), old_size) << "the old file is kept as it was";
    // The new one is a good database: no warning the next time.
    Outcome again = run_in(dir_, args);
    EXPECT_EQ(again.exit_code, 0) << again.err;
    EXPECT_EQ(again.err, "");
  }

  fs::path dir_;
};

TEST_F(BadProfileDatabase, RandomBytesAreMovedAsideAndRebuilt) {
  write_text(dir_ / "profile.db", random_bytes(8192, 11));
  expect_rebuilt("plan good.onnx --platform platform.json --db profile.db --scheduler heft -o plan.json",
                 "file is not a database", 8192);
  EXPECT_TRUE(fs::exists(dir_ / "plan.json"));
}

TEST_F(BadProfileDatabase, AnotherProgramsSqliteFileIsMovedAsideAndRebuilt) {
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((dir_ / "profile.db").c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE songs(title TEXT); INSERT INTO songs VALUES ('a');", nullptr, nullptr,
                           nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  expect_rebuilt("simulate good.onnx --platform platform.json --db profile.db --scheduler heft", "no meta table",
                 fs::file_size(dir_ / "profile.db"));
}

TEST_F(BadProfileDatabase, RunRebuildsItToo) {
  write_text(dir_ / "profile.db", random_bytes(8192, 12));
  expect_rebuilt("run good.onnx --platform platform.json --db profile.db --scheduler heft -n 1",
                 "file is not a database", 8192);
}

}  // namespace
}  // namespace hetsched
