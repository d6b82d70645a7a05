// LSTM, GRU and RNN on oneDNN's recurrent primitives (lstm_forward,
// gru_forward or lbr_gru_forward, vanilla_rnn_forward): one node, one layer,
// one primitive over every time step and direction.
//
// Layouts need no copies: X is oneDNN's src_layer as it is ([seq, batch,
// input] is tnc, layout 1's [batch, seq, input] ntc); initial_h/c and Y_h/c
// ([dirs, batch, hidden]) are ldnc with one layer. oneDNN writes both
// directions of a bidirectional layer side by side per row, [seq, batch,
// dirs * hidden]: layout 1's Y exactly, and layout 0's Y [seq, dirs, batch,
// hidden] read through strides (its buffer says so, and a reader wanting it
// plain gets a counted reorder). Layout 1's states [batch, dirs, hidden] are
// strided likewise.
//
// Weights are rearranged once, at compile time: ONNX stacks the gates of
// each direction in rows ([dirs, gates * hidden, input]; LSTM in the order
// i, o, f, c, GRU z, r, h), oneDNN wants ldigo in its own gate order (LSTM
// i, f, c, o; GRU u = z, r, o = h). The biases are summed (W's + R's) but for
// GRU with linear_before_reset, whose R bias of the h gate is oneDNN's
// extra fourth bias (lbr_gru).
//
// Supported: float32; W, R and B constants; the default activations (RNN:
// Tanh, Relu or Sigmoid, the same in both directions); any direction;
// layout 0 and 1; initial states given at run time or absent; any outputs
// omitted (an omitted Y or LSTM state is written to scratch memory).
// Refused: other activations, activation_alpha/beta, clip, input_forget,
// LSTM peepholes, sequence_lens unless a constant of seq in every row,
// weights computed at run time.
#include <optional>

#include "backends/cpu/lowering.h"

namespace hetsched::cpu {
namespace {

using dnnl::memory;
using Dims = memory::dims;

enum class Cell { kRnn, kLstm, kGru };

// For each oneDNN gate, the ONNX gate whose rows it takes.
std::vector<int64_t> onnx_gates(Cell cell) {
  if (cell == Cell::kLstm) return {0, 2, 3, 1};  // i f c o <- i o f c
  if (cell == Cell::kGru) return {0, 1, 2};      // u r o <- z r h
  return {0};
}

Tensor zeros(const Shape& shape) {
  Tensor t(DType::kFloat32, shape);
  std::fill(t.data<float>(), t.data<float>() + t.numel(), 0.0f);
  return t;
}

// ONNX W or R [dirs, gates * hidden, cols] as oneDNN's ldigo [1, dirs, cols,
// gates, hidden], gates in oneDNN's order.
Tensor ldigo(const Tensor& w, const std::vector<int64_t>& gates, int64_t hidden) {
  const int64_t dirs = w.dim(0), cols = w.dim(2), n_gates = static_cast<int64_t>(gates.size());
  const float* src = w.data<float>();
  Tensor out(DType::kFloat32, {1, dirs, cols, n_gates, hidden});
  float* dst = out.data<float>();
  for (int64_t d = 0; d < dirs; ++d)
    for (int64_t c = 0; c < cols; ++c)
      for (int64_t g = 0; g < n_gates; ++g)
        for (int64_t o = 0; o < hidden; ++o)
          dst[((d * cols + c) * n_gates + g) * hidden + o] =
              src[(d * n_gates * hidden + gates[static_cast<size_t>(g)] * hidden + o) * cols + c];
  return out;
}

// ONNX B [dirs, 2 * gates * hidden] (W's biases, then R's; absent: zeros) as
// oneDNN's ldgo [1, dirs, gates (+1 for lbr_gru), hidden].
Tensor ldgo_bias(const Tensor* b, int64_t dirs, const std::vector<int64_t>& gates, int64_t hidden,
                 bool linear_before_reset) {
  const int64_t n_gates = static_cast<int64_t>(gates.size());
  const int64_t out_gates = n_gates + (linear_before_reset ? 1 : 0);
  Tensor out = zeros({1, dirs, out_gates, hidden});
  if (!b) return out;
  float* dst = out.data<float>();
  const float* src = b->data<float>();
  for (int64_t d = 0; d < dirs; ++d) {
    const float* wb = src + d * 2 * n_gates * hidden;
    const float* rb = wb + n_gates * hidden;
    for (int64_t g = 0; g < n_gates; ++g) {
      const int64_t from = gates[static_cast<size_t>(g)] * hidden;
      // lbr_gru: the h gate's R bias is applied before the reset gate, apart.
      const bool apart = linear_before_reset && g == n_gates - 1;
      for (int64_t o = 0; o < hidden; ++o) {
        dst[(d * out_gates + g) * hidden + o] = wb[from + o] + (apart ? 0.0f : rb[from + o]);
        if (apart) dst[(d * out_gates + n_gates) * hidden + o] = rb[from + o];
      }
    }
  }
  return out;
}

// The activation a vanilla RNN runs; nullopt when oneDNN has none for it.
std::optional<dnnl::algorithm> rnn_activation(const Node& node, int64_t dirs) {
  std::vector<std::string> names = {"Tanh"};
  if (node.has_attr("activations")) names = node.attributes.at("activations").strings;
  if (names.empty() || static_cast<int64_t>(names.size()) != (node.has_attr("activations") ? dirs : 1))
    return std::nullopt;
  for (const std::string& name : names)
    if (name != names[0]) return std::nullopt;
  if (names[0] == "Tanh") return dnnl::algorithm::eltwise_tanh;
  if (names[0] == "Relu") return dnnl::algorithm::eltwise_relu;
  if (names[0] == "Sigmoid") return dnnl::algorithm::eltwise_logistic;
  return std::nullopt;
}

// True when the node's activations are the op's defaults, given or not.
bool default_activations(const Node& node, const std::vector<std::string>& per_direction, int64_t dirs) {
  if (!node.has_attr("activations")) return true;
  const auto& names = node.attributes.at("activations").strings;
  if (static_cast<int64_t>(names.size()) != static_cast<int64_t>(per_direction.size()) * dirs) return false;
  for (size_t k = 0; k < names.size(); ++k)
    if (names[k] != per_direction[k % per_direction.size()]) return false;
  return true;
}

// A float32 desc of `dims` over memory laid out with `strides`.
memory::desc strided(const Dims& dims, const Dims& strides) {
  return memory::desc(dims, memory::data_type::f32, strides);
}

// A recurrent primitive and the weights layouts it chose.
struct Built {
  dnnl::primitive primitive;
  memory::desc weights_layer, weights_iter;
};

template <typename Primitive>
Built build(const typename Primitive::desc& desc, const dnnl::engine& engine) {
  typename Primitive::primitive_desc pd(desc, engine);
  return {Primitive(pd), pd.weights_layer_desc(), pd.weights_iter_desc()};
}

bool lower_recurrent(Lowering& l, Cell cell) {
  const Node& node = l.node();
  // 1. What oneDNN cannot do.
  for (const char* attr : {"activation_alpha", "activation_beta", "clip"})
    if (node.has_attr(attr)) return false;
  if (node.attr_int("input_forget", 0) != 0) return false;
  if (!l.has_input(0) || !l.input_is_constant(1) || !l.input_is_constant(2)) return false;
  if (l.has_input(3) && !l.input_is_constant(3)) return false;
  if (cell == Cell::kLstm && l.has_input(7)) return false;  // peepholes
  const Value& x = l.input_value(0);
  if (x.dtype != DType::kFloat32 || x.shape.size() != 3 || shape_numel(x.shape) == 0) return false;
  for (size_t i = 1; i < node.inputs.size(); ++i)  // all float32 but sequence_lens
    if (i != 4 && l.has_input(i) && l.input_value(i).dtype != DType::kFloat32) return false;

  const std::string direction = node.attr_string("direction", "forward");
  const int64_t dirs = direction == "bidirectional" ? 2 : 1;
  const bool batch_first = node.attr_int("layout", 0) == 1;
  const Tensor& w = l.constant(1);
  const Tensor& r = l.constant(2);
  const std::vector<int64_t> gates = onnx_gates(cell);
  const int64_t n_gates = static_cast<int64_t>(gates.size());
  const int64_t seq = x.shape[batch_first ? 1 : 0], batch = x.shape[batch_first ? 0 : 1], in = x.shape[2];
  if (w.rank() != 3 || r.rank() != 3) return false;
  const int64_t hidden = r.dim(2);
  if (w.dim(0) != dirs || r.dim(0) != dirs || w.dim(1) != n_gates * hidden || r.dim(1) != n_gates * hidden ||
      w.dim(2) != in || node.attr_int("hidden_size", hidden) != hidden)
    return false;
  if (l.has_input(3) && (l.constant(3).numel() != dirs * 2 * n_gates * hidden)) return false;
  if (l.has_input(4)) {  // sequence_lens: only "every row runs every step"
    if (!l.input_is_constant(4)) return false;
    for (double len : l.constant(4).to_double_vector())
      if (len != static_cast<double>(seq)) return false;
  }
  const bool lbr = cell == Cell::kGru && node.attr_int("linear_before_reset", 0) != 0;
  std::optional<dnnl::algorithm> activation;
  if (cell == Cell::kRnn) {
    activation = rnn_activation(node, dirs);
    if (!activation) return false;
  } else if (!default_activations(node, cell == Cell::kLstm ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                                            : std::vector<std::string>{"Sigmoid", "Tanh"},
                                  dirs)) {
    return false;
  }
  dnnl::rnn_direction rnn_direction;
  if (direction == "forward") {
    rnn_direction = dnnl::rnn_direction::unidirectional_left2right;
  } else if (direction == "reverse") {
    rnn_direction = dnnl::rnn_direction::unidirectional_right2left;
  } else if (direction == "bidirectional") {
    rnn_direction = dnnl::rnn_direction::bidirectional_concat;
  } else {
    return false;
  }

  // 2. The primitive.
  const auto f32 = memory::data_type::f32;
  using tag = memory::format_tag;
  const tag sequence_tag = batch_first ? tag::ntc : tag::tnc;
  const memory::desc src_layer({seq, batch, in}, f32, sequence_tag);
  const memory::desc dst_layer({seq, batch, dirs * hidden}, f32, sequence_tag);
  const memory::desc state({1, dirs, batch, hidden}, f32, tag::ldnc);
  const memory::desc none;
  // An LSTM has both states or neither (oneDNN's rule): a missing initial
  // one is zeros, a missing final one scratch.
  const bool has_initial = l.has_input(5) || (cell == Cell::kLstm && l.has_input(6));
  auto has_output = [&](size_t k) { return k < node.outputs.size() && node.outputs[k] != kNoValue; };
  const bool has_final = has_output(1) || (cell == Cell::kLstm && has_output(2));
  const memory::desc initial = has_initial ? state : none, final = has_final ? state : none;
  const memory::desc weights_layer({1, dirs, in, n_gates, hidden}, f32, tag::any);
  const memory::desc weights_iter({1, dirs, hidden, n_gates, hidden}, f32, tag::any);
  const memory::desc bias({1, dirs, n_gates + (lbr ? 1 : 0), hidden}, f32, tag::ldgo);
  const auto inference = dnnl::prop_kind::forward_inference;
  Built built;
  try {
    if (cell == Cell::kLstm) {
      built = build<dnnl::lstm_forward>({inference, rnn_direction, src_layer, initial, initial, weights_layer,
                                         weights_iter, bias, dst_layer, final, final},
                                        l.engine());
    } else if (cell == Cell::kGru && lbr) {
      built = build<dnnl::lbr_gru_forward>(
          {inference, rnn_direction, src_layer, initial, weights_layer, weights_iter, bias, dst_layer, final},
          l.engine());
    } else if (cell == Cell::kGru) {
      built = build<dnnl::gru_forward>(
          {inference, rnn_direction, src_layer, initial, weights_layer, weights_iter, bias, dst_layer, final},
          l.engine());
    } else {
      built = build<dnnl::vanilla_rnn_forward>({inference, *activation, rnn_direction, src_layer, initial,
                                                weights_layer, weights_iter, bias, dst_layer, final},
                                               l.engine());
    }
  } catch (const dnnl::error&) {
    return false;
  }

  // 3. Buffers: the ONNX values, read and written in oneDNN's byte order.
  // A [dirs, batch, hidden] state of layout 1 is [batch, dirs, hidden].
  std::optional<memory::desc> state_layout;
  if (batch_first && dirs == 2) state_layout = strided({batch, dirs, hidden}, {hidden, batch * hidden, 1});
  std::optional<memory::desc> y_layout;
  if (!batch_first && dirs == 2)  // Y [seq, dirs, batch, hidden] over [seq, batch, dirs * hidden]
    y_layout = strided({seq, dirs, batch, hidden}, {batch * dirs * hidden, hidden, dirs * hidden, 1});
  std::vector<std::pair<int, BufferId>> args = {
      {DNNL_ARG_SRC_LAYER, l.input(0)},
      {DNNL_ARG_WEIGHTS_LAYER, l.new_constant(ldigo(w, gates, hidden), built.weights_layer)},
      {DNNL_ARG_WEIGHTS_ITER, l.new_constant(ldigo(r, gates, hidden), built.weights_iter)},
      {DNNL_ARG_BIAS, l.new_constant(ldgo_bias(l.has_input(3) ? &l.constant(3) : nullptr, dirs, gates, hidden, lbr))},
  };
  auto initial_state = [&](size_t i) {
    return l.has_input(i) ? l.input(i, state_layout) : l.new_constant(zeros({1, dirs, batch, hidden}));
  };
  auto final_state = [&](size_t k) {
    return has_output(k) ? l.output(node.outputs[k], state_layout) : l.scratch(state);
  };
  if (has_initial) args.push_back({DNNL_ARG_SRC_ITER, initial_state(5)});
  if (has_initial && cell == Cell::kLstm) args.push_back({DNNL_ARG_SRC_ITER_C, initial_state(6)});
  args.push_back({DNNL_ARG_DST_LAYER, has_output(0) ? l.output(node.outputs[0], y_layout) : l.scratch(dst_layer)});
  if (has_final) args.push_back({DNNL_ARG_DST_ITER, final_state(1)});
  if (has_final && cell == Cell::kLstm) args.push_back({DNNL_ARG_DST_ITER_C, final_state(2)});
  l.emit(std::move(built.primitive), std::move(args));
  return true;
}

bool lower_lstm(Lowering& l) { return lower_recurrent(l, Cell::kLstm); }
bool lower_gru(Lowering& l) { return lower_recurrent(l, Cell::kGru); }
bool lower_rnn(Lowering& l) { return lower_recurrent(l, Cell::kRnn); }

}  // namespace

// When the reference kernel runs instead, for `hetsched ops --markdown`.
#define HETSCHED_RNN_REFUSED                                                                                  \
  "not float32; W, R or B computed at run time; activations other than the defaults; activation_alpha, " \
  "activation_beta or clip; sequence_lens other than a constant of seq in every row"
HETSCHED_CPU_LOWERING("LSTM", lower_lstm, "oneDNN LSTM (lstm_forward)",
                      "peepholes (P); input_forget; " HETSCHED_RNN_REFUSED);
HETSCHED_CPU_LOWERING("GRU", lower_gru, "oneDNN GRU (gru_forward; lbr_gru_forward with linear_before_reset)",
                      HETSCHED_RNN_REFUSED);
HETSCHED_CPU_LOWERING("RNN", lower_rnn, "oneDNN vanilla RNN (Tanh, Relu or Sigmoid)", HETSCHED_RNN_REFUSED);
#undef HETSCHED_RNN_REFUSED

}  // namespace hetsched::cpu
