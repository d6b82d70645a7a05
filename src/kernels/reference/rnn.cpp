// RNN — reference kernel (the simple recurrent cell).
//
// H_t = f(clip(W x_t + R H_{t-1} + Wb + Rb)), f by default Tanh; forward,
// reverse or bidirectional, sequence_lens, initial_h, layout 0 or 1, the
// activations of ONNX's list with their alpha and beta (rnn_common.h).
// Supported: float32 and float64.
// Refused: other dtypes, unknown activations.
#include "kernels/reference/rnn_common.h"

namespace hetsched::kernels {
namespace {

const std::vector<std::string> kDefaults = {"Tanh"};

void check_rnn(const Node& node, const Graph& graph) { rnn::check(node, graph, kDefaults); }

std::vector<Tensor> compute_rnn(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& X = required_input(node, inputs, 0);
  const rnn::Dims d = rnn::dims(node, X, required_input(node, inputs, 1), required_input(node, inputs, 2), 1);
  const rnn::Weights w = rnn::weights(node, inputs, d, 1);
  const auto f = rnn::activations(node, kDefaults);
  const auto clip = rnn::clip(node);
  std::vector<double> pre(static_cast<size_t>(d.hidden));
  return rnn::walk(node, inputs, d, 1, [&](int64_t dir, const double* x, std::vector<double>& h, std::vector<double>&) {
    for (int64_t j = 0; j < d.hidden; ++j) pre[j] = w.bias(dir, 0, j) + w.bias(dir, 1, j);
    rnn::add_product(w.w(d, dir), 0, d.hidden, d.input, x, pre.data());
    rnn::add_product(w.r(d, dir), 0, d.hidden, d.hidden, h.data(), pre.data());
    for (int64_t j = 0; j < d.hidden; ++j) h[j] = f[dir][0](clip(pre[j]));
  });
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("RNN", check_rnn, compute_rnn);

}  // namespace hetsched::kernels
