// MaxPool and AveragePool — reference kernels.
//
// Both: 1-D, 2-D and 3-D pooling (X of rank 3, 4 or 5); kernel_shape
// (required); strides; pads; auto_pad NOTSET, SAME_UPPER, SAME_LOWER, VALID;
// ceil_mode (honoured for NOTSET and VALID; a last window that would start in
// the end padding is dropped, as in PyTorch and ONNX opset 19); dilations.
// Refused: more than 3 spatial dims.
//
// MaxPool: float32, float64, int8, uint8. Padding never wins (it is -inf);
// NaN propagates; ties keep the first element in row-major window order. The
// optional Indices output (int64) is produced: flat indices into X including
// the batch and channel offset, with the spatial part in row-major order
// (storage_order 0) or column-major order (storage_order 1). A window that
// holds only padding gives -inf (the lowest integer) and index -1.
//
// AveragePool: float32, float64; count_include_pad 0 divides by the number of
// input elements in the window; count_include_pad 1 also counts the padding,
// but not the part of a ceil_mode window beyond the end padding (PyTorch's
// and onnxruntime's rule). Sums are accumulated in double.
#include <cmath>
#include <limits>

#include "kernels/reference/nn_common.h"

namespace hetsched::kernels {
namespace {

using nn::AutoPad;
using nn::Geometry3;
using nn::kMaxSpatial;

struct PoolAttrs {
  AutoPad auto_pad = AutoPad::kNotSet;
  bool ceil_mode = false;
  std::vector<int64_t> kernel, strides, dilations, pads;
};

PoolAttrs read_pool_attrs(const Node& node, int64_t n) {
  nn::check_spatial_rank(node, n, node.op_type.c_str());
  if (!node.has_attr("kernel_shape")) throw_invalid(node, "attribute 'kernel_shape' is required");
  PoolAttrs a;
  size_t ns = static_cast<size_t>(n);
  a.auto_pad = nn::read_auto_pad(node);
  a.ceil_mode = node.attr_int("ceil_mode", 0) != 0;
  a.kernel = nn::read_spatial_ints(node, "kernel_shape", ns, 1, 1);
  a.strides = nn::read_spatial_ints(node, "strides", ns, 1, 1);
  a.dilations = nn::read_spatial_ints(node, "dilations", ns, 1, 1);
  a.pads = nn::read_pads(node, ns);
  return a;
}

void check_pool_common(const Node& node, const Graph& graph) {
  nn::read_auto_pad(node);
  int64_t n = nn::known_spatial_rank(node, graph, -1);
  if (n < 0) {
    if (!node.has_attr("kernel_shape")) throw_invalid(node, "attribute 'kernel_shape' is required");
    return;
  }
  read_pool_attrs(node, n);
  if (node.has_attr("kernel_shape") && static_cast<int64_t>(node.attr_ints("kernel_shape").size()) != n)
    throw_invalid(node, fmt::format("kernel_shape has {} values, but X has {} spatial dims",
                                    node.attr_ints("kernel_shape").size(), n));
}

// Geometry of a pool on X; the output shape goes to out_shape.
Geometry3 pool_geometry(const Node& node, const Tensor& X, const PoolAttrs& a, Shape& out_shape) {
  const int64_t n = X.rank() - 2;
  Geometry3 g;
  out_shape = {X.dim(0), X.dim(1)};
  for (int64_t i = 0; i < n; ++i) {
    size_t si = static_cast<size_t>(i);
    size_t ax = kMaxSpatial - static_cast<size_t>(n) + si;
    g.in[ax] = X.dim(i + 2);
    g.kernel[ax] = a.kernel[si];
    g.stride[ax] = a.strides[si];
    g.dilation[ax] = a.dilations[si];
    nn::AxisGeometry ag =
        nn::axis_geometry(node, a.auto_pad, g.in[ax], g.kernel[ax], g.stride[ax], g.dilation[ax], a.pads[si],
                          a.pads[si + static_cast<size_t>(n)], a.ceil_mode);
    g.out[ax] = ag.out;
    g.pad_begin[ax] = ag.pad_begin;
    g.pad_end[ax] = ag.pad_end;
    out_shape.push_back(ag.out);
  }
  return g;
}

// For each output index o on one axis: the kernel taps [lo, hi) that land
// inside the input, the input position of tap 0, and the number of taps that
// land inside [-pad_begin, in + pad_end) (for count_include_pad).
struct AxisTaps {
  std::vector<int64_t> lo, hi, start, padded_count;
};

AxisTaps axis_taps(const Geometry3& g, size_t ax) {
  AxisTaps t;
  const int64_t out = g.out[ax], k = g.kernel[ax], s = g.stride[ax], d = g.dilation[ax], in = g.in[ax];
  for (int64_t o = 0; o < out; ++o) {
    int64_t start = o * s - g.pad_begin[ax];
    int64_t lo = 0, hi = 0, padded = 0;
    while (lo < k && start + lo * d < 0) ++lo;
    hi = lo;
    while (hi < k && start + hi * d < in) ++hi;
    while (padded < k && start + padded * d < in + g.pad_end[ax]) ++padded;
    t.lo.push_back(lo);
    t.hi.push_back(std::max(lo, hi));
    t.start.push_back(start);
    t.padded_count.push_back(padded);
  }
  return t;
}

template <typename T>
bool is_nan_value(T v) {
  if constexpr (std::is_floating_point_v<T>)
    return std::isnan(v);
  else
    return false;
}

template <typename T>
void maxpool_compute(const Tensor& X, const Geometry3& g, bool col_major, Tensor& Y, Tensor* I) {
  const int64_t planes = X.dim(0) * X.dim(1), in_plane = g.in_size(), out_plane = g.out_size();
  const T* x = X.data<T>();
  T* y = Y.data<T>();
  int64_t* idx = I ? I->data<int64_t>() : nullptr;
  std::array<AxisTaps, kMaxSpatial> taps = {axis_taps(g, 0), axis_taps(g, 1), axis_taps(g, 2)};
  const T init = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                      : std::numeric_limits<T>::lowest();
  for (int64_t p = 0; p < planes; ++p) {
    const T* xp = x + p * in_plane;
    int64_t o = p * out_plane;
    for (int64_t od = 0; od < g.out[0]; ++od)
      for (int64_t oh = 0; oh < g.out[1]; ++oh)
        for (int64_t ow = 0; ow < g.out[2]; ++ow, ++o) {
          T best = init;
          int64_t best_at = -1;  // spatial position (id, ih, iw) of best, row-major
          int64_t bd = 0, bh = 0, bw = 0;
          for (int64_t kd = taps[0].lo[od]; kd < taps[0].hi[od]; ++kd) {
            int64_t id = taps[0].start[od] + kd * g.dilation[0];
            for (int64_t kh = taps[1].lo[oh]; kh < taps[1].hi[oh]; ++kh) {
              int64_t ih = taps[1].start[oh] + kh * g.dilation[1];
              const T* row = xp + (id * g.in[1] + ih) * g.in[2];
              for (int64_t kw = taps[2].lo[ow]; kw < taps[2].hi[ow]; ++kw) {
                int64_t iw = taps[2].start[ow] + kw * g.dilation[2];
                T v = row[iw];
                if (best_at < 0 || v > best || (is_nan_value(v) && !is_nan_value(best))) {
                  best = v;
                  best_at = (id * g.in[1] + ih) * g.in[2] + iw;
                  bd = id, bh = ih, bw = iw;
                }
              }
            }
          }
          y[o] = best;
          if (idx) {
            if (best_at < 0)
              idx[o] = -1;
            else if (col_major)
              idx[o] = p * in_plane + bd + bh * g.in[0] + bw * g.in[0] * g.in[1];
            else
              idx[o] = p * in_plane + best_at;
          }
        }
  }
}

void check_maxpool(const Node& node, const Graph& graph) {
  check_input_dtypes(node, graph, {DType::kFloat32, DType::kFloat64, DType::kInt8, DType::kUInt8});
  check_pool_common(node, graph);
  int64_t so = node.attr_int("storage_order", 0);
  if (so != 0 && so != 1) throw_invalid(node, fmt::format("storage_order must be 0 or 1, got {}", so));
}

std::vector<Tensor> compute_maxpool(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& X = required_input(node, inputs, 0);
  PoolAttrs a = read_pool_attrs(node, X.rank() - 2);
  int64_t so = node.attr_int("storage_order", 0);
  if (so != 0 && so != 1) throw_invalid(node, fmt::format("storage_order must be 0 or 1, got {}", so));
  Shape out_shape;
  Geometry3 g = pool_geometry(node, X, a, out_shape);
  Tensor Y(X.dtype(), out_shape);
  const bool want_indices = node.outputs.size() > 1 && node.outputs[1] != kNoValue;
  Tensor I;
  if (want_indices) I = Tensor(DType::kInt64, out_shape);
  auto run = [&](auto t) {
    using T = decltype(t);
    maxpool_compute<T>(X, g, so == 1, Y, want_indices ? &I : nullptr);
  };
  switch (X.dtype()) {
    case DType::kFloat32: run(float{}); break;
    case DType::kFloat64: run(double{}); break;
    case DType::kInt8: run(int8_t{}); break;
    case DType::kUInt8: run(uint8_t{}); break;
    default: throw_unsupported(node, std::string("dtype ") + dtype_name(X.dtype()) + " is not supported");
  }
  std::vector<Tensor> outs = {Y};
  if (node.outputs.size() > 1) outs.push_back(I);
  return outs;
}

template <typename T>
void avgpool_compute(const Tensor& X, const Geometry3& g, bool count_pad, Tensor& Y) {
  const int64_t planes = X.dim(0) * X.dim(1), in_plane = g.in_size(), out_plane = g.out_size();
  const T* x = X.data<T>();
  T* y = Y.data<T>();
  std::array<AxisTaps, kMaxSpatial> taps = {axis_taps(g, 0), axis_taps(g, 1), axis_taps(g, 2)};
  for (int64_t p = 0; p < planes; ++p) {
    const T* xp = x + p * in_plane;
    int64_t o = p * out_plane;
    for (int64_t od = 0; od < g.out[0]; ++od)
      for (int64_t oh = 0; oh < g.out[1]; ++oh)
        for (int64_t ow = 0; ow < g.out[2]; ++ow, ++o) {
          double sum = 0;
          for (int64_t kd = taps[0].lo[od]; kd < taps[0].hi[od]; ++kd) {
            int64_t id = taps[0].start[od] + kd * g.dilation[0];
            for (int64_t kh = taps[1].lo[oh]; kh < taps[1].hi[oh]; ++kh) {
              int64_t ih = taps[1].start[oh] + kh * g.dilation[1];
              const T* row = xp + (id * g.in[1] + ih) * g.in[2];
              for (int64_t kw = taps[2].lo[ow]; kw < taps[2].hi[ow]; ++kw)
                sum += static_cast<double>(row[taps[2].start[ow] + kw * g.dilation[2]]);
            }
          }
          int64_t count = 1;
          if (count_pad) {
            count = taps[0].padded_count[od] * taps[1].padded_count[oh] * taps[2].padded_count[ow];
          } else {
            count = (taps[0].hi[od] - taps[0].lo[od]) * (taps[1].hi[oh] - taps[1].lo[oh]) *
                    (taps[2].hi[ow] - taps[2].lo[ow]);
          }
          y[o] = static_cast<T>(sum / static_cast<double>(count));
        }
  }
}

void check_avgpool(const Node& node, const Graph& graph) {
  check_input_dtypes(node, graph, kFloatTypes);
  check_pool_common(node, graph);
}

std::vector<Tensor> compute_avgpool(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& X = required_input(node, inputs, 0);
  PoolAttrs a = read_pool_attrs(node, X.rank() - 2);
  const bool count_pad = node.attr_int("count_include_pad", 0) != 0;
  Shape out_shape;
  Geometry3 g = pool_geometry(node, X, a, out_shape);
  Tensor Y(X.dtype(), out_shape);
  dispatch_float(node, X.dtype(), [&](auto t) {
    using T = decltype(t);
    avgpool_compute<T>(X, g, count_pad, Y);
  });
  return {Y};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("MaxPool", check_maxpool, compute_maxpool);
HETSCHED_REFERENCE_KERNEL("AveragePool", check_avgpool, compute_avgpool);

}  // namespace hetsched::kernels
