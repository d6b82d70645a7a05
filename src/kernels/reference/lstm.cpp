// LSTM — reference kernel.
//
// Gates in ONNX's order i, o, f, c (rows of W, R and the biases), peepholes
// P [dirs, 3 * hidden] in the order i, o, f:
//   i = f(clip(W_i x + R_i H + Pi . C + b_i))
//   f = f(clip(W_f x + R_f H + Pf . C + b_f))    (1 - i with input_forget)
//   c~ = g(clip(W_c x + R_c H + b_c))
//   C' = f . C + i . c~
//   o = f(clip(W_o x + R_o H + Po . C' + b_o))
//   H' = o . h(C')
// f, g, h by default Sigmoid, Tanh, Tanh; directions, sequence_lens,
// initial_h and initial_c, layout 0 or 1, Y_c (rnn_common.h).
// Supported: float32 and float64.
// Refused: other dtypes, unknown activations.
#include "kernels/reference/rnn_common.h"

namespace hetsched::kernels {
namespace {

const std::vector<std::string> kDefaults = {"Sigmoid", "Tanh", "Tanh"};

void check_lstm(const Node& node, const Graph& graph) { rnn::check(node, graph, kDefaults); }

std::vector<Tensor> compute_lstm(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& X = required_input(node, inputs, 0);
  const rnn::Dims d = rnn::dims(node, X, required_input(node, inputs, 1), required_input(node, inputs, 2), 4);
  const rnn::Weights w = rnn::weights(node, inputs, d, 4);
  const Tensor* P = inputs.size() > 7 ? inputs[7] : nullptr;
  rnn::expect_shape(node, P, {d.dirs, 3 * d.hidden}, "P");
  const std::vector<double> peep = rnn::values(P);
  const bool input_forget = node.attr_int("input_forget", 0) != 0;
  const auto act = rnn::activations(node, kDefaults);
  const auto clip = rnn::clip(node);
  const int64_t H = d.hidden;
  std::vector<double> pre(static_cast<size_t>(4 * H));
  return rnn::walk(node, inputs, d, 2, [&](int64_t dir, const double* x, std::vector<double>& h, std::vector<double>& c) {
    for (int64_t row = 0; row < 4 * H; ++row) pre[row] = w.bias(dir, 0, row) + w.bias(dir, 1, row);
    rnn::add_product(w.w(d, dir), 0, 4 * H, d.input, x, pre.data());
    rnn::add_product(w.r(d, dir), 0, 4 * H, H, h.data(), pre.data());
    const auto& [f, g, hh] = std::tie(act[dir][0], act[dir][1], act[dir][2]);
    auto p = [&](int gate, int64_t j) { return peep.empty() ? 0.0 : peep[(dir * 3 + gate) * H + j]; };
    for (int64_t j = 0; j < H; ++j) {
      const double i_gate = f(clip(pre[j] + p(0, j) * c[j]));
      const double f_gate = input_forget ? 1.0 - i_gate : f(clip(pre[2 * H + j] + p(2, j) * c[j]));
      const double candidate = g(clip(pre[3 * H + j]));
      c[j] = f_gate * c[j] + i_gate * candidate;
      const double o_gate = f(clip(pre[H + j] + p(1, j) * c[j]));
      h[j] = o_gate * hh(c[j]);
    }
  });
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("LSTM", check_lstm, compute_lstm);

}  // namespace hetsched::kernels
