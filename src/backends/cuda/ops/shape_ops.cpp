// Shape and data movement ops on the GPU.
//
// Views (Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout in
// inference): the output is the input's bytes, so bound to the same memory
// they cost nothing (GpuOp::is_view); bound elsewhere they copy.
//
// Index-map ops (Transpose, Slice, Expand, Tile, DepthToSpace, SpaceToDepth,
// Pad, and Gather with constant indices): at prepare time the op's own
// reference kernel runs once on a tensor holding each element's flat index
// (iota), with the node's other (constant) inputs; its output says, for each
// output element, which input element it copies (-1: Pad's constant). The
// GPU then copies by that map, so its results are the reference kernel's by
// construction, whatever the attributes. A map that is affine in the output
// index (Transpose, Slice, Expand) becomes a strided copy with no map in
// memory; any other is uploaded and read by an index copy.
//
// Gather with indices computed at run time (BERT's token embedding) has its
// own kernel.
#include <cstring>
#include <numeric>

#include <fmt/format.h>

#include "backends/cuda/check.h"
#include "backends/cuda/ops/op_util.h"
#include "kernels/kernel.h"
#include "kernels/reference/common.h"

namespace hetsched::cuda::ops {
namespace {

// ---------------------------------------------------------------- views

std::string view_declines(const Graph& graph, const Node& node) {
  if (node.input(0) == kNoValue || node.outputs.empty() || node.outputs[0] == kNoValue) return "no data input";
  for (size_t i = 1; i < node.outputs.size(); ++i)
    if (node.outputs[i] != kNoValue) return "a second output (Dropout's mask)";
  const Value& x = graph.values[node.input(0)];
  const Value& y = graph.values[node.outputs[0]];
  if (x.dtype != y.dtype || bytes_of(graph, node.input(0)) != bytes_of(graph, node.outputs[0]))
    return "an output that is not the input's bytes";
  return "";
}

class ViewOp : public GpuOp {
 public:
  explicit ViewOp(const GpuPrepare& p) : GpuOp(p, fmt::format("view ({})", p.node().op_type)) {
    x_ = bind(p, p.node().inputs[0]);
    bytes_ = bytes_of(p.graph, p.node().outputs[0]);
    set_view();
  }

  void enqueue(const GpuStream& s, const void* const* in, void* const* out) const override {
    const void* src = data(x_, in);
    if (src != out[0] && bytes_ > 0)
      HETSCHED_CUDA_CHECK(cudaMemcpyAsync(out[0], src, bytes_, cudaMemcpyDeviceToDevice, s.stream));
  }

 private:
  Operand x_;
  size_t bytes_ = 0;
};

std::unique_ptr<GpuOp> prepare_view(const GpuPrepare& p) { return std::make_unique<ViewOp>(p); }

// ---------------------------------------------------------------- index maps

// The element-size the copy kernels move: 1, 2, 4 or 8 bytes.
bool copyable(DType dtype) {
  size_t size = dtype_size(dtype);
  return size == 1 || size == 2 || size == 4 || size == 8;
}

// Pad's constant_value input when it is one with elements; null otherwise
// (the attribute form, no input, an empty one).
const Value* pad_constant(const Graph& graph, const Node& node) {
  if (node.has_attr("pads") || node.input(2) == kNoValue) return nullptr;
  const Value& c = graph.values[node.input(2)];
  return c.is_constant() && c.initializer->numel() > 0 ? &c : nullptr;
}

// Pad's fill value as a number (0 when none).
double pad_value(const Graph& graph, const Node& node) {
  if (node.has_attr("pads")) return node.attr_float("value", 0.0f);
  return pad_constant(graph, node) ? constant_scalar(graph, node.input(2)).value_or(0.0f) : 0.0;
}

std::string index_map_declines(const Graph& graph, const Node& node) {
  if (node.input(0) == kNoValue || node.outputs.empty() || node.outputs[0] == kNoValue) return "no data input";
  if (!copyable(graph.values[node.input(0)].dtype)) return "an element size other than 1, 2, 4 or 8 bytes";
  for (size_t i = 1; i < node.inputs.size(); ++i) {
    ValueId v = node.input(i);
    if (v != kNoValue && !graph.values[v].is_constant()) {
      if (node.op_type == "Gather" && i == 1) return "";  // the gather kernel takes run-time indices
      return fmt::format("input {} computed at run time", i);
    }
  }
  if (node.op_type == "Pad") {
    if (node.input(2) != kNoValue && !constant_scalar(graph, node.input(2)))
      return "an empty or non-numeric constant_value";
    const Value* constant = pad_constant(graph, node);
    DType dtype = graph.values[node.input(0)].dtype;
    bool own_bytes = constant && constant->dtype == dtype;
    if (dtype == DType::kFloat16 && !own_bytes && pad_value(graph, node) != 0)
      return "a non-zero pad value for float16";  // as the reference kernel
  }
  return need_rank_at_most(graph, node);
}

// The reference kernel's output for `node` with input 0 replaced by the flat
// index of each element (int64), Pad's constant by -1.
Tensor index_map(const Graph& graph, const Node& node) {
  const Value& x = graph.values[node.input(0)];
  Tensor iota(DType::kInt64, x.shape);
  int64_t* p = iota.data<int64_t>();
  std::iota(p, p + iota.numel(), int64_t{0});
  Node copy = node;
  // Tensors made here, held while compute() reads them: reserved up front so
  // that the pointers taken stay valid.
  std::vector<Tensor> held;
  held.reserve(node.inputs.size() + 2);
  held.push_back(iota);
  std::vector<const Tensor*> inputs = {&held[0]};
  for (size_t i = 1; i < node.inputs.size(); ++i) {
    ValueId v = node.inputs[i];
    if (node.op_type == "Pad" && i == 2 && v != kNoValue) {
      held.push_back(Tensor::from_vector<int64_t>({}, {-1}));
      inputs.push_back(&held.back());
    } else {
      inputs.push_back(v == kNoValue ? nullptr : &*graph.values[v].initializer);
    }
  }
  if (node.op_type == "Pad" && node.has_attr("pads")) {
    Attribute value;
    value.kind = Attribute::Kind::kFloat;
    value.f = -1.0f;
    copy.attributes["value"] = value;
  }
  if (node.op_type == "Pad" && !node.has_attr("pads") && node.input(2) == kNoValue) {
    // No constant_value: the reference pads with zeros, which would read as
    // "element 0"; give it -1 explicitly.
    copy.inputs.resize(std::max<size_t>(copy.inputs.size(), 3), kNoValue);
    copy.inputs[2] = 0;  // only its presence matters to compute()
    held.push_back(Tensor::from_vector<int64_t>({}, {-1}));
    inputs.resize(std::max<size_t>(inputs.size(), 3), nullptr);
    inputs[2] = &held.back();
  }
  const kernels::ReferenceKernel* kernel = kernels::find_reference_kernel(node.op_type);
  std::vector<Tensor> out = kernel->compute(copy, inputs);
  return out.at(0);
}

// The affine layout reproducing `map` over `shape`, when there is one.
std::optional<kern::Strided> affine_layout(const Tensor& map, const Shape& shape) {
  if (shape.size() > static_cast<size_t>(kern::kMaxRank) || map.numel() == 0) return std::nullopt;
  const int64_t* m = map.data<int64_t>();
  kern::Strided layout = dense_layout(shape);
  std::vector<int64_t> dense = kernels::strides_of(shape);
  layout.base = m[0];
  for (size_t d = 0; d < shape.size(); ++d) layout.strides[d] = shape[d] > 1 ? m[dense[d]] - m[0] : 0;
  // Check every element: walk the multi-index with a running offset.
  std::vector<int64_t> index(shape.size(), 0);
  int64_t offset = layout.base;
  for (int64_t i = 0; i < map.numel(); ++i) {
    if (m[i] < 0 || m[i] != offset) return std::nullopt;
    for (size_t d = shape.size(); d-- > 0;) {
      offset += layout.strides[d];
      if (++index[d] < shape[d]) break;
      offset -= layout.strides[d] * shape[d];
      index[d] = 0;
    }
  }
  return layout;
}

class IndexMapOp : public GpuOp {
 public:
  explicit IndexMapOp(const GpuPrepare& p) : GpuOp(p, "") {
    const Node& node = p.node();
    x_ = bind(p, node.inputs[0]);
    ValueId y = node.outputs[0];
    element_size_ = static_cast<int>(dtype_size(p.value(y).dtype));
    n_ = numel_of(p.graph, y);
    Tensor map = index_map(p.graph, node);
    if (map.shape() != shape_of(p.graph, y))
      throw Error(ErrorCode::kRuntime, fmt::format("{}: the index map has shape {}, the graph says {}", label(node),
                                                   shape_to_string(map.shape()), shape_to_string(shape_of(p.graph, y))));
    if (node.op_type == "Pad") {
      // The fill as the reference kernel makes it (pad.cpp): a constant of
      // the data's dtype byte for byte, any other value converted, zero
      // bytes for 0 (what fill_ holds already).
      DType dtype = p.value(node.inputs[0]).dtype;
      const Value* constant = pad_constant(p.graph, node);
      if (constant && constant->dtype == dtype) {
        std::memcpy(fill_, constant->initializer->raw(), dtype_size(dtype));
      } else if (double value = pad_value(p.graph, node); value != 0) {
        Tensor fill = Tensor(dtype, {});
        kernels::dispatch_all(node, dtype, [&](auto t) {
          using T = decltype(t);
          *fill.data<T>() = static_cast<T>(value);
        });
        std::memcpy(fill_, fill.raw(), fill.nbytes());
      }
    }
    if (auto layout = affine_layout(map, map.shape())) {
      layout_ = *layout;
      affine_ = true;
      set_what(fmt::format("CUDA strided copy ({})", node.op_type));
    } else {
      map_ = bind_constant(p, map);
      set_what(fmt::format("CUDA index copy ({})", node.op_type));
    }
  }

  void enqueue(const GpuStream& s, const void* const* in, void* const* out) const override {
    if (affine_)
      kern::strided_copy(data(x_, in), layout_, out[0], element_size_, s.stream);
    else
      kern::index_copy(data(x_, in), static_cast<const int64_t*>(map_.constant), out[0], n_, element_size_, fill_,
                       s.stream);
  }

 private:
  Operand x_, map_;
  kern::Strided layout_;
  bool affine_ = false;
  int element_size_ = 4;
  int64_t n_ = 0;
  unsigned char fill_[8] = {};
};

// ---------------------------------------------------------------- Gather (run-time indices)

class GatherOp : public GpuOp {
 public:
  explicit GatherOp(const GpuPrepare& p) : GpuOp(p, "CUDA gather") {
    const Node& node = p.node();
    data_ = bind(p, node.inputs[0]);
    indices_ = bind(p, node.inputs[1]);
    const Shape& x = shape_of(p.graph, node.inputs[0]);
    int64_t rank = static_cast<int64_t>(x.size());
    int64_t axis = kernels::normalize_axis(node, node.attr_int("axis", 0), rank);
    outer_ = 1;
    inner_ = 1;
    for (int64_t d = 0; d < axis; ++d) outer_ *= x[static_cast<size_t>(d)];
    for (int64_t d = axis + 1; d < rank; ++d) inner_ *= x[static_cast<size_t>(d)];
    axis_len_ = x[static_cast<size_t>(axis)];
    n_indices_ = numel_of(p.graph, node.inputs[1]);
    int64_ = p.value(node.inputs[1]).dtype == DType::kInt64;
    element_size_ = static_cast<int>(dtype_size(p.value(node.inputs[0]).dtype));
  }

  void enqueue(const GpuStream& s, const void* const* in, void* const* out) const override {
    kern::gather(data(data_, in), data(indices_, in), int64_, out[0], outer_, axis_len_, n_indices_, inner_,
                 element_size_, s.stream);
  }

 private:
  Operand data_, indices_;
  int64_t outer_ = 1, inner_ = 1, axis_len_ = 1, n_indices_ = 0;
  bool int64_ = true;
  int element_size_ = 4;
};

std::unique_ptr<GpuOp> prepare_index_map(const GpuPrepare& p) {
  const Node& node = p.node();
  if (node.op_type == "Gather" && !p.value(node.inputs[1]).is_constant()) return std::make_unique<GatherOp>(p);
  return std::make_unique<IndexMapOp>(p);
}

std::string gather_declines(const Graph& graph, const Node& node) {
  if (node.input(0) == kNoValue || node.input(1) == kNoValue) return "no data or no indices";
  if (graph.values[node.input(0)].shape.empty()) return "scalar data";
  return index_map_declines(graph, node);
}

}  // namespace

HETSCHED_CUDA_KERNEL("Reshape", view_declines, prepare_view, "a view of the input (no work)");
HETSCHED_CUDA_KERNEL("Flatten", view_declines, prepare_view, "a view of the input (no work)");
HETSCHED_CUDA_KERNEL("Squeeze", view_declines, prepare_view, "a view of the input (no work)");
HETSCHED_CUDA_KERNEL("Unsqueeze", view_declines, prepare_view, "a view of the input (no work)");
HETSCHED_CUDA_KERNEL("Identity", view_declines, prepare_view, "a view of the input (no work)");
HETSCHED_CUDA_KERNEL("Dropout", view_declines, prepare_view, "a view of the input (inference; no work)");

#define HETSCHED_CUDA_INDEX_MAP(OP)                            \
  HETSCHED_CUDA_KERNEL(OP, index_map_declines, prepare_index_map, \
                       "CUDA strided copy, or index copy by the reference kernel's index map")
HETSCHED_CUDA_INDEX_MAP("Transpose");
HETSCHED_CUDA_INDEX_MAP("Slice");
HETSCHED_CUDA_INDEX_MAP("Expand");
HETSCHED_CUDA_INDEX_MAP("Tile");
HETSCHED_CUDA_INDEX_MAP("DepthToSpace");
HETSCHED_CUDA_INDEX_MAP("SpaceToDepth");
HETSCHED_CUDA_INDEX_MAP("Pad");
HETSCHED_CUDA_KERNEL("Gather", gather_declines, prepare_index_map,
                     "CUDA gather (run-time indices) or strided / index copy (constant indices)");

}  // namespace hetsched::cuda::ops
