// What RNN, LSTM and GRU share (internal): their inputs' layout, the
// activation functions, and the walk over directions, batch rows and time
// steps that each op's cell is called from.
//
// Inputs (ONNX): X [seq, batch, input] ([batch, seq, input] with layout 1),
// W [dirs, gates * hidden, input], R [dirs, gates * hidden, hidden],
// B [dirs, 2 * gates * hidden] (W's biases, then R's), sequence_lens [batch],
// initial_h [dirs, batch, hidden] ([batch, dirs, hidden] with layout 1),
// LSTM's initial_c likewise. Outputs: Y [seq, dirs, batch, hidden]
// ([batch, seq, dirs, hidden]), Y_h and LSTM's Y_c as initial_h. A row
// shorter than seq (sequence_lens) runs its own steps only: its Y is 0 past
// them, its Y_h the state after its last step (the first, in reverse).
// Arithmetic in double; the outputs in X's dtype.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kernels/reference/common.h"

namespace hetsched::kernels::rnn {

using Activation = std::function<double(double)>;

// One activation function by its ONNX name; alpha and beta where it takes
// them (NaN: the function's default).
inline Activation activation(const Node& node, const std::string& name, double alpha, double beta) {
  auto pick = [](double v, double fallback) { return std::isnan(v) ? fallback : v; };
  if (name == "Sigmoid") return [](double x) { return 1.0 / (1.0 + std::exp(-x)); };
  if (name == "Tanh") return [](double x) { return std::tanh(x); };
  if (name == "Relu") return [](double x) { return std::max(x, 0.0); };
  if (name == "Softsign") return [](double x) { return x / (1.0 + std::fabs(x)); };
  if (name == "Softplus") return [](double x) { return std::log1p(std::exp(x)); };
  double a = alpha, b = beta;
  if (name == "Affine") return [a = pick(a, 1.0), b = pick(b, 0.0)](double x) { return a * x + b; };
  if (name == "LeakyRelu") return [a = pick(a, 0.01)](double x) { return x >= 0 ? x : a * x; };
  if (name == "ThresholdedRelu") return [a = pick(a, 1.0)](double x) { return x > a ? x : 0.0; };
  if (name == "ScaledTanh") return [a = pick(a, 1.0), b = pick(b, 1.0)](double x) { return a * std::tanh(b * x); };
  if (name == "HardSigmoid")
    return [a = pick(a, 0.2), b = pick(b, 0.5)](double x) { return std::clamp(a * x + b, 0.0, 1.0); };
  if (name == "Elu") return [a = pick(a, 1.0)](double x) { return x >= 0 ? x : a * (std::exp(x) - 1.0); };
  throw_unsupported(node, fmt::format("activation '{}' is not supported", name));
}

inline bool takes_alpha(const std::string& name) {
  return name == "Affine" || name == "LeakyRelu" || name == "ThresholdedRelu" || name == "ScaledTanh" ||
         name == "HardSigmoid" || name == "Elu";
}
inline bool takes_beta(const std::string& name) {
  return name == "Affine" || name == "ScaledTanh" || name == "HardSigmoid";
}

inline int64_t n_directions(const Node& node) {
  std::string direction = node.attr_string("direction", "forward");
  if (direction == "forward" || direction == "reverse") return 1;
  if (direction == "bidirectional") return 2;
  throw_invalid(node, fmt::format("direction '{}': expected forward, reverse or bidirectional", direction));
}

// The activations of each direction ([direction][k]): the `activations`
// attribute (defaults: `defaults` for each direction), activation_alpha and
// activation_beta consumed in order by the functions that take them.
inline std::vector<std::vector<Activation>> activations(const Node& node, const std::vector<std::string>& defaults) {
  const int64_t dirs = n_directions(node);
  std::vector<std::string> names;
  if (node.has_attr("activations")) names = node.attributes.at("activations").strings;
  if (names.empty())
    for (int64_t d = 0; d < dirs; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  if (names.size() != defaults.size() * static_cast<size_t>(dirs))
    throw_invalid(node, fmt::format("{} activations: expected {} ({} per direction)", names.size(),
                                    defaults.size() * static_cast<size_t>(dirs), defaults.size()));
  std::vector<float> alphas = node.attr_floats("activation_alpha"), betas = node.attr_floats("activation_beta");
  size_t next_alpha = 0, next_beta = 0;
  std::vector<std::vector<Activation>> out(static_cast<size_t>(dirs));
  for (size_t k = 0; k < names.size(); ++k) {
    double alpha = NAN, beta = NAN;
    if (takes_alpha(names[k]) && next_alpha < alphas.size()) alpha = alphas[next_alpha++];
    if (takes_beta(names[k]) && next_beta < betas.size()) beta = betas[next_beta++];
    out[k / defaults.size()].push_back(activation(node, names[k], alpha, beta));
  }
  return out;
}

// Load-time checks of the three ops: float inputs (sequence_lens int32),
// known direction, layout 0 or 1, the activations known and as many as the
// op takes.
inline void check(const Node& node, const Graph& graph, const std::vector<std::string>& default_activations) {
  check_input_dtypes(node, graph, kFloatTypes, {0, 1, 2});
  if (node.input(3) != kNoValue) check_input_dtypes(node, graph, kFloatTypes, {3});
  if (node.input(4) != kNoValue) check_input_dtypes(node, graph, {DType::kInt32}, {4});
  for (size_t i = 5; i < node.inputs.size(); ++i)
    if (node.input(i) != kNoValue) check_input_dtypes(node, graph, kFloatTypes, {i});
  int64_t layout = node.attr_int("layout", 0);
  if (layout != 0 && layout != 1) throw_invalid(node, fmt::format("layout {}: expected 0 or 1", layout));
  activations(node, default_activations);
}

// A tensor's values in double (empty when absent).
inline std::vector<double> values(const Tensor* t) { return t ? t->to_double_vector() : std::vector<double>{}; }

// The shapes of one call, from X, W and R.
struct Dims {
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, dirs = 0;
  bool batch_first = false;
};

inline Dims dims(const Node& node, const Tensor& X, const Tensor& W, const Tensor& R, int64_t n_gates) {
  Dims d;
  d.dirs = n_directions(node);
  d.batch_first = node.attr_int("layout", 0) == 1;
  if (X.rank() != 3) throw_runtime(node, fmt::format("X of shape {}: expected rank 3", shape_to_string(X.shape())));
  d.seq = X.dim(d.batch_first ? 1 : 0);
  d.batch = X.dim(d.batch_first ? 0 : 1);
  d.input = X.dim(2);
  d.hidden = node.attr_int("hidden_size", R.rank() == 3 ? R.dim(2) : 0);
  const Shape w{d.dirs, n_gates * d.hidden, d.input}, r{d.dirs, n_gates * d.hidden, d.hidden};
  if (W.shape() != w || R.shape() != r)
    throw_runtime(node, fmt::format("W {} and R {}: expected {} and {} for X {} and hidden_size {}",
                                    shape_to_string(W.shape()), shape_to_string(R.shape()), shape_to_string(w),
                                    shape_to_string(r), shape_to_string(X.shape()), d.hidden));
  return d;
}

// Checks an optional input's shape.
inline void expect_shape(const Node& node, const Tensor* t, const Shape& shape, const char* what) {
  if (t && t->shape() != shape)
    throw_runtime(node, fmt::format("{} of shape {}: expected {}", what, shape_to_string(t->shape()),
                                    shape_to_string(shape)));
}

// The walk: for each direction and batch row, `step(dir, x, h, c)` updates
// the row's state (h: hidden, c: LSTM's cell state, `n_states` 2) from its
// input x at each of the row's steps, in the direction's order. `inputs`:
// the op's inputs (X at 0, sequence_lens at 4, initial_h at 5, initial_c at
// 6). Returns Y, Y_h and, with two states, Y_c.
template <typename Step>
std::vector<Tensor> walk(const Node& node, const std::vector<const Tensor*>& inputs, const Dims& d, int n_states,
                         Step&& step) {
  const Tensor& X = *inputs[0];
  const Tensor* lens_t = inputs.size() > 4 ? inputs[4] : nullptr;
  std::vector<const Tensor*> initial(2, nullptr);
  for (int s = 0; s < n_states; ++s) initial[s] = inputs.size() > static_cast<size_t>(5 + s) ? inputs[5 + s] : nullptr;
  const Shape state_shape = d.batch_first ? Shape{d.batch, d.dirs, d.hidden} : Shape{d.dirs, d.batch, d.hidden};
  expect_shape(node, lens_t, {d.batch}, "sequence_lens");
  for (int s = 0; s < n_states; ++s) expect_shape(node, initial[s], state_shape, s == 0 ? "initial_h" : "initial_c");
  std::vector<int64_t> lens = lens_t ? lens_t->to_int64_vector() : std::vector<int64_t>(d.batch, d.seq);
  for (int64_t len : lens)
    if (len < 0 || len > d.seq) throw_runtime(node, fmt::format("sequence length {}: expected 0..{}", len, d.seq));
  const std::vector<double> x = X.to_double_vector();
  std::vector<std::vector<double>> init(2);
  for (int s = 0; s < n_states; ++s) init[s] = values(initial[s]);
  // Element offsets of Y [seq, dirs, batch, hidden] (batch first: [batch,
  // seq, dirs, hidden]) and of a state [dirs, batch, hidden] ([batch, dirs,
  // hidden]).
  auto y_at = [&](int64_t t, int64_t dir, int64_t b) {
    return d.batch_first ? ((b * d.seq + t) * d.dirs + dir) * d.hidden : ((t * d.dirs + dir) * d.batch + b) * d.hidden;
  };
  auto state_at = [&](int64_t dir, int64_t b) {
    return d.batch_first ? (b * d.dirs + dir) * d.hidden : (dir * d.batch + b) * d.hidden;
  };
  auto x_at = [&](int64_t t, int64_t b) { return d.batch_first ? (b * d.seq + t) * d.input : (t * d.batch + b) * d.input; };
  std::vector<double> y(static_cast<size_t>(d.seq * d.dirs * d.batch * d.hidden), 0.0);
  std::vector<std::vector<double>> final_state(static_cast<size_t>(n_states),
                                               std::vector<double>(static_cast<size_t>(d.dirs * d.batch * d.hidden)));
  const bool reverse_only = node.attr_string("direction", "forward") == "reverse";
  std::vector<double> h(static_cast<size_t>(d.hidden)), c(static_cast<size_t>(d.hidden));
  for (int64_t dir = 0; dir < d.dirs; ++dir) {
    const bool reverse = reverse_only || dir == 1;
    for (int64_t b = 0; b < d.batch; ++b) {
      const int64_t at = state_at(dir, b);
      for (int s = 0; s < n_states; ++s) {
        std::vector<double>& state = s == 0 ? h : c;
        for (int64_t j = 0; j < d.hidden; ++j) state[j] = init[s].empty() ? 0.0 : init[s][at + j];
      }
      const int64_t len = lens[static_cast<size_t>(b)];
      for (int64_t k = 0; k < len; ++k) {
        const int64_t t = reverse ? len - 1 - k : k;
        step(dir, &x[static_cast<size_t>(x_at(t, b))], h, c);
        std::copy(h.begin(), h.end(), y.begin() + y_at(t, dir, b));
      }
      for (int s = 0; s < n_states; ++s) {
        const std::vector<double>& state = s == 0 ? h : c;
        std::copy(state.begin(), state.end(), final_state[s].begin() + at);
      }
    }
  }
  Shape y_shape = d.batch_first ? Shape{d.batch, d.seq, d.dirs, d.hidden} : Shape{d.seq, d.dirs, d.batch, d.hidden};
  std::vector<Tensor> outputs{float_tensor_of(node, X.dtype(), y_shape, y)};
  for (int s = 0; s < n_states; ++s) outputs.push_back(float_tensor_of(node, X.dtype(), state_shape, final_state[s]));
  return outputs;
}

// out[k] += sum_i M[row0 + k][i] v[i] for k < n_rows (M row-major, `cols`
// wide).
inline void add_product(const double* M, int64_t row0, int64_t n_rows, int64_t cols, const double* v, double* out) {
  for (int64_t k = 0; k < n_rows; ++k) {
    const double* m = M + (row0 + k) * cols;
    double sum = 0;
    for (int64_t i = 0; i < cols; ++i) sum += m[i] * v[i];
    out[k] += sum;
  }
}

// The weights of one call, in double: W, R, B (absent: zeros) as given.
struct Weights {
  std::vector<double> W, R, B;
  int64_t rows = 0;  // gates * hidden

  // Direction dir's W and R, and its biases of W (b = 0) or R (b = 1).
  const double* w(const Dims& d, int64_t dir) const { return W.data() + dir * rows * d.input; }
  const double* r(const Dims& d, int64_t dir) const { return R.data() + dir * rows * d.hidden; }
  double bias(int64_t dir, int b, int64_t row) const { return B.empty() ? 0.0 : B[(dir * 2 + b) * rows + row]; }
};

inline Weights weights(const Node& node, const std::vector<const Tensor*>& inputs, const Dims& d, int64_t n_gates) {
  Weights w;
  w.rows = n_gates * d.hidden;
  w.W = values(inputs[1]);
  w.R = values(inputs[2]);
  const Tensor* B = inputs.size() > 3 ? inputs[3] : nullptr;
  expect_shape(node, B, {d.dirs, 2 * w.rows}, "B");
  w.B = values(B);
  return w;
}

// The `clip` attribute applied to an activation's input (none when absent).
inline std::function<double(double)> clip(const Node& node) {
  if (!node.has_attr("clip")) return [](double v) { return v; };
  double limit = node.attr_float("clip", 0.0f);
  return [limit](double v) { return std::clamp(v, -limit, limit); };
}

}  // namespace hetsched::kernels::rnn
