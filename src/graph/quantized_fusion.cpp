// Quantized chains made one quantized op (the QDQ format, as ONNX Runtime and
// TensorRT fuse it):
//   DequantizeLinear(x) -> Conv(., DequantizeLinear(w)[, bias])
//     [-> per-channel affine ops] [-> Relu] -> QuantizeLinear
// becomes QLinearConv(x, ..., w, ...) writing the QuantizeLinear's output, so
// a device with int8 kernels computes it in integers and the activations stay
// 8-bit between quantized ops. The conditions (each keeps the result that of
// the float chain, up to float rounding):
//   - x's scale and zero point hold one value each; w is a constant int8
//     tensor with zero points 0 (symmetric, as oneDNN's int8 weights are) and
//     one scale, or one per output channel (axis 0);
//   - the bias is absent, a float32 constant or the DequantizeLinear of a
//     constant;
//   - the affine ops (what PyTorch's quantization-aware training exports a
//     Conv fused with its BatchNormalization as: Conv -> Div -> BN) are
//     BatchNormalization, Mul, Div and Add by constants holding one value or
//     one per channel: they scale the weights' scale per output channel and
//     shift the bias; the bias then becomes int32 at scale x_scale * w_scale
//     (ONNX's QLinearConv bias), rounded to nearest: its error is at most half
//     a unit of the accumulator, far below one unit of the output;
//   - a Relu (or a Clip, as ReLU6 exports) before the QuantizeLinear only
//     when the QuantizeLinear's saturation clamps what it would: for a Relu,
//     a zero point at the lowest value of its type (ONNX Runtime's rule);
//   - each value inside the chain is read by the chain alone.
// And DequantizeLinear -> MaxPool becomes MaxPool -> DequantizeLinear (for a
// positive scale, the max of dequantized values is the dequantized max), so a
// Conv after a pool is fused too and the pool runs on 8-bit values.
// And DequantizeLinear(a) + DequantizeLinear(b) [-> Relu] -> QuantizeLinear
// (a residual Add between quantized blocks), every scale and zero point one
// value, a, b and the sum of one shape, the sum read by the QuantizeLinear
// alone, a Relu only where the QuantizeLinear's saturation clamps as it
// does (as for the Conv), becomes QLinearAdd (ONNX Runtime's contrib op, domain com.microsoft), which
// computes the same float32 arithmetic on the 8-bit values: the activations
// stay 8-bit across the residual. graph_to_model writes it back as the four
// ops.
// And DequantizeLinear(a) -> MatMul(., DequantizeLinear(w)) (what ONNX
// Runtime's QDQ quantizer writes for a MatMul, its output left float32),
// a with one scale and zero point, w a constant int8 matrix with zero
// points 0 and one scale or one per column, becomes MatMulInteger(a, w,
// a's zero point) -> Cast to float32 -> Mul by a_scale * w_scale (ONNX
// Runtime's MatMulIntegerToFloat, in standard ops): the int32 product is
// exact, the float chain's up to float rounding. A Gemm the same way (A not
// transposed, alpha 1), B transposed at load when transB says, and an Add of
// beta * C after the Mul.
// A DequantizeLinear that nothing reads any more is removed.
#include <cmath>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "graph/optimize.h"

namespace hetsched {

namespace {

const Node* producer_of(const Graph& g, ValueId v, const char* op_type) {
  if (v == kNoValue || g.values[v].producer == kNoNode) return nullptr;
  const Node& n = g.nodes[g.values[v].producer];
  return n.op_type == op_type ? &n : nullptr;
}

// A new value of `like`'s shape in `dtype`, named like's name + `suffix`
// (made unique), produced and read by nothing yet.
ValueId add_value_like(Graph& g, ValueId like, const std::string& suffix, DType dtype) {
  Value v = g.values[like];
  v.name = g.unused_name(v.name + suffix);
  v.dtype = dtype;
  v.producer = kNoNode;
  v.consumers.clear();
  return g.add_value(std::move(v));
}

const Tensor* constant_input(const Graph& g, const Node& n, size_t i) {
  ValueId v = n.input(i);
  return v != kNoValue && g.values[v].is_constant() ? &*g.values[v].initializer : nullptr;
}

bool is_8bit(DType d) { return d == DType::kUInt8 || d == DType::kInt8; }

// What a try_* rewrite did: fused; or left a quantized chain in float32,
// saying why; or found no quantized chain there (why empty).
struct Outcome {
  bool fused = false;
  std::string why;
};
Outcome rewritten() { return {true, ""}; }
Outcome left(std::string why) { return {false, std::move(why)}; }
constexpr const char* kOneValue = "is not one constant value";

// A scale (float32) and an optional zero point (8-bit) of one value each.
bool per_tensor(const Graph& g, const Node& q) {
  const Tensor* scale = constant_input(g, q, 1);
  if (!scale || scale->dtype() != DType::kFloat32 || scale->numel() != 1) return false;
  if (q.input(2) == kNoValue) return true;
  const Tensor* zp = constant_input(g, q, 2);
  return zp && zp->numel() == 1 && is_8bit(zp->dtype());
}

// The zero point input of a DequantizeLinear / QuantizeLinear, or, when it
// has none, a new 0 of `type`: the data's type for a DequantizeLinear,
// uint8 for a QuantizeLinear (the spec's defaults).
ValueId zero_point_of(Graph& g, const Node& q, const std::string& name, DType type) {
  if (q.input(2) != kNoValue) return q.input(2);
  return g.add_constant(name, Tensor(type, {}));
}

// A float32 constant's value for each of M channels: it holds one value, or
// M along axis 1 of a tensor of rank `rank` (right-aligned broadcasting).
bool per_channel(const Tensor* c, int64_t M, int64_t rank, std::vector<double>& out) {
  if (!c || c->dtype() != DType::kFloat32 || c->rank() > rank) return false;
  if (c->numel() != 1) {
    if (c->numel() != M || rank < 2) return false;
    int64_t channel_axis = 1 - (rank - c->rank());  // axis 1 of the output, in c's dims
    for (int64_t d = 0; d < c->rank(); ++d)
      if (c->dim(d) != (d == channel_axis ? M : 1)) return false;
  }
  out.resize(static_cast<size_t>(M));
  for (int64_t m = 0; m < M; ++m) out[static_cast<size_t>(m)] = c->data<float>()[c->numel() == 1 ? 0 : m];
  return true;
}

// Folds `op` (reading `in`, the chain's value so far) into alpha and gamma;
// false when it is not an affine op of constants per channel.
bool apply_affine(const Graph& g, const Node& op, ValueId in, int64_t M, int64_t rank, std::vector<double>& alpha,
                  std::vector<double>& gamma) {
  std::vector<double> c;
  if ((op.op_type == "Mul" || op.op_type == "Add" || op.op_type == "Div") && op.inputs.size() == 2) {
    size_t other = op.inputs[0] == in ? 1 : 0;
    if (op.inputs[1 - other] != in || (op.op_type == "Div" && other != 1)) return false;
    if (!per_channel(constant_input(g, op, other), M, rank, c)) return false;
    for (size_t m = 0; m < c.size(); ++m) {
      if (op.op_type == "Add") {
        gamma[m] += c[m];
      } else if (op.op_type == "Mul") {
        alpha[m] *= c[m];
        gamma[m] *= c[m];
      } else {
        alpha[m] /= c[m];
        gamma[m] /= c[m];
      }
    }
    return true;
  }
  if (op.op_type != "BatchNormalization" || op.inputs.size() != 5 || op.inputs[0] != in || rank < 2) return false;
  for (size_t i = 1; i < op.outputs.size(); ++i)
    if (op.outputs[i] != kNoValue) return false;  // training outputs
  std::vector<double> scale, bias, mean, var;
  auto vec = [&](size_t i, std::vector<double>& v) {  // one value per channel, 1-D
    const Tensor* t = constant_input(g, op, i);
    if (!t || t->dtype() != DType::kFloat32 || t->rank() != 1 || t->numel() != M) return false;
    v.assign(t->data<float>(), t->data<float>() + M);
    return true;
  };
  if (!vec(1, scale) || !vec(2, bias) || !vec(3, mean) || !vec(4, var)) return false;
  const double eps = op.attr_float("epsilon", 1e-5f);
  for (size_t m = 0; m < scale.size(); ++m) {
    double s = scale[m] / std::sqrt(var[m] + eps);
    alpha[m] *= s;
    gamma[m] = (gamma[m] - mean[m]) * s + bias[m];
  }
  return true;
}

// DequantizeLinear (one positive scale) -> MaxPool becomes MaxPool on the
// 8-bit values -> DequantizeLinear.
Outcome try_swap_max_pool(Graph& g, NodeId pool_id) {
  const Node& pool = g.nodes[pool_id];
  const Node* dq = producer_of(g, pool.input(0), "DequantizeLinear");
  if (!dq) return {};
  if (!per_tensor(g, *dq)) return left(fmt::format("the input's scale or zero point {}", kOneValue));
  if (constant_input(g, *dq, 1)->data<float>()[0] <= 0.0f) return left("the input's scale is not positive");
  if (pool.outputs.size() != 1 || pool.attr_int("storage_order", 0) != 0)
    return left("its Indices output or storage_order is given");
  ValueId q = dq->inputs[0], out = pool.outputs[0];
  if (!is_8bit(g.values[q].dtype)) return left("the input is not 8-bit");
  ValueId pooled_id = add_value_like(g, out, ".quantized", g.values[q].dtype);
  Node dequantize = *dq;
  dequantize.name = g.unused_name(g.nodes[pool_id].name + ".dequantize");
  dequantize.inputs[0] = pooled_id;
  dequantize.outputs = {out};
  g.nodes[pool_id].inputs[0] = q;
  g.nodes[pool_id].outputs[0] = pooled_id;
  g.add_node(std::move(dequantize));
  return rewritten();
}

// Whether QuantizeLinear `q`'s saturation clamps what `clamp` (a Relu, or a
// Clip of constant bounds) would: Q is monotonic, so Q(clamp(v)) =
// clamp(Q(v), Q(lo), Q(hi)), which is Q(v) when Q(lo) and Q(hi) saturate.
bool clamped_by_saturation(const Graph& g, const Node& clamp, const Node& q) {
  float lo = 0.0f, hi = std::numeric_limits<float>::infinity();
  if (clamp.op_type == "Clip") {
    if (clamp.opset < 11) {
      lo = clamp.attr_float("min", -std::numeric_limits<float>::infinity());
      hi = clamp.attr_float("max", std::numeric_limits<float>::infinity());
    } else {
      for (size_t i : {1, 2}) {
        if (clamp.input(i) == kNoValue) continue;
        const Tensor* bound = constant_input(g, clamp, i);
        if (!bound || bound->dtype() != DType::kFloat32 || bound->numel() != 1) return false;
        (i == 1 ? lo : hi) = bound->data<float>()[0];
      }
      if (clamp.input(1) == kNoValue) lo = -std::numeric_limits<float>::infinity();
    }
  }
  const float scale = constant_input(g, q, 1)->data<float>()[0];
  const Tensor* zp = constant_input(g, q, 2);
  const bool s8 = zp && zp->dtype() == DType::kInt8;
  const double z = zp ? static_cast<double>(zp->to_int64_vector()[0]) : 0.0;
  const double qmin = s8 ? -128 : 0, qmax = s8 ? 127 : 255;
  if (!(scale > 0.0f)) return false;
  return std::nearbyint(lo / scale) + z <= qmin && std::nearbyint(hi / scale) + z >= qmax;
}

// A DequantizeLinear's zero points are all 0 (or absent).
bool zero_points_zero(const Graph& g, const Node& dq) {
  if (dq.input(2) == kNoValue) return true;
  const Tensor* zp = constant_input(g, dq, 2);
  if (!zp) return false;
  for (int64_t z : zp->to_int64_vector())
    if (z != 0) return false;
  return true;
}

Outcome try_fuse_conv(Graph& g, NodeId conv_id) {
  const Node& conv = g.nodes[conv_id];
  if (conv.inputs.size() < 2 || conv.outputs.size() != 1) return {};
  const Node* dx = producer_of(g, conv.inputs[0], "DequantizeLinear");
  const Node* dw = producer_of(g, conv.inputs[1], "DequantizeLinear");
  if (!dx && !dw) return {};
  if (!dx) return left("its input is not dequantized (only its weights are)");
  if (!dw) return left("its weights are not int8 behind a DequantizeLinear");
  if (!per_tensor(g, *dx)) return left(fmt::format("the input's scale or zero point {}", kOneValue));
  if (!is_8bit(g.values[dx->inputs[0]].dtype)) return left("the input is not 8-bit");
  // Weights: constant int8, zero points 0, one scale or one per output channel.
  const Tensor* w = constant_input(g, *dw, 0);
  const Tensor* w_scale = constant_input(g, *dw, 1);
  if (!w || w->dtype() != DType::kInt8 || w->rank() < 3 || !w_scale || w_scale->dtype() != DType::kFloat32)
    return left("the weights are not a constant int8 tensor with float32 scales");
  if (w_scale->numel() != 1 && !(w_scale->rank() == 1 && w_scale->dim(0) == w->dim(0) && dw->attr_int("axis", 1) == 0))
    return left("the weight scales are neither one nor one per output channel");
  if (!zero_points_zero(g, *dw)) return left("the weights' zero points are not 0");
  if (sole_reader(g, conv.inputs[1]) != conv_id) return left("its dequantized weights are read by another node too");
  const int64_t M = w->dim(0);
  const int64_t rank = static_cast<int64_t>(g.values[conv.outputs[0]].shape.size());
  // The float result per output channel m is alpha[m] * Conv_without_bias + gamma[m].
  std::vector<double> alpha(static_cast<size_t>(M), 1.0), gamma(static_cast<size_t>(M), 0.0);
  if (conv.input(2) != kNoValue) {
    const Tensor* b = constant_input(g, conv, 2);
    if (!b || b->dtype() != DType::kFloat32 || b->numel() != M)
      return left("the bias is not a float32 constant of one value per output channel");
    for (int64_t m = 0; m < M; ++m) gamma[static_cast<size_t>(m)] = b->data<float>()[m];
  }
  // The chain after the Conv: affine ops, [Relu or Clip ->] QuantizeLinear.
  std::vector<NodeId> chain;
  NodeId relu = kNoNode;  // or Clip
  NodeId next = sole_reader(g, conv.outputs[0]);
  const char* no_quantize = "no QuantizeLinear takes its result alone (after per-channel affine ops and a Relu)";
  for (;; next = sole_reader(g, g.nodes[next].outputs[0])) {
    if (next == kNoNode) return left(no_quantize);
    const Node& op = g.nodes[next];
    if (op.op_type == "QuantizeLinear") break;
    if (relu != kNoNode) return left(no_quantize);
    chain.push_back(next);
    if (op.op_type == "Relu" || op.op_type == "Clip") {
      relu = next;
    } else if (!apply_affine(g, op, g.nodes[chain.size() == 1 ? conv_id : chain[chain.size() - 2]].outputs[0], M,
                             rank, alpha, gamma)) {
      return left(fmt::format("{} before its QuantizeLinear is not an affine op of per-channel constants",
                              op.label()));
    }
  }
  const Node& q = g.nodes[next];
  if (!per_tensor(g, q)) return left(fmt::format("the output's scale or zero point {}", kOneValue));
  const float x_scale = constant_input(g, *dx, 1)->data<float>()[0];
  if (relu != kNoNode && !clamped_by_saturation(g, g.nodes[relu], q))
    return left(fmt::format("the output's zero point does not clamp what {} does", g.nodes[relu].label()));
  // Weight scales times alpha; the bias int32 at scale x_scale * w_scale.
  Tensor scales(DType::kFloat32, {M});
  Tensor bias(DType::kInt32, {M});
  for (int64_t m = 0; m < M; ++m) {
    size_t k = static_cast<size_t>(m);
    float ws = static_cast<float>(w_scale->data<float>()[w_scale->numel() == 1 ? 0 : m] * alpha[k]);
    double unit = static_cast<double>(x_scale) * ws;
    if (!std::isfinite(ws) || ws == 0.0f || unit == 0.0)
      return left("a weight scale, with the affine ops folded in, is 0 or not finite");
    double v = std::nearbyint(gamma[k] / unit);
    if (!(std::fabs(v) < 2147483647.0)) return left("the bias does not fit int32 at the product's scale");
    scales.data<float>()[m] = ws;
    bias.data<int32_t>()[m] = static_cast<int32_t>(v);
  }
  bool has_bias = false;
  for (int64_t m = 0; m < M; ++m) has_bias = has_bias || bias.data<int32_t>()[m] != 0;

  // Decided: build the QLinearConv.
  const std::string name = conv.name;
  Node fused;
  fused.name = name;
  fused.op_type = "QLinearConv";
  fused.opset = std::max<int64_t>(conv.opset, 10);
  for (const char* key : {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"})
    if (conv.has_attr(key)) fused.attributes[key] = conv.attributes.at(key);
  fused.inputs = {dx->inputs[0],
                  dx->inputs[1],
                  zero_point_of(g, *dx, name + ".x_zero_point", g.values[dx->inputs[0]].dtype),
                  dw->inputs[0],
                  g.add_constant(name + ".w_scale", std::move(scales)),
                  g.add_constant(name + ".w_zero_point", Tensor(DType::kInt8, {M})),
                  q.inputs[1],
                  zero_point_of(g, q, name + ".y_zero_point", DType::kUInt8)};
  if (has_bias) fused.inputs.push_back(g.add_constant(name + ".bias_int32", std::move(bias)));
  fused.outputs = {g.nodes[next].outputs[0]};
  // Dead: the Conv, the chain and the QuantizeLinear (the DequantizeLinears
  // nothing reads any more go at the end of the pass).
  chain.push_back(conv_id);
  chain.push_back(next);
  for (NodeId dead : chain) g.nodes[dead].op_type.clear();
  g.add_node(std::move(fused));
  return rewritten();
}

Outcome try_fuse_add(Graph& g, NodeId add_id) {
  const Node& add = g.nodes[add_id];
  if (add.inputs.size() != 2 || add.outputs.size() != 1 || add.inputs[0] == add.inputs[1]) return {};
  const Node* da = producer_of(g, add.inputs[0], "DequantizeLinear");
  const Node* db = producer_of(g, add.inputs[1], "DequantizeLinear");
  if (!da || !db) return {};  // a float Add, or a bias after a dequantized product
  NodeId next = sole_reader(g, add.outputs[0]);
  NodeId relu = kNoNode;  // or Clip, which the QuantizeLinear's saturation must make redundant
  if (next != kNoNode && (g.nodes[next].op_type == "Relu" || g.nodes[next].op_type == "Clip")) {
    relu = next;
    next = sole_reader(g, g.nodes[relu].outputs[0]);
  }
  if (next == kNoNode || g.nodes[next].op_type != "QuantizeLinear")
    return left("no QuantizeLinear takes the sum alone (after a Relu)");
  const Node& q = g.nodes[next];
  if (!per_tensor(g, *da) || !per_tensor(g, *db) || !per_tensor(g, q) || q.outputs.size() != 1)
    return left(fmt::format("a scale or zero point {}", kOneValue));
  if (relu != kNoNode && !clamped_by_saturation(g, g.nodes[relu], q))
    return left(fmt::format("the output's zero point does not clamp what {} does", g.nodes[relu].label()));
  const Value &a = g.values[da->inputs[0]], &b = g.values[db->inputs[0]], &sum = g.values[add.outputs[0]];
  if (!is_8bit(a.dtype) || !is_8bit(b.dtype) || !is_8bit(g.values[q.outputs[0]].dtype) ||
      sum.dtype != DType::kFloat32)
    return left("its inputs or the QuantizeLinear's output are not 8-bit");
  if (!sum.shape_is_static() || a.shape != sum.shape || b.shape != sum.shape)
    return left("its inputs broadcast (QLinearAdd here takes equal shapes)");

  // Decided: build the QLinearAdd.
  const std::string name = add.name;
  Node fused;
  fused.name = name;
  fused.op_type = "QLinearAdd";
  fused.domain = "com.microsoft";
  fused.opset = 1;
  fused.inputs = {da->inputs[0], da->inputs[1], zero_point_of(g, *da, name + ".a_zero_point", a.dtype),
                  db->inputs[0], db->inputs[1], zero_point_of(g, *db, name + ".b_zero_point", b.dtype),
                  q.inputs[1],   zero_point_of(g, q, name + ".c_zero_point", DType::kUInt8)};
  fused.outputs = {q.outputs[0]};
  g.nodes[add_id].op_type.clear();
  if (relu != kNoNode) g.nodes[relu].op_type.clear();
  g.nodes[next].op_type.clear();
  g.add_node(std::move(fused));
  return rewritten();
}

// MatMul, or Gemm (A not transposed, alpha 1; B transposed or not; C a
// constant vector of N or absent).
Outcome try_fuse_matmul(Graph& g, NodeId mm_id) {
  const Node& mm = g.nodes[mm_id];
  const bool gemm = mm.op_type == "Gemm";
  if (mm.inputs.size() != (gemm && mm.input(2) != kNoValue ? 3u : 2u) || mm.outputs.size() != 1) return {};
  const Node* da = producer_of(g, mm.inputs[0], "DequantizeLinear");
  const Node* dw = producer_of(g, mm.inputs[1], "DequantizeLinear");
  if (!da && !dw) return {};
  if (!da) return left("its input A is not dequantized (only B is)");
  if (!dw) return left("its matrix B is not int8 behind a DequantizeLinear");
  if (!per_tensor(g, *da)) return left(fmt::format("A's scale or zero point {}", kOneValue));
  if (!is_8bit(g.values[da->inputs[0]].dtype)) return left("A is not 8-bit");
  const Tensor* w = constant_input(g, *dw, 0);
  const Tensor* w_scale = constant_input(g, *dw, 1);
  if (!w || w->dtype() != DType::kInt8 || w->rank() != 2 || !w_scale || w_scale->dtype() != DType::kFloat32)
    return left("B is not a constant int8 matrix with float32 scales");
  if (!zero_points_zero(g, *dw)) return left("B's zero points are not 0");
  const bool trans_b = gemm && mm.attr_int("transB", 0) != 0;
  if (gemm && (mm.attr_int("transA", 0) != 0 || mm.attr_float("alpha", 1.0f) != 1.0f))
    return left("A is transposed or alpha is not 1");
  const int64_t N = w->dim(trans_b ? 0 : 1), K = w->dim(trans_b ? 1 : 0);
  const int64_t axis = dw->attr_int("axis", 1), column_axis = trans_b ? 0 : 1;
  if (w_scale->numel() != 1 && !(w_scale->rank() == 1 && w_scale->dim(0) == N && (axis == column_axis ||
                                                                                  axis == column_axis - 2)))
    return left("B's scales are neither one nor one per column");
  const Value& out = g.values[mm.outputs[0]];
  if (out.dtype != DType::kFloat32 || !out.has_shape) return left("its output is not float32 of a known shape");
  std::optional<Tensor> bias;  // beta * C
  if (gemm && mm.input(2) != kNoValue) {
    const Tensor* c = constant_input(g, mm, 2);
    if (!c || c->dtype() != DType::kFloat32 || (c->numel() != N && c->numel() != 1) || c->rank() > 2 ||
        (c->rank() == 2 && c->dim(0) != 1))
      return left("C is not a float32 constant of one value or one per column");
    const float beta = mm.attr_float("beta", 1.0f);
    bias = Tensor(DType::kFloat32, {c->numel()});
    for (int64_t n = 0; n < c->numel(); ++n) bias->data<float>()[n] = beta * c->data<float>()[n];
  }
  // The product's scale per column: the float chain's a_scale * w_scale.
  const float a_scale = constant_input(g, *da, 1)->data<float>()[0];
  Tensor scales(DType::kFloat32, w_scale->numel() == 1 ? Shape{} : Shape{N});
  for (int64_t n = 0; n < scales.numel(); ++n) {
    float s = a_scale * w_scale->data<float>()[n];
    if (!std::isfinite(s) || s == 0.0f) return left("A's scale times a scale of B is 0 or not finite");
    scales.data<float>()[n] = s;
  }

  // Decided: MatMulInteger -> Cast -> Mul [-> Add of beta * C], the last
  // one the MatMul or Gemm node itself; B as [K, N].
  const std::string name = mm.name;
  ValueId b = dw->inputs[0];
  if (trans_b) {
    Tensor wt(DType::kInt8, {K, N});
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < K; ++k) wt.data<int8_t>()[k * N + n] = w->data<int8_t>()[n * K + k];
    b = g.add_constant(name + ".b_transposed", std::move(wt));
  }
  const ValueId out_id = mm.outputs[0];
  ValueId product = add_value_like(g, out_id, ".int32", DType::kInt32);
  ValueId as_float = add_value_like(g, out_id, ".float", DType::kFloat32);
  Node integer;
  integer.name = g.unused_name(name + ".integer");
  integer.op_type = "MatMulInteger";
  integer.opset = std::max<int64_t>(mm.opset, 10);
  integer.inputs = {da->inputs[0], b, zero_point_of(g, *da, name + ".a_zero_point", g.values[da->inputs[0]].dtype)};
  integer.outputs = {product};
  Node cast;
  cast.name = g.unused_name(name + ".cast");
  cast.op_type = "Cast";
  cast.opset = integer.opset;
  cast.attributes["to"].kind = Attribute::Kind::kInt;
  cast.attributes["to"].i = 1;  // FLOAT
  cast.inputs = {product};
  cast.outputs = {as_float};
  ValueId scale = g.add_constant(name + ".scale", std::move(scales));
  Node mul;
  mul.name = g.unused_name(name + ".scale");
  mul.op_type = "Mul";
  mul.opset = integer.opset;
  mul.inputs = {as_float, scale};
  if (bias) {
    ValueId scaled = add_value_like(g, out_id, ".scaled", DType::kFloat32);
    ValueId c = g.add_constant(name + ".bias", std::move(*bias));
    mul.outputs = {scaled};
    Node& add = g.nodes[mm_id];
    add.op_type = "Add";
    add.inputs = {scaled, c};
    add.attributes.clear();
    add.opset = integer.opset;
    g.add_node(std::move(mul));
  } else {
    mul.name = name;
    mul.outputs = g.nodes[mm_id].outputs;
    g.nodes[mm_id] = std::move(mul);
  }
  g.add_node(std::move(integer));
  g.add_node(std::move(cast));
  return rewritten();
}

}  // namespace

int fuse_quantized_ops(Graph& graph) {
  // Each rewrite in turn over the whole graph, finalized between them (the
  // Convs read the DequantizeLinears the pools' swaps add; the Adds and
  // MatMuls read what the fused Convs left). What each leaves in float32,
  // and why, is kept for `run -v` (Graph::float_chains).
  const std::vector<std::pair<const char*, Outcome (*)(Graph&, NodeId)>> rewrites = {
      {"MaxPool", try_swap_max_pool}, {"Conv", try_fuse_conv},     {"Add", try_fuse_add},
      {"MatMul", try_fuse_matmul},    {"Gemm", try_fuse_matmul}};
  int n_fused = 0;
  std::vector<std::string> left_in_float;
  for (const auto& [op_type, rewrite] : rewrites) {
    int n = 0;
    for (size_t id = 0; id < graph.nodes.size(); ++id) {
      if (graph.nodes[id].op_type != op_type) continue;
      std::string label = graph.nodes[id].label();
      Outcome outcome = rewrite(graph, static_cast<NodeId>(id));
      n += outcome.fused;
      if (!outcome.why.empty()) left_in_float.push_back(label + ": " + outcome.why);
    }
    if (n) graph.finalize();
    n_fused += n;
  }
  for (const Node& node : graph.nodes)
    if (node.op_type == "ConvTranspose")
      for (ValueId v : node.inputs)
        if (producer_of(graph, v, "DequantizeLinear")) {
          left_in_float.push_back(node.label() + ": no int8 form of ConvTranspose");
          break;
        }
  graph.float_chains = std::move(left_in_float);
  if (n_fused == 0) return 0;
  // A DequantizeLinear read by fused ops only is read by nothing now.
  std::vector<int> reads(graph.values.size(), 0);
  for (const Node& node : graph.nodes)
    if (!node.op_type.empty())
      for (ValueId v : node.inputs)
        if (v != kNoValue) ++reads[v];
  for (Node& node : graph.nodes)
    if (node.op_type == "DequantizeLinear" && reads[node.outputs[0]] == 0 && !graph.is_graph_output(node.outputs[0]))
      node.op_type.clear();
  graph.finalize();
  return n_fused;
}

}  // namespace hetsched
