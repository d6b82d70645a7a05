// GRU — reference kernel.
//
// Gates in ONNX's order z, r, h (rows of W, R and the biases):
//   z = f(clip(W_z x + R_z H + Wb_z + Rb_z))
//   r = f(clip(W_r x + R_r H + Wb_r + Rb_r))
//   h~ = g(clip(W_h x + R_h (r . H) + Rb_h + Wb_h))        linear_before_reset 0
//   h~ = g(clip(W_h x + r . (R_h H + Rb_h) + Wb_h))        linear_before_reset 1
//   H' = (1 - z) . h~ + z . H
// f, g by default Sigmoid, Tanh; directions, sequence_lens, initial_h,
// layout 0 or 1 (rnn_common.h).
// Supported: float32 and float64.
// Refused: other dtypes, unknown activations.
#include "kernels/reference/rnn_common.h"

namespace hetsched::kernels {
namespace {

const std::vector<std::string> kDefaults = {"Sigmoid", "Tanh"};

void check_gru(const Node& node, const Graph& graph) { rnn::check(node, graph, kDefaults); }

std::vector<Tensor> compute_gru(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& X = required_input(node, inputs, 0);
  const rnn::Dims d = rnn::dims(node, X, required_input(node, inputs, 1), required_input(node, inputs, 2), 3);
  const rnn::Weights w = rnn::weights(node, inputs, d, 3);
  const bool linear_before_reset = node.attr_int("linear_before_reset", 0) != 0;
  const auto act = rnn::activations(node, kDefaults);
  const auto clip = rnn::clip(node);
  const int64_t H = d.hidden;
  std::vector<double> wx(static_cast<size_t>(3 * H)), rh(static_cast<size_t>(3 * H)), reset_h(static_cast<size_t>(H));
  return rnn::walk(node, inputs, d, 1, [&](int64_t dir, const double* x, std::vector<double>& h, std::vector<double>&) {
    for (int64_t row = 0; row < 3 * H; ++row) {
      wx[row] = w.bias(dir, 0, row);
      rh[row] = w.bias(dir, 1, row);
    }
    rnn::add_product(w.w(d, dir), 0, 3 * H, d.input, x, wx.data());
    rnn::add_product(w.r(d, dir), 0, 2 * H, H, h.data(), rh.data());  // z and r
    const auto& f = act[dir][0];
    const auto& g = act[dir][1];
    std::vector<double> z(static_cast<size_t>(H)), r(static_cast<size_t>(H));
    for (int64_t j = 0; j < H; ++j) {
      z[j] = f(clip(wx[j] + rh[j]));
      r[j] = f(clip(wx[H + j] + rh[H + j]));
    }
    if (linear_before_reset) {
      rnn::add_product(w.r(d, dir), 2 * H, H, H, h.data(), rh.data() + 2 * H);
      for (int64_t j = 0; j < H; ++j) reset_h[j] = r[j] * rh[2 * H + j];
    } else {
      std::vector<double> rh_prev(static_cast<size_t>(H));
      for (int64_t j = 0; j < H; ++j) rh_prev[j] = r[j] * h[j];
      for (int64_t j = 0; j < H; ++j) reset_h[j] = rh[2 * H + j];  // Rb_h
      rnn::add_product(w.r(d, dir), 2 * H, H, H, rh_prev.data(), reset_h.data());
    }
    for (int64_t j = 0; j < H; ++j) {
      const double candidate = g(clip(wx[2 * H + j] + reset_h[j]));
      h[j] = (1.0 - z[j]) * candidate + z[j] * h[j];
    }
  });
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("GRU", check_gru, compute_gru);

}  // namespace hetsched::kernels
