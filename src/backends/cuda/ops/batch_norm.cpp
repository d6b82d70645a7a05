// BatchNormalization (inference) on the GPU, where it was not folded into a
// Conv at load time (NASNet's after a Concat): its statistics are folded
// into a per-channel scale and shift at prepare time, as the reference
// kernel computes them (in double), and one own kernel applies them.
#include <cmath>

#include "backends/cuda/ops/op_util.h"

namespace hetsched::cuda::ops {
namespace {

std::string batch_norm_declines(const Graph& graph, const Node& node) {
  if (node.attr_int("training_mode", 0) != 0) return "training_mode 1";
  for (size_t i = 1; i < node.outputs.size(); ++i)
    if (node.outputs[i] != kNoValue) return "the training outputs";
  if (node.attr_int("spatial", 1) != 1) return "spatial 0";
  if (node.input(0) == kNoValue || graph.values[node.inputs[0]].dtype != DType::kFloat32 ||
      graph.values[node.outputs[0]].dtype != DType::kFloat32)
    return "not float32";
  if (graph.values[node.inputs[0]].shape.size() < 2) return "rank below 2";
  int64_t channels = graph.values[node.inputs[0]].shape[1];
  for (size_t i = 1; i < 5; ++i) {
    ValueId v = node.input(i);
    if (v == kNoValue || !graph.values[v].is_constant()) return "statistics or parameters computed at run time";
    if (graph.values[v].initializer->numel() != channels) return "parameters not of one value per channel";
  }
  return "";
}

class BatchNormOp : public GpuOp {
 public:
  explicit BatchNormOp(const GpuPrepare& p) : GpuOp(p, "own CUDA per-channel affine (folded BatchNormalization)") {
    const Node& node = p.node();
    x_ = bind(p, node.inputs[0]);
    const Shape& x = shape_of(p.graph, node.inputs[0]);
    channels_ = x[1];
    n_ = shape_numel(x);
    inner_ = 1;
    for (size_t d = 2; d < x.size(); ++d) inner_ *= x[d];
    auto values = [&](size_t i) { return p.value(node.inputs[i]).initializer->to_double_vector(); };
    std::vector<double> scale = values(1), bias = values(2), mean = values(3), var = values(4);
    double epsilon = node.attr_float("epsilon", 1e-5f);
    Tensor a(DType::kFloat32, {channels_}), b(DType::kFloat32, {channels_});
    for (int64_t c = 0; c < channels_; ++c) {
      size_t i = static_cast<size_t>(c);
      double k = scale[i] / std::sqrt(var[i] + epsilon);
      a.data<float>()[c] = static_cast<float>(k);
      b.data<float>()[c] = static_cast<float>(bias[i] - mean[i] * k);
    }
    scale_ = bind_constant(p, a);
    shift_ = bind_constant(p, b);
  }

  void enqueue(const GpuStream& s, const void* const* in, void* const* out) const override {
    kern::channel_affine(static_cast<const float*>(data(x_, in)), static_cast<const float*>(scale_.constant),
                         static_cast<const float*>(shift_.constant), static_cast<float*>(out[0]), n_, channels_,
                         inner_, s.stream);
  }

 private:
  Operand x_, scale_, shift_;
  int64_t channels_ = 1, inner_ = 1, n_ = 0;
};

std::unique_ptr<GpuOp> prepare_batch_norm(const GpuPrepare& p) { return std::make_unique<BatchNormOp>(p); }

}  // namespace

HETSCHED_CUDA_KERNEL("BatchNormalization", batch_norm_declines, prepare_batch_norm,
                     "own CUDA per-channel affine (statistics folded at prepare time)");

}  // namespace hetsched::cuda::ops
