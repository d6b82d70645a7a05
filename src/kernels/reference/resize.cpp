// Resize and Upsample.
//
// Resize-10 and Upsample-7/9 take only scales: coordinates map back
// asymmetrically (x / scale), nearest takes floor when upsampling and ceil when
// downsampling (what onnxruntime does; the spec leaves it open), linear
// clamps to the edge.
// Resize-11+ takes roi / scales / sizes inputs (and `axes`,
// `keep_aspect_ratio_policy` from 18). Modes nearest (all four nearest_modes),
// linear (n-linear) and cubic (n-cubic: four taps per axis with
// cubic_coeff_a, edge values repeated beyond the input, or with
// exclude_outside those taps dropped and the rest renormalised), coordinate
// transforms half_pixel,
// pytorch_half_pixel, align_corners, asymmetric, tf_half_pixel_for_nn and
// tf_crop_and_resize. The arithmetic follows the ONNX reference
// implementation: coordinates in double, output = sum of weights * inputs.
// Refused at load: antialias, exclude_outside with nearest, linear and cubic
// on non-float data.
#include <array>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "kernels/reference/common.h"

namespace hetsched::kernels {
namespace {

enum class Transform { kHalfPixel, kPytorchHalfPixel, kAlignCorners, kAsymmetric, kTfHalfPixelForNn, kTfCropAndResize };
enum class Rounding { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil, kSimple };

bool parse_transform(const std::string& s, Transform* t) {
  if (s == "half_pixel") *t = Transform::kHalfPixel;
  else if (s == "pytorch_half_pixel") *t = Transform::kPytorchHalfPixel;
  else if (s == "align_corners") *t = Transform::kAlignCorners;
  else if (s == "asymmetric") *t = Transform::kAsymmetric;
  else if (s == "tf_half_pixel_for_nn") *t = Transform::kTfHalfPixelForNn;
  else if (s == "tf_crop_and_resize") *t = Transform::kTfCropAndResize;
  else return false;
  return true;
}

bool parse_rounding(const std::string& s, Rounding* r) {
  if (s == "round_prefer_floor") *r = Rounding::kRoundPreferFloor;
  else if (s == "round_prefer_ceil") *r = Rounding::kRoundPreferCeil;
  else if (s == "floor") *r = Rounding::kFloor;
  else if (s == "ceil") *r = Rounding::kCeil;
  else return false;
  return true;
}

// Everything compute needs, resolved from the node's attributes and opset.
enum class Mode { kNearest, kLinear, kCubic };

struct Params {
  Mode mode = Mode::kNearest;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  Transform transform = Transform::kAsymmetric;
  Rounding rounding = Rounding::kSimple;
  double extrapolation = 0.0;
};

Params params_of(const Node& node, bool legacy) {
  Params p;
  std::string mode = node.attr_string("mode", "nearest");
  if (mode == "linear" || mode == "bilinear")
    p.mode = Mode::kLinear;
  else if (mode == "cubic" && !legacy)
    p.mode = Mode::kCubic;
  else if (mode != "nearest")
    throw_unsupported(node, fmt::format("mode '{}' is not supported (nearest, linear{})", mode, legacy ? "" : ", cubic"));
  if (legacy) return p;
  p.cubic_a = node.attr_float("cubic_coeff_a", -0.75f);
  p.exclude_outside = node.attr_int("exclude_outside", 0) != 0;
  std::string t = node.attr_string("coordinate_transformation_mode", "half_pixel");
  if (!parse_transform(t, &p.transform))
    throw_unsupported(node, fmt::format("coordinate_transformation_mode '{}' is not supported", t));
  std::string r = node.attr_string("nearest_mode", "round_prefer_floor");
  if (!parse_rounding(r, &p.rounding)) throw_unsupported(node, fmt::format("nearest_mode '{}' is not supported", r));
  p.extrapolation = node.attr_float("extrapolation_value", 0.0f);
  return p;
}

bool is_legacy_resize(const Node& node) { return node.op_type == "Resize" && node.opset < 11; }

void check_common(const Node& node, const Graph& graph, const Params& p) {
  if (node.input(0) == kNoValue) throw_invalid(node, "input 'X' is missing");
  if (p.mode != Mode::kNearest)
    check_input_dtypes(node, graph, kFloatTypes, {0});
  else
    check_input_dtypes(node, graph, {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kInt8, DType::kUInt8,
                                     DType::kInt16, DType::kInt32, DType::kInt64, DType::kBool},
                       {0});
}

void check_resize(const Node& node, const Graph& graph) {
  bool legacy = is_legacy_resize(node);
  Params p = params_of(node, legacy);
  check_common(node, graph, p);
  if (legacy) {
    if (node.input(1) == kNoValue) throw_invalid(node, "input 'scales' is missing");
    check_input_dtypes(node, graph, {DType::kFloat32}, {1});
    return;
  }
  if (node.attr_int("antialias", 0) != 0) throw_unsupported(node, "antialias=1 is not supported");
  std::string policy = node.attr_string("keep_aspect_ratio_policy", "stretch");
  if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
    throw_unsupported(node, fmt::format("keep_aspect_ratio_policy '{}' is not supported", policy));
  if (p.mode == Mode::kNearest && p.exclude_outside)
    throw_unsupported(node, "exclude_outside=1 with mode 'nearest' is not supported");
  if (node.input(2) == kNoValue && node.input(3) == kNoValue) throw_invalid(node, "needs 'scales' or 'sizes'");
  check_input_dtypes(node, graph, {DType::kFloat32, DType::kFloat64}, {1});
  check_input_dtypes(node, graph, {DType::kFloat32}, {2});
  check_input_dtypes(node, graph, {DType::kInt64}, {3});
  if (p.extrapolation != 0.0 && p.transform == Transform::kTfCropAndResize && p.mode == Mode::kNearest) {
    ValueId x = node.input(0);
    if (graph.values[x].dtype == DType::kFloat16)
      throw_unsupported(node, "a non-zero extrapolation_value for float16 data is not supported");
  }
}

void check_upsample(const Node& node, const Graph& graph) {
  Params p = params_of(node, true);
  check_common(node, graph, p);
  if (!node.has_attr("scales") && node.input(1) == kNoValue) throw_invalid(node, "needs 'scales'");
  check_input_dtypes(node, graph, {DType::kFloat32}, {1});
}

// Per output coordinate of one axis: the input coordinates it reads and their
// weights (one for nearest, two for linear, four for cubic), or
// `extrapolate` (tf_crop_and_resize outside the input).
struct Tap {
  int n = 1;
  std::array<int64_t, 4> index{};
  std::array<double, 4> weight{1.0, 0.0, 0.0, 0.0};
  bool extrapolate = false;
};

struct Axis {
  int64_t in = 1, out = 1;
  double scale = 1.0;
  double length_resized = 1.0;  // output length as the transforms see it
  double roi_start = 0.0, roi_end = 1.0;
};

double original_coordinate(const Params& p, const Axis& a, double x) {
  switch (p.transform) {
    case Transform::kHalfPixel: return (x + 0.5) / a.scale - 0.5;
    case Transform::kPytorchHalfPixel: return a.out > 1 ? (x + 0.5) / a.scale - 0.5 : 0.0;
    case Transform::kAlignCorners:
      return a.length_resized == 1.0 ? 0.0 : x * static_cast<double>(a.in - 1) / (a.length_resized - 1.0);
    case Transform::kAsymmetric: return x / a.scale;
    case Transform::kTfHalfPixelForNn: return (x + 0.5) / a.scale;
    case Transform::kTfCropAndResize: {
      double span = static_cast<double>(a.in - 1);
      if (a.length_resized == 1.0) return 0.5 * (a.roi_start + a.roi_end) * span;
      return a.roi_start * span + x * (a.roi_end - a.roi_start) * span / (a.length_resized - 1.0);
    }
  }
  return 0.0;
}

// The four inputs nearest to x (ties to the lower index) and their cubic
// convolution weights for coefficient A, as the ONNX reference picks them:
// from base - 1 to base + 2 with base = ceil(x) - 1 and ratio = x - base in
// (0, 1]. Beyond the input the edge value repeats; with exclude_outside
// those taps get no weight and the others are renormalised.
void cubic_taps(const Params& p, const Axis& a, double x, Tap* t) {
  double base = std::ceil(x) - 1.0;
  double r = x - base;
  double A = p.cubic_a;
  auto far = [&](double d) { return ((A * d - 5 * A) * d + 8 * A) * d - 4 * A; };  // 1 <= d <= 2
  auto near = [&](double d) { return ((A + 2) * d - (A + 3)) * d * d + 1; };        // 0 <= d <= 1
  std::array<double, 4> w{far(r + 1), near(r), near(1 - r), far(2 - r)};
  double sum = 0;
  t->n = 4;
  for (int k = 0; k < 4; ++k) {
    double i = base - 1 + k;
    bool outside = i < 0 || i > static_cast<double>(a.in - 1);
    if (outside && p.exclude_outside) w[static_cast<size_t>(k)] = 0;
    sum += w[static_cast<size_t>(k)];
    t->index[static_cast<size_t>(k)] =
        static_cast<int64_t>(std::min(std::max(i, 0.0), static_cast<double>(a.in - 1)));
  }
  for (size_t k = 0; k < 4; ++k) t->weight[k] = p.exclude_outside && sum != 0 ? w[k] / sum : w[k];
}

std::vector<Tap> taps_for(const Params& p, const Axis& a) {
  std::vector<Tap> taps(static_cast<size_t>(a.out));
  double last = static_cast<double>(a.in - 1);
  for (int64_t o = 0; o < a.out; ++o) {
    Tap& t = taps[static_cast<size_t>(o)];
    double x = original_coordinate(p, a, static_cast<double>(o));
    if (p.transform == Transform::kTfCropAndResize && (x < 0.0 || x > last)) {
      t.extrapolate = true;
      continue;
    }
    if (p.mode == Mode::kLinear) {
      double xc = std::min(std::max(x, 0.0), last);
      double f = std::floor(xc);
      t.index[0] = static_cast<int64_t>(f);
      t.index[1] = std::min(t.index[0] + 1, a.in - 1);
      t.weight[1] = xc - f;
      t.weight[0] = 1.0 - t.weight[1];
      t.n = t.index[1] == t.index[0] || t.weight[1] == 0.0 ? 1 : 2;
      if (t.n == 1) t.weight[0] = 1.0;
      continue;
    }
    if (p.mode == Mode::kCubic) {
      cubic_taps(p, a, x, &t);
      continue;
    }
    double f = std::floor(x);
    double ratio = x - f;
    double pick = f;
    if (ratio != 0.0) {
      switch (p.rounding) {
        case Rounding::kRoundPreferFloor: pick = ratio <= 0.5 ? f : f + 1; break;
        case Rounding::kRoundPreferCeil: pick = ratio < 0.5 ? f : f + 1; break;
        case Rounding::kFloor: pick = f; break;
        case Rounding::kCeil: pick = f + 1; break;
        case Rounding::kSimple: pick = a.scale < 1.0 ? f + 1 : f; break;
      }
    }
    pick = std::min(std::max(pick, 0.0), last);
    t.index[0] = static_cast<int64_t>(pick);
  }
  return taps;
}

// One element of dtype `dtype` holding `v`, as raw bytes.
std::vector<std::byte> element_bytes(const Node& node, DType dtype, double v) {
  std::vector<std::byte> bytes(dtype_size(dtype));
  if (v == 0) return bytes;
  if (dtype == DType::kFloat16) throw_runtime(node, "a non-zero extrapolation_value for float16 is not supported");
  dispatch_all(node, dtype, [&](auto t) {
    using T = decltype(t);
    T value = static_cast<T>(v);
    std::memcpy(bytes.data(), &value, sizeof(T));
  });
  return bytes;
}

Tensor interpolate(const Node& node, const Params& p, const Tensor& x, const std::vector<Axis>& axes) {
  size_t rank = axes.size();
  Shape out_shape(rank);
  std::vector<std::vector<Tap>> taps(rank);
  for (size_t d = 0; d < rank; ++d) {
    out_shape[d] = axes[d].out;
    taps[d] = taps_for(p, axes[d]);
  }
  Tensor out(x.dtype(), out_shape);
  if (out.numel() == 0) return out;
  if (x.numel() == 0) throw_runtime(node, "cannot resize an empty input to a non-empty output");
  std::vector<int64_t> strides = strides_of(x.shape());
  std::vector<int64_t> coord(rank, 0);
  size_t es = dtype_size(x.dtype());

  if (p.mode == Mode::kNearest) {
    std::vector<std::byte> extra = element_bytes(node, x.dtype(), p.extrapolation);
    const auto* src = static_cast<const std::byte*>(x.raw());
    auto* dst = static_cast<std::byte*>(out.raw());
    for (int64_t k = 0; k < out.numel(); ++k, dst += es) {
      int64_t offset = 0;
      bool extrapolate = false;
      for (size_t d = 0; d < rank; ++d) {
        const Tap& t = taps[d][static_cast<size_t>(coord[d])];
        extrapolate |= t.extrapolate;
        offset += t.index[0] * strides[d];
      }
      std::memcpy(dst, extrapolate ? extra.data() : src + static_cast<size_t>(offset) * es, es);
      for (size_t d = rank; d-- > 0;) {
        if (++coord[d] < out_shape[d]) break;
        coord[d] = 0;
      }
    }
    return out;
  }

  dispatch_float(node, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* src = x.data<T>();
    T* dst = out.data<T>();
    std::vector<const Tap*> multi;  // axes with several taps at this coordinate
    std::vector<size_t> multi_axis;
    std::vector<int> pick;  // per axis of `multi`: which tap, odometer-style
    for (int64_t k = 0; k < out.numel(); ++k) {
      int64_t base = 0;
      double base_weight = 1.0;
      bool extrapolate = false;
      multi.clear();
      multi_axis.clear();
      for (size_t d = 0; d < rank; ++d) {
        const Tap& t = taps[d][static_cast<size_t>(coord[d])];
        extrapolate |= t.extrapolate;
        if (t.n > 1) {
          multi.push_back(&t);
          multi_axis.push_back(d);
        } else {
          base += t.index[0] * strides[d];
          base_weight *= t.weight[0];
        }
      }
      double acc = 0.0;
      if (extrapolate) {
        acc = p.extrapolation;
      } else {
        pick.assign(multi.size(), 0);
        while (true) {
          int64_t offset = base;
          double w = base_weight;
          for (size_t j = 0; j < multi.size(); ++j) {
            size_t tap = static_cast<size_t>(pick[j]);
            offset += multi[j]->index[tap] * strides[multi_axis[j]];
            w *= multi[j]->weight[tap];
          }
          acc += w * static_cast<double>(src[offset]);
          size_t j = 0;
          for (; j < multi.size(); ++j) {
            if (++pick[j] < multi[j]->n) break;
            pick[j] = 0;
          }
          if (j == multi.size()) break;
        }
      }
      dst[k] = static_cast<T>(acc);
      for (size_t d = rank; d-- > 0;) {
        if (++coord[d] < out_shape[d]) break;
        coord[d] = 0;
      }
    }
  });
  return out;
}

// Axes for scale-only resizing (Resize-10, Upsample): output = floor(in * scale).
std::vector<Axis> axes_from_scales(const Node& node, const Tensor& x, const std::vector<double>& scales,
                                   bool upsample_only) {
  if (static_cast<int64_t>(scales.size()) != x.rank())
    throw_runtime(node, fmt::format("{} scales for an input of rank {}", scales.size(), x.rank()));
  std::vector<Axis> axes(scales.size());
  for (size_t d = 0; d < scales.size(); ++d) {
    if (!(scales[d] > 0.0)) throw_runtime(node, fmt::format("scale {} must be positive", scales[d]));
    if (upsample_only && scales[d] < 1.0)
      throw_runtime(node, fmt::format("scale {} is below 1, which Upsample does not allow", scales[d]));
    Axis& a = axes[d];
    a.in = x.shape()[d];
    a.scale = scales[d];
    a.out = size_from_double(node, std::floor(static_cast<double>(a.in) * a.scale), "output size");
    a.length_resized = a.scale * static_cast<double>(a.in);
  }
  return axes;
}

std::vector<double> float_values(const Tensor& t) { return t.to_double_vector(); }

std::vector<Tensor> compute_resize(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = required_input(node, inputs, 0);
  bool legacy = is_legacy_resize(node);
  Params p = params_of(node, legacy);
  if (legacy)
    return {interpolate(node, p, x, axes_from_scales(node, x, float_values(required_input(node, inputs, 1)), false))};

  int64_t rank = x.rank();
  auto present = [&](size_t i) { return i < inputs.size() && inputs[i] != nullptr && inputs[i]->numel() > 0; };
  std::vector<int64_t> axis_list = node.attr_ints("axes");
  if (!node.has_attr("axes"))
    for (int64_t d = 0; d < rank; ++d) axis_list.push_back(d);
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t& a : axis_list) {
    if (a < -rank || a >= rank) throw_runtime(node, fmt::format("axis {} is out of range for rank {}", a, rank));
    if (a < 0) a += rank;
    if (seen[static_cast<size_t>(a)]) throw_runtime(node, fmt::format("axis {} is repeated", a));
    seen[static_cast<size_t>(a)] = true;
  }
  size_t n = axis_list.size();

  std::vector<Axis> axes(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) {
    Axis& a = axes[static_cast<size_t>(d)];
    a.in = a.out = x.dim(d);
    a.length_resized = static_cast<double>(a.in);
  }
  if (p.transform == Transform::kTfCropAndResize) {
    if (!present(1)) throw_runtime(node, "tf_crop_and_resize needs 'roi'");
    std::vector<double> roi = float_values(*inputs[1]);
    if (roi.size() != 2 * n) throw_runtime(node, fmt::format("roi has {} values, expected {}", roi.size(), 2 * n));
    for (size_t i = 0; i < n; ++i) {
      axes[static_cast<size_t>(axis_list[i])].roi_start = roi[i];
      axes[static_cast<size_t>(axis_list[i])].roi_end = roi[n + i];
    }
  }
  if (present(3)) {
    if (present(2)) throw_runtime(node, "only one of 'scales' and 'sizes' may be given");
    std::vector<int64_t> sizes = inputs[3]->to_int64_vector();
    if (sizes.size() != n) throw_runtime(node, fmt::format("sizes has {} values, expected {}", sizes.size(), n));
    std::string policy = node.attr_string("keep_aspect_ratio_policy", "stretch");
    double common = 0.0;
    for (size_t i = 0; i < n; ++i) {
      Axis& a = axes[static_cast<size_t>(axis_list[i])];
      if (sizes[i] < 0) throw_runtime(node, fmt::format("size {} is negative", sizes[i]));
      if (a.in == 0) throw_runtime(node, "cannot resize an empty axis");
      double s = static_cast<double>(sizes[i]) / static_cast<double>(a.in);
      if (i == 0 || (policy == "not_larger" ? s < common : s > common)) common = s;
      a.out = sizes[i];
      a.scale = s;
      a.length_resized = static_cast<double>(sizes[i]);
    }
    if (policy != "stretch") {
      for (size_t i = 0; i < n; ++i) {
        Axis& a = axes[static_cast<size_t>(axis_list[i])];
        a.scale = common;
        a.out = size_from_double(node, common * static_cast<double>(a.in) + 0.5, "output size");
        a.length_resized = common * static_cast<double>(a.in);
      }
    }
  } else if (present(2)) {
    std::vector<double> scales = float_values(*inputs[2]);
    if (scales.size() != n) throw_runtime(node, fmt::format("scales has {} values, expected {}", scales.size(), n));
    for (size_t i = 0; i < n; ++i) {
      Axis& a = axes[static_cast<size_t>(axis_list[i])];
      if (!(scales[i] > 0.0)) throw_runtime(node, fmt::format("scale {} must be positive", scales[i]));
      a.scale = scales[i];
      a.out = size_from_double(node, std::floor(scales[i] * static_cast<double>(a.in)), "output size");
      a.length_resized = scales[i] * static_cast<double>(a.in);
    }
  } else {
    throw_runtime(node, "needs non-empty 'scales' or 'sizes'");
  }
  return {interpolate(node, p, x, axes)};
}

std::vector<Tensor> compute_upsample(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = required_input(node, inputs, 0);
  Params p = params_of(node, true);
  std::vector<double> scales;
  if (node.has_attr("scales")) {
    for (float s : node.attr_floats("scales")) scales.push_back(s);
  } else {
    scales = float_values(required_input(node, inputs, 1));
  }
  return {interpolate(node, p, x, axes_from_scales(node, x, scales, true))};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("Resize", check_resize, compute_resize);
HETSCHED_REFERENCE_KERNEL("Upsample", check_upsample, compute_upsample);

}  // namespace hetsched::kernels
