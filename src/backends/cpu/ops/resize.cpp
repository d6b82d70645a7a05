// Resize and Upsample on oneDNN's resampling primitive, only where it
// computes exactly what the reference kernel does.
//
// oneDNN maps output coordinate o of an axis (in -> out) to
// s = (o + 0.5) * in / out - 0.5 (in float): nearest takes roundf(s);
// linear interpolates at s clamped to [0, in - 1]. The lowering recomputes,
// per axis and output coordinate, the source index (nearest) or clamped
// source coordinate (linear) the reference kernel uses — its transform,
// rounding, scale — and the one oneDNN uses, and lowers only when they agree
// everywhere (coordinates to 1e-5 per input element): e.g. nearest with
// asymmetric + floor on integer factors, linear with half_pixel (and
// pytorch_half_pixel when the output has more than one element) when the
// scale is out / in. N and C must not be resized.
// Refused: anything else — other dtypes, cubic, tf_crop_and_resize,
// keep_aspect_ratio_policy other than stretch, non-constant scales or sizes,
// ranks other than 3 to 5.
#include <cmath>
#include <optional>

#include "backends/cpu/lowering.h"

namespace hetsched::cpu {
namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;
using dims = dnnl::memory::dims;

enum class Transform { kHalfPixel, kPytorchHalfPixel, kAlignCorners, kAsymmetric, kTfHalfPixelForNn };
enum class Rounding { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil, kSimple };

struct Params {
  bool linear = false;
  Transform transform = Transform::kAsymmetric;
  Rounding rounding = Rounding::kSimple;
};

// The reference kernel's reading of the node; nullopt for what is not lowered.
std::optional<Params> params_of(const Node& node, bool legacy) {
  Params p;
  std::string mode = node.attr_string("mode", "nearest");
  p.linear = mode == "linear" || mode == "bilinear";
  if (!p.linear && mode != "nearest") return std::nullopt;
  if (legacy) return p;
  std::string t = node.attr_string("coordinate_transformation_mode", "half_pixel");
  if (t == "half_pixel") p.transform = Transform::kHalfPixel;
  else if (t == "pytorch_half_pixel") p.transform = Transform::kPytorchHalfPixel;
  else if (t == "align_corners") p.transform = Transform::kAlignCorners;
  else if (t == "asymmetric") p.transform = Transform::kAsymmetric;
  else if (t == "tf_half_pixel_for_nn") p.transform = Transform::kTfHalfPixelForNn;
  else return std::nullopt;  // tf_crop_and_resize (extrapolation), unknown
  std::string r = node.attr_string("nearest_mode", "round_prefer_floor");
  if (r == "round_prefer_floor") p.rounding = Rounding::kRoundPreferFloor;
  else if (r == "round_prefer_ceil") p.rounding = Rounding::kRoundPreferCeil;
  else if (r == "floor") p.rounding = Rounding::kFloor;
  else if (r == "ceil") p.rounding = Rounding::kCeil;
  else return std::nullopt;
  return p;
}

struct Axis {
  int64_t in = 1, out = 1;
  double scale = 1.0;
  double length_resized = 1.0;
};

// As the reference kernel computes it (resize.cpp), in double.
double ref_coordinate(const Params& p, const Axis& a, double x) {
  switch (p.transform) {
    case Transform::kHalfPixel: return (x + 0.5) / a.scale - 0.5;
    case Transform::kPytorchHalfPixel: return a.out > 1 ? (x + 0.5) / a.scale - 0.5 : 0.0;
    case Transform::kAlignCorners:
      return a.length_resized == 1.0 ? 0.0 : x * static_cast<double>(a.in - 1) / (a.length_resized - 1.0);
    case Transform::kAsymmetric: return x / a.scale;
    case Transform::kTfHalfPixelForNn: return (x + 0.5) / a.scale;
  }
  return 0.0;
}

int64_t ref_nearest(const Params& p, const Axis& a, int64_t o) {
  double x = ref_coordinate(p, a, static_cast<double>(o));
  double f = std::floor(x), ratio = x - f, pick = f;
  if (ratio != 0.0) {
    switch (p.rounding) {
      case Rounding::kRoundPreferFloor: pick = ratio <= 0.5 ? f : f + 1; break;
      case Rounding::kRoundPreferCeil: pick = ratio < 0.5 ? f : f + 1; break;
      case Rounding::kFloor: pick = f; break;
      case Rounding::kCeil: pick = f + 1; break;
      case Rounding::kSimple: pick = a.scale < 1.0 ? f + 1 : f; break;
    }
  }
  return static_cast<int64_t>(std::min(std::max(pick, 0.0), static_cast<double>(a.in - 1)));
}

double ref_linear(const Params& p, const Axis& a, int64_t o) {
  double x = ref_coordinate(p, a, static_cast<double>(o));
  return std::min(std::max(x, 0.0), static_cast<double>(a.in - 1));
}

// oneDNN's resampling_utils (float, as it computes them).
float dnnl_map(int64_t o, int64_t out, int64_t in) {
  return ((static_cast<float>(o) + 0.5f) * static_cast<float>(in) / static_cast<float>(out)) - 0.5f;
}

bool same_mapping(const Params& p, const Axis& a) {
  for (int64_t o = 0; o < a.out; ++o) {
    float s = dnnl_map(o, a.out, a.in);
    if (p.linear) {
      double sc = std::min(std::max(static_cast<double>(s), 0.0), static_cast<double>(a.in - 1));
      if (std::fabs(sc - ref_linear(p, a, o)) > 1e-5 * std::max<double>(1.0, static_cast<double>(a.in))) return false;
    } else if (static_cast<int64_t>(std::roundf(s)) != ref_nearest(p, a, o)) {
      return false;
    }
  }
  return true;
}

// Identity on an axis: out == in and every output coordinate reads its own.
bool identity_mapping(const Params& p, const Axis& a) {
  if (a.in != a.out) return false;
  for (int64_t o = 0; o < a.out; ++o) {
    if (p.linear ? std::fabs(ref_linear(p, a, o) - static_cast<double>(o)) > 1e-9 : ref_nearest(p, a, o) != o)
      return false;
  }
  return true;
}

std::optional<std::vector<double>> constant_doubles(Lowering& l, size_t i) {
  if (!l.has_input(i)) return std::vector<double>{};
  if (!l.input_is_constant(i)) return std::nullopt;
  return l.constant(i).to_double_vector();
}

bool lower_resize(Lowering& l) {
  const Node& node = l.node();
  if (!l.has_input(0) || node.outputs.size() != 1 || node.outputs[0] == kNoValue) return false;
  const Value& x = l.input_value(0);
  const Value& y = l.graph().values[node.outputs[0]];
  if (x.dtype != DType::kFloat32 || y.dtype != DType::kFloat32) return false;
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  if (rank < 3 || rank > 5 || y.shape.size() != x.shape.size()) return false;
  if (shape_numel(x.shape) == 0 || shape_numel(y.shape) == 0) return false;
  const bool legacy = node.op_type == "Upsample" || node.opset < 11;
  auto params = params_of(node, legacy);
  if (!params) return false;
  const Params& p = *params;

  std::vector<Axis> axes(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) {
    Axis& a = axes[static_cast<size_t>(d)];
    a.in = x.shape[static_cast<size_t>(d)];
    a.out = y.shape[static_cast<size_t>(d)];
    a.length_resized = static_cast<double>(a.in);
  }
  if (legacy) {
    // Scales only (attribute for Upsample-7, input 1 otherwise); out = floor(in * scale).
    std::vector<double> scales;
    if (node.op_type == "Upsample" && node.has_attr("scales")) {
      for (float s : node.attr_floats("scales")) scales.push_back(s);
    } else {
      auto s = constant_doubles(l, 1);
      if (!s) return false;
      scales = *s;
    }
    if (static_cast<int64_t>(scales.size()) != rank) return false;
    for (size_t d = 0; d < axes.size(); ++d) {
      if (!(scales[d] > 0.0) || (node.op_type == "Upsample" && scales[d] < 1.0)) return false;
      // Compared in double: a scale from the file may put the product past int64.
      if (static_cast<double>(axes[d].out) != std::floor(static_cast<double>(axes[d].in) * scales[d])) return false;
      axes[d].scale = scales[d];
      axes[d].length_resized = scales[d] * static_cast<double>(axes[d].in);
    }
  } else {
    if (node.attr_int("antialias", 0) != 0) return false;
    if (node.attr_string("keep_aspect_ratio_policy", "stretch") != "stretch") return false;
    std::vector<int64_t> axis_list = node.attr_ints("axes");
    if (!node.has_attr("axes"))
      for (int64_t d = 0; d < rank; ++d) axis_list.push_back(d);
    std::vector<bool> seen(static_cast<size_t>(rank), false);
    for (int64_t& a : axis_list) {
      if (a < -rank || a >= rank) return false;
      if (a < 0) a += rank;
      if (seen[static_cast<size_t>(a)]) return false;
      seen[static_cast<size_t>(a)] = true;
    }
    auto scales = constant_doubles(l, 2);
    auto sizes = constant_doubles(l, 3);
    if (!scales || !sizes) return false;
    if (!sizes->empty()) {
      if (!scales->empty() || sizes->size() != axis_list.size()) return false;
      for (size_t i = 0; i < axis_list.size(); ++i) {
        Axis& a = axes[static_cast<size_t>(axis_list[i])];
        if (a.out != static_cast<int64_t>((*sizes)[i])) return false;
        a.scale = (*sizes)[i] / static_cast<double>(a.in);
        a.length_resized = (*sizes)[i];
      }
    } else if (!scales->empty()) {
      if (scales->size() != axis_list.size()) return false;
      for (size_t i = 0; i < axis_list.size(); ++i) {
        Axis& a = axes[static_cast<size_t>(axis_list[i])];
        if (!((*scales)[i] > 0.0)) return false;
        if (static_cast<double>(a.out) != std::floor((*scales)[i] * static_cast<double>(a.in))) return false;
        a.scale = (*scales)[i];
        a.length_resized = (*scales)[i] * static_cast<double>(a.in);
      }
    } else {
      return false;
    }
  }
  // N and C untouched; every spatial axis as oneDNN maps it.
  for (size_t d = 0; d < axes.size(); ++d)
    if (d < 2 ? !identity_mapping(p, axes[d]) : !same_mapping(p, axes[d])) return false;

  std::optional<dnnl::resampling_forward::primitive_desc> pd;
  dnnl::memory::desc src_md = l.input_desc(0);
  try {
    dnnl::memory::desc dst_md(dims(y.shape.begin(), y.shape.end()), dt::f32, tag::any);
    dnnl::resampling_forward::desc desc(
        dnnl::prop_kind::forward_inference,
        p.linear ? dnnl::algorithm::resampling_linear : dnnl::algorithm::resampling_nearest, src_md, dst_md);
    pd.emplace(desc, l.engine());
  } catch (const dnnl::error&) {
    return false;
  }
  BufferId src = l.input(0, src_md);
  BufferId dst = l.output(node.outputs[0], pd->dst_desc());
  l.emit(dnnl::resampling_forward(*pd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
  return true;
}

constexpr const char* kResizeReference =
    "not float32; rank outside 3-5; cubic; tf_crop_and_resize; antialias; keep_aspect_ratio_policy other than "
    "stretch; scales or sizes computed at run time; N or C resized; any other case where oneDNN samples other "
    "coordinates than the reference kernel (they agree e.g. for nearest with asymmetric + floor on integer "
    "factors, linear with half_pixel)";

}  // namespace

HETSCHED_CPU_LOWERING("Resize", lower_resize, "oneDNN resampling", kResizeReference);
HETSCHED_CPU_LOWERING("Upsample", lower_resize, "oneDNN resampling", kResizeReference);

}  // namespace hetsched::cpu
