// ScatterElements (and its opset 9-10 name Scatter) and ScatterND: a copy of
// data with `updates` written at `indices`. Reductions (opset 16+: add, mul;
// 18+: max, min) apply in index order; with reduction none a repeated index
// keeps the last update. Reductions need a numeric dtype; none copies bytes.
#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "kernels/reference/common.h"

namespace hetsched::kernels {
namespace {

enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

bool parse_reduction(const std::string& s, Reduction* r) {
  if (s == "none") *r = Reduction::kNone;
  else if (s == "add") *r = Reduction::kAdd;
  else if (s == "mul") *r = Reduction::kMul;
  else if (s == "max") *r = Reduction::kMax;
  else if (s == "min") *r = Reduction::kMin;
  else return false;
  return true;
}

Reduction reduction_of(const Node& node) {
  Reduction r = Reduction::kNone;
  std::string s = node.attr_string("reduction", "none");
  if (!parse_reduction(s, &r)) throw_unsupported(node, fmt::format("reduction '{}' is not supported", s));
  return r;
}

void check_scatter(const Node& node, const Graph& graph) {
  if (node.input(0) == kNoValue || node.input(1) == kNoValue || node.input(2) == kNoValue)
    throw_invalid(node, "needs data, indices and updates");
  Reduction r = reduction_of(node);
  check_input_dtypes(node, graph, {DType::kInt32, DType::kInt64}, {1});
  if (r != Reduction::kNone) check_input_dtypes(node, graph, kNumericTypes, {0, 2});
  DType d = graph.values[node.input(0)].dtype, u = graph.values[node.input(2)].dtype;
  if (d != DType::kUndefined && u != DType::kUndefined && d != u)
    throw_invalid(node, fmt::format("data is {} but updates are {}", dtype_name(d), dtype_name(u)));
}

int64_t checked_index(const Node& node, int64_t index, int64_t dim) {
  int64_t i = index < 0 ? index + dim : index;
  if (i < 0 || i >= dim) throw_runtime(node, fmt::format("index {} is out of range for a dim of {}", index, dim));
  return i;
}

// Applies updates: for each k, out[targets[k]] (op)= updates[k], for
// block-sized runs: element j of run k goes to targets[k] + j.
void apply(const Node& node, Reduction r, Tensor& out, const Tensor& updates, const std::vector<int64_t>& targets,
           int64_t block) {
  if (updates.dtype() != out.dtype())
    throw_runtime(node, fmt::format("updates are {}, data is {}", updates.description(), out.description()));
  size_t es = dtype_size(out.dtype());
  if (r == Reduction::kNone) {
    auto* dst = static_cast<std::byte*>(out.raw());
    const auto* src = static_cast<const std::byte*>(updates.raw());
    size_t bytes = static_cast<size_t>(block) * es;
    for (size_t k = 0; k < targets.size(); ++k)
      if (bytes) std::memcpy(dst + static_cast<size_t>(targets[k]) * es, src + k * bytes, bytes);
    return;
  }
  dispatch_numeric(node, out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* dst = out.data<T>();
    const T* src = updates.data<T>();
    for (size_t k = 0; k < targets.size(); ++k)
      for (int64_t j = 0; j < block; ++j) {
        T& o = dst[targets[k] + j];
        T u = src[static_cast<int64_t>(k) * block + j];
        switch (r) {
          case Reduction::kAdd: o = static_cast<T>(o + u); break;
          case Reduction::kMul: o = static_cast<T>(o * u); break;
          case Reduction::kMax: o = std::max(o, u); break;
          case Reduction::kMin: o = std::min(o, u); break;
          case Reduction::kNone: o = u; break;
        }
      }
  });
}

std::vector<Tensor> compute_scatter_elements(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& data = required_input(node, inputs, 0);
  const Tensor& indices = required_input(node, inputs, 1);
  const Tensor& updates = required_input(node, inputs, 2);
  Reduction r = reduction_of(node);
  int64_t rank = data.rank();
  if (rank == 0) throw_runtime(node, "data must have rank >= 1");
  if (indices.shape() != updates.shape())
    throw_runtime(node, fmt::format("indices {} and updates {} differ in shape", shape_to_string(indices.shape()),
                                    shape_to_string(updates.shape())));
  if (indices.rank() != rank)
    throw_runtime(node, fmt::format("indices rank {} differs from data rank {}", indices.rank(), rank));
  int64_t axis = normalize_axis(node, node.attr_int("axis", 0), rank);
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && indices.dim(d) > data.dim(d))
      throw_runtime(node, fmt::format("indices shape {} exceeds data shape {} on axis {}",
                                      shape_to_string(indices.shape()), shape_to_string(data.shape()), d));
  std::vector<int64_t> idx = indices.to_int64_vector();
  std::vector<int64_t> strides = strides_of(data.shape());
  std::vector<int64_t> targets(idx.size());
  std::vector<int64_t> coord(static_cast<size_t>(rank), 0);
  for (size_t k = 0; k < idx.size(); ++k) {
    int64_t offset = 0;
    for (int64_t d = 0; d < rank; ++d)
      offset += (d == axis ? checked_index(node, idx[k], data.dim(axis)) : coord[d]) * strides[d];
    targets[k] = offset;
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++coord[d] < indices.dim(d)) break;
      coord[d] = 0;
    }
  }
  Tensor out = data.clone();
  apply(node, r, out, updates, targets, 1);
  return {out};
}

std::vector<Tensor> compute_scatter_nd(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& data = required_input(node, inputs, 0);
  const Tensor& indices = required_input(node, inputs, 1);
  const Tensor& updates = required_input(node, inputs, 2);
  Reduction r = reduction_of(node);
  int64_t rank = data.rank(), q = indices.rank();
  if (rank < 1 || q < 1) throw_runtime(node, "data and indices must have rank >= 1");
  int64_t last = indices.dim(q - 1);
  if (last > rank) throw_runtime(node, fmt::format("indices last dim {} exceeds data rank {}", last, rank));
  Shape expected(indices.shape().begin(), indices.shape().end() - 1);
  expected.insert(expected.end(), data.shape().begin() + last, data.shape().end());
  if (updates.shape() != expected)
    throw_runtime(node, fmt::format("updates have shape {}, expected {}", shape_to_string(updates.shape()),
                                    shape_to_string(expected)));
  int64_t block = 1;
  for (int64_t d = last; d < rank; ++d) block *= data.dim(d);
  std::vector<int64_t> strides = strides_of(data.shape());
  std::vector<int64_t> idx = indices.to_int64_vector();
  int64_t tuples = last == 0 ? shape_numel(Shape(indices.shape().begin(), indices.shape().end() - 1))
                             : static_cast<int64_t>(idx.size()) / last;
  std::vector<int64_t> targets(static_cast<size_t>(tuples));
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t offset = 0;
    for (int64_t j = 0; j < last; ++j)
      offset += checked_index(node, idx[static_cast<size_t>(t * last + j)], data.dim(j)) * strides[j];
    targets[static_cast<size_t>(t)] = offset;
  }
  Tensor out = data.clone();
  apply(node, r, out, updates, targets, block);
  return {out};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("ScatterElements", check_scatter, compute_scatter_elements);
HETSCHED_REFERENCE_KERNEL("Scatter", check_scatter, compute_scatter_elements);
HETSCHED_REFERENCE_KERNEL("ScatterND", check_scatter, compute_scatter_nd);

}  // namespace hetsched::kernels
