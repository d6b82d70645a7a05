// Launchers of the backend's own CUDA kernels (kernels/*.cu), for the op
// files (ops/*.cpp), which build their parameters on the host.
//
// Each launcher enqueues on `stream` and returns at once; an error of the
// launch itself (no kernel image for this GPU, a bad configuration) is thrown
// as Error(kRuntime) naming the kernel. Nothing allocates or synchronises,
// so every launch can be captured into a CUDA Graph. Shapes are passed by
// value (rank at most kMaxRank). Float kernels compute in float, with
// reductions (softmax, layer norm, average pooling) accumulated in float
// per thread and combined in a fixed order, so runs are deterministic.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace hetsched::cuda::kern {

constexpr int kMaxRank = 8;

// A row-major output shape and, per operand, the element strides to read it
// as if broadcast (0 on broadcast dims) or permuted / sliced.
struct Strided {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t strides[kMaxRank] = {};
  int64_t base = 0;  // element offset of the output's first element
};

// ---------------------------------------------------------------- elementwise (elementwise.cu)

enum class Unary : int {
  kCopy,
  kRelu,
  kLeakyRelu,    // alpha
  kClip,         // [alpha, beta]
  kSigmoid,
  kTanh,
  kExp,
  kLog,
  kSqrt,
  kAbs,
  kNeg,
  kErf,
  kGelu,         // exact (erf)
  kGeluTanh,     // tanh approximation
  kHardSigmoid,  // max(0, min(1, alpha * x + beta))
  kHardSwish,
  kReciprocal,
  kFloor,
  kCeil,
  kElu,          // alpha
  kSoftplus,
  kSin,
  kCos,
};
void unary(Unary op, const float* x, float* y, int64_t n, float alpha, float beta, cudaStream_t stream);

enum class Binary : int { kAdd, kSub, kMul, kDiv, kPow, kMax, kMin };
// y[i] = a[..] op b[..] over the output shape `a.dims` (== b.dims), each
// operand read through its own strides. When both operands are dense and of
// the output's shape (contiguous), pass contiguous = true: the fast path.
void binary(Binary op, const float* a, const Strided& a_layout, const float* b, const Strided& b_layout, float* y,
            int64_t n, bool contiguous, cudaStream_t stream);

// y[r, c] = act(y[r, c] + bias[c]) for a rows x cols row-major matrix; bias
// may be null; act is ReLU when `relu`, else the identity.
void bias_activation(float* y, const float* bias, int64_t rows, int64_t cols, bool relu, cudaStream_t stream);

// y = x * scale[c] + shift[c] over `n` elements laid out as [outer, channels,
// inner] (inference BatchNormalization, its statistics folded at prepare).
void channel_affine(const float* x, const float* scale, const float* shift, float* y, int64_t n, int64_t channels,
                    int64_t inner, cudaStream_t stream);

// ---------------------------------------------------------------- data movement (data_movement.cu)

// dst[i] = src[layout.base + sum(index_d(i) * layout.strides[d])] for the
// dense output of shape layout.dims; `element_size` 1, 2, 4 or 8 bytes.
// Serves Transpose, Slice, Expand and broadcast copies.
void strided_copy(const void* src, const Strided& layout, void* dst, int element_size, cudaStream_t stream);

// dst[i] = map[i] >= 0 ? src[map[i]] : fill (n elements; `fill` points to
// one element on the host, copied into the launch). For data movement ops
// whose index map the reference kernel computed at prepare time.
void index_copy(const void* src, const int64_t* map, void* dst, int64_t n, int element_size, const void* fill,
                cudaStream_t stream);

// Gather along an axis: dst[o, j, i] = src[o, idx[j], i] for o < outer,
// j < n_indices, i < inner (`inner` counted in elements); negative indices
// count from the end of the axis; an index out of range gives zeros (the
// reference kernel throws: the GPU cannot, mid-graph).
void gather(const void* src, const void* indices, bool indices_int64, void* dst, int64_t outer, int64_t axis_len,
            int64_t n_indices, int64_t inner, int element_size, cudaStream_t stream);

// Constant, reflect or edge padding of a float tensor: out has rank
// in.rank; pad_begin[d] may be negative (cropping).
enum class PadMode : int { kConstant, kReflect, kEdge };
void pad(const float* x, const int64_t* in_dims, float* y, const int64_t* out_dims, const int64_t* pad_begin,
         int rank, PadMode mode, float value, cudaStream_t stream);

// ---------------------------------------------------------------- reductions (normalization.cu)

// Softmax (or LogSoftmax) over `len` elements at stride `inner`: element
// [o, a, i] is at (o * len + a) * inner + i.
void softmax(const float* x, float* y, int64_t outer, int64_t len, int64_t inner, bool log, cudaStream_t stream);

// Layer normalisation of `rows` rows of `cols` elements: y = (x - mean) /
// sqrt(var + epsilon) * scale + bias (bias may be null), population variance.
void layer_norm(const float* x, const float* scale, const float* bias, float* y, int64_t rows, int64_t cols,
                float epsilon, cudaStream_t stream);

// Reductions over some dims (ReduceSum, ReduceMean, ...): y[o] reduces the
// input elements at offset(kept, o) + offset(reduced, r) for every r, where
// `kept` has the output's dims (the kept ones) and `reduced` the reduced ones,
// both with the input's strides and base 0. Max and Min propagate NaN, as
// the reference kernel does; Mean divides by the count, L2 takes the root.
// Accumulates in double, as the reference kernel does.
enum class Reduction : int { kSum, kMean, kMax, kMin, kSumSquare, kL1, kL2 };
void reduce(Reduction op, const float* x, const Strided& kept, const Strided& reduced, float* y, cudaStream_t stream);

// Pooling over 3 spatial axes (fewer spatial dims are leading axes of size
// 1), for the geometries cuDNN's pooling does not cover (asymmetric pads,
// ceil_mode windows, dilations). Mirrors the reference kernel: max pooling
// ignores padding (a window of padding only gives -inf) and propagates NaN;
// average pooling divides by the input elements in the window, or with
// count_include_pad by the window's taps inside the padded extent.
struct PoolGeometry {
  int64_t planes = 0;  // N * C
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, kernel[3] = {1, 1, 1}, stride[3] = {1, 1, 1},
          dilation[3] = {1, 1, 1}, pad_begin[3] = {0, 0, 0}, pad_end[3] = {0, 0, 0};
};
void pool(bool max, bool count_include_pad, const float* x, float* y, const PoolGeometry& g, cudaStream_t stream);

}  // namespace hetsched::cuda::kern
