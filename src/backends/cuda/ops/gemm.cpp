// Gemm and MatMul on the GPU.
//
// Row-major products run on the column-major libraries as the transposed
// product: C^T = B^T A^T, so no data is transposed. One product with a bias
// over the columns and/or a ReLU after it (Gemm + Relu, MatMul + bias Add +
// Relu: gpu_fusion_group) runs on cuBLASLt with the BIAS / RELU / RELU_BIAS
// epilogue; when cuBLASLt offers no algorithm for the shape, on cublasSgemm
// followed by the own bias + ReLU kernel. Batched MatMuls run on
// cublasSgemmStridedBatched when the batch strides are regular (equal batch
// shapes, or one side unbatched), else one cublasSgemm per batch entry.
// A Gemm C other than a bias vector (beta != 1, [M, N], [M, 1]...) is
// broadcast into Y first and accumulated with beta. FP32 math
// (CUBLAS_COMPUTE_32F) unless the context allows TF32.
#include <climits>

#include <fmt/format.h>

#include "backends/cuda/check.h"
#include "backends/cuda/ops/op_util.h"
#include "hetsched/error.h"
#include "kernels/reference/common.h"

namespace hetsched::cuda::ops {
namespace {

// ---------------------------------------------------------------- one product

// Y[M x N] = alpha * op(A)[M x K] op(B)[K x N] (+ bias[N]) (ReLU), row-major.
class RowMajorProduct {
 public:
  RowMajorProduct() = default;
  RowMajorProduct(const RowMajorProduct&) = delete;
  RowMajorProduct& operator=(const RowMajorProduct&) = delete;
  ~RowMajorProduct() { release(); }

  void prepare(const GpuStream& s, int64_t m, int64_t n, int64_t k, bool trans_a, bool trans_b, bool bias, bool relu,
               bool allow_tf32) {
    m_ = m, n_ = n, k_ = k, trans_a_ = trans_a, trans_b_ = trans_b, bias_ = bias, relu_ = relu;
    lt_ = (bias || relu) && try_lt(s, allow_tf32);
  }
  bool uses_lt() const { return lt_; }
  size_t workspace_bytes() const { return lt_ ? lt_workspace_ : 0; }

  // `beta` applies on the cuBLAS path only (Y pre-filled with C); the Lt
  // path is prepared for bias / ReLU products, which never accumulate.
  void enqueue(const GpuStream& s, const float* a, const float* b, const float* bias, float* y, float alpha,
               float beta) const {
    if (lt_) {
      if (bias_)
        HETSCHED_CUDA_CHECK(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                           sizeof(bias)));
      const float zero = 0.0f;
      HETSCHED_CUDA_CHECK(cublasLtMatmul(s.cublaslt, desc_, &alpha, b, layout_b_, a, layout_a_, &zero, y, layout_y_, y,
                                         layout_y_, &algo_, s.workspace, lt_workspace_, s.stream));
      return;
    }
    HETSCHED_CUDA_CHECK(cublasSgemm(s.cublas, trans_b_ ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a_ ? CUBLAS_OP_T : CUBLAS_OP_N,
                                    static_cast<int>(n_), static_cast<int>(m_), static_cast<int>(k_), &alpha, b,
                                    static_cast<int>(trans_b_ ? k_ : n_), a, static_cast<int>(trans_a_ ? m_ : k_),
                                    &beta, y, static_cast<int>(n_)));
    if (bias_ || relu_) kern::bias_activation(y, bias_ ? bias : nullptr, m_, n_, relu_, s.stream);
  }

 private:
  // cuBLASLt for bias / ReLU epilogues; false (and nothing kept) when it
  // finds no algorithm.
  bool try_lt(const GpuStream& s, bool allow_tf32) {
    cublasComputeType_t compute = allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    if (cublasLtMatmulDescCreate(&desc_, compute, CUDA_R_32F) != CUBLAS_STATUS_SUCCESS) return false;
    // Column-major view: the library's A is our B (N x K after its op), its
    // B our A (K x M), its output our Y^T (N x M).
    cublasOperation_t op_b = trans_b_ ? CUBLAS_OP_T : CUBLAS_OP_N, op_a = trans_a_ ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasLtEpilogue_t epilogue = bias_ ? (relu_ ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS)
                                        : CUBLASLT_EPILOGUE_RELU;
    bool ok = cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &op_b, sizeof(op_b)) ==
                  CUBLAS_STATUS_SUCCESS &&
              cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &op_a, sizeof(op_a)) ==
                  CUBLAS_STATUS_SUCCESS &&
              cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)) ==
                  CUBLAS_STATUS_SUCCESS;
    auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
    // Stored shapes (column-major rows x cols, leading dim = rows).
    ok = ok &&
         cublasLtMatrixLayoutCreate(&layout_b_, CUDA_R_32F, trans_b_ ? u(k_) : u(n_), trans_b_ ? u(n_) : u(k_),
                                    trans_b_ ? k_ : n_) == CUBLAS_STATUS_SUCCESS &&
         cublasLtMatrixLayoutCreate(&layout_a_, CUDA_R_32F, trans_a_ ? u(m_) : u(k_), trans_a_ ? u(k_) : u(m_),
                                    trans_a_ ? m_ : k_) == CUBLAS_STATUS_SUCCESS &&
         cublasLtMatrixLayoutCreate(&layout_y_, CUDA_R_32F, u(n_), u(m_), n_) == CUBLAS_STATUS_SUCCESS;
    cublasLtMatmulPreference_t preference = nullptr;
    size_t max_workspace = size_t{32} << 20;
    ok = ok && cublasLtMatmulPreferenceCreate(&preference) == CUBLAS_STATUS_SUCCESS &&
         cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_workspace,
                                              sizeof(max_workspace)) == CUBLAS_STATUS_SUCCESS;
    cublasLtMatmulHeuristicResult_t result{};
    int returned = 0;
    ok = ok && cublasLtMatmulAlgoGetHeuristic(s.cublaslt, desc_, layout_b_, layout_a_, layout_y_, layout_y_,
                                              preference, 1, &result, &returned) == CUBLAS_STATUS_SUCCESS &&
         returned > 0 && result.state == CUBLAS_STATUS_SUCCESS;
    if (preference) cublasLtMatmulPreferenceDestroy(preference);
    if (!ok) {
      release();
      return false;
    }
    algo_ = result.algo;
    lt_workspace_ = result.workspaceSize;
    return true;
  }

  void release() {
    if (layout_a_) cublasLtMatrixLayoutDestroy(layout_a_);
    if (layout_b_) cublasLtMatrixLayoutDestroy(layout_b_);
    if (layout_y_) cublasLtMatrixLayoutDestroy(layout_y_);
    if (desc_) cublasLtMatmulDescDestroy(desc_);
    layout_a_ = layout_b_ = layout_y_ = nullptr;
    desc_ = nullptr;
  }

  int64_t m_ = 0, n_ = 0, k_ = 0;
  bool trans_a_ = false, trans_b_ = false, bias_ = false, relu_ = false, lt_ = false;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t layout_a_ = nullptr, layout_b_ = nullptr, layout_y_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  size_t lt_workspace_ = 0;
};

bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

// The fused nodes after the product: the bias operand (MatMul's Add) and ReLU.
struct Epilogue {
  ValueId bias = kNoValue;
  bool relu = false;
};

Epilogue epilogue_of(const GpuPrepare& p) {
  Epilogue e;
  ValueId last = p.node(0).outputs[0];
  for (size_t i = 1; i < p.nodes.size(); ++i) {
    const Node& fused = p.node(i);
    if (fused.op_type == "Add") {
      e.bias = fused.inputs[0] == last ? fused.inputs[1] : fused.inputs[0];
      last = fused.outputs[0];
    } else if (fused.op_type == "Relu") {
      e.relu = true;
    }
  }
  return e;
}

// ---------------------------------------------------------------- Gemm

std::string gemm_declines(const Graph& graph, const Node& node) {
  if (node.input(0) == kNoValue || node.input(1) == kNoValue) return "no A or no B";
  if (std::string why = need_float32(graph, node); !why.empty()) return why;
  const Shape& a = graph.values[node.inputs[0]].shape;
  const Shape& b = graph.values[node.inputs[1]].shape;
  if (a.size() != 2 || b.size() != 2) return "A or B not 2-D";
  for (const Shape* s : {&a, &b})
    for (int64_t d : *s) {
      if (d == 0) return "an empty dimension";
      if (!fits_int(d)) return "dims above 2^31";
    }
  if (node.input(2) != kNoValue && graph.values[node.inputs[2]].shape.size() > 2) return "C of rank above 2";
  return "";
}

class GemmOp : public GpuOp {
 public:
  explicit GemmOp(const GpuPrepare& p) : GpuOp(p, "") {
    const Node& node = p.node();
    a_ = bind(p, node.inputs[0]);
    b_ = bind(p, node.inputs[1]);
    trans_a_ = node.attr_int("transA", 0) != 0;
    trans_b_ = node.attr_int("transB", 0) != 0;
    alpha_ = node.attr_float("alpha", 1.0f);
    beta_ = node.attr_float("beta", 1.0f);
    const Shape& a = shape_of(p.graph, node.inputs[0]);
    const Shape& b = shape_of(p.graph, node.inputs[1]);
    m_ = trans_a_ ? a[1] : a[0];
    k_ = trans_a_ ? a[0] : a[1];
    n_ = trans_b_ ? b[0] : b[1];
    relu_ = epilogue_of(p).relu;
    ValueId c = node.input(2);
    bool bias = false;
    if (c != kNoValue && beta_ != 0.0f) {
      const Shape& cs = shape_of(p.graph, c);
      bool vector = cs == Shape{n_} || cs == Shape{1, n_};
      c_ = bind(p, c);
      if (vector && beta_ == 1.0f) {
        bias = true;
      } else {
        // Y starts as C broadcast to M x N; the product accumulates with beta.
        fill_ = true;
        fill_layout_ = broadcast_layout(cs, {m_, n_});
      }
    }
    product_.prepare(p.context.stream(0), m_, n_, k_, trans_a_, trans_b_, bias, relu_ && !fill_,
                     p.context.allow_tf32());
    need_workspace(product_.workspace_bytes());
    std::string parts = std::string(bias ? " + bias" : "") + (relu_ ? " + ReLU" : "");
    set_what(product_.uses_lt() ? fmt::format("cuBLASLt matmul{} (epilogue)", parts)
                                : fmt::format("cuBLAS sgemm{}", parts));
  }

  void enqueue(const GpuStream& s, const void* const* in, void* const* out) const override {
    float* y = static_cast<float*>(out[0]);
    const float* c = c_.present() ? static_cast<const float*>(data(c_, in)) : nullptr;
    if (fill_) kern::strided_copy(c, fill_layout_, y, sizeof(float), s.stream);
    product_.enqueue(s, static_cast<const float*>(data(a_, in)), static_cast<const float*>(data(b_, in)),
                     fill_ ? nullptr : c, y, alpha_, fill_ ? beta_ : 0.0f);
    if (fill_ && relu_) kern::unary(kern::Unary::kRelu, y, y, m_ * n_, 0.0f, 0.0f, s.stream);
  }

 private:
  Operand a_, b_, c_;
  bool trans_a_ = false, trans_b_ = false, relu_ = false, fill_ = false;
  float alpha_ = 1.0f, beta_ = 1.0f;
  int64_t m_ = 0, n_ = 0, k_ = 0;
  kern::Strided fill_layout_;
  RowMajorProduct product_;
};

std::unique_ptr<GpuOp> prepare_gemm(const GpuPrepare& p) { return std::make_unique<GemmOp>(p); }

// ---------------------------------------------------------------- MatMul

std::string matmul_declines(const Graph& graph, const Node& node) {
  if (node.input(0) == kNoValue || node.input(1) == kNoValue) return "no A or no B";
  if (std::string why = need_float32(graph, node); !why.empty()) return why;
  if (std::string why = need_rank_at_most(graph, node); !why.empty()) return why;
  const Shape& a = graph.values[node.inputs[0]].shape;
  const Shape& b = graph.values[node.inputs[1]].shape;
  if (a.empty() || b.empty()) return "scalar operands";
  for (const Shape* s : {&a, &b})
    for (int64_t d : *s) {
      if (d == 0) return "an empty dimension";
      if (!fits_int(d)) return "dims above 2^31";
    }
  int64_t rows = shape_numel(a) / a.back();
  if (!fits_int(rows)) return "more than 2^31 rows";
  return "";
}

class MatMulOp : public GpuOp {
 public:
  explicit MatMulOp(const GpuPrepare& p) : GpuOp(p, "") {
    const Node& node = p.node();
    a_ = bind(p, node.inputs[0]);
    b_ = bind(p, node.inputs[1]);
    Epilogue e = epilogue_of(p);
    bias_ = bind(p, e.bias);
    relu_ = e.relu;
    Shape a = shape_of(p.graph, node.inputs[0]), b = shape_of(p.graph, node.inputs[1]);
    // numpy: a 1-D A is a row, a 1-D B a column.
    if (a.size() == 1) a.insert(a.begin(), 1);
    if (b.size() == 1) b.push_back(1);
    m_ = a[a.size() - 2];
    k_ = a.back();
    n_ = b.back();
    Shape a_batch(a.begin(), a.end() - 2), b_batch(b.begin(), b.end() - 2);
    total_rows_ = shape_numel(shape_of(p.graph, p.node(p.nodes.size() - 1).outputs[0])) / std::max<int64_t>(n_, 1);
    if (shape_numel(b_batch) == 1) {
      // B unbatched: A's batch folds into its rows, one product.
      folded_ = true;
      product_.prepare(p.context.stream(0), shape_numel(a) / k_, n_, k_, false, false, bias_.present(), relu_,
                       p.context.allow_tf32());
      need_workspace(product_.workspace_bytes());
      std::string parts = std::string(bias_.present() ? " + bias" : "") + (relu_ ? " + ReLU" : "");
      set_what(product_.uses_lt() ? fmt::format("cuBLASLt matmul{} (epilogue)", parts)
                                  : fmt::format("cuBLAS sgemm{}", parts));
      return;
    }
    // Batched: the offsets of each output batch entry's operands.
    Shape out_batch = kernels::broadcast_shapes(node, a_batch, b_batch);
    std::vector<int64_t> sa = kernels::broadcast_strides(a_batch, out_batch);
    std::vector<int64_t> sb = kernels::broadcast_strides(b_batch, out_batch);
    batches_ = shape_numel(out_batch);
    std::vector<int64_t> index(out_batch.size(), 0);
    for (int64_t i = 0; i < batches_; ++i) {
      int64_t oa = 0, ob = 0;
      for (size_t d = 0; d < out_batch.size(); ++d) oa += index[d] * sa[d], ob += index[d] * sb[d];
      a_offsets_.push_back(oa * m_ * k_);
      b_offsets_.push_back(ob * k_ * n_);
      for (size_t d = out_batch.size(); d-- > 0;) {
        if (++index[d] < out_batch[d]) break;
        index[d] = 0;
      }
    }
    // Regular strides: offset(i) = i * stride for both operands.
    stride_a_ = batches_ > 1 ? a_offsets_[1] : 0;
    stride_b_ = batches_ > 1 ? b_offsets_[1] : 0;
    regular_ = true;
    for (int64_t i = 0; i < batches_ && regular_; ++i)
      regular_ = a_offsets_[static_cast<size_t>(i)] == i * stride_a_ && b_offsets_[static_cast<size_t>(i)] == i * stride_b_;
    set_what(fmt::format("cuBLAS sgemm {}({} batches){}{}", regular_ ? "strided batched " : "", batches_,
                         bias_.present() ? " + bias" : "", relu_ ? " + ReLU" : ""));
  }

  void enqueue(const GpuStream& s, const void* const* in, void* const* out) const override {
    const float* a = static_cast<const float*>(data(a_, in));
    const float* b = static_cast<const float*>(data(b_, in));
    const float* bias = bias_.present() ? static_cast<const float*>(data(bias_, in)) : nullptr;
    float* y = static_cast<float*>(out[0]);
    if (folded_) {
      product_.enqueue(s, a, b, bias, y, 1.0f, 0.0f);
      return;
    }
    const float one = 1.0f, zero = 0.0f;
    int m = static_cast<int>(m_), n = static_cast<int>(n_), k = static_cast<int>(k_);
    if (regular_) {
      HETSCHED_CUDA_CHECK(cublasSgemmStridedBatched(s.cublas, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, b, n, stride_b_,
                                                    a, k, stride_a_, &zero, y, n, m_ * n_,
                                                    static_cast<int>(batches_)));
    } else {
      for (int64_t i = 0; i < batches_; ++i)
        HETSCHED_CUDA_CHECK(cublasSgemm(s.cublas, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one,
                                        b + b_offsets_[static_cast<size_t>(i)], n,
                                        a + a_offsets_[static_cast<size_t>(i)], k, &zero, y + i * m_ * n_, n));
    }
    if (bias || relu_) kern::bias_activation(y, bias, total_rows_, n_, relu_, s.stream);
  }

 private:
  Operand a_, b_, bias_;
  bool relu_ = false, folded_ = false, regular_ = false;
  int64_t m_ = 0, n_ = 0, k_ = 0, total_rows_ = 0, batches_ = 1, stride_a_ = 0, stride_b_ = 0;
  std::vector<int64_t> a_offsets_, b_offsets_;
  RowMajorProduct product_;
};

std::unique_ptr<GpuOp> prepare_matmul(const GpuPrepare& p) { return std::make_unique<MatMulOp>(p); }

}  // namespace

HETSCHED_CUDA_KERNEL("Gemm", gemm_declines, prepare_gemm,
                     "cuBLASLt with a bias / ReLU epilogue, or cuBLAS sgemm; a following Relu fused");
HETSCHED_CUDA_KERNEL("MatMul", matmul_declines, prepare_matmul,
                     "cuBLASLt with a bias / ReLU epilogue (a following bias Add and Relu fused), cuBLAS sgemm "
                     "(strided) batched");

}  // namespace hetsched::cuda::ops
