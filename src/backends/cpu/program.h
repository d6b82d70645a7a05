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
// Threading: compile() and run() must be called on the device's own thread
// (CpuDevice::run): oneDNN fixes a primitive's thread count at creation.
// run() is not reentrant (one arena); Session serialises runs.
#pragma once

#include <functional>
#include <memory>
#include <unordered_map>
#include <optional>
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
  size_t constant_bytes = 0; // weights as reordered for the primitives
};

class Program {
 public:
  static std::unique_ptr<Program> compile(const Graph& graph, const dnnl::engine& engine);
  TensorMap run(const TensorMap& inputs, dnnl::stream& stream);
  const ProgramStats& stats() const { return stats_; }
  const std::vector<Step>& steps() const { return steps_; }

 private:
  friend class Lowering;
  Program(const Graph& graph, const dnnl::engine& engine) : graph_(graph), engine_(engine) {}
  void finish();  // memory plan, memory objects, argument maps

  const Graph& graph_;
  dnnl::engine engine_;
  std::vector<Buffer> buffers_;
  std::vector<Step> steps_;
  ProgramStats stats_;
  std::shared_ptr<std::byte> arena_;
  std::vector<std::vector<BufferId>> value_buffers_;  // per value: its buffers, first = where produced
  std::vector<bool> compiled_;                         // per node
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
