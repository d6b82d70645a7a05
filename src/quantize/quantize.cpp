// Post-training quantization (quantize.h): static in four passes, dynamic
// in one.
#include "hetsched/quantize.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>

#include "graph/onnx_export.h"

namespace hetsched {

namespace {

struct Range {
  float lo = 0.0f, hi = 0.0f;  // always includes 0, as uint8 quantization needs
};

// The values an activation took over the calibration runs, counted in
// kBins equal bins over their min-max range, or with `magnitudes` their
// absolute values over [0, the largest].
class Histogram {
 public:
  static constexpr int kBins = 2048;
  Histogram(Range range, bool magnitudes)
      : range_(range), magnitudes_(magnitudes), counts_(kBins, 0) {
    if (magnitudes) {
      range_.lo = 0.0f;
      range_.hi = std::max(-range.lo, range.hi);
    }
  }
  void add(const Tensor& t) {
    const float* p = t.data<float>();
    const double width = static_cast<double>(range_.hi) - range_.lo;
    if (!(width > 0)) return;
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (!std::isfinite(p[i])) continue;
      double x = magnitudes_ ? std::fabs(p[i]) : p[i];
      auto bin = static_cast<int64_t>((x - static_cast<double>(range_.lo)) / width * kBins);
      ++counts_[static_cast<size_t>(std::clamp<int64_t>(bin, 0, kBins - 1))];
      ++total_;
    }
  }
  // The range holding `percentile` % of the values: (100 - percentile) / 2 %
  // of them (at most) left out at either end, to bin edges; with 0 in it.
  Range central(double percentile) const {
    if (total_ == 0) return range_;
    const double tail = (100.0 - percentile) / 200.0 * static_cast<double>(total_);
    const double width = (static_cast<double>(range_.hi) - range_.lo) / kBins;
    int first = 0, last = kBins - 1;
    for (double below = 0; first < last && below + static_cast<double>(counts_[first]) <= tail; ++first)
      below += static_cast<double>(counts_[first]);
    for (double above = 0; last > first && above + static_cast<double>(counts_[last]) <= tail; --last)
      above += static_cast<double>(counts_[last]);
    Range r;
    r.lo = std::min(0.0f, static_cast<float>(range_.lo + first * width));
    r.hi = std::max(0.0f, static_cast<float>(range_.lo + (last + 1) * width));
    return r;
  }

  // A magnitudes histogram's clipping threshold T of least information loss
  // (TensorRT's entropy calibration): for each candidate T (a bin edge, at
  // least `levels` bins), P is the histogram below T with everything above
  // added to its last bin, Q the same values seen through `levels` equal
  // quantization steps over [0, T] (each step's count spread evenly over its
  // nonzero bins); T minimizes the KL divergence of Q from P. `levels`: the
  // uint8 steps a range clipped to T gives one sign, 255 for an activation
  // that is never negative, about half for one of both signs. The range is
  // the min-max `range` clipped to [-T, T].
  Range entropy(const Range& range, int levels) const {
    if (total_ == 0 || !(range_.hi > 0)) return range;
    int best_bins = kBins;
    double best_kl = std::numeric_limits<double>::infinity();
    std::vector<double> p(kBins), q(kBins);
    double above = 0;  // values beyond the candidate
    for (int i = kBins; i >= levels; --i) {
      if (i < kBins) above += static_cast<double>(counts_[i]);
      for (int k = 0; k < i; ++k) p[k] = static_cast<double>(counts_[k]);
      p[i - 1] += above;
      for (int step = 0; step < levels; ++step) {
        int begin = static_cast<int>(static_cast<int64_t>(step) * i / levels);
        int end = static_cast<int>(static_cast<int64_t>(step + 1) * i / levels);
        double sum = 0;
        int nonzero = 0;
        for (int k = begin; k < end; ++k) {
          sum += static_cast<double>(counts_[k]);
          nonzero += p[k] > 0;
        }
        for (int k = begin; k < end; ++k) q[k] = p[k] > 0 ? sum / nonzero : 0;
      }
      double kl = divergence(p.data(), q.data(), i);
      if (kl <= best_kl) {  // on ties the narrowest: finer steps, nothing more lost
        best_kl = kl;
        best_bins = i;
      }
    }
    const float threshold = static_cast<float>(range_.hi * best_bins / kBins);
    return Range{std::max(range.lo, -threshold), std::min(range.hi, threshold)};
  }

 private:
  // KL(P || Q) of two histograms over n bins, each normalized. A bin where Q
  // is empty but P is not (a value below T that Q's step lost entirely,
  // only possible at the last bin's outliers) is counted with Q at a tenth
  // of a value, not as infinity.
  static double divergence(const double* p, const double* q, int n) {
    double p_total = 0, q_total = 0;
    for (int k = 0; k < n; ++k) {
      p_total += p[k];
      q_total += q[k];
    }
    if (!(p_total > 0) || !(q_total > 0)) return std::numeric_limits<double>::infinity();
    double kl = 0;
    for (int k = 0; k < n; ++k) {
      if (!(p[k] > 0)) continue;
      double pk = p[k] / p_total, qk = std::max(q[k], 0.1) / q_total;
      kl += pk * std::log(pk / qk);
    }
    return kl;
  }

  Range range_;
  bool magnitudes_ = false;
  std::vector<uint64_t> counts_;
  uint64_t total_ = 0;
};

// uint8, asymmetric: the range onto 0..255 with 0 exact.
std::pair<float, uint8_t> uint8_parameters(const Range& r) {
  float scale = (r.hi - r.lo) / 255.0f;
  if (!(scale > 0.0f) || !std::isfinite(scale)) return {1.0f, 0};
  double zp = std::nearbyint(-static_cast<double>(r.lo) / scale);
  return {scale, static_cast<uint8_t>(std::clamp(zp, 0.0, 255.0))};
}

ValueId add_value(Graph& g, const std::string& name, DType dtype, const Value& like) {
  Value v;
  v.name = g.unused_name(name);
  v.dtype = dtype;
  v.has_shape = like.has_shape;
  v.shape = like.shape;
  v.dim_params = like.dim_params;
  return g.add_value(std::move(v));
}

Attribute int_attribute(int64_t value) {
  Attribute a;
  a.kind = Attribute::Kind::kInt;
  a.i = value;
  return a;
}

NodeId add_node(Graph& g, const std::string& op_type, const std::string& name, std::vector<ValueId> inputs,
                ValueId output, int64_t opset, int64_t axis = -1) {
  Node n;
  n.name = g.unused_name(name);
  n.op_type = op_type;
  n.opset = opset;
  n.inputs = std::move(inputs);
  n.outputs = {output};
  if (axis >= 0) n.attributes["axis"] = int_attribute(axis);
  return g.add_node(std::move(n));
}

void write_model(Graph& graph, const std::string& out_path) {
  graph.finalize();
  std::ofstream out(out_path, std::ios::binary);
  if (!out) throw Error(ErrorCode::kIo, fmt::format("{}: cannot open for writing", out_path));
  if (!graph_to_model(graph).SerializeToOstream(&out))
    throw Error(ErrorCode::kIo, fmt::format("{}: write failed", out_path));
}

// Why `conv` stays float32, or "" when it is quantized.
std::string why_not(const Graph& g, const Node& conv) {
  if (conv.inputs.size() < 2 || conv.outputs.size() != 1) return "unexpected inputs";
  const Value& x = g.values[conv.inputs[0]];
  const Value& w = g.values[conv.inputs[1]];
  if (x.dtype != DType::kFloat32) return fmt::format("input of dtype {}", dtype_name(x.dtype));
  if (!w.is_constant() || w.dtype != DType::kFloat32) return "weights computed at run time";
  if (conv.input(2) != kNoValue && !g.values[conv.inputs[2]].is_constant()) return "bias computed at run time";
  for (ValueId v : {conv.inputs[1], conv.input(2)}) {
    if (v == kNoValue) continue;
    const Tensor& t = *g.values[v].initializer;
    if (t.dtype() != DType::kFloat32) return "bias not float32";
    for (int64_t i = 0; i < t.numel(); ++i)
      if (!std::isfinite(t.data<float>()[i])) return fmt::format("'{}' holds a value that is not finite", g.values[v].name);
  }
  return "";
}

// The value after the Conv to quantize: the output of a Relu or a Clip
// (ReLU6) that alone reads it, else the Conv's output. Its range then
// starts at the clamp, which the uint8 range's saturation does.
ValueId conv_result(const Graph& g, const Node& conv) {
  ValueId out = conv.outputs[0];
  const Value& v = g.values[out];
  if (v.consumers.size() != 1 || g.is_graph_output(out)) return out;
  const Node& next = g.nodes[v.consumers[0]];
  return next.op_type == "Relu" || next.op_type == "Clip" ? next.outputs[0] : out;
}

// Why MatMul `mm` (or, statically, a Gemm) stays float32, or "" when it is
// quantized.
std::string why_not_matmul(const Graph& g, const Node& mm) {
  if (mm.op_type == "Gemm") {
    if (mm.inputs.size() < 2 || mm.outputs.size() != 1) return "unexpected inputs";
    if (mm.attr_int("transA", 0) != 0 || mm.attr_float("alpha", 1.0f) != 1.0f) return "A transposed or alpha not 1";
    if (mm.input(2) != kNoValue && !g.values[mm.inputs[2]].is_constant()) return "C computed at run time";
  } else if (mm.inputs.size() != 2 || mm.outputs.size() != 1) {
    return "unexpected inputs";
  }
  const Value& x = g.values[mm.inputs[0]];
  const Value& w = g.values[mm.inputs[1]];
  if (x.dtype != DType::kFloat32) return fmt::format("input of dtype {}", dtype_name(x.dtype));
  if (!w.is_constant() || w.dtype != DType::kFloat32) return "B computed at run time";
  if (w.shape.size() != 2) return fmt::format("B of rank {}, not a matrix", w.shape.size());
  const Tensor& t = *w.initializer;
  for (int64_t i = 0; i < t.numel(); ++i)
    if (!std::isfinite(t.data<float>()[i])) return fmt::format("'{}' holds a value that is not finite", w.name);
  return "";
}

// A matrix product's B (a float32 matrix) in int8, symmetric: one scale, or
// one per column of the product (per_channel; `column_axis` 1 for a
// MatMul's B [K, N], 0 for a Gemm's transposed B [N, K]); added to `g` as
// constants: the int8 matrix, its scales and its zero points (0).
std::array<ValueId, 3> add_quantized_matrix(Graph& g, const std::string& base, const Tensor& w, bool per_channel,
                                            int column_axis = 1) {
  const int64_t cols = w.dim(1), n_scales = per_channel ? w.dim(column_axis) : 1;
  auto scale_of = [&](int64_t i) {
    return static_cast<size_t>(!per_channel ? 0 : column_axis == 1 ? i % cols : i / cols);
  };
  std::vector<float> w_scales(static_cast<size_t>(n_scales), 0.0f);
  for (int64_t i = 0; i < w.numel(); ++i)
    w_scales[scale_of(i)] = std::max(w_scales[scale_of(i)], std::fabs(w.data<float>()[i]));
  for (float& sc : w_scales) sc = sc > 0.0f ? sc / 127.0f : 1.0f;
  Tensor wq(DType::kInt8, w.shape());
  for (int64_t i = 0; i < w.numel(); ++i)
    wq.data<int8_t>()[i] = static_cast<int8_t>(
        std::clamp(std::nearbyint(w.data<float>()[i] / w_scales[scale_of(i)]), -127.0f, 127.0f));
  Shape scale_shape = per_channel ? Shape{n_scales} : Shape{};
  return {g.add_constant(base + ".w_quantized", std::move(wq)),
          g.add_constant(base + ".w_scale", Tensor::from_vector<float>(scale_shape, w_scales)),
          g.add_constant(base + ".w_zero_point", Tensor(DType::kInt8, scale_shape))};
}

ValueId add_scalar_value(Graph& g, const std::string& name, DType dtype) {
  Value v;
  v.name = g.unused_name(name);
  v.dtype = dtype;
  v.has_shape = true;
  return g.add_value(std::move(v));
}

// The dynamic quantization of every MatMul with a constant matrix B
// (quantize.h).
void quantize_dynamic(Graph& graph, int64_t opset, bool per_channel, QuantizeReport* report) {
  std::map<ValueId, std::array<ValueId, 3>> quantized;  // activation -> its x_q, x_scale, x_zero_point
  const size_t n_nodes = graph.nodes.size();
  for (NodeId id = 0; id < static_cast<NodeId>(n_nodes); ++id) {
    if (graph.nodes[id].op_type != "MatMul") continue;
    std::string why = why_not_matmul(graph, graph.nodes[id]);
    if (!why.empty()) {
      report->skipped.push_back(fmt::format("{}: {}", graph.nodes[id].label(), why));
      continue;
    }
    const Node mm = graph.nodes[id];
    ValueId x = mm.inputs[0];
    if (!quantized.count(x)) {
      const Value like = graph.values[x];
      ValueId q = add_value(graph, like.name + ".quantized", DType::kUInt8, like);
      ValueId s = add_scalar_value(graph, like.name + ".scale", DType::kFloat32);
      ValueId z = add_scalar_value(graph, like.name + ".zero_point", DType::kUInt8);
      Node dql;
      dql.name = graph.unused_name(like.name + ".quantize");
      dql.op_type = "DynamicQuantizeLinear";
      dql.opset = opset;
      dql.inputs = {x};
      dql.outputs = {q, s, z};
      graph.add_node(std::move(dql));
      quantized[x] = {q, s, z};
    }
    auto [xq, xs, xz] = quantized.at(x);

    const std::string& base = mm.name;
    auto [wqv, ws, wz] = add_quantized_matrix(graph, base, *graph.values[mm.inputs[1]].initializer, per_channel);

    // MatMulInteger -> Cast -> Mul(x_scale * w_scale), writing the MatMul's
    // own output value.
    const Value out = graph.values[mm.outputs[0]];
    ValueId product = add_value(graph, out.name + ".int32", DType::kInt32, out);
    ValueId as_float = add_value(graph, out.name + ".float", DType::kFloat32, out);
    ValueId scale = add_value(graph, base + ".scale", DType::kFloat32, graph.values[ws]);
    add_node(graph, "Mul", base + ".scale", {xs, ws}, scale, opset);
    add_node(graph, "MatMulInteger", base + ".integer", {xq, wqv, xz, wz}, product, opset);
    NodeId cast = add_node(graph, "Cast", base + ".cast", {product}, as_float, opset);
    graph.nodes[cast].attributes["to"] = int_attribute(1);  // FLOAT
    graph.nodes[id].op_type = "Mul";
    graph.nodes[id].inputs = {as_float, scale};
    ++report->n_quantized_matmuls;
  }
}

}  // namespace

QuantizeReport quantize_model(const std::string& model, const std::string& out_path, const QuantizeOptions& options) {
  Graph graph = load_model(model);
  int64_t opset = 0;  // of the default domain, where QuantizeLinear is
  for (const Node& n : graph.nodes)
    if (n.domain.empty()) opset = std::max(opset, n.opset);
  for (const Node& n : graph.nodes) {
    if (n.op_type == "QuantizeLinear" || n.op_type == "DequantizeLinear" || n.op_type.rfind("QLinear", 0) == 0)
      throw Error(ErrorCode::kUnsupported, fmt::format("{}: already quantized (node {})", model, n.label()));
  }
  if (opset < 10)
    throw Error(ErrorCode::kUnsupported,
                fmt::format("{}: opset {}: quantization needs opset 10 or later (QuantizeLinear)", model, opset));
  if (options.per_channel && !options.dynamic && opset < 13)
    throw Error(ErrorCode::kUnsupported,
                fmt::format("{}: opset {}: per-channel weights need opset 13 or later (DequantizeLinear's axis); "
                            "quantize per tensor, or export the model at opset 13",
                            model, opset));
  if (options.method != "minmax" && options.method != "percentile" && options.method != "entropy")
    throw Error(ErrorCode::kUsage,
                fmt::format("calibration method '{}': expected minmax, percentile or entropy", options.method));
  if (options.dynamic && options.method != "minmax")
    throw Error(ErrorCode::kUsage, fmt::format("calibration method {}: dynamic quantization takes each run's range "
                                               "from its own data",
                                               options.method));
  if (!(options.percentile > 50.0 && options.percentile <= 100.0))
    throw Error(ErrorCode::kUsage, fmt::format("percentile {}: expected more than 50, at most 100", options.percentile));
  if (options.calibration.empty() && options.n_random < 1)
    throw Error(ErrorCode::kUsage,
                fmt::format("random calibration runs: expected 1 or more, got {}", options.n_random));
  for (size_t k = 0; k < options.calibration.size(); ++k) {
    try {
      check_inputs(graph, options.calibration[k]);
    } catch (const Error& e) {
      throw Error(ErrorCode::kInvalidInput, fmt::format("calibration run {}: {}", k + 1, e.what()));
    }
  }
  QuantizeReport report;
  if (options.dynamic) {
    if (opset < 11)
      throw Error(ErrorCode::kUnsupported,
                  fmt::format("{}: opset {}: dynamic quantization needs opset 11 or later (DynamicQuantizeLinear)",
                              model, opset));
    quantize_dynamic(graph, opset, options.per_channel, &report);
    if (report.n_quantized_matmuls == 0)
      throw Error(ErrorCode::kUnsupported,
                  fmt::format("{}: no float32 MatMul with a constant matrix to quantize{}", model,
                              report.skipped.empty() ? "" : " (" + report.skipped.front() + ")"));
    write_model(graph, out_path);
    return report;
  }

  // Pass 1: the Convs to quantize and the activations around them.
  std::vector<NodeId> convs;
  std::map<NodeId, ValueId> conv_input;  // the activation each Conv reads
  std::vector<ValueId> activations;      // in first-seen order
  std::set<ValueId> seen;
  for (NodeId id = 0; id < static_cast<NodeId>(graph.nodes.size()); ++id) {
    const Node& n = graph.nodes[id];
    if (n.op_type != "Conv") continue;
    std::string why = why_not(graph, n);
    if (!why.empty()) {
      report.skipped.push_back(fmt::format("{}: {}", n.label(), why));
      continue;
    }
    convs.push_back(id);
    conv_input[id] = n.inputs[0];
    for (ValueId v : {n.inputs[0], conv_result(graph, n)})
      if (seen.insert(v).second) activations.push_back(v);
  }
  // And the MatMuls and Gemms with a constant matrix B, their inputs: ONNX
  // Runtime's QDQ format for a MatMul, its output left float32.
  std::vector<NodeId> matmuls;
  for (NodeId id = 0; id < static_cast<NodeId>(graph.nodes.size()); ++id) {
    const Node& n = graph.nodes[id];
    if (n.op_type != "MatMul" && n.op_type != "Gemm") continue;
    std::string why = why_not_matmul(graph, n);
    if (!why.empty()) {
      report.skipped.push_back(fmt::format("{}: {}", n.label(), why));
      continue;
    }
    matmuls.push_back(id);
    if (seen.insert(n.inputs[0]).second) activations.push_back(n.inputs[0]);
  }

  if (convs.empty() && matmuls.empty())
    throw Error(ErrorCode::kUnsupported,
                fmt::format("{}: no float32 Conv, MatMul or Gemm with constant weights to quantize{}", model,
                            report.skipped.empty() ? "" : " (" + report.skipped.front() + ")"));

  // Pass 2: calibration, the float model run with those values as outputs.
  std::map<ValueId, Range> ranges;
  if (!activations.empty()) {
    Graph probe = graph;
    for (ValueId v : activations)
      if (!probe.is_graph_output(v)) probe.outputs.push_back(v);
    SessionOptions session_options;
    session_options.devices = options.devices;
    Session session(std::move(probe), session_options);
    std::vector<TensorMap> inputs = options.calibration;
    if (inputs.empty()) {
      report.random_calibration = true;
      for (int i = 0; i < options.n_random; ++i) inputs.push_back(session.random_inputs(static_cast<uint64_t>(i)));
    }
    for (const TensorMap& in : inputs) {
      TensorMap out = session.run(in);
      for (ValueId v : activations) {
        const Tensor& t = out.at(graph.values[v].name);
        Range& r = ranges[v];
        const float* p = t.data<float>();
        for (int64_t i = 0; i < t.numel(); ++i) {
          if (!std::isfinite(p[i])) continue;
          r.lo = std::min(r.lo, p[i]);
          r.hi = std::max(r.hi, p[i]);
        }
      }
      ++report.n_calibration_runs;
    }
    if (options.method != "minmax") {
      // Pass 2b: the same runs again, each value's histogram over its range
      // (of magnitudes, for entropy); then the range without the tails, or
      // clipped where the least information is lost.
      const bool entropy = options.method == "entropy";
      std::map<ValueId, Histogram> histograms;
      for (ValueId v : activations) histograms.emplace(v, Histogram(ranges[v], entropy));
      for (const TensorMap& in : inputs) {
        TensorMap out = session.run(in);
        for (ValueId v : activations) histograms.at(v).add(out.at(graph.values[v].name));
      }
      for (ValueId v : activations) {
        const Histogram& h = histograms.at(v);
        ranges[v] = entropy ? h.entropy(ranges[v], ranges[v].lo < 0 ? 128 : 255) : h.central(options.percentile);
      }
    }
  }

  // Pass 3: a QuantizeLinear -> DequantizeLinear pair after each activation,
  // read by every consumer.
  std::map<ValueId, float> scale_of;
  for (ValueId v : activations) {
    auto [scale, zp] = uint8_parameters(ranges[v]);
    scale_of[v] = scale;
    const Value like = graph.values[v];
    ValueId s = graph.add_constant(like.name + ".scale", Tensor::scalar<float>(scale));
    ValueId z = graph.add_constant(like.name + ".zero_point", Tensor::scalar<uint8_t>(zp));
    ValueId q = add_value(graph, like.name + ".quantized", DType::kUInt8, like);
    ValueId dq = add_value(graph, like.name + ".dequantized", DType::kFloat32, like);
    for (Node& n : graph.nodes)
      std::replace(n.inputs.begin(), n.inputs.end(), v, dq);
    add_node(graph, "QuantizeLinear", like.name + ".quantize", {v, s, z}, q, opset);
    add_node(graph, "DequantizeLinear", like.name + ".dequantize", {q, s, z}, dq, opset);
    ++report.n_activations;
  }

  // Pass 4: weights int8 and biases int32 behind DequantizeLinear.
  for (NodeId id : convs) {
    const Node conv = graph.nodes[id];
    const Tensor& w = *graph.values[conv.inputs[1]].initializer;
    const int64_t M = w.dim(0), per = w.numel() / std::max<int64_t>(M, 1);
    const int64_t n_scales = options.per_channel ? M : 1;
    std::vector<float> w_scales(static_cast<size_t>(n_scales));
    for (int64_t k = 0; k < n_scales; ++k) {
      const float* p = w.data<float>() + (options.per_channel ? k * per : 0);
      float amax = 0.0f;
      for (int64_t i = 0; i < (options.per_channel ? per : w.numel()); ++i) amax = std::max(amax, std::fabs(p[i]));
      w_scales[static_cast<size_t>(k)] = amax > 0.0f ? amax / 127.0f : 1.0f;
    }
    Tensor wq(DType::kInt8, w.shape());
    for (int64_t i = 0; i < w.numel(); ++i) {
      float s = w_scales[static_cast<size_t>(options.per_channel ? i / per : 0)];
      wq.data<int8_t>()[i] = static_cast<int8_t>(std::clamp(std::nearbyint(w.data<float>()[i] / s), -127.0f, 127.0f));
    }
    Shape scale_shape = options.per_channel ? Shape{M} : Shape{};
    const std::string& base = conv.name;
    ValueId ws = graph.add_constant(base + ".w_scale", Tensor::from_vector<float>(scale_shape, w_scales));
    ValueId wz = graph.add_constant(base + ".w_zero_point", Tensor(DType::kInt8, scale_shape));
    ValueId wqv = graph.add_constant(base + ".w_quantized", std::move(wq));
    ValueId wdq = add_value(graph, base + ".w_dequantized", DType::kFloat32, graph.values[conv.inputs[1]]);
    add_node(graph, "DequantizeLinear", base + ".w_dequantize", {wqv, ws, wz}, wdq, opset, options.per_channel ? 0 : -1);
    graph.nodes[id].inputs[1] = wdq;
    if (conv.input(2) != kNoValue) {
      const Tensor& b = *graph.values[conv.inputs[2]].initializer;
      const float x_scale = scale_of.at(conv_input.at(id));
      Tensor bq(DType::kInt32, {M}), b_scales(DType::kFloat32, scale_shape);
      for (int64_t k = 0; k < n_scales; ++k) b_scales.data<float>()[k] = x_scale * w_scales[static_cast<size_t>(k)];
      for (int64_t m = 0; m < M; ++m) {
        double v = std::nearbyint(b.data<float>()[m] / b_scales.data<float>()[options.per_channel ? m : 0]);
        bq.data<int32_t>()[m] = static_cast<int32_t>(std::clamp(v, -2147483647.0, 2147483647.0));
      }
      ValueId bs = graph.add_constant(base + ".b_scale", std::move(b_scales));
      ValueId bqv = graph.add_constant(base + ".b_quantized", std::move(bq));
      ValueId bdq = add_value(graph, base + ".b_dequantized", DType::kFloat32, graph.values[conv.inputs[2]]);
      add_node(graph, "DequantizeLinear", base + ".b_dequantize", {bqv, bs}, bdq, opset, options.per_channel ? 0 : -1);
      graph.nodes[id].inputs[2] = bdq;
    }
    ++report.n_quantized_convs;
  }
  for (NodeId id : matmuls) {
    const Node mm = graph.nodes[id];
    const int column_axis = mm.op_type == "Gemm" && mm.attr_int("transB", 0) != 0 ? 0 : 1;
    auto [wqv, ws, wz] = add_quantized_matrix(graph, mm.name, *graph.values[mm.inputs[1]].initializer,
                                              options.per_channel, column_axis);
    ValueId wdq = add_value(graph, mm.name + ".w_dequantized", DType::kFloat32, graph.values[mm.inputs[1]]);
    add_node(graph, "DequantizeLinear", mm.name + ".w_dequantize", {wqv, ws, wz}, wdq, opset,
             options.per_channel ? column_axis : -1);
    graph.nodes[id].inputs[1] = wdq;
    ++report.n_quantized_matmuls;
  }
  write_model(graph, out_path);
  return report;
}

}  // namespace hetsched
