// Softmax and LogSoftmax on the GPU: the own row kernel (one block per row)
// for the last axis, a strided kernel otherwise. Both opset semantics of
// `axis` (before 13: the dims from axis on are one row).
#include "backends/cuda/ops/op_util.h"
#include "kernels/reference/nn_common.h"

namespace hetsched::cuda::ops {
namespace {

std::string softmax_declines(const Graph& graph, const Node& node) {
  if (node.input(0) == kNoValue) return "no input";
  return need_float32(graph, node);
}

class SoftmaxOp : public GpuOp {
 public:
  explicit SoftmaxOp(const GpuPrepare& p) : GpuOp(p, "CUDA softmax") {
    const Node& node = p.node();
    x_ = bind(p, node.inputs[0]);
    kernels::nn::softmax_layout(node, shape_of(p.graph, node.inputs[0]), outer_, len_, inner_);
    log_ = node.op_type == "LogSoftmax";
  }

  void enqueue(const GpuStream& s, const void* const* in, void* const* out) const override {
    kern::softmax(static_cast<const float*>(data(x_, in)), static_cast<float*>(out[0]), outer_, len_, inner_, log_,
                  s.stream);
  }

 private:
  Operand x_;
  int64_t outer_ = 1, len_ = 1, inner_ = 1;
  bool log_ = false;
};

std::unique_ptr<GpuOp> prepare_softmax(const GpuPrepare& p) { return std::make_unique<SoftmaxOp>(p); }

}  // namespace

HETSCHED_CUDA_KERNEL("Softmax", softmax_declines, prepare_softmax, "own CUDA kernel (block per row)");
HETSCHED_CUDA_KERNEL("LogSoftmax", softmax_declines, prepare_softmax, "own CUDA kernel (block per row)");

}  // namespace hetsched::cuda::ops
