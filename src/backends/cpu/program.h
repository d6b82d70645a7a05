// A graph compiled for one CPU device: oneDNN primitives (and reference-kernel
// fallbacks) in topological order, over buffers placed in one arena.
//
// Compilation, per node in topological order:
//   1. the node's lowering (registered per op type, see lowering.h) builds a
//      oneDNN primitive, possibly absorbing following nodes it fuses with
//      (see fusion_group); it may return false when it cannot run the node
//      (dtype, attribute, shape), then
//   2. the node runs its reference kernel on plain buffers — a fallback that
//      is counted and reported (ProgramStats::fallbacks).
// Values live in buffers with a layout: plain row-major, or whatever blocked
// layout a primitive prefers. A value needed in another layout gets a
// reorder step (counted); weights are reordered once, at compile time.
// Intermediate buffers share one arena, placed by liveness
// (memory_plan.h); graph inputs are read in place and graph outputs written
// straight into the returned tensors.
//
// A program may cover only part of the graph (a ProgramScope: the launches
// of one lane of a Plan). Values it reads but does not produce are external
// inputs, read in place from memory bound with bind(); values it produces
// that are read outside it (or are graph outputs) are exports, written in
// plain layout into bound memory right after the launch producing them.
// Fusion never crosses a launch: a lowering only absorbs nodes of its
// launch. Steps are grouped by launch, so run_launch(k) runs launch k.
//
// Threading: compile(), bind() and running must happen on the device's own
// thread (CpuDevice::run): oneDNN fixes a primitive's thread count at
// creation. Runs are not reentrant (one arena); callers serialise them.
#pragma once

#include <functional>
#include <memory>
#include <unordered_map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "hetsched/session.h"

namespace hetsched::cpu {

using BufferId = int32_t;
constexpr BufferId kNoBuffer = -1;

// kView: the same bytes as buffer `view_of` (plain layouts only), read as
// another shape — Reshape, Flatten, Squeeze and Unsqueeze cost nothing.
enum class BufferKind { kArena, kConstant, kGraphInput, kGraphOutput, kView };

struct Buffer {
  ValueId value = kNoValue;  // the graph value it holds
  DType dtype = DType::kFloat32;
  Shape shape;
  // Layout for oneDNN; nullopt = plain dense row-major (the Tensor layout).
  std::optional<dnnl::memory::desc> layout;
  BufferKind kind = BufferKind::kArena;
  size_t size = 0;      // bytes
  Tensor constant;      // kConstant: holds the data
  int first_step = -1;  // arena liveness, in step indices
  int last_step = -1;
  size_t offset = 0;    // in the arena, once planned
  BufferId view_of = kNoBuffer;  // kView: the buffer whose bytes these are
  bool is_plain() const { return !layout.has_value(); }
};

struct Step {
  std::string label;          // e.g. "Conv 'c1' + Add 'a1' + Relu 'r1'", "reorder 'x' to plain"
  std::vector<NodeId> nodes;  // the graph nodes this step computes; empty for reorders
  std::optional<dnnl::primitive> primitive;
  std::vector<std::pair<int, BufferId>> args;  // DNNL_ARG_* -> buffer, for a primitive
  // Host code (reference fallback): gets the data pointers of `args`'
  // buffers in order (the ints are ignored).
  std::function<void(const std::vector<void*>&)> host;
  std::vector<BufferId> reads, writes;
};

struct ProgramStats {
  int n_nodes = 0;           // graph nodes compiled
  int n_steps = 0;
  int n_fused_nodes = 0;     // nodes absorbed into another node's primitive
  int n_reorders = 0;        // layout conversions at run time
  int n_fallbacks = 0;       // nodes run with reference kernels
  std::vector<std::string> fallbacks;  // "Gather 'g1': no oneDNN lowering"
  size_t arena_bytes = 0;    // peak intermediate memory
  size_t constant_bytes = 0; // weights as reordered for the primitives (some shared: see below)
};

// Constants reordered into a primitive's layout are shared by the programs
// that need the same source in the same layout (a free-dim session's
// compiles), held while a graph holds their source: how many are held now.
size_t prepared_constants_held();

// The nodes a program computes, as launches in run order (each launch's
// nodes in topological order). The whole graph when absent: every node,
// fused as fusion_group() allows, as one launch.
struct ProgramScope {
  std::vector<std::vector<NodeId>> launches;
  // Exports that stay in the layout their producer wrote (their readers are
  // CPU programs importing that layout: no reorder on either side); the
  // others are exported plain.
  std::set<ValueId> keep_layout;
  // The layout an external input arrives in (nullopt: plain). Asked when the
  // input is first read, so an exporting program may be compiled up to that
  // point first (see compile_launch()).
  std::function<std::optional<dnnl::memory::desc>(ValueId)> import_layout;
  // The device's PlatformDevice::precision: "bfloat16" makes the float32
  // Conv, MatMul and Gemm lowerings take bfloat16 inputs and weights.
  bool bfloat16 = false;
};

class Program {
 public:
  static std::unique_ptr<Program> compile(const Graph& graph, const dnnl::engine& engine,
                                          const ProgramScope* scope = nullptr);
  // The same in three stages, so that several programs exchanging values in
  // blocked layouts can be compiled launch by launch in an order where each
  // exporter's launch comes before its importers': start(), compile_launch()
  // for k = 0, 1, ... in order, then finish().
  static std::unique_ptr<Program> start(const Graph& graph, const dnnl::engine& engine, ProgramScope scope);
  void compile_launch(int k);
  void finish();
  // Layout and size of an export, once its launch is compiled.
  dnnl::memory::desc export_desc(ValueId value) const;
  // Whole-graph convenience: binds the graph inputs (by name) and fresh
  // output tensors, runs every launch, returns the outputs by name.
  TensorMap run(const TensorMap& inputs, dnnl::stream& stream);

  // Values read from outside / written for outside (see above).
  const std::vector<ValueId>& external_inputs() const { return external_inputs_; }
  const std::vector<ValueId>& exports() const { return exports_; }
  // Points external inputs and exports at caller-owned plain memory
  // (dtype and shape of the value); stays bound until bound again.
  void bind(const std::vector<std::pair<ValueId, void*>>& memory);
  int n_launches() const { return static_cast<int>(launch_steps_.size()) - 1; }
  // Runs launch k's steps and waits for them to finish.
  void run_launch(int k, dnnl::stream& stream);

  const ProgramStats& stats() const { return stats_; }
  const std::vector<Step>& steps() const { return steps_; }

 private:
  friend class Lowering;
  Program(const Graph& graph, const dnnl::engine& engine) : graph_(graph), engine_(engine) {}
  void compile_nodes(const std::vector<NodeId>& nodes);
  void add_external_input(ValueId value);
  void export_value(ValueId value);
  bool is_external_input(ValueId value) const;
  bool is_export(ValueId value) const;

  const Graph& graph_;
  dnnl::engine engine_;
  std::vector<Buffer> buffers_;
  std::vector<Step> steps_;
  ProgramStats stats_;
  std::shared_ptr<std::byte> arena_;
  std::vector<std::vector<BufferId>> value_buffers_;  // per value: its buffers, first = where produced
  std::vector<bool> compiled_;                         // per node
  std::vector<int> launch_of_;                         // per node: its launch, -1 outside the scope
  std::vector<ValueId> external_inputs_, exports_;
  ProgramScope scope_;
  std::vector<int> launch_steps_ = {0};                // launch k: steps [launch_steps_[k], launch_steps_[k+1])
  std::vector<void*> pointers_;                        // per buffer, current data pointer
  std::vector<dnnl::memory> memories_;                 // per buffer (empty for types oneDNN lacks)
  std::vector<std::unordered_map<int, dnnl::memory>> step_args_;
  std::vector<std::vector<void*>> host_args_;          // per host step, filled at run
};

// The nodes a CPU device runs as one kernel starting at `node`: the node
// itself, then, when the node is a Conv, a following residual Add and/or an
// activation oneDNN applies as post-ops. The profiler and schedulers treat
// such a group as one unit.
std::vector<NodeId> fusion_group(const Graph& graph, NodeId node);

}  // namespace hetsched::cpu
