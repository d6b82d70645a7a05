// MatMul — reference kernel (numpy.matmul semantics).
//
// Supported: float32, float64, int32 and int64 (both inputs of one dtype);
// 2-D operands; batched operands of any rank whose batch dims broadcast
// (numpy rules); 1-D operands (A of shape [K] is taken as [1, K] and B of
// shape [K] as [K, 1], and the added dim is dropped from the output).
// Integer products wrap around like the two's complement hardware does.
// Refused: other dtypes.
//
// Method: blocked GEMM of nn_common.h per output batch entry; when B has no
// batch (or all-1 batch dims) the batch of A is folded into its rows, making
// one large GEMM.
#include "kernels/reference/nn_common.h"

namespace hetsched::kernels {
namespace {

constexpr std::initializer_list<DType> kMatMulTypes = {DType::kFloat32, DType::kFloat64, DType::kInt32,
                                                       DType::kInt64};

void check_matmul(const Node& node, const Graph& graph) {
  check_input_dtypes(node, graph, kMatMulTypes);
  for (size_t i = 0; i < 2; ++i) {
    ValueId id = node.input(i);
    if (id == kNoValue) throw_invalid(node, fmt::format("input {} is required", i));
    const Value& v = graph.values[id];
    if (v.has_shape && v.shape.empty())
      throw_invalid(node, fmt::format("input {} '{}' is a scalar, expected rank >= 1", i, v.name));
  }
}

// Integers are multiplied as unsigned so that overflow wraps instead of being
// undefined behaviour.
template <typename T>
struct WrapType {
  using type = T;
};
template <>
struct WrapType<int32_t> {
  using type = uint32_t;
};
template <>
struct WrapType<int64_t> {
  using type = uint64_t;
};

template <typename T>
void matmul_compute(const T* a, const T* b, T* y, int64_t M, int64_t N, int64_t K, const Shape& batch,
                    const std::vector<int64_t>& a_bstrides, const std::vector<int64_t>& b_bstrides) {
  using U = typename WrapType<T>::type;
  const U* ua = reinterpret_cast<const U*>(a);
  const U* ub = reinterpret_cast<const U*>(b);
  U* uy = reinterpret_cast<U*>(y);
  const int64_t nbatch = shape_numel(batch);
  bool b_shared = true;
  for (int64_t s : b_bstrides) b_shared = b_shared && s == 0;
  bool a_dense = true;  // A's batch covers the output batch without broadcasting
  for (size_t i = 0; i < batch.size(); ++i) a_dense = a_dense && (batch[i] == 1 || a_bstrides[i] != 0);
  if (b_shared && a_dense) {
    nn::gemm_accumulate<U>(nbatch * M, N, K, ua, K, 1, ub, N, uy, N);
    return;
  }
  std::vector<int64_t> index(batch.size(), 0);
  for (int64_t bi = 0; bi < nbatch; ++bi) {
    int64_t a_off = 0, b_off = 0;
    for (size_t d = 0; d < batch.size(); ++d) {
      a_off += index[d] * a_bstrides[d];
      b_off += index[d] * b_bstrides[d];
    }
    nn::gemm_accumulate<U>(M, N, K, ua + a_off * M * K, K, 1, ub + b_off * K * N, N, uy + bi * M * N, N);
    for (size_t d = batch.size(); d-- > 0;) {
      if (++index[d] < batch[d]) break;
      index[d] = 0;
    }
  }
}

std::vector<Tensor> compute_matmul(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& A = required_input(node, inputs, 0);
  const Tensor& B = required_input(node, inputs, 1);
  if (A.rank() < 1 || B.rank() < 1)
    throw_runtime(node, fmt::format("MatMul needs operands of rank >= 1, got {} and {}",
                                    shape_to_string(A.shape()), shape_to_string(B.shape())));
  if (A.dtype() != B.dtype())
    throw_runtime(node, fmt::format("A is {} but B is {}", dtype_name(A.dtype()), dtype_name(B.dtype())));
  Shape as = A.shape(), bs = B.shape();
  const bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
  if (a_vec) as.insert(as.begin(), 1);
  if (b_vec) bs.push_back(1);
  const int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
  if (bs[bs.size() - 2] != K)
    throw_runtime(node, fmt::format("inner dims differ: A {} and B {}", shape_to_string(A.shape()),
                                    shape_to_string(B.shape())));
  Shape a_batch(as.begin(), as.end() - 2), b_batch(bs.begin(), bs.end() - 2);
  Shape batch = broadcast_shapes(node, a_batch, b_batch);
  // Strides in units of whole matrices.
  std::vector<int64_t> a_bs = broadcast_strides(a_batch, batch), b_bs = broadcast_strides(b_batch, batch);
  Shape out = batch;
  if (!a_vec) out.push_back(M);
  if (!b_vec) out.push_back(N);
  Tensor Y(A.dtype(), out);
  auto run = [&](auto t) {
    using T = decltype(t);
    matmul_compute<T>(A.data<T>(), B.data<T>(), Y.data<T>(), M, N, K, batch, a_bs, b_bs);
  };
  switch (A.dtype()) {
    case DType::kFloat32: run(float{}); break;
    case DType::kFloat64: run(double{}); break;
    case DType::kInt32: run(int32_t{}); break;
    case DType::kInt64: run(int64_t{}); break;
    default: throw_unsupported(node, std::string("dtype ") + dtype_name(A.dtype()) + " is not supported");
  }
  return {Y};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("MatMul", check_matmul, compute_matmul);

}  // namespace hetsched::kernels
