// GridSample — reference kernel (opset 16: 4-D).
//
// Y[n, c, h, w] samples X[n, c] at grid[n, h, w] = (x, y), both normalized
// to [-1, 1]: with align_corners 1 they reach the centres of the corner
// pixels, with 0 (the default) their outer edges. mode bilinear (default),
// nearest (halves round to even) or bicubic (a = -0.75); padding_mode zeros
// (outside reads 0), border (coordinates and reads clamped to the image) or
// reflection (reflected at the edges, again and again). As ONNX Runtime
// computes it; arithmetic in double.
// Supported: float32 and float64.
// Refused: other dtypes.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "kernels/reference/common.h"

namespace hetsched::kernels {
namespace {

void check_grid_sample(const Node& node, const Graph& graph) {
  check_input_dtypes(node, graph, kFloatTypes);
  std::string mode = node.attr_string("mode", "bilinear");
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic")
    throw_invalid(node, fmt::format("mode '{}': expected bilinear, nearest or bicubic", mode));
  std::string padding = node.attr_string("padding_mode", "zeros");
  if (padding != "zeros" && padding != "border" && padding != "reflection")
    throw_invalid(node, fmt::format("padding_mode '{}': expected zeros, border or reflection", padding));
}

// x reflected into [low, high] as often as it takes.
double reflect(double x, double low, double high) {
  const double range = high - low;
  if (range <= 0) return low;
  if (x < low) {
    const double d = low - x;
    const auto n = static_cast<int64_t>(d / range);
    const double r = d - static_cast<double>(n) * range;
    return n % 2 == 0 ? low + r : high - r;
  }
  if (x > high) {
    const double d = x - high;
    const auto n = static_cast<int64_t>(d / range);
    const double r = d - static_cast<double>(n) * range;
    return n % 2 == 0 ? high - r : low + r;
  }
  return x;
}

void cubic_coefficients(double t, double c[4]) {
  constexpr double a = -0.75;
  c[0] = ((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a;
  c[1] = ((a + 2) * t - (a + 3)) * t * t + 1;
  c[2] = ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1;
  c[3] = 1 - c[0] - c[1] - c[2];
}

std::vector<Tensor> compute_grid_sample(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& X = required_input(node, inputs, 0);
  const Tensor& G = required_input(node, inputs, 1);
  if (X.rank() != 4 || G.rank() != 4 || G.dim(0) != X.dim(0) || G.dim(3) != 2)
    throw_runtime(node, fmt::format("X {} and grid {}: expected [N, C, H, W] and [N, H_out, W_out, 2]",
                                    shape_to_string(X.shape()), shape_to_string(G.shape())));
  const int64_t N = X.dim(0), C = X.dim(1), H = X.dim(2), W = X.dim(3), Ho = G.dim(1), Wo = G.dim(2);
  const std::string mode = node.attr_string("mode", "bilinear"), padding = node.attr_string("padding_mode", "zeros");
  const bool align = node.attr_int("align_corners", 0) != 0;
  const double x_min = align ? 0 : -0.5, y_min = x_min, x_max = align ? W - 1 : W - 0.5, y_max = align ? H - 1 : H - 0.5;
  auto denormalize = [&](double v, int64_t length) {
    return align ? (v + 1) / 2 * static_cast<double>(length - 1) : ((v + 1) * static_cast<double>(length) - 1) / 2;
  };
  const std::vector<double> x = X.to_double_vector(), g = G.to_double_vector();
  std::vector<double> y(static_cast<size_t>(N * C * Ho * Wo));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) {
      const double* plane = &x[static_cast<size_t>((n * C + c) * H * W)];
      auto pixel = [&](int64_t r, int64_t col) {
        if (padding == "zeros") return r >= 0 && r < H && col >= 0 && col < W ? plane[r * W + col] : 0.0;
        if (padding == "border") {
          r = std::clamp<int64_t>(r, 0, H - 1);
          col = std::clamp<int64_t>(col, 0, W - 1);
        } else {
          r = static_cast<int64_t>(reflect(static_cast<double>(r), y_min, y_max));
          col = static_cast<int64_t>(reflect(static_cast<double>(col), x_min, x_max));
        }
        return plane[r * W + col];
      };
      for (int64_t h = 0; h < Ho; ++h)
        for (int64_t w = 0; w < Wo; ++w) {
          const double* at = &g[static_cast<size_t>(((n * Ho + h) * Wo + w) * 2)];
          double sx = denormalize(at[0], W), sy = denormalize(at[1], H);
          if (mode == "nearest") {
            sx = std::nearbyint(sx);
            sy = std::nearbyint(sy);
          }
          if (sx < x_min || sx > x_max || sy < y_min || sy > y_max) {
            if (padding == "border") {
              sx = std::clamp(sx, 0.0, static_cast<double>(W - 1));
              sy = std::clamp(sy, 0.0, static_cast<double>(H - 1));
            } else if (padding == "reflection") {
              sx = reflect(sx, x_min, x_max);
              sy = reflect(sy, y_min, y_max);
            }
          }
          double v;
          if (mode == "nearest") {
            v = pixel(static_cast<int64_t>(sy), static_cast<int64_t>(sx));
          } else if (mode == "bilinear") {
            const auto x0 = static_cast<int64_t>(std::floor(sx)), y0 = static_cast<int64_t>(std::floor(sy));
            const double dx = sx - static_cast<double>(x0), dy = sy - static_cast<double>(y0);
            v = (1 - dy) * ((1 - dx) * pixel(y0, x0) + dx * pixel(y0, x0 + 1)) +
                dy * ((1 - dx) * pixel(y0 + 1, x0) + dx * pixel(y0 + 1, x0 + 1));
          } else {
            const auto x0 = static_cast<int64_t>(std::floor(sx)) - 1, y0 = static_cast<int64_t>(std::floor(sy)) - 1;
            double cx[4], cy[4];
            cubic_coefficients(sx - static_cast<double>(x0) - 1, cx);
            cubic_coefficients(sy - static_cast<double>(y0) - 1, cy);
            v = 0;
            for (int i = 0; i < 4; ++i)
              for (int j = 0; j < 4; ++j) v += cy[i] * cx[j] * pixel(y0 + i, x0 + j);
          }
          y[static_cast<size_t>(((n * C + c) * Ho + h) * Wo + w)] = v;
        }
    }
  return {float_tensor_of(node, X.dtype(), {N, C, Ho, Wo}, y)};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("GridSample", check_grid_sample, compute_grid_sample);

}  // namespace hetsched::kernels
