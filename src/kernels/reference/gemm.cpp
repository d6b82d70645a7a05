// Gemm — reference kernel.
//
// Y = alpha * A' * B' + beta * C, with A' = transA ? A^T : A (M x K) and
// B' = transB ? B^T : B (K x N).
// Supported: float32 and float64 (A, B and C of one dtype); alpha; beta;
// transA; transB; C optional (opset 11) and unidirectionally broadcast to
// M x N (scalar, [N], [1, N], [M, 1], [M, N], ...). When beta == 0, C is not
// read (so NaN or Inf in C do not reach Y). The opset-6 `broadcast` attribute
// is ignored (a valid C broadcasts the same either way).
// Refused: other dtypes.
//
// Method: blocked GEMM of nn_common.h (A is read through strides; a
// transposed B is copied once into K x N order), then alpha and beta*C.
#include "kernels/reference/nn_common.h"

namespace hetsched::kernels {
namespace {

void check_gemm(const Node& node, const Graph& graph) {
  check_input_dtypes(node, graph, kFloatTypes);
  for (size_t i = 0; i < 2; ++i) {
    ValueId id = node.input(i);
    if (id == kNoValue) throw_invalid(node, fmt::format("input {} is required", i));
    const Value& v = graph.values[id];
    if (v.has_shape && v.shape.size() != 2)
      throw_invalid(node, fmt::format("input {} '{}' has rank {}, expected 2", i, v.name, v.shape.size()));
  }
}

template <typename T>
void gemm_compute(const Tensor& A, const Tensor& B, const Tensor* C, bool trans_a, bool trans_b, float alpha,
                  float beta, int64_t M, int64_t N, int64_t K, const std::vector<int64_t>& c_strides,
                  Tensor& Y) {
  const T* a = A.data<T>();
  const T* b = B.data<T>();
  T* y = Y.data<T>();
  std::vector<T> bt;
  if (trans_b) {  // B is N x K: copy into K x N.
    bt.resize(static_cast<size_t>(K * N));
    for (int64_t j = 0; j < N; ++j)
      for (int64_t k = 0; k < K; ++k) bt[static_cast<size_t>(k * N + j)] = b[j * K + k];
    b = bt.data();
  }
  // A' (i, k) is A[i * K + k], or A[k * M + i] when transposed.
  nn::gemm_accumulate<T>(M, N, K, a, trans_a ? 1 : K, trans_a ? M : 1, b, N, y, N);
  const T al = static_cast<T>(alpha), be = static_cast<T>(beta);
  const T* c = (C && beta != 0.0f) ? C->data<T>() : nullptr;
  for (int64_t i = 0; i < M; ++i) {
    T* yi = y + i * N;
    if (alpha != 1.0f)
      for (int64_t j = 0; j < N; ++j) yi[j] *= al;
    if (c) {
      const T* ci = c + i * c_strides[0];
      const int64_t cs = c_strides[1];
      for (int64_t j = 0; j < N; ++j) yi[j] += be * ci[j * cs];
    }
  }
}

std::vector<Tensor> compute_gemm(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& A = required_input(node, inputs, 0);
  const Tensor& B = required_input(node, inputs, 1);
  const Tensor* C = inputs.size() > 2 ? inputs[2] : nullptr;
  const bool trans_a = node.attr_int("transA", 0) != 0, trans_b = node.attr_int("transB", 0) != 0;
  const float alpha = node.attr_float("alpha", 1.0f), beta = node.attr_float("beta", 1.0f);
  if (A.rank() != 2 || B.rank() != 2)
    throw_runtime(node, fmt::format("A and B must be 2-D, got {} and {}", shape_to_string(A.shape()),
                                    shape_to_string(B.shape())));
  if (B.dtype() != A.dtype() || (C && C->dtype() != A.dtype()))
    throw_runtime(node, "A, B and C must have the same dtype");
  const int64_t M = trans_a ? A.dim(1) : A.dim(0), K = trans_a ? A.dim(0) : A.dim(1);
  const int64_t Kb = trans_b ? B.dim(1) : B.dim(0), N = trans_b ? B.dim(0) : B.dim(1);
  if (K != Kb)
    throw_runtime(node, fmt::format("inner dims differ: A {} (transA={}) and B {} (transB={})",
                                    shape_to_string(A.shape()), int(trans_a), shape_to_string(B.shape()),
                                    int(trans_b)));
  std::vector<int64_t> c_strides = {0, 0};
  if (C) {
    const Shape out = {M, N};
    bool ok = C->rank() <= 2;
    for (int64_t i = 0; ok && i < C->rank(); ++i) {
      int64_t d = C->dim(C->rank() - 1 - i), want = out[static_cast<size_t>(1 - i)];
      ok = d == 1 || d == want;
    }
    if (!ok)
      throw_runtime(node, fmt::format("C has shape {}, which does not broadcast to {}",
                                      shape_to_string(C->shape()), shape_to_string(out)));
    c_strides = broadcast_strides(C->shape(), out);
  }
  Tensor Y(A.dtype(), {M, N});
  dispatch_float(node, A.dtype(), [&](auto t) {
    using T = decltype(t);
    gemm_compute<T>(A, B, C, trans_a, trans_b, alpha, beta, M, N, K, c_strides, Y);
  });
  return {Y};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("Gemm", check_gemm, compute_gemm);

}  // namespace hetsched::kernels
