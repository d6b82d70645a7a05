// Per-node cost annotations: FLOPs and bytes moved, from static shapes, and
// the number format of the arithmetic.
#include <numeric>

#include "hetsched/graph.h"

namespace hetsched {

namespace {

// In double: a model may declare shapes whose element count overflows int64.
double static_numel(const Shape& shape) {
  return std::accumulate(shape.begin(), shape.end(), 1.0,
                         [](double n, int64_t d) { return n * static_cast<double>(d); });
}

double value_numel(const Value& v) { return v.shape_is_static() ? static_numel(v.shape) : 0; }

}  // namespace

double Value::nbytes() const {
  if (!shape_is_static()) return 0;
  return static_numel(shape) * static_cast<double>(dtype_size(dtype));
}

namespace {

// FLOPs of one node; multiply-adds count as 2. Ops not listed count one FLOP
// per output element (elementwise), shape ops none.
double node_flops(const Graph& g, const Node& n) {
  auto in = [&](size_t i) -> const Value* { return n.input(i) == kNoValue ? nullptr : &g.values[n.input(i)]; };
  const Value* out = n.outputs.empty() || n.outputs[0] == kNoValue ? nullptr : &g.values[n.outputs[0]];
  double out_numel = out ? value_numel(*out) : 0;
  const std::string& op = n.op_type;
  // The integer convolutions and matrix products count their multiply-adds
  // like the float ones (their weights or B at another input).
  if (op == "Conv" || op == "ConvTranspose" || op == "ConvInteger" || op == "QLinearConv") {
    const Value* w = in(op == "QLinearConv" ? 3 : 1);
    if (!w || !w->shape_is_static() || w->shape.size() < 2) return 0;
    // Conv: each output element is a dot product of Cin/g * prod(k) terms.
    // ConvTranspose: each input element scatters into Cout/g * prod(k).
    double kernel = std::accumulate(w->shape.begin() + 2, w->shape.end(), 1.0, std::multiplies<>());
    if (op != "ConvTranspose") return 2.0 * out_numel * static_cast<double>(w->shape[1]) * kernel;
    const Value* x = in(0);
    return x ? 2.0 * value_numel(*x) * static_cast<double>(w->shape[1]) * kernel : 0;
  }
  if (op == "MatMul" || op == "Gemm" || op == "MatMulInteger" || op == "QLinearMatMul") {
    const Value* a = in(0);
    if (!a || !a->shape_is_static() || a->shape.empty()) return 0;
    bool trans_a = op == "Gemm" && n.attr_int("transA", 0) != 0;
    double k = static_cast<double>(trans_a ? a->shape[0] : a->shape.back());
    return 2.0 * out_numel * k;
  }
  if (op == "Shape" || op == "Size" || op == "Reshape" || op == "Flatten" || op == "Squeeze" ||
      op == "Unsqueeze" || op == "Identity" || op == "Constant" || op == "Transpose" || op == "Concat" ||
      op == "Split" || op == "Slice" || op == "Gather" || op == "Expand" || op == "Tile" || op == "Pad")
    return 0;
  if (op == "MaxPool" || op == "AveragePool") {
    auto k = n.attr_ints("kernel_shape");
    return out_numel * std::accumulate(k.begin(), k.end(), 1.0, std::multiplies<>());
  }
  if (op.rfind("Reduce", 0) == 0 || op == "GlobalAveragePool" || op == "GlobalMaxPool") {
    const Value* x = in(0);
    return x ? value_numel(*x) : 0;
  }
  if (op == "Softmax" || op == "LogSoftmax" || op == "LayerNormalization" || op == "BatchNormalization")
    return 5.0 * out_numel;
  return out_numel;
}

// NodeCost::precision. The quantized ops compute in integers (or, for the
// conversions, at the edge of integer work); any other op in the type of its
// first input (its data), or of its first output when it has no input;
// Shape and Size none.
std::string node_precision(const Graph& g, const Node& n) {
  static const char* const kInt8Ops[] = {"QLinearConv",   "QLinearMatMul",    "QLinearAdd",
                                         "ConvInteger",   "MatMulInteger",    "QuantizeLinear",
                                         "DequantizeLinear", "DynamicQuantizeLinear"};
  for (const char* op : kInt8Ops)
    if (n.op_type == op) return "int8";
  if (n.op_type == "Shape" || n.op_type == "Size") return "";  // they read no element
  ValueId data = !n.inputs.empty() ? n.inputs[0] : !n.outputs.empty() ? n.outputs[0] : kNoValue;
  if (data == kNoValue) return "";
  switch (g.values[data].dtype) {
    case DType::kInt8:
    case DType::kUInt8: return "int8";
    case DType::kFloat32:
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kFloat64: return dtype_name(g.values[data].dtype);
    default: return "";
  }
}

}  // namespace

void Graph::annotate_costs() {
  for (Node& n : nodes) {
    n.cost = {};
    n.cost.flops = node_flops(*this, n);
    n.cost.precision = node_precision(*this, n);
    for (ValueId v : n.inputs)
      if (v != kNoValue) n.cost.bytes_read += values[v].nbytes();
    for (ValueId v : n.outputs)
      if (v != kNoValue) n.cost.bytes_written += values[v].nbytes();
  }
}

double Graph::total_flops() const {
  double total = 0;
  for (const Node& n : nodes) total += n.cost.flops;
  return total;
}

}  // namespace hetsched
