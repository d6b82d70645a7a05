// Lowering one graph node (or a fused group starting at it) to oneDNN.
//
// Each op's lowering lives in its own file under src/backends/cpu/ops/ and
// registers itself with HETSCHED_CPU_LOWERING("OpType", fn, kernel,
// reference_when): what runs the op and when it declines, in words, for
// `hetsched ops --markdown` (lowering_info.h). The program
// compiler calls fn(lowering) for each node in topological order:
//   - fn returns false, having emitted nothing, when it cannot run this node
//     (dtype, attribute, rank...): the node then falls back to its reference
//     kernel. Decide everything first, then emit.
//   - Otherwise fn reads its inputs through input()/constant_in(), creates
//     output buffers with output(), and adds one primitive step with emit().
//     Nodes it fuses (post-ops) are passed to absorb(); their outputs are
//     then produced by this step.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "backends/cpu/lowering_info.h"
#include "backends/cpu/program.h"

namespace hetsched::cpu {

// dnnl data type of a dtype; nullopt when oneDNN has none (int64, bool, f64).
std::optional<dnnl::memory::data_type> dnnl_type(DType dtype);
// Plain row-major memory desc (format a, ab, abc...).
dnnl::memory::desc plain_desc(DType dtype, const Shape& shape);
// The element strides of `desc` when its layout is dense without inner
// blocks (plain, or a permutation of it such as channels-last), so that host
// code can walk it; nullopt for blocked or padded layouts.
std::optional<dnnl::memory::dims> dense_strides(const dnnl::memory::desc& desc);
// For dense data of `in_strides`: its dims in memory order, outermost first
// (`order`), and the dense strides of a tensor of `shape` (same rank) laid
// out in that order: what host code copying parts of the data writes, so
// that no reorder is needed on either side.
struct DenseOrder {
  std::vector<size_t> order;
  dnnl::memory::dims strides;
};
DenseOrder dense_order(const std::vector<int64_t>& in_strides, const Shape& shape);

class Lowering {
 public:
  Lowering(Program& program, NodeId node) : program_(program), node_id_(node) {}

  const Graph& graph() const { return program_.graph_; }
  const Node& node() const { return graph().nodes[node_id_]; }
  NodeId node_id() const { return node_id_; }
  const dnnl::engine& engine() const { return program_.engine_; }
  // The data type a float32 Conv, MatMul or Gemm reads its inputs and
  // weights in: bf16 on a device computing in bfloat16 (ProgramScope), else
  // f32. Its output stays float32.
  dnnl::memory::data_type compute_type() const {
    return program_.scope_.bfloat16 ? dnnl::memory::data_type::bf16 : dnnl::memory::data_type::f32;
  }
  // Input i (float32) in compute_type(), plain: its plain buffer, or a
  // plain (row-major, the value's shape) bfloat16 copy made by a reorder.
  BufferId compute_input(size_t i);

  // Input i's value, and facts about it.
  const Value& input_value(size_t i) const { return graph().values[node().inputs.at(i)]; }
  bool has_input(size_t i) const { return node().input(i) != kNoValue; }
  bool input_is_constant(size_t i) const { return has_input(i) && input_value(i).is_constant(); }
  const Tensor& constant(size_t i) const { return *input_value(i).initializer; }
  // The layout input i is available in now (its first buffer); plain desc
  // for constants and plain buffers.
  dnnl::memory::desc input_desc(size_t i);

  // Buffer holding input i in layout `desc` (nullopt: plain), adding a
  // reorder step when no buffer has it yet. Constants are reordered now.
  BufferId input(size_t i, const std::optional<dnnl::memory::desc>& desc = std::nullopt);
  BufferId value_in(ValueId value, const std::optional<dnnl::memory::desc>& desc = std::nullopt);
  // A constant made by the lowering itself (e.g. a combined bias), in
  // layout `desc` (nullopt: plain). `source`: how `tensor`'s bytes are laid
  // out when not plain in its own shape (e.g. an N x K matrix read as K x N
  // through strides); the buffer then has `source`'s dims.
  BufferId new_constant(Tensor tensor, const std::optional<dnnl::memory::desc>& desc = std::nullopt,
                        const std::optional<dnnl::memory::desc>& source = std::nullopt);
  // A new buffer for value `value` (an output of this node or of a node it
  // absorbs) in layout `desc`.
  BufferId output(ValueId value, const std::optional<dnnl::memory::desc>& desc = std::nullopt);
  // Memory that only this node's step writes and no graph value holds (an
  // output the node omits but its primitive must write), float32 in `desc`.
  BufferId scratch(const dnnl::memory::desc& desc);
  // Makes `value` live in `buffer` too (in-place: e.g. a Conv with a `sum`
  // post-op writes its result over the residual's buffer).
  void alias(ValueId value, BufferId buffer);
  // Makes `value` (plain) a view of `base` (plain, same byte size): no step.
  void view(ValueId value, BufferId base);

  // A step copying buffer `from` into `to` (same value layout or not).
  void copy(BufferId from, BufferId to);

  // The nodes to run in this node's kernel: fusion_group() cut at the first
  // node of another launch (fusion never crosses launches).
  std::vector<NodeId> fusion_group() const;

  // True when nothing but `reader` will read `value` from now on: every
  // consumer but `reader` has been compiled and the value is neither a graph
  // output nor read outside this program (an export or external input).
  bool dies_at(ValueId value, NodeId reader) const;

  // For a lowering that needs no step (views): the node is done.
  void emit_nothing() { emitted_ = true; }

  void absorb(NodeId node);
  void emit(dnnl::primitive primitive, std::vector<std::pair<int, BufferId>> args);
  // A step of host code, for an op oneDNN has no primitive for: `code` gets
  // the data pointers of `reads` then `writes` (plain buffers; nullptr for
  // kNoBuffer), on the device's thread, whose OpenMP team it may use. It
  // throws hetsched::Error for bad data.
  void emit_host(std::function<void(const std::vector<void*>&)> code, const std::vector<BufferId>& reads,
                 const std::vector<BufferId>& writes);
  bool emitted() const { return emitted_; }

  const std::vector<NodeId>& absorbed() const { return absorbed_; }

 private:
  Step new_step() const;  // labelled with this node and those it absorbed

  Program& program_;
  NodeId node_id_;
  std::vector<NodeId> absorbed_;
  bool emitted_ = false;
};

using LowerFn = bool (*)(Lowering& lowering);

// `kernel` and `reference_when` describe the lowering for documentation
// (LoweringInfo, lowering_info.h); they do not change what it does.
void register_cpu_lowering(const std::string& op_type, LowerFn fn, const std::string& kernel = "oneDNN",
                           const std::string& reference_when = "");
LowerFn find_cpu_lowering(const std::string& op_type);
std::vector<std::string> cpu_lowering_ops();

struct CpuLoweringRegistrar {
  CpuLoweringRegistrar(const char* op_type, LowerFn fn, const char* kernel = "oneDNN",
                       const char* reference_when = "") {
    register_cpu_lowering(op_type, fn, kernel, reference_when);
  }
};

}  // namespace hetsched::cpu

// HETSCHED_CPU_LOWERING("Conv", lower_conv[, "oneDNN convolution"[, "when the
// reference kernel runs instead"]]);
#define HETSCHED_CPU_LOWERING(OP_TYPE, ...)                                                         \
  static ::hetsched::cpu::CpuLoweringRegistrar HETSCHED_CPU_CONCAT(hetsched_cpu_lowering_, __LINE__)( \
      OP_TYPE, __VA_ARGS__)
#define HETSCHED_CPU_CONCAT_INNER(a, b) a##b
#define HETSCHED_CPU_CONCAT(a, b) HETSCHED_CPU_CONCAT_INNER(a, b)
