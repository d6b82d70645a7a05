// Helpers shared by the neural-network reference kernels (conv, conv_transpose,
// pool, gemm, matmul, softmax, hardmax): spatial attribute parsing, output-size
// arithmetic, the axis layout of Softmax-like ops and a cache-blocked GEMM.
//
// Spatial ops are computed on a fixed 3-D geometry: an op with n < 3 spatial
// dims is run as if it had 3 - n leading spatial dims of size 1 (kernel 1,
// stride 1, dilation 1, no padding), so one loop nest serves 1-D, 2-D and 3-D.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kernels/reference/common.h"

namespace hetsched::kernels::nn {

constexpr size_t kMaxSpatial = 3;

enum class AutoPad { kNotSet, kSameUpper, kSameLower, kValid };

inline AutoPad read_auto_pad(const Node& node) {
  std::string s = node.attr_string("auto_pad", "NOTSET");
  if (s == "NOTSET") return AutoPad::kNotSet;
  if (s == "SAME_UPPER") return AutoPad::kSameUpper;
  if (s == "SAME_LOWER") return AutoPad::kSameLower;
  if (s == "VALID") return AutoPad::kValid;
  throw_invalid(node, "auto_pad '" + s + "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
}

// An ints attribute with one value per spatial dim (n of them); `fallback`
// fills it when absent. Every value must be >= min_value.
inline std::vector<int64_t> read_spatial_ints(const Node& node, const std::string& name, size_t n,
                                              int64_t fallback, int64_t min_value) {
  if (!node.has_attr(name)) return std::vector<int64_t>(n, fallback);
  std::vector<int64_t> v = node.attr_ints(name);
  if (v.size() != n)
    throw_invalid(node, fmt::format("attribute '{}' has {} values, expected {} (one per spatial dim)", name,
                                    v.size(), n));
  for (int64_t x : v)
    if (x < min_value)
      throw_invalid(node, fmt::format("attribute '{}' has value {}, expected >= {}", name, x, min_value));
  return v;
}

// `pads`: [begin_0 .. begin_{n-1}, end_0 .. end_{n-1}], default all 0, each >= 0.
inline std::vector<int64_t> read_pads(const Node& node, size_t n) {
  if (!node.has_attr("pads")) return std::vector<int64_t>(2 * n, 0);
  std::vector<int64_t> v = node.attr_ints("pads");
  if (v.size() != 2 * n)
    throw_invalid(node,
                  fmt::format("attribute 'pads' has {} values, expected {} (begin and end per spatial dim)",
                              v.size(), 2 * n));
  for (int64_t x : v)
    if (x < 0) throw_invalid(node, fmt::format("attribute 'pads' has negative value {}", x));
  return v;
}

// The number of spatial dims a Conv/pool-like node works on, from what the
// graph knows at load time: input 0's rank, else input `weight_input`'s rank
// (when >= 0), else kernel_shape; -1 when nothing tells.
inline int64_t known_spatial_rank(const Node& node, const Graph& graph, int weight_input) {
  ValueId x = node.input(0);
  if (x != kNoValue && graph.values[x].has_shape)
    return static_cast<int64_t>(graph.values[x].shape.size()) - 2;
  if (weight_input >= 0) {
    ValueId w = node.input(static_cast<size_t>(weight_input));
    if (w != kNoValue && graph.values[w].has_shape)
      return static_cast<int64_t>(graph.values[w].shape.size()) - 2;
  }
  if (node.has_attr("kernel_shape")) return static_cast<int64_t>(node.attr_ints("kernel_shape").size());
  return -1;
}

// Refuses spatial ranks outside [1, 3].
inline void check_spatial_rank(const Node& node, int64_t n, const char* what) {
  if (n < 1)
    throw_invalid(node,
                  fmt::format("{} needs at least one spatial dim (rank >= 3), got {} spatial dims", what, n));
  if (n > static_cast<int64_t>(kMaxSpatial))
    throw_unsupported(
        node, fmt::format("{} with {} spatial dims is not supported (1-D, 2-D and 3-D only)", what, n));
}

// Output size and padding of one spatial axis of a Conv or pool.
struct AxisGeometry {
  int64_t out = 1;
  int64_t pad_begin = 0;
  int64_t pad_end = 0;
};

// ONNX's rules: NOTSET uses the given pads (VALID: none), output
// floor((in + pads - eff_k) / s) + 1 (ceil with ceil_mode, dropping a last
// window that would start in the end padding); SAME_* gives ceil(in / s)
// outputs with the padding split evenly, the odd one at the end (SAME_UPPER)
// or the beginning (SAME_LOWER).
// Attributes may hold any int64 (a stride of 2^63 - 1 is a valid file): the
// geometry is computed in 128 bits, and an extent that does not fit in 64 is
// refused rather than wrapped (undefined behaviour). The padded input extent
// must fit too, which bounds every index the kernels compute from it.
using WideInt = __int128;

inline int64_t narrow_extent(const Node& node, WideInt v, const char* what) {
  if (v > std::numeric_limits<int64_t>::max() || v < std::numeric_limits<int64_t>::min())
    throw_runtime(node, fmt::format("the attributes make the {} too large", what));
  return static_cast<int64_t>(v);
}

inline AxisGeometry axis_geometry(const Node& node, AutoPad auto_pad, int64_t in, int64_t kernel,
                                  int64_t stride, int64_t dilation, int64_t pad_begin, int64_t pad_end,
                                  bool ceil_mode) {
  WideInt eff_k = WideInt(kernel - 1) * dilation + 1;
  narrow_extent(node, eff_k, "kernel extent");
  AxisGeometry g;
  if (auto_pad == AutoPad::kSameUpper || auto_pad == AutoPad::kSameLower) {
    g.out = narrow_extent(node, (WideInt(in) + stride - 1) / stride, "output extent");
    WideInt total = std::max<WideInt>(0, WideInt(g.out - 1) * stride + eff_k - in);
    narrow_extent(node, WideInt(in) + total, "padded input extent");
    int64_t small = static_cast<int64_t>(total / 2);
    g.pad_begin = auto_pad == AutoPad::kSameUpper ? small : static_cast<int64_t>(total) - small;
    g.pad_end = static_cast<int64_t>(total) - g.pad_begin;
    return g;
  }
  if (auto_pad == AutoPad::kValid) pad_begin = pad_end = 0;
  int64_t padded = narrow_extent(node, WideInt(in) + pad_begin + pad_end, "padded input extent");
  WideInt span = WideInt(padded) - eff_k;
  if (span < 0)
    throw_runtime(node, fmt::format("the kernel extent {} is larger than the padded input extent {}",
                                    static_cast<int64_t>(eff_k), padded));
  g.out = static_cast<int64_t>(ceil_mode ? (span + stride - 1) / stride + 1 : span / stride + 1);
  if (ceil_mode && WideInt(g.out - 1) * stride >= WideInt(in) + pad_begin) --g.out;
  g.pad_begin = pad_begin;
  g.pad_end = pad_end;
  return g;
}

// ceil(a / b) for a > 0 and b > 0, without the overflow of (a + b - 1) / b
// (a stride may be as large as int64 allows).
inline int64_t ceil_div_positive(int64_t a, int64_t b) { return (a - 1) / b + 1; }

// Per-axis geometry of a spatial op, right-aligned into kMaxSpatial axes
// (leading unused axes: in = out = kernel = stride = dilation = 1, pads 0).
struct Geometry3 {
  std::array<int64_t, kMaxSpatial> in{1, 1, 1}, out{1, 1, 1}, kernel{1, 1, 1}, stride{1, 1, 1},
      dilation{1, 1, 1}, pad_begin{0, 0, 0}, pad_end{0, 0, 0};
  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
  int64_t kernel_size() const { return kernel[0] * kernel[1] * kernel[2]; }
};

// Splits X's shape into (outer, axis_len, inner) per the opset's semantics of
// `axis`: elements [o, a, i] at offset (o * axis_len + a) * inner + i are
// normalized over a. Shared by Softmax, LogSoftmax and Hardmax.
inline void softmax_layout(const Node& node, const Shape& shape, int64_t& outer, int64_t& axis_len,
                           int64_t& inner) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (node.opset < 13) {
    int64_t axis = node.attr_int("axis", 1);
    if (axis != rank) axis = normalize_axis(node, axis, rank);
    outer = shape_numel(Shape(shape.begin(), shape.begin() + std::min(axis, rank)));
    axis_len = shape_numel(Shape(shape.begin() + std::min(axis, rank), shape.end()));
    inner = 1;
    return;
  }
  if (rank == 0) {
    normalize_axis(node, node.attr_int("axis", -1), rank);
    outer = axis_len = inner = 1;
    return;
  }
  int64_t axis = normalize_axis(node, node.attr_int("axis", -1), rank);
  outer = shape_numel(Shape(shape.begin(), shape.begin() + axis));
  axis_len = shape[static_cast<size_t>(axis)];
  inner = shape_numel(Shape(shape.begin() + axis + 1, shape.end()));
}

// Softmax (kLog false) or LogSoftmax (true) of x's elements [o, a, i] at
// (o * len + a) * inner + i over a, into y: exp(x - max) / sum, or
// x - max - log(sum); the sums accumulated in double. Shared by Softmax,
// LogSoftmax and SoftmaxCrossEntropyLoss.
template <bool kLog, typename T>
void softmax_rows(const T* x, T* y, int64_t outer, int64_t len, int64_t inner) {
  std::vector<T> mx(static_cast<size_t>(inner));
  std::vector<double> sum(static_cast<size_t>(inner));
  for (int64_t o = 0; o < outer; ++o) {
    const T* xo = x + o * len * inner;
    T* yo = y + o * len * inner;
    std::fill(mx.begin(), mx.end(), -std::numeric_limits<T>::infinity());
    std::fill(sum.begin(), sum.end(), 0.0);
    for (int64_t a = 0; a < len; ++a)
      for (int64_t i = 0; i < inner; ++i)
        mx[static_cast<size_t>(i)] = std::max(mx[static_cast<size_t>(i)], xo[a * inner + i]);
    for (int64_t a = 0; a < len; ++a)
      for (int64_t i = 0; i < inner; ++i) {
        T e = std::exp(xo[a * inner + i] - mx[static_cast<size_t>(i)]);
        if constexpr (!kLog) yo[a * inner + i] = e;
        sum[static_cast<size_t>(i)] += static_cast<double>(e);
      }
    for (int64_t a = 0; a < len; ++a)
      for (int64_t i = 0; i < inner; ++i) {
        size_t si = static_cast<size_t>(i);
        if constexpr (kLog)
          yo[a * inner + i] = static_cast<T>(static_cast<double>(xo[a * inner + i] - mx[si]) - std::log(sum[si]));
        else
          yo[a * inner + i] = static_cast<T>(static_cast<double>(yo[a * inner + i]) / sum[si]);
      }
  }
}

// ---------------------------------------------------------------------------
// GEMM: C[M x N] += A[M x K] * B[K x N].
// A is read through strides (element (i, k) at A[i * a_row + k * a_col]), so a
// transposed A costs nothing; B and C are row-major with leading dims ldb, ldc.
// Blocked for the caches, with a register tile of 4 rows x 2 SIMD vectors;
// every C element is summed in ascending k with plain multiply and add (no
// FMA contraction in portable builds), so results do not depend on the
// blocking of M and N.

namespace detail {

// A 16-byte SIMD vector of T (GCC/Clang vector extension; SSE2 on x86-64).
template <typename T>
struct Simd {
  typedef T V __attribute__((vector_size(16)));
  static constexpr int64_t kLanes = 16 / sizeof(T);
};

constexpr int64_t kMr = 4;    // rows of the register tile
constexpr int64_t kNv = 2;    // vectors per row of the register tile
constexpr int64_t kKc = 256;  // k block: a kKc x kNr strip of B stays in L1
constexpr int64_t kMc = 64;   // m block: a kMc x kKc block of A stays in L2
constexpr int64_t kNc = 512;  // n block
template <typename T>
constexpr int64_t kNr = kNv* Simd<T>::kLanes;  // columns of the register tile

template <typename T>
inline typename Simd<T>::V load_vec(const T* p) {
  typename Simd<T>::V v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
template <typename T>
inline void store_vec(T* p, typename Simd<T>::V v) {
  std::memcpy(p, &v, sizeof(v));
}

// Full tile: kMr rows, kNr<T> columns, accumulated in 8 vector registers.
template <typename T>
inline void micro_full(int64_t kc, const T* a, int64_t a_row, int64_t a_col, const T* b, int64_t ldb, T* c,
                       int64_t ldc) {
  using V = typename Simd<T>::V;
  constexpr int64_t L = Simd<T>::kLanes;
  V c00 = load_vec(c), c01 = load_vec(c + L);
  V c10 = load_vec(c + ldc), c11 = load_vec(c + ldc + L);
  V c20 = load_vec(c + 2 * ldc), c21 = load_vec(c + 2 * ldc + L);
  V c30 = load_vec(c + 3 * ldc), c31 = load_vec(c + 3 * ldc + L);
  for (int64_t k = 0; k < kc; ++k) {
    const T* bk = b + k * ldb;
    const T* ak = a + k * a_col;
    V b0 = load_vec(bk), b1 = load_vec(bk + L);
    T a0 = ak[0], a1 = ak[a_row], a2 = ak[2 * a_row], a3 = ak[3 * a_row];
    c00 += b0 * a0;
    c01 += b1 * a0;
    c10 += b0 * a1;
    c11 += b1 * a1;
    c20 += b0 * a2;
    c21 += b1 * a2;
    c30 += b0 * a3;
    c31 += b1 * a3;
  }
  store_vec(c, c00), store_vec(c + L, c01);
  store_vec(c + ldc, c10), store_vec(c + ldc + L, c11);
  store_vec(c + 2 * ldc, c20), store_vec(c + 2 * ldc + L, c21);
  store_vec(c + 3 * ldc, c30), store_vec(c + 3 * ldc + L, c31);
}

// Edge tile: mr <= kMr rows, nr <= kNr<T> columns.
template <typename T>
inline void micro_edge(int64_t mr, int64_t nr, int64_t kc, const T* a, int64_t a_row, int64_t a_col,
                       const T* b, int64_t ldb, T* c, int64_t ldc) {
  for (int64_t r = 0; r < mr; ++r) {
    T acc[kNr<T>];
    for (int64_t j = 0; j < nr; ++j) acc[j] = c[r * ldc + j];
    for (int64_t k = 0; k < kc; ++k) {
      const T* bk = b + k * ldb;
      T av = a[r * a_row + k * a_col];
      for (int64_t j = 0; j < nr; ++j) acc[j] += av * bk[j];
    }
    for (int64_t j = 0; j < nr; ++j) c[r * ldc + j] = acc[j];
  }
}

}  // namespace detail

template <typename T>
void gemm_accumulate(int64_t M, int64_t N, int64_t K, const T* A, int64_t a_row, int64_t a_col, const T* B,
                     int64_t ldb, T* C, int64_t ldc) {
  using namespace detail;
  for (int64_t j0 = 0; j0 < N; j0 += kNc) {
    int64_t nc = std::min(kNc, N - j0);
    for (int64_t k0 = 0; k0 < K; k0 += kKc) {
      int64_t kc = std::min(kKc, K - k0);
      for (int64_t i0 = 0; i0 < M; i0 += kMc) {
        int64_t mc = std::min(kMc, M - i0);
        for (int64_t jr = 0; jr < nc; jr += kNr<T>) {
          int64_t nr = std::min(kNr<T>, nc - jr);
          const T* b = B + k0 * ldb + j0 + jr;
          for (int64_t ir = 0; ir < mc; ir += kMr) {
            int64_t mr = std::min(kMr, mc - ir);
            const T* a = A + (i0 + ir) * a_row + k0 * a_col;
            T* c = C + (i0 + ir) * ldc + j0 + jr;
            if (mr == kMr && nr == kNr<T>)
              micro_full(kc, a, a_row, a_col, b, ldb, c, ldc);
            else
              micro_edge(mr, nr, kc, a, a_row, a_col, b, ldb, c, ldc);
          }
        }
      }
    }
  }
}

}  // namespace hetsched::kernels::nn
