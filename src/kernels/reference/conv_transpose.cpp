// ConvTranspose — reference kernel.
//
// Supported: float32 and float64 (X, W and B of one dtype); 1-D, 2-D and 3-D
// (X of rank 3, 4 or 5); group; strides; dilations; explicit pads;
// output_padding; output_shape (spatial dims only, or with N and C in front);
// auto_pad NOTSET, SAME_UPPER, SAME_LOWER, VALID; the optional bias B;
// kernel_shape (it must agree with W's spatial dims).
// Refused: more than 3 spatial dims, other dtypes.
//
// Output size per spatial axis, as in the ONNX spec and its reference
// implementation:
//   full = stride * (in - 1) + output_padding + (kernel - 1) * dilation + 1
//   output_shape given: out = output_shape; total = full - out, split as
//     SAME_UPPER: begin = floor(total / 2); otherwise begin = total - floor(total / 2)
//     (a negative total, an output larger than full, extends it with zeros + bias);
//   else SAME_*: out = in * stride, total and split as above;
//   else: out = full - pads_begin - pads_end (VALID: no pads).
// Output position o receives input position i through kernel tap k when
// o = i * stride + k * dilation - begin.
//
// Method: for each image and group, cols = W_g^T [M_g*k x C_g] times the input
// [C_g x in_positions] (blocked GEMM, in chunks of input rows), then col2im
// scatters cols into the output.
#include "kernels/reference/nn_common.h"

namespace hetsched::kernels {
namespace {

using nn::AutoPad;
using nn::Geometry3;
using nn::kMaxSpatial;

struct ConvTransposeAttrs {
  AutoPad auto_pad = AutoPad::kNotSet;
  int64_t group = 1;
  std::vector<int64_t> strides, dilations, pads, output_padding, kernel_shape, output_shape;
};

ConvTransposeAttrs read_attrs(const Node& node, int64_t n) {
  nn::check_spatial_rank(node, n, "ConvTranspose");
  ConvTransposeAttrs a;
  a.auto_pad = nn::read_auto_pad(node);
  a.group = node.attr_int("group", 1);
  if (a.group < 1) throw_invalid(node, fmt::format("group must be >= 1, got {}", a.group));
  size_t ns = static_cast<size_t>(n);
  a.strides = nn::read_spatial_ints(node, "strides", ns, 1, 1);
  a.dilations = nn::read_spatial_ints(node, "dilations", ns, 1, 1);
  a.pads = nn::read_pads(node, ns);
  a.output_padding = nn::read_spatial_ints(node, "output_padding", ns, 0, 0);
  if (node.has_attr("kernel_shape")) a.kernel_shape = nn::read_spatial_ints(node, "kernel_shape", ns, 1, 1);
  if (node.has_attr("output_shape")) {
    std::vector<int64_t> os = node.attr_ints("output_shape");
    // The spec wants spatial dims only; some exporters include N and C.
    if (os.size() == ns + 2) os.erase(os.begin(), os.begin() + 2);
    if (os.size() != ns)
      throw_invalid(node,
                    fmt::format("attribute 'output_shape' has {} values, expected {} (one per spatial dim)",
                                node.attr_ints("output_shape").size(), ns));
    for (int64_t v : os)
      if (v < 0) throw_invalid(node, fmt::format("attribute 'output_shape' has negative value {}", v));
    a.output_shape = os;
  }
  return a;
}

void check_conv_transpose(const Node& node, const Graph& graph) {
  check_input_dtypes(node, graph, kFloatTypes);
  nn::read_auto_pad(node);
  int64_t n = nn::known_spatial_rank(node, graph, 1);
  if (n < 0) return;
  ConvTransposeAttrs a = read_attrs(node, n);
  ValueId x = node.input(0), w = node.input(1);
  if (w == kNoValue) throw_invalid(node, "input 1 (W) is required");
  const Value& wv = graph.values[w];
  if (!wv.has_shape) return;
  if (static_cast<int64_t>(wv.shape.size()) != n + 2)
    throw_invalid(node, fmt::format("W has rank {}, expected {}", wv.shape.size(), n + 2));
  for (size_t i = 0; i < a.kernel_shape.size(); ++i)
    if (wv.shape[i + 2] >= 0 && wv.shape[i + 2] != a.kernel_shape[i])
      throw_invalid(node, fmt::format("kernel_shape {} does not match W's shape {}",
                                      shape_to_string(a.kernel_shape), shape_to_string(wv.shape)));
  if (x != kNoValue && graph.values[x].has_shape) {
    int64_t c = graph.values[x].shape[1];
    if (c >= 0 && wv.shape[0] >= 0 && c != wv.shape[0])
      throw_invalid(node, fmt::format("X has {} channels but W has {} input channels", c, wv.shape[0]));
  }
  if (wv.shape[0] >= 0 && wv.shape[0] % a.group != 0)
    throw_invalid(node,
                  fmt::format("W has {} input channels, not a multiple of group {}", wv.shape[0], a.group));
}

int64_t floor_div2(int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }

// Scatters cols[(m, kd, kh, kw)][input row r][iw] for input rows
// [row0, row0 + nrows) (a row = one (id, ih) pair) into the output y of one group.
template <typename T>
void col2im_chunk(const T* cols, int64_t m_g, const Geometry3& g, int64_t row0, int64_t nrows, T* y) {
  const int64_t IW = g.in[2], ncols = nrows * IW;
  const int64_t out_plane = g.out_size();
  int64_t kr = 0;
  for (int64_t m = 0; m < m_g; ++m) {
    T* ym = y + m * out_plane;
    for (int64_t kd = 0; kd < g.kernel[0]; ++kd)
      for (int64_t kh = 0; kh < g.kernel[1]; ++kh)
        for (int64_t kw = 0; kw < g.kernel[2]; ++kw, ++kr) {
          const T* src_row = cols + kr * ncols;
          // Valid input columns: ow = iw * sw + off in [0, OW).
          const int64_t sw = g.stride[2], off = kw * g.dilation[2] - g.pad_begin[2], OW = g.out[2];
          int64_t lo = off >= 0 ? 0 : nn::ceil_div_positive(-off, sw);
          int64_t hi = OW - off <= 0 ? 0 : nn::ceil_div_positive(OW - off, sw);
          lo = std::min(lo, IW);
          hi = std::max(lo, std::min(hi, IW));
          for (int64_t r = 0; r < nrows; ++r) {
            int64_t id = (row0 + r) / g.in[1], ih = (row0 + r) % g.in[1];
            int64_t od = id * g.stride[0] + kd * g.dilation[0] - g.pad_begin[0];
            int64_t oh = ih * g.stride[1] + kh * g.dilation[1] - g.pad_begin[1];
            if (od < 0 || od >= g.out[0] || oh < 0 || oh >= g.out[1]) continue;
            const T* src = src_row + r * IW;
            T* dst = ym + (od * g.out[1] + oh) * OW + off;
            for (int64_t iw = lo; iw < hi; ++iw) dst[iw * sw] += src[iw];
          }
        }
  }
}

template <typename T>
void conv_transpose_compute(const Tensor& X, const Tensor& W, const Tensor* B, int64_t group,
                            const Geometry3& g, Tensor& Y) {
  const int64_t N = X.dim(0), C = X.dim(1), M = Y.dim(1);
  const int64_t c_g = C / group, m_g = M / group;
  const int64_t KK = g.kernel_size(), rows_k = m_g * KK;  // rows of cols
  const int64_t in_plane = g.in_size(), out_plane = g.out_size();
  const T* x = X.data<T>();
  const T* w = W.data<T>();
  T* y = Y.data<T>();
  if (B) {
    const T* bias = B->data<T>();
    for (int64_t n = 0; n < N; ++n)
      for (int64_t m = 0; m < M; ++m)
        std::fill(y + (n * M + m) * out_plane, y + (n * M + m + 1) * out_plane, bias[m]);
  }
  if (out_plane == 0 || in_plane == 0 || N == 0 || M == 0) return;

  const int64_t IW = g.in[2], total_rows = g.in[0] * g.in[1];
  const int64_t kBufElems = int64_t(1) << 22;
  int64_t rows_per_chunk = std::clamp<int64_t>(kBufElems / std::max<int64_t>(1, rows_k * IW), 1, total_rows);
  std::vector<T> cols(static_cast<size_t>(rows_k * rows_per_chunk * IW));

  for (int64_t n = 0; n < N; ++n) {
    for (int64_t gi = 0; gi < group; ++gi) {
      const T* xg = x + (n * C + gi * c_g) * in_plane;
      // W[c][m][k...] for this group's c: row (m, k) of W_g^T is at stride 1,
      // column c at stride m_g * KK.
      const T* wg = w + gi * c_g * rows_k;
      T* yg = y + (n * M + gi * m_g) * out_plane;
      for (int64_t row0 = 0; row0 < total_rows; row0 += rows_per_chunk) {
        int64_t nrows = std::min(rows_per_chunk, total_rows - row0);
        int64_t ncols = nrows * IW;
        std::fill(cols.begin(), cols.begin() + rows_k * ncols, T(0));
        nn::gemm_accumulate<T>(rows_k, ncols, c_g, wg, 1, rows_k, xg + row0 * IW, in_plane, cols.data(),
                               ncols);
        col2im_chunk(cols.data(), m_g, g, row0, nrows, yg);
      }
    }
  }
}

std::vector<Tensor> compute_conv_transpose(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& X = required_input(node, inputs, 0);
  const Tensor& W = required_input(node, inputs, 1);
  const Tensor* B = inputs.size() > 2 ? inputs[2] : nullptr;
  const int64_t n = X.rank() - 2;
  ConvTransposeAttrs a = read_attrs(node, n);
  if (W.rank() != X.rank())
    throw_runtime(node, fmt::format("W has shape {}, expected rank {} like X ({})",
                                    shape_to_string(W.shape()), X.rank(), shape_to_string(X.shape())));
  if (W.dtype() != X.dtype() || (B && B->dtype() != X.dtype()))
    throw_runtime(node, "X, W and B must have the same dtype");
  const int64_t C = X.dim(1);
  if (W.dim(0) != C || C % a.group != 0)
    throw_runtime(node,
                  fmt::format("X {} and W {} do not agree with group {}: need C = W[0], divisible by group",
                              shape_to_string(X.shape()), shape_to_string(W.shape()), a.group));
  const int64_t M = W.dim(1) * a.group;
  if (B && (B->numel() != M || B->rank() != 1))
    throw_runtime(node, fmt::format("B has shape {}, expected {}", shape_to_string(B->shape()), M));

  Geometry3 g;
  Shape out_shape = {X.dim(0), M};
  for (int64_t i = 0; i < n; ++i) {
    size_t si = static_cast<size_t>(i);
    size_t ax = kMaxSpatial - static_cast<size_t>(n) + si;
    int64_t k = W.dim(i + 2);
    if (k < 1)
      throw_runtime(node, fmt::format("W has shape {}, with an empty kernel", shape_to_string(W.shape())));
    if (!a.kernel_shape.empty() && a.kernel_shape[si] != k)
      throw_runtime(node, fmt::format("kernel_shape {} does not match W's shape {}",
                                      shape_to_string(a.kernel_shape), shape_to_string(W.shape())));
    int64_t in = X.dim(i + 2), s = a.strides[si], d = a.dilations[si];
    // In 128 bits: attributes may hold any int64 (see nn::axis_geometry).
    int64_t full = nn::narrow_extent(
        node, nn::WideInt(s) * (in - 1) + a.output_padding[si] + nn::WideInt(k - 1) * d + 1, "output extent");
    int64_t out, begin;
    bool same = a.auto_pad == AutoPad::kSameUpper || a.auto_pad == AutoPad::kSameLower;
    if (!a.output_shape.empty() || same) {
      out = !a.output_shape.empty() ? a.output_shape[si]
                                    : nn::narrow_extent(node, nn::WideInt(in) * s, "output extent");
      int64_t total = nn::narrow_extent(node, nn::WideInt(full) - out, "padding");
      begin = a.auto_pad == AutoPad::kSameUpper ? floor_div2(total) : total - floor_div2(total);
    } else {
      int64_t pb = a.auto_pad == AutoPad::kValid ? 0 : a.pads[si];
      int64_t pe = a.auto_pad == AutoPad::kValid ? 0 : a.pads[si + static_cast<size_t>(n)];
      out = nn::narrow_extent(node, nn::WideInt(full) - pb - pe, "output extent");
      begin = pb;
      if (out < 0)
        throw_runtime(node, fmt::format("pads {} leave a negative output size on spatial axis {}",
                                        shape_to_string(a.pads), i));
    }
    g.in[ax] = in;
    g.kernel[ax] = k;
    g.stride[ax] = s;
    g.dilation[ax] = d;
    g.out[ax] = out;
    g.pad_begin[ax] = begin;
    out_shape.push_back(out);
  }
  Tensor Y(X.dtype(), out_shape);
  dispatch_float(node, X.dtype(), [&](auto t) {
    using T = decltype(t);
    conv_transpose_compute<T>(X, W, B, a.group, g, Y);
  });
  return {Y};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("ConvTranspose", check_conv_transpose, compute_conv_transpose);

}  // namespace hetsched::kernels
