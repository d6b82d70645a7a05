// MaxPool, AveragePool, GlobalMaxPool and GlobalAveragePool on oneDNN
// (pooling_v2: strides, kernel, dilations, asymmetric pads), reading the
// input in whatever layout it arrives in and writing the primitive's layout.
//
// MaxPool: float32, int8, uint8; 1-D/2-D/3-D; kernel_shape, strides, pads,
// auto_pad, ceil_mode, dilations. Refused: the Indices output.
// AveragePool: float32; the same attributes, count_include_pad 0 and 1.
// Global pools: float32, X of rank 3 to 5 (a pool whose kernel is the whole
// spatial extent).
//
// A float32 2-D MaxPool whose input arrives channels-last (as the Convs
// around it write it) runs in host code instead, in that layout: oneDNN
// 2.6's channels-last max pool ran 1.4-2x slower than these loops here
// (googlenet's 3x3 pools: 111 against 73 us for 192 x 28 x 28 on one core).
//
// ceil_mode is expressed as extra end padding (oneDNN has no ceil mode).
// Refused, because oneDNN would differ from the reference kernel:
//  - a window holding padding only (the reference gives -inf/NaN there,
//    oneDNN the lowest float or 0);
//  - count_include_pad 1 with a ceil_mode window running past the end
//    padding (the reference does not count that part; oneDNN divides by the
//    whole kernel).
#include <optional>

#include "backends/cpu/host_code.h"
#include "backends/cpu/lowering.h"
#include "kernels/reference/nn_common.h"

namespace hetsched::cpu {
namespace {

using tag = dnnl::memory::format_tag;
namespace nn = kernels::nn;

struct PoolPlan {
  dnnl::algorithm algorithm = dnnl::algorithm::pooling_max;
  dnnl::memory::dims strides, kernel, dilation, pad_l, pad_r;
};

// True when some output position of this axis sees no input element.
bool has_empty_window(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t dilation, int64_t pad_begin) {
  for (int64_t o = 0; o < out; ++o) {
    int64_t start = o * stride - pad_begin;
    bool any = false;
    for (int64_t k = 0; k < kernel && !any; ++k) {
      int64_t at = start + k * dilation;
      any = at >= 0 && at < in;
    }
    if (!any) return true;
  }
  return false;
}

// The oneDNN form of a MaxPool/AveragePool node, or nullopt when it would
// not compute exactly what the reference kernel does.
std::optional<PoolPlan> plan_pool(const Node& node, const Shape& x_shape, const Shape& y_shape, bool is_max) {
  const size_t n = x_shape.size() - 2;
  if (!node.has_attr("kernel_shape")) return std::nullopt;
  auto kernel = node.attr_ints("kernel_shape");
  if (kernel.size() != n) return std::nullopt;
  nn::AutoPad auto_pad = nn::read_auto_pad(node);
  bool ceil_mode = node.attr_int("ceil_mode", 0) != 0;
  bool count_pad = !is_max && node.attr_int("count_include_pad", 0) != 0;
  auto strides = nn::read_spatial_ints(node, "strides", n, 1, 1);
  auto dilations = nn::read_spatial_ints(node, "dilations", n, 1, 1);
  auto pads = nn::read_pads(node, n);
  PoolPlan plan;
  plan.algorithm = is_max      ? dnnl::algorithm::pooling_max
                   : count_pad ? dnnl::algorithm::pooling_avg_include_padding
                               : dnnl::algorithm::pooling_avg_exclude_padding;
  for (size_t i = 0; i < n; ++i) {
    const int64_t in = x_shape[2 + i], k = kernel[i], s = strides[i], d = dilations[i];
    if (k < 1) return std::nullopt;
    auto geo = nn::axis_geometry(node, auto_pad, in, k, s, d, pads[i], pads[n + i], ceil_mode);
    if (geo.out != y_shape[2 + i] || geo.out < 1) return std::nullopt;
    const int64_t eff_k = (k - 1) * d + 1;
    if (has_empty_window(in, geo.out, k, s, d, geo.pad_begin)) return std::nullopt;
    // End padding the last window reaches (more than pad_end in ceil mode).
    const int64_t needed = (geo.out - 1) * s + eff_k - in - geo.pad_begin;
    if (count_pad && needed > geo.pad_end) return std::nullopt;
    const int64_t pad_r = std::max(geo.pad_end, needed);
    if ((in - eff_k + geo.pad_begin + pad_r) / s + 1 != geo.out) return std::nullopt;
    plan.strides.push_back(s);
    plan.kernel.push_back(k);
    plan.dilation.push_back(d - 1);  // oneDNN counts the gaps
    plan.pad_l.push_back(geo.pad_begin);
    plan.pad_r.push_back(pad_r);
  }
  return plan;
}

// A 2-D max pool over channels-last float data: x [N, H, W, C] and y [N, OH,
// OW, C] in memory order.
struct ChannelsLastPool {
  int64_t H, W, C, OH, OW, kh, kw, sh, sw, ph, pw;

  // Output rows [begin, end) (of all N * OH), with `row` W * C floats of
  // scratch: each output row is the max over its window's input rows
  // (whole rows, contiguous), then over each output's window of columns.
  // A NaN anywhere in a window gives NaN, as the reference kernel's max.
  HETSCHED_VECTOR_CLONES
  void rows(const float* x, float* y, int64_t begin, int64_t end, float* row) const {
    const int64_t wc = W * C;
    for (int64_t r = begin; r < end; ++r) {
      const int64_t n = r / OH, oh = r % OH;
      const int64_t h0 = std::max<int64_t>(0, oh * sh - ph), h1 = std::min(H, oh * sh - ph + kh);
      const float* image = x + n * H * wc;
      std::copy(image + h0 * wc, image + (h0 + 1) * wc, row);
      for (int64_t h = h0 + 1; h < h1; ++h) {
        const float* in = image + h * wc;
        for (int64_t i = 0; i < wc; ++i) row[i] = in[i] > row[i] || in[i] != in[i] ? in[i] : row[i];
      }
      float* out = y + r * OW * C;
      for (int64_t ow = 0; ow < OW; ++ow, out += C) {
        const int64_t w0 = std::max<int64_t>(0, ow * sw - pw), w1 = std::min(W, ow * sw - pw + kw);
        std::copy(row + w0 * C, row + (w0 + 1) * C, out);
        for (int64_t w = w0 + 1; w < w1; ++w) {
          const float* in = row + w * C;
          for (int64_t c = 0; c < C; ++c) out[c] = in[c] > out[c] || in[c] != in[c] ? in[c] : out[c];
        }
      }
    }
  }
};

// The host-code max pool when the input is float32, 2-D and channels-last
// without dilation; false otherwise (oneDNN then runs it).
bool emit_channels_last_max_pool(Lowering& l, const PoolPlan& plan) {
  const Value& x = l.input_value(0);
  const Value& y = l.graph().values[l.node().outputs[0]];
  if (plan.algorithm != dnnl::algorithm::pooling_max || x.dtype != DType::kFloat32 || x.shape.size() != 4 ||
      plan.dilation[0] != 0 || plan.dilation[1] != 0)
    return false;
  const int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  std::optional<dnnl::memory::dims> strides = dense_strides(l.input_desc(0));
  if (!strides || *strides != dnnl::memory::dims{H * W * C, 1, W * C, C} || C == 1) return false;
  ChannelsLastPool pool{H, W, C, y.shape[2], y.shape[3], plan.kernel[0], plan.kernel[1], plan.strides[0],
                        plan.strides[1], plan.pad_l[0], plan.pad_l[1]};
  BufferId src = l.input(0, l.input_desc(0));
  BufferId dst = l.output(l.node().outputs[0],
                          dnnl::memory::desc(dnnl::memory::dims(y.shape.begin(), y.shape.end()),
                                             dnnl::memory::data_type::f32, tag::nhwc));
  const int64_t rows = N * pool.OH, row_size = pool.OW * C;
  l.emit_host(
      [pool, rows, row_size](const std::vector<void*>& p) {
        // Chunks of whole rows: output elements [begin, end) rounded up to rows.
        Chunks(rows * row_size).for_each([&](int64_t, int64_t begin, int64_t end) {
          thread_local std::vector<float> row;
          row.resize(static_cast<size_t>(pool.W * pool.C));
          pool.rows(static_cast<const float*>(p[0]), static_cast<float*>(p[1]), (begin + row_size - 1) / row_size,
                    (end + row_size - 1) / row_size, row.data());
        });
      },
      {src}, {dst});
  return true;
}

bool emit_pool(Lowering& l, const PoolPlan& plan) {
  if (emit_channels_last_max_pool(l, plan)) return true;
  const Node& node = l.node();
  const Value& x = l.input_value(0);
  const Value& y = l.graph().values[node.outputs[0]];
  auto type = dnnl_type(x.dtype);
  if (!type) return false;
  dnnl::memory::dims dst_dims(y.shape.begin(), y.shape.end());
  dnnl::pooling_v2_forward::primitive_desc pd;
  try {
    dnnl::pooling_v2_forward::desc desc(dnnl::prop_kind::forward_inference, plan.algorithm, l.input_desc(0),
                                        dnnl::memory::desc(dst_dims, *type, tag::any), plan.strides, plan.kernel,
                                        plan.dilation, plan.pad_l, plan.pad_r);
    pd = dnnl::pooling_v2_forward::primitive_desc(desc, l.engine());
  } catch (const dnnl::error&) {
    return false;
  }
  BufferId src = l.input(0, pd.src_desc());
  BufferId dst = l.output(node.outputs[0], pd.dst_desc());
  l.emit(dnnl::pooling_v2_forward(pd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
  return true;
}

bool pool_shapes_ok(const Lowering& l, bool allow_int8) {
  const Node& node = l.node();
  if (node.inputs.empty() || !l.has_input(0) || node.outputs.empty() || node.outputs[0] == kNoValue) return false;
  const Value& x = l.input_value(0);
  const Value& y = l.graph().values[node.outputs[0]];
  bool dtype_ok = x.dtype == DType::kFloat32 || (allow_int8 && (x.dtype == DType::kInt8 || x.dtype == DType::kUInt8));
  if (!dtype_ok || y.dtype != x.dtype) return false;
  if (x.shape.size() < 3 || x.shape.size() > 5 || y.shape.size() != x.shape.size()) return false;
  if (shape_numel(x.shape) == 0 || shape_numel(y.shape) == 0) return false;
  return y.shape[0] == x.shape[0] && y.shape[1] == x.shape[1];
}

bool lower_pool(Lowering& l, bool is_max) {
  const Node& node = l.node();
  if (!pool_shapes_ok(l, is_max)) return false;
  // MaxPool's Indices output has no oneDNN form (its workspace is not ONNX's indices).
  for (size_t i = 1; i < node.outputs.size(); ++i)
    if (node.outputs[i] != kNoValue) return false;
  std::optional<PoolPlan> plan;
  try {
    plan = plan_pool(node, l.input_value(0).shape, l.graph().values[node.outputs[0]].shape, is_max);
  } catch (const Error&) {
    return false;  // malformed attributes: the reference kernel reports them
  }
  if (!plan) return false;
  return emit_pool(l, *plan);
}

bool lower_max_pool(Lowering& l) { return lower_pool(l, true); }
bool lower_average_pool(Lowering& l) { return lower_pool(l, false); }

bool lower_global_pool(Lowering& l, bool is_max) {
  const Node& node = l.node();
  if (!pool_shapes_ok(l, false)) return false;
  const Shape& x_shape = l.input_value(0).shape;
  const Shape& y_shape = l.graph().values[node.outputs[0]].shape;
  PoolPlan plan;
  plan.algorithm = is_max ? dnnl::algorithm::pooling_max : dnnl::algorithm::pooling_avg_exclude_padding;
  for (size_t i = 2; i < x_shape.size(); ++i) {
    if (y_shape[i] != 1) return false;
    plan.strides.push_back(1);
    plan.kernel.push_back(x_shape[i]);
    plan.dilation.push_back(0);
    plan.pad_l.push_back(0);
    plan.pad_r.push_back(0);
  }
  return emit_pool(l, plan);
}

bool lower_global_max_pool(Lowering& l) { return lower_global_pool(l, true); }
bool lower_global_average_pool(Lowering& l) { return lower_global_pool(l, false); }

constexpr const char* kPool = "oneDNN pooling";

}  // namespace

HETSCHED_CPU_LOWERING("MaxPool", lower_max_pool,
                      "oneDNN pooling; 2-D float32 data in the channels-last layout in host code",
                      "dtypes other than float32, int8, uint8; rank outside 3-5; the Indices output; a window "
                      "holding padding only");
HETSCHED_CPU_LOWERING("AveragePool", lower_average_pool, kPool,
                      "not float32; rank outside 3-5; a window holding padding only; count_include_pad 1 with a "
                      "ceil_mode window past the end padding");
HETSCHED_CPU_LOWERING("GlobalMaxPool", lower_global_max_pool, kPool, "not float32; rank outside 3-5");
HETSCHED_CPU_LOWERING("GlobalAveragePool", lower_global_average_pool, kPool, "not float32; rank outside 3-5");

}  // namespace hetsched::cpu
