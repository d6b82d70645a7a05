// Conv on the GPU with cuDNN, with a following residual Add and ReLU fused
// (gpu_fusion_group): cudnnConvolutionBiasActivationForward computes
// y = ReLU(conv(x, w) + z + bias) in one call. Without a ReLU (cuDNN fuses
// only ReLU there) or where cuDNN refuses the fused call, the node runs as
// cudnnConvolutionForward, then cudnnAddTensor for the bias and the residual,
// then the own ReLU kernel.
//
// cuDNN pads symmetrically: asymmetric pads (SAME padding of an even input,
// as NASNet has) pad the input into the stream's workspace first (own pad
// kernel) and convolve it unpadded. 1-D convolutions run as 2-D ones of
// height 1. FP32 math (CUDNN_FMA_MATH) unless the context allows TF32.
#include <algorithm>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "backends/cuda/ops/cudnn_util.h"
#include "backends/cuda/ops/op_util.h"
#include "hetsched/error.h"
#include "kernels/reference/nn_common.h"

namespace hetsched::cuda::ops {
namespace {

namespace nn = kernels::nn;

// Algorithms needing more scratch than this are passed over: a faster
// convolution is not worth a workspace that crowds out the model.
constexpr size_t kMaxAlgorithmWorkspace = size_t{512} << 20;

struct ConvGeometry {
  int64_t batch = 0, in_channels = 0, out_channels = 0, group = 1;
  std::vector<int64_t> in, out, kernel, stride, dilation, pad_begin, pad_end;  // per spatial axis
  bool asymmetric() const { return pad_begin != pad_end; }
};

ConvGeometry conv_geometry(const Graph& graph, const Node& node) {
  const Shape& x = graph.values[node.inputs[0]].shape;
  const Shape& w = graph.values[node.inputs[1]].shape;
  const size_t n = x.size() - 2;
  ConvGeometry g;
  g.batch = x[0];
  g.in_channels = x[1];
  g.out_channels = w[0];
  g.group = node.attr_int("group", 1);
  g.kernel.assign(w.begin() + 2, w.end());
  g.stride = nn::read_spatial_ints(node, "strides", n, 1, 1);
  g.dilation = nn::read_spatial_ints(node, "dilations", n, 1, 1);
  std::vector<int64_t> pads = nn::read_pads(node, n);
  nn::AutoPad auto_pad = nn::read_auto_pad(node);
  for (size_t i = 0; i < n; ++i) {
    nn::AxisGeometry a = nn::axis_geometry(node, auto_pad, x[i + 2], g.kernel[i], g.stride[i], g.dilation[i], pads[i],
                                           pads[i + n], false);
    g.in.push_back(x[i + 2]);
    g.out.push_back(a.out);
    g.pad_begin.push_back(a.pad_begin);
    g.pad_end.push_back(a.pad_end);
  }
  return g;
}

std::string conv_declines(const Graph& graph, const Node& node) {
  if (node.input(0) == kNoValue || node.input(1) == kNoValue) return "no X or no W";
  if (std::string why = need_float32(graph, node); !why.empty()) return why;
  const Shape& x = graph.values[node.inputs[0]].shape;
  const Shape& w = graph.values[node.inputs[1]].shape;
  if (x.size() < 3 || x.size() > 5 || w.size() != x.size()) return "rank outside 3-5";
  int64_t group = node.attr_int("group", 1);
  if (group < 1 || x[1] != w[1] * group || w[0] % group != 0) return "channels that do not match the group";
  ConvGeometry g;
  try {
    g = conv_geometry(graph, node);
    if (g.out != Shape(graph.values[node.outputs[0]].shape.begin() + 2, graph.values[node.outputs[0]].shape.end()))
      return "an output shape other than the graph's";
  } catch (const Error&) {
    return "a geometry the reference kernel refuses";
  }
  // cuDNN's descriptors take int sizes; an asymmetrically padded input is
  // a tensor of its own (the padded copy).
  constexpr int64_t kIntMax = std::numeric_limits<int32_t>::max();
  int64_t padded = g.batch * g.in_channels;
  for (size_t i = 0; i < g.in.size(); ++i) {
    for (int64_t v : {g.kernel[i], g.stride[i], g.dilation[i], g.pad_begin[i], g.pad_end[i]})
      if (v > (int64_t{1} << 30)) return "a kernel, stride, dilation or pad too large for cuDNN";
    padded *= g.in[i] + g.pad_begin[i] + g.pad_end[i];
    if (padded > kIntMax) return "a padded input of 2^31 elements or more";
  }
  for (int64_t d : x)
    if (d > (int64_t{1} << 30)) return "a dim too large for cuDNN";
  return "";
}

std::vector<int> ints(const std::vector<int64_t>& v) { return std::vector<int>(v.begin(), v.end()); }

class ConvOp : public GpuOp {
 public:
  explicit ConvOp(const GpuPrepare& p) : GpuOp(p, "") {
    const Node& conv = p.node(0);
    x_ = bind(p, conv.inputs[0]);
    w_ = bind(p, conv.inputs[1]);
    bias_ = bind(p, conv.input(2));
    ValueId y_value = conv.outputs[0];
    for (size_t i = 1; i < p.nodes.size(); ++i) {
      const Node& fused = p.node(i);
      if (fused.op_type == "Add") {
        z_ = bind(p, fused.inputs[0] == y_value ? fused.inputs[1] : fused.inputs[0]);
        y_value = fused.outputs[0];
      } else if (fused.op_type == "Relu") {
        relu_ = true;
      }
    }
    g_ = conv_geometry(p.graph, conv);
    prepare_descriptors(p);
    choose_algorithm(p);
    fused_ = relu_ && try_fused(p);
    if (fused_ && !bias_.present()) {
      // The fused call needs a bias operand: zeros.
      zero_bias_ = bind_constant(p, Tensor(DType::kFloat32, {g_.out_channels}));
    }
    std::string parts = std::string(bias_.present() ? " + bias" : "") + (z_.present() ? " + residual Add" : "") +
                        (relu_ ? " + ReLU" : "");
    set_what(fused_ ? fmt::format("cuDNN fused convolution{}", parts)
                    : fmt::format("cuDNN convolution{}{}", parts, relu_ ? " (ReLU unfused)" : ""));
  }

  void enqueue(const GpuStream& s, const void* const* in, void* const* out) const override {
    const float* x = static_cast<const float*>(data(x_, in));
    float* y = static_cast<float*>(out[0]);
    char* workspace = static_cast<char*>(s.workspace);
    if (g_.asymmetric()) {
      kern::pad(x, pad_in_dims_.data(), reinterpret_cast<float*>(workspace), pad_out_dims_.data(),
                pad_begin_.data(), static_cast<int>(pad_in_dims_.size()), kern::PadMode::kConstant, 0.0f, s.stream);
      x = reinterpret_cast<const float*>(workspace);
      workspace += padded_bytes_;
    }
    const float* w = static_cast<const float*>(data(w_, in));
    const float one = 1.0f, zero = 0.0f;
    if (fused_) {
      const float* bias = static_cast<const float*>(bias_.present() ? data(bias_, in) : zero_bias_.constant);
      const float* z = z_.present() ? static_cast<const float*>(data(z_, in)) : y;
      const float alpha2 = z_.present() ? 1.0f : 0.0f;
      if (clear_z_) HETSCHED_CUDA_CHECK(cudaMemsetAsync(y, 0, y_elements_ * sizeof(float), s.stream));
      HETSCHED_CUDA_CHECK(cudnnConvolutionBiasActivationForward(
          s.cudnn, &one, x_desc_.get(), x, w_desc_.get(), w, conv_desc_.get(), algorithm_, workspace,
          algorithm_workspace_, &alpha2, y_desc_.get(), z, bias_desc_.get(), bias, activation_.get(), y_desc_.get(),
          y));
      return;
    }
    HETSCHED_CUDA_CHECK(cudnnConvolutionForward(s.cudnn, &one, x_desc_.get(), x, w_desc_.get(), w, conv_desc_.get(),
                                                algorithm_, workspace, algorithm_workspace_, &zero, y_desc_.get(), y));
    if (bias_.present())
      HETSCHED_CUDA_CHECK(cudnnAddTensor(s.cudnn, &one, bias_desc_.get(), data(bias_, in), &one, y_desc_.get(), y));
    if (z_.present())
      HETSCHED_CUDA_CHECK(cudnnAddTensor(s.cudnn, &one, y_desc_.get(), data(z_, in), &one, y_desc_.get(), y));
    if (relu_) kern::unary(kern::Unary::kRelu, y, y, y_elements_, 0.0f, 0.0f, s.stream);
  }

 private:
  void prepare_descriptors(const GpuPrepare& p) {
    // cuDNN's view: 2-D for 1-D convolutions (a leading spatial axis of 1).
    std::vector<int64_t> in = g_.in, out = g_.out, kernel = g_.kernel, stride = g_.stride, dilation = g_.dilation,
                         pads = g_.pad_begin;
    if (in.size() == 1) {
      for (auto* v : {&in, &out, &kernel, &stride, &dilation}) v->insert(v->begin(), 1);
      pads.insert(pads.begin(), 0);
    }
    std::vector<int64_t> x_dims = {g_.batch, g_.in_channels};
    if (g_.asymmetric()) {
      // Padded into the workspace first: cuDNN convolves the padded input.
      pad_in_dims_ = {g_.batch, g_.in_channels};
      pad_out_dims_ = pad_in_dims_;
      pad_begin_ = {0, 0};
      for (size_t i = 0; i < g_.in.size(); ++i) {
        pad_in_dims_.push_back(g_.in[i]);
        pad_out_dims_.push_back(g_.in[i] + g_.pad_begin[i] + g_.pad_end[i]);
        pad_begin_.push_back(g_.pad_begin[i]);
      }
      size_t offset = in.size() - g_.in.size();  // 1 for a 1-D convolution
      for (size_t i = 0; i < g_.in.size(); ++i) in[i + offset] = pad_out_dims_[i + 2];
      std::fill(pads.begin(), pads.end(), 0);
      padded_bytes_ = DeviceArena::align(static_cast<size_t>(shape_numel(pad_out_dims_)) * sizeof(float));
    }
    x_dims.insert(x_dims.end(), in.begin(), in.end());
    std::vector<int64_t> w_dims = {g_.out_channels, g_.in_channels / g_.group};
    w_dims.insert(w_dims.end(), kernel.begin(), kernel.end());
    std::vector<int64_t> y_dims = {g_.batch, g_.out_channels};
    y_dims.insert(y_dims.end(), out.begin(), out.end());
    y_elements_ = shape_numel(y_dims);
    x_elements_ = shape_numel(x_dims);
    w_elements_ = shape_numel(w_dims);

    set_packed(x_desc_, ints(x_dims));
    set_packed(y_desc_, ints(y_dims));
    std::vector<int> w_ints = ints(w_dims);
    HETSCHED_CUDA_CHECK(cudnnSetFilterNdDescriptor(w_desc_.get(), CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW,
                                                   static_cast<int>(w_ints.size()), w_ints.data()));
    std::vector<int> pad_ints = ints(pads), stride_ints = ints(stride), dilation_ints = ints(dilation);
    HETSCHED_CUDA_CHECK(cudnnSetConvolutionNdDescriptor(conv_desc_.get(), static_cast<int>(pad_ints.size()),
                                                        pad_ints.data(), stride_ints.data(), dilation_ints.data(),
                                                        CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    HETSCHED_CUDA_CHECK(cudnnSetConvolutionGroupCount(conv_desc_.get(), static_cast<int>(g_.group)));
    HETSCHED_CUDA_CHECK(
        cudnnSetConvolutionMathType(conv_desc_.get(), p.context.allow_tf32() ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH));
    std::vector<int> bias_dims(x_dims.size(), 1);
    bias_dims[1] = static_cast<int>(g_.out_channels);
    set_packed(bias_desc_, bias_dims);
    // The fused call takes only CUDNN_NOT_PROPAGATE_NAN (a NaN before the
    // fused ReLU comes out 0, where the reference kernels keep it); the coef
    // is a clipped ReLU's ceiling, unused by a plain one.
    HETSCHED_CUDA_CHECK(cudnnSetActivationDescriptor(activation_.get(), CUDNN_ACTIVATION_RELU,
                                                     CUDNN_NOT_PROPAGATE_NAN, std::numeric_limits<double>::max()));

    // cuDNN's output size must be ONNX's: a mismatch is a bug here.
    std::vector<int> cudnn_out(x_dims.size());
    HETSCHED_CUDA_CHECK(cudnnGetConvolutionNdForwardOutputDim(conv_desc_.get(), x_desc_.get(), w_desc_.get(),
                                                              static_cast<int>(cudnn_out.size()), cudnn_out.data()));
    if (cudnn_out != ints(y_dims))
      throw Error(ErrorCode::kRuntime, fmt::format("{}: cuDNN's output shape differs from ONNX's ({} elements)",
                                                   label(p.node()), y_elements_));
  }

  void choose_algorithm(const GpuPrepare& p) {
    const GpuStream& s = p.context.stream(0);
    int count = 0;
    cudnnConvolutionFwdAlgoPerf_t results[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    HETSCHED_CUDA_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(s.cudnn, x_desc_.get(), w_desc_.get(),
                                                               conv_desc_.get(), y_desc_.get(),
                                                               CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count, results));
    bool found = false;
    for (int i = 0; i < count && !found; ++i) {
      const cudnnConvolutionFwdAlgoPerf_t& r = results[i];
      bool tensor_op = r.mathType == CUDNN_TENSOR_OP_MATH || r.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
      if (r.status != CUDNN_STATUS_SUCCESS || r.memory > kMaxAlgorithmWorkspace ||
          (tensor_op && !p.context.allow_tf32()))
        continue;
      algorithm_ = r.algo;
      algorithm_workspace_ = r.memory;
      found = true;
    }
    if (!found) {
      // The heuristics ranked nothing usable: implicit GEMM needs no
      // workspace and runs every geometry.
      algorithm_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
      algorithm_workspace_ = 0;
    }
    HETSCHED_CUDA_CHECK(cudnnGetConvolutionForwardWorkspaceSize(s.cudnn, x_desc_.get(), w_desc_.get(),
                                                                conv_desc_.get(), y_desc_.get(), algorithm_,
                                                                &algorithm_workspace_));
    need_workspace(padded_bytes_ + algorithm_workspace_);
  }

  // Whether cuDNN runs the fused call for this geometry and algorithm: tried
  // once on scratch memory (its documentation lists conditions, but the
  // library decides), so that a refusal falls back now instead of failing
  // at run time. Without a residual, z is y with alpha2 = 0; whether cuDNN
  // then still reads z (0 * NaN is NaN) is not documented, so the trial
  // computes ReLU(0 * w + 0 * z + 1) from a y full of NaN: anything but 1
  // (a NaN, or the 0 the ReLU makes of one) means z was read, and y is then
  // cleared before each fused call (clear_z_).
  bool try_fused(const GpuPrepare& p) {
    const GpuStream& s = p.context.stream(0);
    auto bytes = [](int64_t elements) { return std::max<size_t>(static_cast<size_t>(elements) * sizeof(float), 4); };
    DeviceBuffer x(bytes(x_elements_)), y(bytes(y_elements_)), w(bytes(w_elements_)), bias(bytes(g_.out_channels)),
        workspace(std::max<size_t>(algorithm_workspace_, 4));
    HETSCHED_CUDA_CHECK(cudaMemsetAsync(x.get(), 0, x.bytes(), s.stream));
    HETSCHED_CUDA_CHECK(cudaMemsetAsync(w.get(), 0, w.bytes(), s.stream));
    std::vector<float> ones(static_cast<size_t>(g_.out_channels), 1.0f);
    upload_bytes(bias.get(), ones.data(), ones.size() * sizeof(float));
    HETSCHED_CUDA_CHECK(cudaMemsetAsync(y.get(), 0xff, y.bytes(), s.stream));
    const float one = 1.0f, alpha2 = z_.present() ? 1.0f : 0.0f;
    cudnnStatus_t status = cudnnConvolutionBiasActivationForward(
        s.cudnn, &one, x_desc_.get(), x.get(), w_desc_.get(), w.get(), conv_desc_.get(), algorithm_, workspace.get(),
        algorithm_workspace_, &alpha2, y_desc_.get(), y.get(), bias_desc_.get(), bias.get(), activation_.get(),
        y_desc_.get(), y.get());
    HETSCHED_CUDA_CHECK(cudaStreamSynchronize(s.stream));
    if (status != CUDNN_STATUS_SUCCESS) return false;
    if (!z_.present()) {
      std::vector<float> out(static_cast<size_t>(y_elements_));
      download_bytes(out.data(), y.get(), out.size() * sizeof(float));
      clear_z_ = std::any_of(out.begin(), out.end(), [](float v) { return v != 1.0f; });
    }
    return true;
  }

  Operand x_, w_, bias_, z_, zero_bias_;
  bool relu_ = false, fused_ = false, clear_z_ = false;
  ConvGeometry g_;
  std::vector<int64_t> pad_in_dims_, pad_out_dims_, pad_begin_;
  size_t padded_bytes_ = 0;
  int64_t x_elements_ = 0, y_elements_ = 0, w_elements_ = 0;
  TensorDescriptor x_desc_, y_desc_, bias_desc_;
  FilterDescriptor w_desc_;
  ConvolutionDescriptor conv_desc_;
  ActivationDescriptor activation_;
  cudnnConvolutionFwdAlgo_t algorithm_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  size_t algorithm_workspace_ = 0;
};

std::unique_ptr<GpuOp> prepare_conv(const GpuPrepare& p) { return std::make_unique<ConvOp>(p); }

}  // namespace

HETSCHED_CUDA_KERNEL("Conv", conv_declines, prepare_conv,
                     "cuDNN convolution; a following residual Add and ReLU fused (cudnnConvolutionBiasActivationForward)");

}  // namespace hetsched::cuda::ops
