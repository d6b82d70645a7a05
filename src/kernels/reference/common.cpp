#include "kernels/reference/common.h"

#include <cstring>

#include <fmt/format.h>

namespace hetsched::kernels {

namespace {
// Copies `n` elements of width W bytes from src (stepping `stride` elements,
// possibly negative or 0) to dst (contiguous).
template <size_t W>
void copy_row_w(std::byte* dst, const std::byte* src, int64_t n, int64_t stride) {
  for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * static_cast<int64_t>(W), src + i * stride * static_cast<int64_t>(W), W);
}

void copy_row(std::byte* dst, const std::byte* src, int64_t n, int64_t stride, size_t es) {
  if (stride == 1) {
    std::memcpy(dst, src, static_cast<size_t>(n) * es);
    return;
  }
  switch (es) {
    case 1: copy_row_w<1>(dst, src, n, stride); break;
    case 2: copy_row_w<2>(dst, src, n, stride); break;
    case 4: copy_row_w<4>(dst, src, n, stride); break;
    case 8: copy_row_w<8>(dst, src, n, stride); break;
    default:
      for (int64_t i = 0; i < n; ++i)
        std::memcpy(dst + i * static_cast<int64_t>(es), src + i * stride * static_cast<int64_t>(es), es);
  }
}

}  // namespace

void strided_copy(const void* src_raw, int64_t base, const std::vector<int64_t>& strides, const Shape& out_shape,
                  void* dst_raw, size_t es) {
  const auto* src = static_cast<const std::byte*>(src_raw);
  auto* dst = static_cast<std::byte*>(dst_raw);
  int64_t n = shape_numel(out_shape);
  if (n == 0) return;
  size_t rank = out_shape.size();
  if (rank == 0) {
    std::memcpy(dst, src + base * static_cast<int64_t>(es), es);
    return;
  }
  int64_t inner = out_shape.back();
  int64_t inner_stride = strides.back();
  std::vector<int64_t> idx(rank, 0);
  int64_t offset = base;
  int64_t es_i = static_cast<int64_t>(es);
  for (int64_t row = 0, rows = n / inner; row < rows; ++row) {
    copy_row(dst + row * inner * es_i, src + offset * es_i, inner, inner_stride, es);
    for (size_t d = rank - 1; d-- > 0;) {
      offset += strides[d];
      if (++idx[d] < out_shape[d]) break;
      offset -= strides[d] * out_shape[d];
      idx[d] = 0;
    }
  }
}


void throw_unsupported(const Node& node, const std::string& what) {
  throw Error(ErrorCode::kUnsupported, node.label() + ": " + what);
}
void throw_invalid(const Node& node, const std::string& what) {
  throw Error(ErrorCode::kInvalidModel, node.label() + ": " + what);
}
void throw_runtime(const Node& node, const std::string& what) {
  throw Error(ErrorCode::kRuntime, node.label() + ": " + what);
}

int64_t size_product(const Node& node, int64_t a, int64_t b) {
  int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product))
    throw_runtime(node, fmt::format("a size of {} x {} overflows int64", a, b));
  return product;
}

int64_t size_from_double(const Node& node, double v, const char* what) {
  if (!(v >= 0 && v < 0x1p63)) throw_runtime(node, fmt::format("{} {} is not a size (0 to 2^63 - 1)", what, v));
  return static_cast<int64_t>(v);
}

int64_t normalize_axis(const Node& node, int64_t axis, int64_t rank) {
  int64_t lo = rank == 0 ? -1 : -rank;
  int64_t hi = rank == 0 ? 0 : rank - 1;
  if (axis < lo || axis > hi)
    throw_invalid(node, fmt::format("axis {} is out of range for rank {}", axis, rank));
  return axis < 0 ? axis + std::max<int64_t>(rank, 1) : axis;
}

Shape broadcast_shapes(const Node& node, const Shape& a, const Shape& b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      throw_runtime(node, fmt::format("shapes {} and {} cannot be broadcast", shape_to_string(a),
                                      shape_to_string(b)));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::vector<int64_t> strides_of(const Shape& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i];
  }
  return strides;
}

std::vector<int64_t> broadcast_strides(const Shape& shape, const Shape& out_shape) {
  std::vector<int64_t> own = strides_of(shape);
  std::vector<int64_t> result(out_shape.size(), 0);
  size_t offset = out_shape.size() - shape.size();
  for (size_t i = 0; i < shape.size(); ++i) result[offset + i] = shape[i] == 1 ? 0 : own[i];
  return result;
}

namespace {
std::string allowed_list(std::initializer_list<DType> allowed) {
  std::string s;
  for (DType d : allowed) s += (s.empty() ? "" : ", ") + std::string(dtype_name(d));
  return s;
}
bool contains(std::initializer_list<DType> allowed, DType d) {
  for (DType a : allowed)
    if (a == d) return true;
  return false;
}
}  // namespace

void check_input_dtypes(const Node& node, const Graph& graph, std::initializer_list<DType> allowed,
                        std::vector<size_t> which) {
  if (which.empty())
    for (size_t i = 0; i < node.inputs.size(); ++i) which.push_back(i);
  for (size_t i : which) {
    ValueId id = node.input(i);
    if (id == kNoValue) continue;
    const Value& v = graph.values[id];
    if (v.dtype == DType::kUndefined || contains(allowed, v.dtype)) continue;
    throw_unsupported(node, fmt::format("input {} '{}' has dtype {}; supported: {}", i, v.name,
                                        dtype_name(v.dtype), allowed_list(allowed)));
  }
}

void check_output_dtypes(const Node& node, const Graph& graph, std::initializer_list<DType> allowed) {
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    ValueId id = node.outputs[i];
    if (id == kNoValue) continue;
    const Value& v = graph.values[id];
    if (v.dtype == DType::kUndefined || contains(allowed, v.dtype)) continue;
    throw_unsupported(node, fmt::format("output {} '{}' has dtype {}; supported: {}", i, v.name,
                                        dtype_name(v.dtype), allowed_list(allowed)));
  }
}

const Tensor& required_input(const Node& node, const std::vector<const Tensor*>& inputs, size_t index) {
  if (index >= inputs.size() || inputs[index] == nullptr)
    throw_runtime(node, fmt::format("required input {} is missing", index));
  return *inputs[index];
}

Tensor float_tensor_of(const Node& node, DType dtype, Shape shape, const std::vector<double>& values) {
  Tensor t(dtype, std::move(shape));
  dispatch_float(node, dtype, [&](auto tag) {
    using T = decltype(tag);
    T* p = t.data<T>();
    for (size_t i = 0; i < values.size(); ++i) p[i] = static_cast<T>(values[i]);
  });
  return t;
}

std::vector<int64_t> optional_int64_input(const std::vector<const Tensor*>& inputs, size_t index) {
  if (index >= inputs.size() || inputs[index] == nullptr) return {};
  return inputs[index]->to_int64_vector();
}

}  // namespace hetsched::kernels
