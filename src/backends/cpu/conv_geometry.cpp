#include "backends/cpu/conv_geometry.h"

#include "kernels/reference/nn_common.h"

namespace hetsched::cpu {

namespace nn = kernels::nn;

std::optional<ConvGeometry> conv_geometry(const Node& node, const Shape& x, const Shape& w) {
  size_t n_spatial = x.size() - 2;
  if (x.size() < 3 || n_spatial > 3 || w.size() != x.size()) return std::nullopt;
  int64_t group = node.attr_int("group", 1);
  int64_t out_channels = w[0];
  if (group < 1 || out_channels % group != 0) return std::nullopt;
  nn::AutoPad auto_pad = nn::read_auto_pad(node);
  auto strides = nn::read_spatial_ints(node, "strides", n_spatial, 1, 1);
  auto dilations = nn::read_spatial_ints(node, "dilations", n_spatial, 1, 1);
  auto pads = nn::read_pads(node, n_spatial);
  ConvGeometry geo;
  for (size_t i = 0; i < n_spatial; ++i) {
    auto axis = nn::axis_geometry(node, auto_pad, x[2 + i], w[2 + i], strides[i], dilations[i], pads[i],
                                  pads[n_spatial + i], false);
    geo.strides.push_back(strides[i]);
    geo.dilations.push_back(dilations[i] - 1);  // oneDNN counts the gaps
    geo.pad_l.push_back(axis.pad_begin);
    geo.pad_r.push_back(axis.pad_end);
  }
  // Weights: ONNX [O, I/g, k...] is goi[k] in memory with g split off O.
  geo.weights.assign(w.begin(), w.end());
  if (group > 1) {
    geo.weights[0] = out_channels / group;
    geo.weights.insert(geo.weights.begin(), group);
  }
  return geo;
}

}  // namespace hetsched::cpu
