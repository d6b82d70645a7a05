// RoiAlign — reference kernel.
//
// For each region of interest (rois [n, 4] as x1, y1, x2, y2 in the input's
// coordinates times spatial_scale; batch_indices [n]) an output_height x
// output_width grid of bins over X [N, C, H, W], each the average (mode
// avg) or the maximum (mode max) of sampling_ratio^2 bilinear samples
// (sampling_ratio 0: ceil(bin size) per axis). coordinate_transformation_mode
// half_pixel (opset 16's default) shifts the region by -0.5 pixel;
// output_half_pixel (opset 10's only behaviour, torchvision's
// aligned=False) does not and makes regions at least 1 x 1. Samples more
// than one pixel outside the input count as 0; max mode takes the largest
// weighted corner of each sample, as ONNX Runtime does.
// Supported: float32 and float64.
// Refused: other dtypes.
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "kernels/reference/common.h"

namespace hetsched::kernels {
namespace {

void check_roi_align(const Node& node, const Graph& graph) {
  check_input_dtypes(node, graph, kFloatTypes, {0, 1});
  check_input_dtypes(node, graph, {DType::kInt64, DType::kInt32}, {2});
  std::string mode = node.attr_string("mode", "avg");
  if (mode != "avg" && mode != "max") throw_invalid(node, fmt::format("mode '{}': expected avg or max", mode));
  std::string transform = node.attr_string("coordinate_transformation_mode", "half_pixel");
  if (transform != "half_pixel" && transform != "output_half_pixel")
    throw_invalid(node, fmt::format("coordinate_transformation_mode '{}': expected half_pixel or output_half_pixel",
                                    transform));
}

// One sampling point of a bin: its four neighbours' offsets in a plane and
// their bilinear weights; `inside` false where it falls outside the map
// (it counts, contributing 0).
struct Sample {
  int64_t at[4] = {0, 0, 0, 0};
  double weight[4] = {0, 0, 0, 0};
  bool inside = false;
};

// The sampling points of one region, bin by bin (out_h x out_w bins of
// grid_h x grid_w points): the same for every channel, so computed once per
// region rather than per channel (as ONNX Runtime does).
std::vector<Sample> region_samples(double x1, double y1, double bin_h, double bin_w, int64_t out_h, int64_t out_w,
                                   int64_t grid_h, int64_t grid_w, int64_t H, int64_t W) {
  std::vector<Sample> samples;
  samples.reserve(static_cast<size_t>(out_h * out_w * grid_h * grid_w));
  for (int64_t ph = 0; ph < out_h; ++ph)
    for (int64_t pw = 0; pw < out_w; ++pw)
      for (int64_t iy = 0; iy < grid_h; ++iy)
        for (int64_t ix = 0; ix < grid_w; ++ix) {
          double sy = y1 + ph * bin_h + (iy + 0.5) * bin_h / static_cast<double>(grid_h);
          double sx = x1 + pw * bin_w + (ix + 0.5) * bin_w / static_cast<double>(grid_w);
          Sample s;
          if (!(sy < -1.0 || sy > static_cast<double>(H) || sx < -1.0 || sx > static_cast<double>(W))) {
            sy = std::max(sy, 0.0);
            sx = std::max(sx, 0.0);
            int64_t y_lo = static_cast<int64_t>(sy), x_lo = static_cast<int64_t>(sx), y_hi, x_hi;
            if (y_lo >= H - 1) y_hi = y_lo = H - 1, sy = static_cast<double>(y_lo);
            else y_hi = y_lo + 1;
            if (x_lo >= W - 1) x_hi = x_lo = W - 1, sx = static_cast<double>(x_lo);
            else x_hi = x_lo + 1;
            const double ly = sy - y_lo, lx = sx - x_lo, hy = 1 - ly, hx = 1 - lx;
            s = {{y_lo * W + x_lo, y_lo * W + x_hi, y_hi * W + x_lo, y_hi * W + x_hi},
                 {hy * hx, hy * lx, ly * hx, ly * lx},
                 true};
          }
          samples.push_back(s);
        }
  return samples;
}

template <typename T>
std::vector<double> roi_align(const Node& node, const T* x, const std::vector<double>& rois,
                              const std::vector<int64_t>& batches, int64_t N, int64_t C, int64_t H, int64_t W) {
  const int64_t n_rois = static_cast<int64_t>(batches.size());
  const int64_t out_h = node.attr_int("output_height", 1), out_w = node.attr_int("output_width", 1);
  const int64_t sampling = node.attr_int("sampling_ratio", 0);
  const double scale = node.attr_float("spatial_scale", 1.0f);
  const bool max_mode = node.attr_string("mode", "avg") == "max";
  const bool half_pixel =
      node.opset >= 16 && node.attr_string("coordinate_transformation_mode", "half_pixel") == "half_pixel";
  std::vector<double> y(static_cast<size_t>(n_rois * C * out_h * out_w));
  for (int64_t r = 0; r < n_rois; ++r) {
    const int64_t n = batches[static_cast<size_t>(r)];
    if (n < 0 || n >= N) throw_runtime(node, fmt::format("batch index {} of roi {}: expected 0..{}", n, r, N - 1));
    const double offset = half_pixel ? 0.5 : 0.0;
    const double x1 = rois[r * 4] * scale - offset, y1 = rois[r * 4 + 1] * scale - offset;
    double roi_w = rois[r * 4 + 2] * scale - offset - x1, roi_h = rois[r * 4 + 3] * scale - offset - y1;
    if (!half_pixel) {
      roi_w = std::max(roi_w, 1.0);
      roi_h = std::max(roi_h, 1.0);
    }
    const double bin_h = roi_h / static_cast<double>(out_h), bin_w = roi_w / static_cast<double>(out_w);
    const int64_t grid_h = sampling > 0 ? sampling : static_cast<int64_t>(std::ceil(roi_h / static_cast<double>(out_h)));
    const int64_t grid_w = sampling > 0 ? sampling : static_cast<int64_t>(std::ceil(roi_w / static_cast<double>(out_w)));
    const int64_t per_bin = grid_h * grid_w;
    const double count = static_cast<double>(std::max<int64_t>(per_bin, 1));
    const std::vector<Sample> samples = region_samples(x1, y1, bin_h, bin_w, out_h, out_w, grid_h, grid_w, H, W);
    for (int64_t c = 0; c < C; ++c) {
      const T* plane = x + (n * C + c) * H * W;
      double* out = &y[static_cast<size_t>((r * C + c) * out_h * out_w)];
      for (int64_t bin = 0; bin < out_h * out_w; ++bin) {
        double sum = 0, best = -std::numeric_limits<double>::infinity();
        for (int64_t k = 0; k < per_bin; ++k) {
          const Sample& s = samples[static_cast<size_t>(bin * per_bin + k)];
          double t[4] = {0, 0, 0, 0};
          if (s.inside)
            for (int i = 0; i < 4; ++i) t[i] = s.weight[i] * static_cast<double>(plane[s.at[i]]);
          sum += t[0] + t[1] + t[2] + t[3];
          best = std::max({best, t[0], t[1], t[2], t[3]});
        }
        out[bin] = max_mode ? (per_bin > 0 ? best : 0.0) : sum / count;
      }
    }
  }
  return y;
}

std::vector<Tensor> compute_roi_align(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& X = required_input(node, inputs, 0);
  const Tensor& rois_t = required_input(node, inputs, 1);
  const Tensor& batch_t = required_input(node, inputs, 2);
  if (X.rank() != 4) throw_runtime(node, fmt::format("X of shape {}: expected [N, C, H, W]", shape_to_string(X.shape())));
  const int64_t n_rois = rois_t.rank() == 2 ? rois_t.dim(0) : -1;
  if (n_rois < 0 || rois_t.dim(1) != 4 || batch_t.shape() != Shape{n_rois})
    throw_runtime(node, fmt::format("rois {} and batch_indices {}: expected [n, 4] and [n]",
                                    shape_to_string(rois_t.shape()), shape_to_string(batch_t.shape())));
  const std::vector<double> rois = rois_t.to_double_vector();
  const std::vector<int64_t> batches = batch_t.to_int64_vector();
  const int64_t N = X.dim(0), C = X.dim(1), H = X.dim(2), W = X.dim(3);
  std::vector<double> y = X.dtype() == DType::kFloat32
                              ? roi_align(node, X.data<float>(), rois, batches, N, C, H, W)
                              : roi_align(node, X.data<double>(), rois, batches, N, C, H, W);
  return {float_tensor_of(node, X.dtype(), {n_rois, C, node.attr_int("output_height", 1),
                                            node.attr_int("output_width", 1)}, y)};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("RoiAlign", check_roi_align, compute_roi_align);

}  // namespace hetsched::kernels
