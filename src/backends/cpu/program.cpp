#include "backends/cpu/program.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>

#include <fmt/format.h>

#include "backends/cpu/lowering.h"
#include "backends/cpu/memory_plan.h"
#include "core/allocation.h"
#include "kernels/kernel.h"

namespace hetsched::cpu {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

// ---------------------------------------------------------------- registry

namespace {
struct RegisteredLowering {
  LowerFn fn = nullptr;
  LoweringInfo info;
};

std::map<std::string, RegisteredLowering>& lowerings() {
  static std::map<std::string, RegisteredLowering> table;
  return table;
}
}  // namespace

void register_cpu_lowering(const std::string& op_type, LowerFn fn, const std::string& kernel,
                           const std::string& reference_when) {
  lowerings()[op_type] = {fn, {op_type, kernel, reference_when}};
}

LowerFn find_cpu_lowering(const std::string& op_type) {
  auto it = lowerings().find(op_type);
  return it == lowerings().end() ? nullptr : it->second.fn;
}

std::vector<std::string> cpu_lowering_ops() {
  std::vector<std::string> ops;
  for (const auto& [op, entry] : lowerings()) ops.push_back(op);
  return ops;
}

std::vector<LoweringInfo> cpu_lowerings() {
  std::vector<LoweringInfo> infos;
  for (const auto& [op, entry] : lowerings()) infos.push_back(entry.info);
  return infos;
}

// ---------------------------------------------------------------- layouts

std::optional<dt> dnnl_type(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return dt::f32;
    case DType::kInt32: return dt::s32;
    case DType::kInt8: return dt::s8;
    case DType::kUInt8: return dt::u8;
    default: return std::nullopt;
  }
}

std::optional<dnnl::memory::dims> dense_strides(const dnnl::memory::desc& desc) {
  const dnnl_memory_desc_t& d = desc.data;
  if (d.format_kind != dnnl_blocked || d.format_desc.blocking.inner_nblks != 0 || d.offset0 != 0) return std::nullopt;
  dnnl::memory::dims dims = desc.dims();
  size_t bytes = dnnl::memory::data_type_size(desc.data_type());
  for (dnnl::memory::dim n : dims) bytes *= static_cast<size_t>(n);
  if (desc.get_size() != bytes) return std::nullopt;  // padded
  return dnnl::memory::dims(d.format_desc.blocking.strides, d.format_desc.blocking.strides + d.ndims);
}

DenseOrder dense_order(const std::vector<int64_t>& in_strides, const Shape& shape) {
  const size_t rank = in_strides.size();
  DenseOrder d;
  d.order.resize(rank);
  std::iota(d.order.begin(), d.order.end(), 0);
  std::stable_sort(d.order.begin(), d.order.end(), [&](size_t a, size_t b) { return in_strides[a] > in_strides[b]; });
  d.strides.resize(rank);
  int64_t stride = 1;
  for (size_t k = rank; k-- > 0;) {
    d.strides[d.order[k]] = stride;
    stride *= shape[d.order[k]];
  }
  return d;
}

dnnl::memory::desc plain_desc(DType dtype, const Shape& shape) {
  auto type = dnnl_type(dtype);
  if (!type) throw Error(ErrorCode::kRuntime, fmt::format("oneDNN has no {} type", dtype_name(dtype)));
  dnnl::memory::dims dims(shape.begin(), shape.end());
  if (dims.empty()) dims = {1};  // oneDNN has no rank-0 memory
  dnnl::memory::dims strides(dims.size(), 1);
  for (size_t i = dims.size() - 1; i-- > 0;) strides[i] = strides[i + 1] * dims[i + 1];
  return dnnl::memory::desc(dims, *type, strides);
}

namespace {

dnnl::memory::desc buffer_desc(const Buffer& b) { return b.layout ? *b.layout : plain_desc(b.dtype, b.shape); }

// A layout equal to the plain one is stored as plain (nullopt).
std::optional<dnnl::memory::desc> normalize(DType dtype, const Shape& shape,
                                            const std::optional<dnnl::memory::desc>& desc) {
  if (!desc || !dnnl_type(dtype)) return std::nullopt;
  if (*desc == plain_desc(dtype, shape)) return std::nullopt;
  return desc;
}

bool same_layout(const std::optional<dnnl::memory::desc>& a, const std::optional<dnnl::memory::desc>& b) {
  if (a.has_value() != b.has_value()) return false;
  return !a || *a == *b;
}

bool is_write_arg(int arg) {
  return arg == DNNL_ARG_DST || arg == DNNL_ARG_DST_1 || arg == DNNL_ARG_DST_2 || arg == DNNL_ARG_SCRATCHPAD ||
         arg == DNNL_ARG_WORKSPACE;
}

// Constants in a primitive's layout, shared by every program that reorders
// the same source bytes, read the same way, into the same layout: the
// compiles of a free-dim session's shapes (and of a staged tail's proposal
// counts) reorder each weight once, not once per shape (Faster R-CNN's box
// head: 51 MB, ~35 ms at every compile). Sources own their storage (graph
// initializers, tensors a lowering made; never Tensor::wrap). An entry
// holds its source, so the source's address is not reused while the entry
// lives; the entries of a source nothing else holds (no graph, so no
// program from it) are dropped at the next lookup.
class PreparedConstants {
 public:
  static PreparedConstants& instance() {
    static PreparedConstants cache;
    return cache;
  }

  // `source` read through `from` in layout `to`, made by `prepare` unless
  // held already.
  Tensor get(const Tensor& source, const dnnl::memory::desc& from, const dnnl::memory::desc& to,
             const std::function<Tensor()>& prepare) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      drop_unheld();
      if (const Entry* e = find(source, from, to)) return e->prepared;
    }
    Tensor prepared = prepare();  // outside the lock: a large reorder takes milliseconds
    std::lock_guard<std::mutex> lock(mutex_);
    if (const Entry* e = find(source, from, to)) return e->prepared;  // prepared meanwhile by another compile
    entries_.push_back({source, from, to, prepared});
    return prepared;
  }

  size_t size() {
    std::lock_guard<std::mutex> lock(mutex_);
    drop_unheld();
    return entries_.size();
  }

 private:
  // Drops the entries whose source only entries hold (one source may have
  // several entries, one per layout).
  void drop_unheld() {
    std::map<const void*, long> held_here;
    for (const Entry& e : entries_) ++held_here[e.source.raw()];
    std::erase_if(entries_, [&](const Entry& e) { return e.source.storage_use_count() <= held_here[e.source.raw()]; });
  }

  struct Entry {
    Tensor source;
    dnnl::memory::desc from, to;
    Tensor prepared;
  };

  const Entry* find(const Tensor& source, const dnnl::memory::desc& from, const dnnl::memory::desc& to) const {
    for (const Entry& e : entries_)
      if (e.source.raw() == source.raw() && e.source.nbytes() == source.nbytes() && e.from == from && e.to == to)
        return &e;
    return nullptr;
  }

  std::mutex mutex_;
  std::vector<Entry> entries_;
};

}  // namespace

size_t prepared_constants_held() { return PreparedConstants::instance().size(); }

// ---------------------------------------------------------------- Lowering

dnnl::memory::desc Lowering::input_desc(size_t i) {
  const Value& v = input_value(i);
  const auto& buffers = program_.value_buffers_[node().inputs[i]];
  if (v.is_constant() || buffers.empty()) return plain_desc(v.dtype, v.shape);
  return buffer_desc(program_.buffers_[buffers.front()]);
}

BufferId Lowering::input(size_t i, const std::optional<dnnl::memory::desc>& desc) {
  return value_in(node().inputs.at(i), desc);
}

BufferId Lowering::compute_input(size_t i) {
  if (compute_type() == dnnl::memory::data_type::f32) return input(i);
  dnnl::memory::desc desc = plain_desc(input_value(i).dtype, input_value(i).shape);
  desc.data.data_type = static_cast<dnnl_data_type_t>(compute_type());
  return input(i, desc);
}

BufferId Lowering::new_constant(Tensor tensor, const std::optional<dnnl::memory::desc>& desc,
                                const std::optional<dnnl::memory::desc>& source) {
  auto& buffers = program_.buffers_;
  Buffer b;
  b.dtype = tensor.dtype();
  if (source) {
    dnnl::memory::dims dims = source->dims();
    b.shape.assign(dims.begin(), dims.end());
  } else {
    b.shape = tensor.shape();
  }
  b.kind = BufferKind::kConstant;
  b.layout = normalize(b.dtype, b.shape, desc);
  if (b.is_plain() && !source) {
    b.size = tensor.nbytes();
    b.constant = std::move(tensor);
  } else {
    // Reorder once, here or in an earlier compile: weights live in the
    // primitive's preferred layout.
    b.size = b.is_plain() ? tensor.nbytes() : b.layout->get_size();
    dnnl::memory::desc from = source ? *source : plain_desc(tensor.dtype(), tensor.shape());
    dnnl::memory::desc to = b.is_plain() ? plain_desc(b.dtype, b.shape) : *b.layout;
    b.constant = PreparedConstants::instance().get(
        tensor, from, to,
        [&] {
          Tensor prepared =
              b.is_plain() ? Tensor(b.dtype, b.shape) : Tensor(DType::kUInt8, {static_cast<int64_t>(b.size)});
          dnnl::memory src(from, engine(), tensor.raw());
          dnnl::memory dst(to, engine(), prepared.raw());
          dnnl::stream stream(engine());
          dnnl::reorder(src, dst).execute(stream, src, dst);
          stream.wait();
          return prepared;
        });
  }
  program_.stats_.constant_bytes += b.size;
  buffers.push_back(std::move(b));
  return static_cast<BufferId>(buffers.size() - 1);
}

BufferId Lowering::value_in(ValueId value, const std::optional<dnnl::memory::desc>& desc) {
  const Value& v = graph().values[value];
  auto layout = normalize(v.dtype, v.shape, desc);
  auto& held = program_.value_buffers_[value];
  for (BufferId id : held)
    if (same_layout(program_.buffers_[id].layout, layout)) return id;
  if (v.is_constant()) {
    BufferId id = new_constant(*v.initializer, layout);
    program_.buffers_[id].value = value;
    program_.value_buffers_[value].push_back(id);
    return id;
  }
  if (held.empty())
    throw Error(ErrorCode::kRuntime, fmt::format("cpu program: value '{}' is read before it is produced", v.name));
  // Another layout of a value already computed: a reorder step.
  BufferId src = held.front();
  Buffer b;
  b.value = value;
  b.dtype = v.dtype;
  b.shape = v.shape;
  b.layout = layout;
  b.size = buffer_desc(b).get_size();
  auto& buffers = program_.buffers_;
  buffers.push_back(b);
  BufferId dst = static_cast<BufferId>(buffers.size() - 1);
  program_.value_buffers_[value].push_back(dst);
  copy(src, dst);
  return dst;
}

void Lowering::copy(BufferId from, BufferId to) {
  const auto& buffers = program_.buffers_;
  const Buffer& src = buffers[from];
  const Buffer& dst = buffers[to];
  Step step;
  step.label = fmt::format("reorder '{}' from {} to {}", graph().values[src.value].name,
                           src.layout ? "blocked" : "plain", dst.layout ? "blocked" : "plain");
  if (src.is_plain() && dst.is_plain()) {
    // Same bytes in the same order, whatever the dtype: a memcpy.
    size_t bytes = dst.size;
    step.host = [bytes](const std::vector<void*>& ptrs) { std::memcpy(ptrs[1], ptrs[0], bytes); };
    step.args = {{0, from}, {0, to}};
  } else {
    dnnl::reorder::primitive_desc pd(engine(), buffer_desc(src), engine(), buffer_desc(dst));
    step.primitive = dnnl::reorder(pd);
    step.args = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
  }
  step.reads = {from};
  step.writes = {to};
  program_.steps_.push_back(std::move(step));
  ++program_.stats_.n_reorders;
}

BufferId Lowering::output(ValueId value, const std::optional<dnnl::memory::desc>& desc) {
  const Value& v = graph().values[value];
  Buffer b;
  b.value = value;
  b.dtype = v.dtype;
  b.shape = v.shape;
  b.layout = normalize(v.dtype, v.shape, desc);
  b.size = b.layout ? b.layout->get_size() : static_cast<size_t>(shape_numel(v.shape)) * dtype_size(v.dtype);
  auto& buffers = program_.buffers_;
  buffers.push_back(std::move(b));
  BufferId id = static_cast<BufferId>(buffers.size() - 1);
  program_.value_buffers_[value].insert(program_.value_buffers_[value].begin(), id);
  return id;
}

BufferId Lowering::scratch(const dnnl::memory::desc& desc) {
  Buffer b;
  dnnl::memory::dims dims = desc.dims();
  b.shape.assign(dims.begin(), dims.end());
  b.layout = desc;
  b.size = desc.get_size();
  auto& buffers = program_.buffers_;
  buffers.push_back(std::move(b));
  return static_cast<BufferId>(buffers.size() - 1);
}

void Lowering::view(ValueId value, BufferId base) {
  auto& buffers = program_.buffers_;
  while (buffers[base].kind == BufferKind::kView) base = buffers[base].view_of;
  const Value& v = graph().values[value];
  Buffer b;
  b.value = value;
  b.dtype = v.dtype;
  b.shape = v.shape;
  b.kind = BufferKind::kView;
  b.view_of = base;
  b.size = buffers[base].size;
  buffers.push_back(std::move(b));
  program_.value_buffers_[value].insert(program_.value_buffers_[value].begin(),
                                        static_cast<BufferId>(buffers.size() - 1));
}

void Lowering::alias(ValueId value, BufferId buffer) {
  program_.value_buffers_[value].insert(program_.value_buffers_[value].begin(), buffer);
}

std::vector<NodeId> Lowering::fusion_group() const {
  std::vector<NodeId> group = cpu::fusion_group(graph(), node_id_);
  const auto& launch_of = program_.launch_of_;
  size_t keep = 1;
  while (keep < group.size() && launch_of[group[keep]] == launch_of[node_id_]) ++keep;
  group.resize(keep);
  return group;
}

bool Lowering::dies_at(ValueId value, NodeId reader) const {
  if (graph().is_graph_output(value) || graph().is_graph_input(value) || graph().values[value].is_constant() ||
      program_.is_external_input(value) || program_.is_export(value))
    return false;
  for (NodeId c : graph().values[value].consumers)
    if (c != reader && !program_.compiled_[c]) return false;
  return true;
}

void Lowering::absorb(NodeId node) { absorbed_.push_back(node); }

Step Lowering::new_step() const {
  Step step;
  step.label = node().label();
  step.nodes = {node_id_};
  for (NodeId n : absorbed_) {
    step.label += " + " + graph().nodes[n].label();
    step.nodes.push_back(n);
  }
  return step;
}

void Lowering::emit(dnnl::primitive primitive, std::vector<std::pair<int, BufferId>> args) {
  Step step = new_step();
  step.primitive = std::move(primitive);
  for (const auto& [arg, buffer] : args) (is_write_arg(arg) ? step.writes : step.reads).push_back(buffer);
  step.args = std::move(args);
  program_.steps_.push_back(std::move(step));
  emitted_ = true;
}

void Lowering::emit_host(std::function<void(const std::vector<void*>&)> code, const std::vector<BufferId>& reads,
                         const std::vector<BufferId>& writes) {
  Step step = new_step();
  for (BufferId b : reads) {
    step.args.emplace_back(0, b);
    if (b != kNoBuffer) step.reads.push_back(b);
  }
  for (BufferId b : writes) {
    step.args.emplace_back(0, b);
    if (b != kNoBuffer) step.writes.push_back(b);
  }
  step.host = std::move(code);
  program_.steps_.push_back(std::move(step));
  emitted_ = true;
}

// ---------------------------------------------------------------- compile

namespace {

// Runs `node` with its reference kernel on plain buffers.
void emit_reference(Lowering& lowering, std::vector<Step>& steps, std::vector<Buffer>& buffers,
                    const std::string& reason, ProgramStats& stats) {
  const Node& node = lowering.node();
  const auto* kernel = kernels::find_reference_kernel(node.op_type);
  std::vector<BufferId> ins, outs;
  for (size_t i = 0; i < node.inputs.size(); ++i)
    ins.push_back(node.inputs[i] == kNoValue ? kNoBuffer : lowering.input(i));
  for (ValueId v : node.outputs) outs.push_back(v == kNoValue ? kNoBuffer : lowering.output(v));
  // Shapes and dtypes are fixed at compile time; the kernel gets wrapping tensors.
  std::vector<std::pair<DType, Shape>> in_types, out_types;
  for (BufferId b : ins) in_types.emplace_back(b == kNoBuffer ? DType::kUndefined : buffers[b].dtype,
                                               b == kNoBuffer ? Shape{} : buffers[b].shape);
  for (BufferId b : outs) out_types.emplace_back(b == kNoBuffer ? DType::kUndefined : buffers[b].dtype,
                                                 b == kNoBuffer ? Shape{} : buffers[b].shape);
  const Node* node_ptr = &node;
  size_t n_in = ins.size();
  auto code = [kernel, node_ptr, in_types, out_types, n_in](const std::vector<void*>& ptrs) {
    std::vector<Tensor> inputs(n_in);
    std::vector<const Tensor*> args(n_in, nullptr);
    for (size_t i = 0; i < n_in; ++i) {
      if (!ptrs[i]) continue;
      inputs[i] = Tensor::wrap(in_types[i].first, in_types[i].second, ptrs[i]);
      args[i] = &inputs[i];
    }
    std::vector<Tensor> results = kernel->compute(*node_ptr, args);
    for (size_t o = 0; o < out_types.size(); ++o) {
      void* dst = ptrs[n_in + o];
      if (!dst) continue;
      const Tensor& r = results.at(o);
      if (r.shape() != out_types[o].second || r.dtype() != out_types[o].first)
        throw Error(ErrorCode::kRuntime,
                    fmt::format("{}: produced {} where the graph says {} {}", node_ptr->label(), r.description(),
                                dtype_name(out_types[o].first), shape_to_string(out_types[o].second)));
      std::memcpy(dst, r.raw(), r.nbytes());
    }
  };
  lowering.emit_host(std::move(code), ins, outs);
  steps.back().label += " (reference)";
  ++stats.n_fallbacks;
  stats.fallbacks.push_back(node.label() + ": " + reason);
}

}  // namespace

bool Program::is_external_input(ValueId value) const {
  return std::find(external_inputs_.begin(), external_inputs_.end(), value) != external_inputs_.end();
}

bool Program::is_export(ValueId value) const {
  return std::find(exports_.begin(), exports_.end(), value) != exports_.end();
}

std::unique_ptr<Program> Program::compile(const Graph& graph, const dnnl::engine& engine, const ProgramScope* scope) {
  ProgramScope whole;
  if (!scope) {
    whole.launches.emplace_back();
    for (NodeId n = 0; n < static_cast<NodeId>(graph.nodes.size()); ++n) whole.launches[0].push_back(n);
    scope = &whole;
  }
  std::unique_ptr<Program> program = start(graph, engine, *scope);
  for (int k = 0; k < static_cast<int>(scope->launches.size()); ++k) program->compile_launch(k);
  program->finish();
  return program;
}

std::unique_ptr<Program> Program::start(const Graph& graph, const dnnl::engine& engine, ProgramScope scope) {
  for (const Value& v : graph.values)
    if (!v.is_constant() && !v.shape_is_static())
      throw Error(ErrorCode::kUnsupported,
                  fmt::format("the CPU backend needs static shapes; value '{}' has shape {} (fix input dims with "
                              "--shape)",
                              v.name, v.has_shape ? shape_to_string(v.shape) : "of unknown rank"));
  std::unique_ptr<Program> program(new Program(graph, engine));
  Program& p = *program;
  p.scope_ = std::move(scope);
  p.value_buffers_.assign(graph.values.size(), {});
  p.compiled_.assign(graph.nodes.size(), false);
  p.launch_of_.assign(graph.nodes.size(), -1);
  for (size_t k = 0; k < p.scope_.launches.size(); ++k)
    for (NodeId n : p.scope_.launches[k]) {
      if (n < 0 || n >= static_cast<NodeId>(graph.nodes.size()) || p.launch_of_[n] >= 0)
        throw Error(ErrorCode::kRuntime, fmt::format("cpu program: node {} is outside the graph or in two launches", n));
      p.launch_of_[n] = static_cast<int>(k);
      ++p.stats_.n_nodes;
    }
  // External inputs (graph inputs and values produced outside the scope) are
  // read in place; exports are what outside readers need.
  for (const auto& launch : p.scope_.launches)
    for (NodeId n : launch) {
      for (ValueId id : graph.nodes[n].inputs) {
        if (id == kNoValue || graph.values[id].is_constant() || p.is_external_input(id)) continue;
        NodeId producer = graph.values[id].producer;
        if (producer == kNoNode || p.launch_of_[producer] < 0) p.external_inputs_.push_back(id);
      }
      for (ValueId id : graph.nodes[n].outputs) {
        if (id == kNoValue) continue;
        bool read_outside = graph.is_graph_output(id);
        for (NodeId c : graph.values[id].consumers) read_outside = read_outside || p.launch_of_[c] < 0;
        if (read_outside) p.exports_.push_back(id);
      }
    }
  return program;
}

void Program::add_external_input(ValueId id) {
  const Value& v = graph_.values[id];
  Buffer b;
  b.value = id;
  b.dtype = v.dtype;
  b.shape = v.shape;
  b.kind = BufferKind::kGraphInput;
  if (scope_.import_layout) b.layout = normalize(v.dtype, v.shape, scope_.import_layout(id));
  b.size = b.layout ? b.layout->get_size() : static_cast<size_t>(shape_numel(v.shape)) * dtype_size(v.dtype);
  buffers_.push_back(std::move(b));
  value_buffers_[id].push_back(static_cast<BufferId>(buffers_.size() - 1));
}

void Program::compile_launch(int k) {
  const auto& nodes = scope_.launches.at(k);
  for (NodeId n : nodes)
    for (ValueId id : graph_.nodes[n].inputs)
      if (id != kNoValue && value_buffers_[id].empty() && is_external_input(id)) add_external_input(id);
  compile_nodes(nodes);
  for (NodeId n : nodes)
    for (ValueId id : graph_.nodes[n].outputs)
      if (id != kNoValue && is_export(id)) export_value(id);
  launch_steps_.push_back(static_cast<int>(steps_.size()));
}

namespace {

// Some oneDNN kernels compute their blocking in 32-bit integers: past 2^31
// elements, primitive creation can crash the process (a matmul over a
// [1, 2^40] source divides by zero in oneDNN 2.6) instead of failing. Such
// nodes run their reference kernels, which report memory they cannot have
// as an error.
bool beyond_onednn(const Graph& graph, const Node& node) {
  auto huge = [&](ValueId v) {
    if (v == kNoValue || !graph.values[v].shape_is_static()) return false;
    int64_t n = 1;
    for (int64_t d : graph.values[v].shape) {
      if (d > std::numeric_limits<int32_t>::max() / std::max<int64_t>(n, 1)) return true;
      n *= d;
    }
    return n > std::numeric_limits<int32_t>::max();
  };
  return std::any_of(node.inputs.begin(), node.inputs.end(), huge) ||
         std::any_of(node.outputs.begin(), node.outputs.end(), huge);
}

}  // namespace

void Program::compile_nodes(const std::vector<NodeId>& nodes) {
  auto compile_node = [&](NodeId n) {
    const Node& node = graph_.nodes[n];
    Lowering lowering(*this, n);
    LowerFn fn = find_cpu_lowering(node.op_type);
    std::string reason = "no oneDNN lowering";
    if (fn && beyond_onednn(graph_, node)) {
      fn = nullptr;
      reason = "a tensor of 2^31 elements or more (beyond what oneDNN handles)";
    }
    if (fn) {
      size_t steps_before = steps_.size();
      if (fn(lowering)) {
        for (NodeId a : lowering.absorbed()) compiled_[a] = true;
        stats_.n_fused_nodes += static_cast<int>(lowering.absorbed().size());
        compiled_[n] = true;
        return;
      }
      if (steps_.size() != steps_before || lowering.emitted())
        throw Error(ErrorCode::kRuntime, node.label() + ": CPU lowering declined after emitting steps");
      reason = "oneDNN lowering declined (dtype, attributes or shapes)";
    }
    Lowering fallback(*this, n);
    emit_reference(fallback, steps_, buffers_, reason, stats_);
    compiled_[n] = true;
  };
  for (NodeId n : nodes) {
    if (compiled_[n]) continue;  // absorbed by an earlier node
    try {
      compile_node(n);
    } catch (const Error& e) {
      // Weights or constants a lowering cannot allocate: say for which node.
      if (e.code() != ErrorCode::kResource) throw;
      throw Error(e.code(), fmt::format("{}: {}", graph_.nodes[n].label(), e.what()));
    } catch (const dnnl::error& e) {
      // A lowering that let oneDNN refuse what it asked for: name the node.
      throw Error(ErrorCode::kRuntime, fmt::format("{}: oneDNN: {}", graph_.nodes[n].label(), e.what()));
    }
  }
}

void Program::export_value(ValueId id) {
  Lowering exporter(*this, kNoNode);
  std::optional<dnnl::memory::desc> layout;
  if (scope_.keep_layout.count(id)) layout = buffers_[value_buffers_[id].front()].layout;
  BufferId b = exporter.value_in(id, layout);
  if (buffers_[b].kind == BufferKind::kView || buffers_[b].kind == BufferKind::kGraphOutput) {
    // The bytes belong to another value (or export): copy them out.
    BufferId copy = exporter.output(id, layout);
    exporter.copy(b, copy);
    b = copy;
  }
  if (buffers_[b].kind == BufferKind::kArena) {
    buffers_[b].kind = BufferKind::kGraphOutput;
    buffers_[b].value = id;  // an in-place buffer first held another value
  }
}

void Program::finish() {
  // Liveness of arena buffers, in step indices.
  for (int s = 0; s < static_cast<int>(steps_.size()); ++s) {
    auto touch = [&](BufferId id) {
      while (buffers_[id].kind == BufferKind::kView) id = buffers_[id].view_of;
      Buffer& b = buffers_[id];
      if (b.first_step < 0) b.first_step = s;
      b.last_step = s;
    };
    for (BufferId id : steps_[s].reads) touch(id);
    for (BufferId id : steps_[s].writes) touch(id);
  }
  std::vector<BufferLifetime> lifetimes;
  std::vector<BufferId> arena_ids;
  for (BufferId id = 0; id < static_cast<BufferId>(buffers_.size()); ++id) {
    const Buffer& b = buffers_[id];
    if (b.kind != BufferKind::kArena || b.first_step < 0) continue;
    lifetimes.push_back({b.size, b.first_step, b.last_step});
    arena_ids.push_back(id);
  }
  ArenaPlan plan = plan_arena(lifetimes);
  for (size_t i = 0; i < arena_ids.size(); ++i) buffers_[arena_ids[i]].offset = plan.offsets[i];
  stats_.arena_bytes = plan.total;
  arena_ = allocate_aligned(plan.total, [&] {
    size_t largest = 0;
    for (const BufferLifetime& b : lifetimes) largest = std::max(largest, b.size);
    return fmt::format("the arena of a CPU program ({} intermediate buffers, the largest {})", lifetimes.size(),
                       format_bytes(largest));
  });

  pointers_.assign(buffers_.size(), nullptr);
  memories_.assign(buffers_.size(), dnnl::memory());
  for (BufferId id = 0; id < static_cast<BufferId>(buffers_.size()); ++id) {
    Buffer& b = buffers_[id];
    if (b.kind == BufferKind::kArena) pointers_[id] = arena_.get() + b.offset;
    if (b.kind == BufferKind::kConstant) pointers_[id] = b.constant.raw();
    if (b.kind == BufferKind::kView) pointers_[id] = pointers_[b.view_of];  // roots come first
    if (dnnl_type(b.dtype)) memories_[id] = dnnl::memory(buffer_desc(b), engine_, pointers_[id] ? pointers_[id] : DNNL_MEMORY_NONE);
  }
  step_args_.assign(steps_.size(), {});
  host_args_.assign(steps_.size(), {});
  for (size_t s = 0; s < steps_.size(); ++s)
    if (steps_[s].primitive)
      for (const auto& [arg, id] : steps_[s].args) step_args_[s][arg] = memories_[id];
  stats_.n_steps = static_cast<int>(steps_.size());
}

dnnl::memory::desc Program::export_desc(ValueId value) const {
  for (const Buffer& b : buffers_)
    if (b.value == value && b.kind == BufferKind::kGraphOutput) return buffer_desc(b);
  throw Error(ErrorCode::kRuntime,
              fmt::format("cpu program: '{}' is not exported (yet)", graph_.values[value].name));
}

void Program::bind(const std::vector<std::pair<ValueId, void*>>& memory) {
  for (const auto& [value, data] : memory)
    for (BufferId id = 0; id < static_cast<BufferId>(buffers_.size()); ++id) {
      Buffer& b = buffers_[id];
      if (b.value != value || (b.kind != BufferKind::kGraphInput && b.kind != BufferKind::kGraphOutput)) continue;
      pointers_[id] = data;
      if (memories_[id]) memories_[id].set_data_handle(data);
    }
  for (BufferId id = 0; id < static_cast<BufferId>(buffers_.size()); ++id) {
    if (buffers_[id].kind != BufferKind::kView) continue;
    pointers_[id] = pointers_[buffers_[id].view_of];
    if (memories_[id] && pointers_[id]) memories_[id].set_data_handle(pointers_[id]);
  }
}

void Program::run_launch(int k, dnnl::stream& stream) {
  for (int s = launch_steps_[k]; s < launch_steps_[k + 1]; ++s) {
    Step& step = steps_[s];
    if (step.primitive) {
      step.primitive->execute(stream, step_args_[s]);
      continue;
    }
    std::vector<void*>& ptrs = host_args_[s];
    ptrs.clear();
    for (const auto& [arg, id] : step.args) ptrs.push_back(id == kNoBuffer ? nullptr : pointers_[id]);
    stream.wait();  // host code reads what primitives wrote
    step.host(ptrs);
  }
  stream.wait();
}

TensorMap Program::run(const TensorMap& inputs, dnnl::stream& stream) {
  std::vector<std::pair<ValueId, void*>> memory;
  for (ValueId id : external_inputs_)
    memory.emplace_back(id, const_cast<void*>(inputs.at(graph_.values[id].name).raw()));
  TensorMap outputs;
  for (ValueId id : exports_) {
    const Value& v = graph_.values[id];
    Tensor t(v.dtype, v.shape);
    memory.emplace_back(id, t.raw());
    outputs[v.name] = std::move(t);
  }
  bind(memory);
  for (int k = 0; k < n_launches(); ++k) run_launch(k, stream);
  for (ValueId id : graph_.outputs) {
    const Value& v = graph_.values[id];
    if (v.is_constant()) outputs[v.name] = v.initializer->clone();
    else if (graph_.is_graph_input(id)) outputs[v.name] = inputs.at(v.name).clone();
  }
  return outputs;
}

}  // namespace hetsched::cpu
