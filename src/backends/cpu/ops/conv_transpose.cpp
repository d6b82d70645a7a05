// ConvTranspose on oneDNN's deconvolution primitive: 1-D/2-D/3-D, groups,
// strides, dilations, pads, output_padding, output_shape and auto_pad (the
// reference kernel's geometry: output size and begin padding per axis; the
// end padding is what makes oneDNN's output that size, negative when
// output_padding adds rows no input reaches), float32, constant bias.
// ONNX weights [C_in, C_out/g, k...] are (g, i, o, k...); oneDNN's are
// (g, o, i, k...) with o the output channels. The primitive's preferred
// weights layout, described with W's own dims (permuted axes), is what W is
// reordered into: once when W is constant, at each run when not; a grouped
// layout that cannot be described so takes a constant W transposed here.
// Refused: other dtypes, a non-constant bias, a non-constant W in such a
// grouped layout, a negative begin padding (an output_shape larger than the
// full output on the SAME_LOWER side), geometries oneDNN rejects, empty
// tensors.
#include <optional>

#include "backends/cpu/lowering.h"
#include "kernels/reference/nn_common.h"

namespace hetsched::cpu {
namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;
using dims = dnnl::memory::dims;
namespace nn = kernels::nn;

int64_t floor_div2(int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }

bool lower_conv_transpose(Lowering& l) {
  const Graph& g = l.graph();
  const Node& node = l.node();
  if (!l.has_input(0) || !l.has_input(1) || (l.has_input(2) && !l.input_is_constant(2))) return false;
  if (node.outputs.empty() || node.outputs[0] == kNoValue) return false;
  const Value& x = l.input_value(0);
  const Value& w_value = l.input_value(1);
  const bool w_constant = w_value.is_constant();
  const Shape& w_shape = w_value.shape;
  const Value& y = g.values[node.outputs[0]];
  if (x.dtype != DType::kFloat32 || w_value.dtype != DType::kFloat32 || y.dtype != DType::kFloat32) return false;
  const size_t rank = x.shape.size();
  if (rank < 3 || rank > 5 || w_shape.size() != rank || y.shape.size() != rank) return false;
  if (shape_numel(x.shape) == 0 || shape_numel(y.shape) == 0 || shape_numel(w_shape) == 0) return false;
  const size_t ns = rank - 2;
  const int64_t group = node.attr_int("group", 1);
  const int64_t C = x.shape[1];
  if (group < 1 || w_shape[0] != C || C % group != 0) return false;
  const int64_t c_g = C / group, m_g = w_shape[1], M = m_g * group;
  if (y.shape[0] != x.shape[0] || y.shape[1] != M) return false;
  if (l.has_input(2)) {
    const Tensor& bias = l.constant(2);
    if (bias.dtype() != DType::kFloat32 || bias.rank() != 1 || bias.numel() != M) return false;
  }

  // The reference kernel's geometry.
  nn::AutoPad auto_pad = nn::read_auto_pad(node);
  auto strides = nn::read_spatial_ints(node, "strides", ns, 1, 1);
  auto dilations = nn::read_spatial_ints(node, "dilations", ns, 1, 1);
  auto pads = nn::read_pads(node, ns);
  auto output_padding = nn::read_spatial_ints(node, "output_padding", ns, 0, 0);
  std::vector<int64_t> output_shape;
  if (node.has_attr("output_shape")) {
    output_shape = node.attr_ints("output_shape");
    if (output_shape.size() == ns + 2) output_shape.erase(output_shape.begin(), output_shape.begin() + 2);
    if (output_shape.size() != ns) return false;
  }
  if (node.has_attr("kernel_shape")) {
    auto ks = node.attr_ints("kernel_shape");
    if (ks.size() != ns) return false;
    for (size_t i = 0; i < ns; ++i)
      if (ks[i] != w_shape[i + 2]) return false;
  }
  dims d_strides, d_dilations, pad_l, pad_r;
  for (size_t i = 0; i < ns; ++i) {
    int64_t in = x.shape[2 + i], k = w_shape[2 + i], s = strides[i], d = dilations[i];
    int64_t eff_k = (k - 1) * d + 1;
    int64_t full = s * (in - 1) + output_padding[i] + eff_k;
    int64_t out, begin;
    bool same = auto_pad == nn::AutoPad::kSameUpper || auto_pad == nn::AutoPad::kSameLower;
    if (!output_shape.empty() || same) {
      out = !output_shape.empty() ? output_shape[i] : in * s;
      int64_t total = full - out;
      begin = auto_pad == nn::AutoPad::kSameUpper ? floor_div2(total) : total - floor_div2(total);
    } else {
      bool valid = auto_pad == nn::AutoPad::kValid;
      int64_t pb = valid ? 0 : pads[i], pe = valid ? 0 : pads[ns + i];
      out = full - pb - pe;
      begin = pb;
    }
    if (out != y.shape[2 + i] || begin < 0) return false;
    // oneDNN: out = s * (in - 1) + eff_k - pad_l - pad_r.
    d_strides.push_back(s);
    d_dilations.push_back(d - 1);
    pad_l.push_back(begin);
    pad_r.push_back(s * (in - 1) + eff_k - out - begin);
  }

  // Weights (g, o, i, k...): o = output channels of the group.
  dims w_dims = {m_g, c_g};
  for (size_t i = 0; i < ns; ++i) w_dims.push_back(w_shape[2 + i]);
  if (group > 1) w_dims.insert(w_dims.begin(), group);
  auto any = [](const dims& d) { return dnnl::memory::desc(d, dt::f32, tag::any); };
  dnnl::memory::desc bias_md;
  if (l.has_input(2)) bias_md = dnnl::memory::desc({M}, dt::f32, tag::a);
  std::optional<dnnl::deconvolution_forward::primitive_desc> pd;
  try {
    dnnl::deconvolution_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::deconvolution_direct,
                                           any(dims(x.shape.begin(), x.shape.end())), any(w_dims), bias_md,
                                           any(dims(y.shape.begin(), y.shape.end())), d_strides, d_dilations, pad_l,
                                           pad_r);
    pd.emplace(desc, l.engine());
  } catch (const dnnl::error&) {
    return false;
  }

  // The primitive's weights layout described with W's own dims [g*I, O, k...]
  // (the same bytes): W is then reordered into it like any input — once when
  // constant, at each run when not. Without such a description (a grouped
  // layout that does not merge g and I), a constant W is transposed here.
  std::vector<int> perm(w_dims.size());
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int>(i);
  std::swap(perm[group > 1 ? 1 : 0], perm[group > 1 ? 2 : 1]);
  dnnl::memory::desc w_as_onnx = pd->weights_desc().permute_axes(perm, true);
  if (group > 1 && w_as_onnx != dnnl::memory::desc())
    w_as_onnx = w_as_onnx.reshape(dims(w_shape.begin(), w_shape.end()), true);
  const bool w_described = w_as_onnx != dnnl::memory::desc();
  if (!w_described && !w_constant) return false;

  // Everything is decided: emit.
  BufferId weights;
  if (w_described) {
    weights = l.input(1, w_as_onnx);
  } else {
    const Tensor& wc = l.constant(1);
    const int64_t kk = wc.numel() / (C * m_g);
    Tensor wt(DType::kFloat32, Shape(w_dims.begin(), w_dims.end()));
    const float* ws = wc.data<float>();
    float* wd = wt.data<float>();
    for (int64_t gi = 0; gi < group; ++gi)
      for (int64_t ci = 0; ci < c_g; ++ci)
        for (int64_t mo = 0; mo < m_g; ++mo) {
          const float* s = ws + ((gi * c_g + ci) * m_g + mo) * kk;
          float* d = wd + ((gi * m_g + mo) * c_g + ci) * kk;
          std::copy(s, s + kk, d);
        }
    weights = l.new_constant(std::move(wt), pd->weights_desc());
  }
  BufferId src = l.input(0, pd->src_desc());
  std::vector<std::pair<int, BufferId>> args = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}};
  if (l.has_input(2)) args.push_back({DNNL_ARG_BIAS, l.input(2, pd->bias_desc())});
  args.push_back({DNNL_ARG_DST, l.output(node.outputs[0], pd->dst_desc())});
  l.emit(dnnl::deconvolution_forward(*pd), std::move(args));
  return true;
}

}  // namespace

HETSCHED_CPU_LOWERING("ConvTranspose", lower_conv_transpose, "oneDNN deconvolution",
                      "not float32; bias computed at run time; rank outside 3-5; an output_shape needing negative "
                      "begin padding; geometries oneDNN rejects; empty tensors");

}  // namespace hetsched::cpu
