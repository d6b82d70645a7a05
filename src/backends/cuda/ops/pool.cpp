// Pooling on the GPU: MaxPool, AveragePool, GlobalAveragePool and
// GlobalMaxPool. cuDNN's pooling where its geometry is ONNX's (symmetric
// pads smaller than the window, no dilation, output sizes of its floor
// formula); the own pooling kernel, which mirrors the reference kernel,
// for the rest (asymmetric pads, ceil_mode windows, dilations).
#include <fmt/format.h>

#include "hetsched/error.h"

#include "backends/cuda/ops/cudnn_util.h"
#include "backends/cuda/ops/op_util.h"
#include "kernels/reference/nn_common.h"

namespace hetsched::cuda::ops {
namespace {

namespace nn = kernels::nn;

bool is_global(const Node& node) { return node.op_type.rfind("Global", 0) == 0; }
bool is_max(const Node& node) { return node.op_type == "MaxPool" || node.op_type == "GlobalMaxPool"; }

std::string pool_declines(const Graph& graph, const Node& node) {
  if (node.input(0) == kNoValue) return "no input";
  if (std::string why = need_float32(graph, node); !why.empty()) return why;
  for (size_t i = 1; i < node.outputs.size(); ++i)
    if (node.outputs[i] != kNoValue) return "the Indices output";
  size_t rank = graph.values[node.input(0)].shape.size();
  if (rank < 3 || rank > 5) return "rank outside 3-5";
  return "";
}

kern::PoolGeometry pool_geometry(const Node& node, const Shape& x);

// pool_declines plus a geometry the reference kernel would accept.
std::string pool_declines_checked(const Graph& graph, const Node& node) {
  if (std::string why = pool_declines(graph, node); !why.empty()) return why;
  try {
    pool_geometry(node, graph.values[node.input(0)].shape);
  } catch (const Error&) {
    return "a geometry the reference kernel refuses";
  }
  return "";
}

// The ONNX geometry of the node on its input, right-aligned into 3 axes.
kern::PoolGeometry pool_geometry(const Node& node, const Shape& x) {
  const int64_t n = static_cast<int64_t>(x.size()) - 2;
  const size_t ns = static_cast<size_t>(n);
  kern::PoolGeometry g;
  g.planes = x[0] * x[1];
  nn::AutoPad auto_pad = is_global(node) ? nn::AutoPad::kValid : nn::read_auto_pad(node);
  std::vector<int64_t> kernel, strides, dilations, pads;
  if (is_global(node)) {
    kernel.assign(x.begin() + 2, x.end());
    strides.assign(ns, 1);
    dilations.assign(ns, 1);
    pads.assign(2 * ns, 0);
  } else {
    kernel = nn::read_spatial_ints(node, "kernel_shape", ns, 1, 1);
    strides = nn::read_spatial_ints(node, "strides", ns, 1, 1);
    dilations = nn::read_spatial_ints(node, "dilations", ns, 1, 1);
    pads = nn::read_pads(node, ns);
  }
  bool ceil_mode = !is_global(node) && node.attr_int("ceil_mode", 0) != 0;
  for (size_t i = 0; i < ns; ++i) {
    size_t ax = 3 - ns + i;
    g.in[ax] = x[i + 2];
    g.kernel[ax] = kernel[i];
    g.stride[ax] = strides[i];
    g.dilation[ax] = dilations[i];
    nn::AxisGeometry ag = nn::axis_geometry(node, auto_pad, g.in[ax], kernel[i], strides[i], dilations[i], pads[i],
                                            pads[i + ns], ceil_mode);
    g.out[ax] = ag.out;
    g.pad_begin[ax] = ag.pad_begin;
    g.pad_end[ax] = ag.pad_end;
  }
  return g;
}

// Whether cuDNN computes exactly this geometry.
bool cudnn_fits(const kern::PoolGeometry& g) {
  for (int a = 0; a < 3; ++a) {
    if (g.dilation[a] != 1 || g.pad_begin[a] != g.pad_end[a] || g.pad_begin[a] >= g.kernel[a]) return false;
    if (g.out[a] != 1 + (g.in[a] + 2 * g.pad_begin[a] - g.kernel[a]) / g.stride[a]) return false;
  }
  return true;
}

class PoolOp : public GpuOp {
 public:
  explicit PoolOp(const GpuPrepare& p) : GpuOp(p, "") {
    const Node& node = p.node();
    x_ = bind(p, node.inputs[0]);
    const Shape& x = shape_of(p.graph, node.inputs[0]);
    g_ = pool_geometry(node, x);
    max_ = is_max(node);
    count_include_pad_ = node.attr_int("count_include_pad", 0) != 0;
    use_cudnn_ = cudnn_fits(g_);
    if (!use_cudnn_) {
      set_what(fmt::format("own CUDA pooling kernel ({})", node.op_type));
      return;
    }
    set_what(fmt::format("cuDNN pooling ({})", node.op_type));
    // 1-D and 2-D pools are 2-D for cuDNN; 3-D ones stay 3-D.
    const int spatial = x.size() == 5 ? 3 : 2;
    std::vector<int> window, padding, stride, in_dims = {static_cast<int>(x[0]), static_cast<int>(x[1])},
                                                out_dims = in_dims;
    for (int a = 3 - spatial; a < 3; ++a) {
      window.push_back(static_cast<int>(g_.kernel[a]));
      padding.push_back(static_cast<int>(g_.pad_begin[a]));
      stride.push_back(static_cast<int>(g_.stride[a]));
      in_dims.push_back(static_cast<int>(g_.in[a]));
      out_dims.push_back(static_cast<int>(g_.out[a]));
    }
    cudnnPoolingMode_t mode = max_ ? CUDNN_POOLING_MAX
                                   : (count_include_pad_ ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                                         : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING);
    HETSCHED_CUDA_CHECK(cudnnSetPoolingNdDescriptor(pool_.get(), mode, CUDNN_PROPAGATE_NAN, spatial, window.data(),
                                                    padding.data(), stride.data()));
    set_packed(x_desc_, in_dims);
    set_packed(y_desc_, out_dims);
  }

  void enqueue(const GpuStream& s, const void* const* in, void* const* out) const override {
    const float* x = static_cast<const float*>(data(x_, in));
    float* y = static_cast<float*>(out[0]);
    if (!use_cudnn_) {
      kern::pool(max_, count_include_pad_, x, y, g_, s.stream);
      return;
    }
    const float one = 1.0f, zero = 0.0f;
    HETSCHED_CUDA_CHECK(cudnnPoolingForward(s.cudnn, pool_.get(), &one, x_desc_.get(), x, &zero, y_desc_.get(), y));
  }

 private:
  Operand x_;
  kern::PoolGeometry g_;
  bool max_ = true, count_include_pad_ = false, use_cudnn_ = false;
  PoolingDescriptor pool_;
  TensorDescriptor x_desc_, y_desc_;
};

std::unique_ptr<GpuOp> prepare_pool(const GpuPrepare& p) { return std::make_unique<PoolOp>(p); }

}  // namespace

HETSCHED_CUDA_KERNEL("MaxPool", pool_declines_checked, prepare_pool, "cuDNN pooling; own CUDA kernel for other geometries");
HETSCHED_CUDA_KERNEL("AveragePool", pool_declines_checked, prepare_pool,
                     "cuDNN pooling; own CUDA kernel for other geometries");
HETSCHED_CUDA_KERNEL("GlobalAveragePool", pool_declines_checked, prepare_pool, "cuDNN pooling");
HETSCHED_CUDA_KERNEL("GlobalMaxPool", pool_declines_checked, prepare_pool, "cuDNN pooling");

}  // namespace hetsched::cuda::ops
