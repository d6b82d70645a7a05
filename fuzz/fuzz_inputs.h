// What each fuzz target does with one input, shared by the libFuzzer targets
// (fuzz/fuzz_*.cpp, built with clang and sanitizers) and the regression test
// (tests/unit/test_fuzz_regressions.cpp, the normal build), so that every
// input the fuzzers kept is replayed exactly as it was fuzzed.
//
// Each function feeds one file or text to a loader through its public entry
// and, when it loads, to what a user's command does next with it. A
// hetsched::Error may escape (the correct refusal of a malformed input);
// every other failure is a bug.
#pragma once

#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#include "hetsched/error.h"
#include "hetsched/graph.h"
#include "hetsched/plan.h"
#include "hetsched/platform.h"
#include "hetsched/session.h"
#include "hetsched/tensor_io.h"
#include "core/allocation.h"
#include "sched/list_scheduling.h"
#include "sched/task_graph_io.h"

namespace hetsched::fuzz {

// ---------------------------------------------------------------- ONNX models

// The reference run of a model that loads is bounded so that each input
// stays fast: only graphs of at most kMaxRunNodes nodes whose every value has
// a static shape, kMaxRunElements elements in all. Larger graphs are loaded
// but not run.
constexpr size_t kMaxRunNodes = 64;
constexpr int64_t kMaxRunElements = int64_t{1} << 18;

inline bool small_enough_to_run(const Graph& graph) {
  if (graph.nodes.size() > kMaxRunNodes) return false;
  int64_t total = 0;
  for (const Value& value : graph.values) {
    if (!value.shape_is_static()) return false;
    int64_t n = 1;
    for (int64_t d : value.shape) {
      if (d != 0 && n > kMaxRunElements / d) return false;
      n *= d;
    }
    total += n;
    if (total > kMaxRunElements) return false;
  }
  return true;
}

// The whole load (parse, ONNX checker and shape inference, import, kernel
// checks, optimisations, refined shapes, costs), then one run on the
// reference kernels with Session::random_inputs' data when small enough.
// The shapes a model declares need not be the ones its kernels compute, so
// the run also bounds each tensor it allocates (a larger one is an
// AllocationOverLimit error: running such a model needs that memory, which
// is no fault of the loader).
constexpr size_t kMaxRunTensorBytes = size_t{64} << 20;

inline void onnx_model_input(const std::string& path) {
  Graph graph = load_model(path);
  if (!small_enough_to_run(graph)) return;
  ScopedAllocationLimit limit(kMaxRunTensorBytes);
  run_reference(graph, random_inputs(graph));
}

// ---------------------------------------------------------------- plans

// Plans are parsed for one fixed graph and platform (fuzz/data/): the model
// plan_model.onnx and the emulated devices of plan_platform.json, which the
// seed plans (fuzz/corpus/plan_json/) were made for.
struct PlanFixture {
  Graph graph;
  Platform platform;

  explicit PlanFixture(const std::string& data_dir)
      : graph(load_model(data_dir + "/plan_model.onnx")),
        platform(make_platform("emu:npu,emu:gpu", data_dir + "/plan_platform.json")) {}
};

// Parsed as `hetsched run --plan` reads a plan file, then validated and its
// memory planned, as the executor does before running it.
inline void plan_json_input(const std::string& text, const PlanFixture& fixture) {
  Plan plan = plan_from_json(text, fixture.graph, "plan.json");
  validate_plan(plan, fixture.graph, fixture.platform);
  plan_memory(plan, fixture.graph, fixture.platform);
}

// ---------------------------------------------------------------- task graphs

// `hetsched schedule-dag`: parsed, then scheduled by HEFT and PEFT when small
// (the exact scheduler is a MILP with a time limit, not fuzzed).
constexpr int kMaxScheduledTasks = 256;
constexpr int kMaxScheduledProcs = 16;

inline void task_graph_input(const std::string& text) {
  NamedTaskGraph dag = parse_task_graph(text, "dag.json");
  if (dag.graph.n_tasks > kMaxScheduledTasks || dag.graph.n_procs > kMaxScheduledProcs) return;
  heft(dag.graph);
  peft(dag.graph);
}

// ---------------------------------------------------------------- platform files

// Loaded as --platform FILE, then combined with --devices naming each of its
// devices (make_platform reads the file again).
inline void platform_file_input(const std::string& path) {
  Platform platform = load_platform_file(path);
  platform.signature();
  std::string spec;
  for (const PlatformDevice& device : platform.devices) spec += (spec.empty() ? "" : ",") + device.name;
  make_platform(spec, path);
}

// ---------------------------------------------------------------- tensors

// A property of the loaders that must hold whatever the input; thrown (never
// a hetsched::Error) so that the fuzzers abort on it and the regression test
// reports it.
struct PropertyViolated : std::logic_error {
  using std::logic_error::logic_error;
};

inline void require_same_tensor(const Tensor& a, const Tensor& b, const std::string& what) {
  bool same = a.dtype() == b.dtype() && a.shape() == b.shape() && a.nbytes() == b.nbytes() &&
              (a.nbytes() == 0 || std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0);
  if (!same)
    throw PropertyViolated(what + ": the tensor read back differs (" + dtype_name(a.dtype()) + " " +
                           shape_to_string(a.shape()) + ", then " + dtype_name(b.dtype()) + " " +
                           shape_to_string(b.shape()) + ")");
}

// An input file as --input NAME=FILE reads it; a tensor that loads is
// written back to `copy_path` and must read back identical.
inline void npy_input(const std::string& path, const std::string& copy_path) {
  Tensor t = read_npy(path);
  write_npy(copy_path, t);
  require_same_tensor(t, read_npy(copy_path), "npy round trip");
}

inline void tensor_pb_input(const std::string& path, const std::string& copy_path) {
  std::string name;
  Tensor t = read_tensor_pb(path, &name);
  write_tensor_pb(copy_path, t, name);
  std::string name_back;
  require_same_tensor(t, read_tensor_pb(copy_path, &name_back), "TensorProto round trip");
  if (name_back != name) throw PropertyViolated("TensorProto round trip: the name read back differs");
}

}  // namespace hetsched::fuzz
