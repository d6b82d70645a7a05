// Conv — reference kernel.
//
// Supported: float32 and float64 (X, W and B of one dtype); 1-D, 2-D and 3-D
// convolutions (X of rank 3, 4 or 5); group (grouped and depthwise); strides;
// dilations; explicit pads; auto_pad NOTSET, SAME_UPPER, SAME_LOWER, VALID;
// the optional bias B; kernel_shape (it must agree with W's spatial dims).
// Refused: more than 3 spatial dims, other dtypes. ConvInteger and
// QLinearConv run this kernel on int64 tensors (their 8-bit inputs minus
// their zero points).
//
// Method: for each image and group, the output is W_g[M_g x C_g*k] times the
// im2col matrix of the input [C_g*k x out_positions], built in chunks of
// output rows so the buffer stays small, and multiplied with the blocked GEMM
// of nn_common.h. A 1x1 kernel with stride 1 and no padding reads the input
// directly, without im2col. Summation order for one output value: bias, then
// input channel by channel, each over the kernel taps in (d, h, w) order.
#include <cstring>

#include "kernels/reference/nn_common.h"

namespace hetsched::kernels {
namespace {

using nn::AutoPad;
using nn::Geometry3;
using nn::kMaxSpatial;

// Attributes that do not depend on the input shapes, validated for n spatial dims.
struct ConvAttrs {
  AutoPad auto_pad = AutoPad::kNotSet;
  int64_t group = 1;
  std::vector<int64_t> strides, dilations, pads, kernel_shape;  // kernel_shape empty when absent
};

ConvAttrs read_conv_attrs(const Node& node, int64_t n) {
  nn::check_spatial_rank(node, n, "Conv");
  ConvAttrs a;
  a.auto_pad = nn::read_auto_pad(node);
  a.group = node.attr_int("group", 1);
  if (a.group < 1) throw_invalid(node, fmt::format("group must be >= 1, got {}", a.group));
  size_t ns = static_cast<size_t>(n);
  a.strides = nn::read_spatial_ints(node, "strides", ns, 1, 1);
  a.dilations = nn::read_spatial_ints(node, "dilations", ns, 1, 1);
  a.pads = nn::read_pads(node, ns);
  if (node.has_attr("kernel_shape")) a.kernel_shape = nn::read_spatial_ints(node, "kernel_shape", ns, 1, 1);
  return a;
}

void check_conv(const Node& node, const Graph& graph) {
  check_input_dtypes(node, graph, kFloatTypes);
  nn::read_auto_pad(node);
  int64_t n = nn::known_spatial_rank(node, graph, 1);
  if (n < 0) return;
  ConvAttrs a = read_conv_attrs(node, n);
  ValueId x = node.input(0), w = node.input(1);
  if (w == kNoValue) throw_invalid(node, "input 1 (W) is required");
  const Value* wv = &graph.values[w];
  if (!wv->has_shape) return;
  if (static_cast<int64_t>(wv->shape.size()) != n + 2)
    throw_invalid(node, fmt::format("W has rank {}, expected {}", wv->shape.size(), n + 2));
  for (size_t i = 0; i < a.kernel_shape.size(); ++i)
    if (wv->shape[i + 2] >= 0 && wv->shape[i + 2] != a.kernel_shape[i])
      throw_invalid(node, fmt::format("kernel_shape {} does not match W's shape {}",
                                      shape_to_string(a.kernel_shape), shape_to_string(wv->shape)));
  if (wv->shape[0] >= 0 && wv->shape[0] % a.group != 0)
    throw_invalid(node,
                  fmt::format("W has {} output channels, not a multiple of group {}", wv->shape[0], a.group));
  if (x != kNoValue && graph.values[x].has_shape) {
    int64_t c = graph.values[x].shape[1];
    if (c >= 0 && wv->shape[1] >= 0 && c != wv->shape[1] * a.group)
      throw_invalid(node,
                    fmt::format("X has {} channels but W expects {} x group {}", c, wv->shape[1], a.group));
  }
}

// Fills the im2col rows for output rows [row0, row0 + nrows) (a row = one
// (od, oh) pair of OW outputs) of one group: buf[(c, kd, kh, kw)][row][ow].
template <typename T>
void im2col_chunk(const T* x, int64_t c_g, const Geometry3& g, int64_t row0, int64_t nrows, T* buf) {
  const int64_t OW = g.out[2], ncols = nrows * OW;
  const int64_t in_plane = g.in_size();
  int64_t kr = 0;
  for (int64_t c = 0; c < c_g; ++c) {
    const T* xc = x + c * in_plane;
    for (int64_t kd = 0; kd < g.kernel[0]; ++kd)
      for (int64_t kh = 0; kh < g.kernel[1]; ++kh)
        for (int64_t kw = 0; kw < g.kernel[2]; ++kw, ++kr) {
          T* dst_row = buf + kr * ncols;
          // Valid output columns: iw = ow * sw + off in [0, IW).
          const int64_t sw = g.stride[2], off = kw * g.dilation[2] - g.pad_begin[2], IW = g.in[2];
          int64_t lo = off >= 0 ? 0 : nn::ceil_div_positive(-off, sw);
          int64_t hi = IW - off <= 0 ? 0 : nn::ceil_div_positive(IW - off, sw);
          lo = std::min(lo, OW);
          hi = std::max(lo, std::min(hi, OW));
          for (int64_t r = 0; r < nrows; ++r) {
            T* dst = dst_row + r * OW;
            int64_t od = (row0 + r) / g.out[1], oh = (row0 + r) % g.out[1];
            int64_t id = od * g.stride[0] + kd * g.dilation[0] - g.pad_begin[0];
            int64_t ih = oh * g.stride[1] + kh * g.dilation[1] - g.pad_begin[1];
            if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1]) {
              std::fill(dst, dst + OW, T(0));
              continue;
            }
            const T* src = xc + (id * g.in[1] + ih) * IW + off;
            std::fill(dst, dst + lo, T(0));
            if (sw == 1) {
              std::memcpy(dst + lo, src + lo, static_cast<size_t>(hi - lo) * sizeof(T));
            } else {
              for (int64_t ow = lo; ow < hi; ++ow) dst[ow] = src[ow * sw];
            }
            std::fill(dst + hi, dst + OW, T(0));
          }
        }
  }
}

template <typename T>
void conv_compute(const Tensor& X, const Tensor& W, const Tensor* B, int64_t group, const Geometry3& g,
                  Tensor& Y) {
  const int64_t N = X.dim(0), C = X.dim(1), M = W.dim(0);
  const int64_t c_g = C / group, m_g = M / group;
  const int64_t K = c_g * g.kernel_size();
  const int64_t in_plane = g.in_size(), out_plane = g.out_size();
  const T* x = X.data<T>();
  const T* w = W.data<T>();
  T* y = Y.data<T>();
  const T* bias = B ? B->data<T>() : nullptr;
  if (out_plane == 0 || N == 0 || M == 0) return;

  bool pointwise = g.kernel_size() == 1;
  for (size_t i = 0; i < kMaxSpatial; ++i)
    pointwise = pointwise && g.stride[i] == 1 && g.pad_begin[i] == 0 && g.pad_end[i] == 0;

  // Chunk of output rows per im2col buffer: about 4M elements, at least one row.
  const int64_t OW = g.out[2], total_rows = g.out[0] * g.out[1];
  const int64_t kBufElems = int64_t(1) << 22;
  int64_t rows_per_chunk = std::clamp<int64_t>(kBufElems / std::max<int64_t>(1, K * OW), 1, total_rows);
  std::vector<T> buf;
  if (!pointwise && out_plane > 0) buf.resize(static_cast<size_t>(K * rows_per_chunk * OW));

  for (int64_t n = 0; n < N; ++n) {
    for (int64_t gi = 0; gi < group; ++gi) {
      const T* xg = x + (n * C + gi * c_g) * in_plane;
      const T* wg = w + gi * m_g * K;
      T* yg = y + (n * M + gi * m_g) * out_plane;
      if (bias)
        for (int64_t m = 0; m < m_g; ++m)
          std::fill(yg + m * out_plane, yg + (m + 1) * out_plane, bias[gi * m_g + m]);
      if (pointwise) {
        nn::gemm_accumulate<T>(m_g, out_plane, K, wg, K, 1, xg, in_plane, yg, out_plane);
        continue;
      }
      for (int64_t row0 = 0; row0 < total_rows; row0 += rows_per_chunk) {
        int64_t nrows = std::min(rows_per_chunk, total_rows - row0);
        int64_t ncols = nrows * OW;
        im2col_chunk(xg, c_g, g, row0, nrows, buf.data());
        nn::gemm_accumulate<T>(m_g, ncols, K, wg, K, 1, buf.data(), ncols, yg + row0 * OW, out_plane);
      }
    }
  }
}

std::vector<Tensor> compute_conv(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& X = required_input(node, inputs, 0);
  const Tensor& W = required_input(node, inputs, 1);
  const Tensor* B = inputs.size() > 2 ? inputs[2] : nullptr;
  const int64_t n = X.rank() - 2;
  ConvAttrs a = read_conv_attrs(node, n);
  if (W.rank() != X.rank())
    throw_runtime(node, fmt::format("W has shape {}, expected rank {} like X ({})",
                                    shape_to_string(W.shape()), X.rank(), shape_to_string(X.shape())));
  if (W.dtype() != X.dtype() || (B && B->dtype() != X.dtype()))
    throw_runtime(node, "X, W and B must have the same dtype");
  const int64_t C = X.dim(1), M = W.dim(0);
  if (M % a.group != 0 || C != W.dim(1) * a.group)
    throw_runtime(node,
                  fmt::format("X {} and W {} do not agree with group {}: need C = W[1] * group and W[0] "
                              "divisible by group",
                              shape_to_string(X.shape()), shape_to_string(W.shape()), a.group));
  if (B && (B->numel() != M || B->rank() != 1))
    throw_runtime(node, fmt::format("B has shape {}, expected {}", shape_to_string(B->shape()), M));

  Geometry3 g;
  Shape out_shape = {X.dim(0), M};
  for (int64_t i = 0; i < n; ++i) {
    size_t ax = kMaxSpatial - static_cast<size_t>(n) + static_cast<size_t>(i);
    int64_t k = W.dim(i + 2);
    if (k < 1)
      throw_runtime(node, fmt::format("W has shape {}, with an empty kernel", shape_to_string(W.shape())));
    if (!a.kernel_shape.empty() && a.kernel_shape[static_cast<size_t>(i)] != k)
      throw_runtime(node, fmt::format("kernel_shape {} does not match W's shape {}",
                                      shape_to_string(a.kernel_shape), shape_to_string(W.shape())));
    g.in[ax] = X.dim(i + 2);
    g.kernel[ax] = k;
    g.stride[ax] = a.strides[static_cast<size_t>(i)];
    g.dilation[ax] = a.dilations[static_cast<size_t>(i)];
    nn::AxisGeometry ag =
        nn::axis_geometry(node, a.auto_pad, g.in[ax], k, g.stride[ax], g.dilation[ax],
                          a.pads[static_cast<size_t>(i)], a.pads[static_cast<size_t>(i + n)], false);
    g.out[ax] = ag.out;
    g.pad_begin[ax] = ag.pad_begin;
    g.pad_end[ax] = ag.pad_end;
    out_shape.push_back(ag.out);
  }
  Tensor Y(X.dtype(), out_shape);
  if (X.dtype() == DType::kInt64) {  // ConvInteger and QLinearConv (8-bit values widened), never overflowing
    conv_compute<int64_t>(X, W, B, a.group, g, Y);
    return {Y};
  }
  dispatch_float(node, X.dtype(), [&](auto t) {
    using T = decltype(t);
    conv_compute<T>(X, W, B, a.group, g, Y);
  });
  return {Y};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("Conv", check_conv, compute_conv);

}  // namespace hetsched::kernels
