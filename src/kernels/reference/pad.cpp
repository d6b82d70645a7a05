// Pad: modes constant, reflect and edge. Pads (and the constant `value`) are
// attributes before opset 11, inputs from 11 (`pads`, optional
// `constant_value`), with an optional `axes` input from opset 18. Negative
// pads crop. Reflect beyond one period keeps reflecting, like numpy.pad.
#include <cstring>

#include <fmt/format.h>

#include "kernels/reference/common.h"

namespace hetsched::kernels {
namespace {

bool attribute_form(const Node& node) { return node.has_attr("pads"); }

void check_pad(const Node& node, const Graph& graph) {
  std::string mode = node.attr_string("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    throw_unsupported(node, fmt::format("mode '{}' is not supported (constant, reflect, edge)", mode));
  if (attribute_form(node)) {
    if (node.input(1) != kNoValue) throw_invalid(node, "has both a 'pads' attribute and a 'pads' input");
    ValueId x = node.input(0);
    if (x != kNoValue && graph.values[x].dtype == DType::kFloat16 && node.attr_float("value", 0.0f) != 0.0f)
      throw_unsupported(node, "a non-zero 'value' for float16 data is not supported");
    return;
  }
  if (node.input(1) == kNoValue) throw_invalid(node, "needs pads");
  check_input_dtypes(node, graph, {DType::kInt64}, {1});
  check_input_dtypes(node, graph, {DType::kInt32, DType::kInt64}, {3});
  ValueId x = node.input(0), c = node.input(2);
  if (x != kNoValue && c != kNoValue && graph.values[x].dtype != DType::kUndefined &&
      graph.values[c].dtype != DType::kUndefined && graph.values[x].dtype != graph.values[c].dtype)
    throw_invalid(node, "constant_value and data have different dtypes");
}

// One element of dtype `dtype` holding `v`, as raw bytes.
std::vector<std::byte> element_bytes(const Node& node, DType dtype, double v) {
  std::vector<std::byte> bytes(dtype_size(dtype));
  if (v == 0) return bytes;  // zero is all-zero bytes for every dtype
  if (dtype == DType::kFloat16) throw_runtime(node, "a non-zero pad value for float16 is not supported");
  dispatch_all(node, dtype, [&](auto t) {
    using T = decltype(t);
    T value = cast_value<T>(v);
    std::memcpy(bytes.data(), &value, sizeof(T));
  });
  return bytes;
}

std::vector<Tensor> compute_pad(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = required_input(node, inputs, 0);
  int64_t rank = x.rank();
  std::string mode = node.attr_string("mode", "constant");
  size_t es = dtype_size(x.dtype());

  std::vector<int64_t> pads, axes;
  std::vector<std::byte> constant;
  if (attribute_form(node)) {
    pads = node.attr_ints("pads");
    constant = element_bytes(node, x.dtype(), node.attr_float("value", 0.0f));
  } else {
    pads = required_input(node, inputs, 1).to_int64_vector();
    axes = optional_int64_input(inputs, 3);
    const Tensor* c = inputs.size() > 2 ? inputs[2] : nullptr;
    if (c && c->numel() > 0) {
      if (c->dtype() == x.dtype()) {
        constant.resize(es);
        std::memcpy(constant.data(), c->raw(), es);
      } else {
        constant = element_bytes(node, x.dtype(), c->to_double_vector()[0]);
      }
    } else {
      constant.assign(es, std::byte{0});
    }
  }
  bool have_axes = inputs.size() > 3 && inputs[3] != nullptr;
  if (!have_axes)
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  if (pads.size() != 2 * axes.size())
    throw_runtime(node, fmt::format("{} pads for {} axes (input {})", pads.size(), axes.size(),
                                    shape_to_string(x.shape())));
  std::vector<int64_t> begin(static_cast<size_t>(rank), 0), end(static_cast<size_t>(rank), 0);
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] < -rank || axes[i] >= rank)
      throw_runtime(node, fmt::format("axis {} is out of range for rank {}", axes[i], rank));
    size_t a = static_cast<size_t>(axes[i] < 0 ? axes[i] + rank : axes[i]);
    if (seen[a]) throw_runtime(node, fmt::format("axis {} is repeated", axes[i]));
    seen[a] = true;
    begin[a] = pads[i];
    end[a] = pads[i + axes.size()];
  }

  Shape out_shape(static_cast<size_t>(rank));
  for (size_t d = 0; d < static_cast<size_t>(rank); ++d) {
    int64_t n = x.shape()[d];
    if (begin[d] < -n || end[d] < -n)
      throw_runtime(node, fmt::format("pads {} and {} on axis {} of size {} remove more than the axis holds", begin[d],
                                      end[d], d, n));
    int64_t len = 0;
    if (__builtin_add_overflow(n, begin[d], &len) || __builtin_add_overflow(len, end[d], &len))
      throw_runtime(node, fmt::format("pads {} and {} on axis {} of size {} give a size that overflows int64",
                                      begin[d], end[d], d, n));
    if (len < 0)
      throw_runtime(node, fmt::format("pads {} and {} on axis {} of size {} leave a negative size", begin[d], end[d],
                                      d, n));
    out_shape[d] = len;
  }
  // The output first: its allocation is checked against the limits, and
  // the maps below are no longer than its axes.
  Tensor out(x.dtype(), out_shape);
  if (out.numel() == 0) return {out};

  // Per axis: output coordinate -> input coordinate, or -1 for the constant.
  std::vector<std::vector<int64_t>> maps(static_cast<size_t>(rank));
  for (size_t d = 0; d < static_cast<size_t>(rank); ++d) {
    int64_t n = x.shape()[d];
    int64_t len = out_shape[d];
    maps[d].reserve(static_cast<size_t>(len));
    for (int64_t o = 0; o < len; ++o) {
      int64_t i = o - begin[d];
      if (i < 0 || i >= n) {
        if (mode == "constant") {
          i = -1;
        } else if (n == 0) {
          throw_runtime(node, fmt::format("cannot pad an empty axis {} in mode '{}'", d, mode));
        } else if (mode == "edge" || n == 1) {
          i = i < 0 ? 0 : n - 1;
        } else {  // reflect: a triangle wave of period 2(n-1)
          int64_t period = 2 * (n - 1);
          i %= period;
          if (i < 0) i += period;
          if (i >= n) i = period - i;
        }
      }
      maps[d].push_back(i);
    }
  }

  const auto* src = static_cast<const std::byte*>(x.raw());
  auto* dst = static_cast<std::byte*>(out.raw());
  if (rank == 0) {
    std::memcpy(dst, src, es);
    return {out};
  }
  std::vector<int64_t> strides = strides_of(x.shape());
  std::vector<int64_t> coord(static_cast<size_t>(rank), 0);
  const std::vector<int64_t>& last = maps.back();
  int64_t row_len = out_shape.back();
  for (int64_t r = 0, rows = out.numel() / row_len; r < rows; ++r) {
    int64_t offset = 0;
    bool outside = false;
    for (size_t d = 0; d + 1 < static_cast<size_t>(rank); ++d) {
      int64_t i = maps[d][static_cast<size_t>(coord[d])];
      if (i < 0) outside = true;
      offset += i * strides[d];
    }
    for (int64_t o = 0; o < row_len; ++o, dst += es) {
      int64_t i = last[static_cast<size_t>(o)];
      if (outside || i < 0)
        std::memcpy(dst, constant.data(), es);
      else
        std::memcpy(dst, src + static_cast<size_t>(offset + i) * es, es);
    }
    for (int64_t d = rank - 2; d >= 0; --d) {
      if (++coord[d] < out_shape[d]) break;
      coord[d] = 0;
    }
  }
  return {out};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("Pad", check_pad, compute_pad);

}  // namespace hetsched::kernels
