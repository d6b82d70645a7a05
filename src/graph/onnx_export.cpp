#include "graph/onnx_export.h"

#include <cmath>

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include "graph/tensor_proto.h"

namespace hetsched {

namespace {

// Constants above this many elements are weights, not shape arithmetic.
constexpr int64_t kLargeConstant = 4096;

void write_type(const Value& v, onnx::ValueInfoProto* info) {
  info->set_name(v.name);
  auto* tt = info->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(dtype_to_onnx(v.dtype));
  if (!v.has_shape) return;
  auto* shape = tt->mutable_shape();
  for (size_t i = 0; i < v.shape.size(); ++i) {
    auto* dim = shape->add_dim();
    if (v.shape[i] >= 0) dim->set_dim_value(v.shape[i]);
    else if (i < v.dim_params.size() && !v.dim_params[i].empty()) dim->set_dim_param(v.dim_params[i]);
  }
}

void write_attribute(const std::string& name, const Attribute& a, onnx::AttributeProto* out) {
  out->set_name(name);
  switch (a.kind) {
    case Attribute::Kind::kInt: out->set_type(onnx::AttributeProto::INT); out->set_i(a.i); break;
    case Attribute::Kind::kFloat: out->set_type(onnx::AttributeProto::FLOAT); out->set_f(a.f); break;
    case Attribute::Kind::kString: out->set_type(onnx::AttributeProto::STRING); out->set_s(a.s); break;
    case Attribute::Kind::kInts:
      out->set_type(onnx::AttributeProto::INTS);
      for (int64_t v : a.ints) out->add_ints(v);
      break;
    case Attribute::Kind::kFloats:
      out->set_type(onnx::AttributeProto::FLOATS);
      for (float v : a.floats) out->add_floats(v);
      break;
    case Attribute::Kind::kStrings:
      out->set_type(onnx::AttributeProto::STRINGS);
      for (const auto& v : a.strings) out->add_strings(v);
      break;
    case Attribute::Kind::kTensor:
      out->set_type(onnx::AttributeProto::TENSOR);
      *out->mutable_t() = tensor_to_proto(a.t, "");
      break;
    case Attribute::Kind::kGraph:
      out->set_type(onnx::AttributeProto::GRAPH);
      if (a.onnx.empty() || !out->mutable_g()->ParseFromString(a.onnx))
        throw Error(ErrorCode::kUnsupported, "attribute '" + name + "': a list of graphs cannot be exported");
      break;
  }
}

// A node of one output, named after the fused node `base` with `suffix`:
// how a fused node is written back as the ops it was made of.
void add_unfused_node(onnx::GraphProto* g, const std::string& base, const std::string& suffix, const std::string& op,
                      const std::vector<std::string>& inputs, const std::string& output) {
  auto* np = g->add_node();
  np->set_name(base + suffix);
  np->set_op_type(op);
  for (const auto& i : inputs) np->add_input(i);
  np->add_output(output);
}

// A Gelu node (approximate "none", which fuse_gelu makes) as the ops an
// opset before 20 has: x / sqrt(2) -> Erf -> + 1 -> x * that -> * 0.5, its
// constants and intermediates named after the node.
void write_gelu_as_erf(const Graph& graph, const Node& n, onnx::GraphProto* g) {
  const Value& x = graph.values[n.inputs[0]];
  const std::string& base = n.name;
  auto constant = [&](const std::string& suffix, double v) {
    Tensor t(x.dtype, {});
    if (x.dtype == DType::kFloat64) t.data<double>()[0] = v;
    else t.data<float>()[0] = static_cast<float>(v);
    *g->add_initializer() = tensor_to_proto(t, base + suffix);
    return base + suffix;
  };
  auto node = [&](const std::string& op, const std::string& suffix, const std::vector<std::string>& inputs,
                  const std::string& output) { add_unfused_node(g, base, suffix, op, inputs, output); };
  const std::string y = graph.values[n.outputs[0]].name;
  node("Div", "/div", {x.name, constant("/sqrt2", std::sqrt(2.0))}, base + "/scaled");
  node("Erf", "/erf", {base + "/scaled"}, base + "/erf_out");
  node("Add", "/add", {base + "/erf_out", constant("/one", 1.0)}, base + "/one_plus");
  node("Mul", "/mul", {x.name, base + "/one_plus"}, base + "/product");
  node("Mul", "/half", {base + "/product", constant("/half_factor", 0.5)}, y);
}

// A QLinearAdd (com.microsoft, which fuse_quantized_ops makes) as the
// default-domain ops it fused: DequantizeLinear of A and of B, Add,
// QuantizeLinear; intermediates named after the node.
void write_qlinear_add_as_qdq(const Graph& graph, const Node& n, onnx::GraphProto* g) {
  auto name = [&](size_t i) { return n.inputs[i] == kNoValue ? std::string() : graph.values[n.inputs[i]].name; };
  const std::string& base = n.name;
  auto node = [&](const std::string& op, const std::string& suffix, const std::vector<std::string>& inputs,
                  const std::string& output) { add_unfused_node(g, base, suffix, op, inputs, output); };
  node("DequantizeLinear", "/dequantize_a", {name(0), name(1), name(2)}, base + "/a");
  node("DequantizeLinear", "/dequantize_b", {name(3), name(4), name(5)}, base + "/b");
  node("Add", "/add", {base + "/a", base + "/b"}, base + "/sum");
  node("QuantizeLinear", "/quantize", {base + "/sum", name(6), name(7)}, graph.values[n.outputs[0]].name);
}

}  // namespace

onnx::ModelProto graph_to_model(const Graph& graph, bool large_constants_as_inputs) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("hetsched");
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(graph.nodes.empty() ? 17 : graph.nodes.front().opset);
  auto* g = model.mutable_graph();
  g->set_name(graph.name);
  for (const Value& v : graph.values) {
    if (!v.is_constant()) continue;
    if (large_constants_as_inputs && v.initializer->numel() > kLargeConstant) write_type(v, g->add_input());
    else *g->add_initializer() = tensor_to_proto(*v.initializer, v.name);
  }
  for (ValueId id : graph.inputs) write_type(graph.values[id], g->add_input());
  for (ValueId id : graph.outputs) write_type(graph.values[id], g->add_output());
  for (const Value& v : graph.values)
    if (!v.is_constant() && v.producer != kNoNode && v.dtype != DType::kUndefined) write_type(v, g->add_value_info());
  const int64_t opset_version = opset->version();
  for (const Node& n : graph.nodes) {
    if (n.op_type == "Gelu" && n.domain.empty() && opset_version < 20) {
      write_gelu_as_erf(graph, n, g);
      continue;
    }
    if (n.op_type == "QLinearAdd" && n.domain == "com.microsoft") {
      write_qlinear_add_as_qdq(graph, n, g);
      continue;
    }
    auto* np = g->add_node();
    np->set_name(n.name);
    np->set_op_type(n.op_type);
    np->set_domain(n.domain);
    // Not the implicit inputs: the subgraphs name what they read.
    for (size_t i = 0; i + static_cast<size_t>(n.n_implicit_inputs) < n.inputs.size(); ++i)
      np->add_input(n.inputs[i] == kNoValue ? "" : graph.values[n.inputs[i]].name);
    for (ValueId v : n.outputs) np->add_output(v == kNoValue ? "" : graph.values[v].name);
    for (const auto& [name, a] : n.attributes) write_attribute(name, a, np->add_attribute());
  }
  return model;
}

void refine_shapes(Graph& graph) {
  bool all_static = true;
  for (const Value& v : graph.values) all_static = all_static && (v.is_constant() || v.shape_is_static());
  if (all_static) return;
  // Weights as typed inputs: inference reads their shapes, not their data
  // (copying a model's weights into the proto cost most of a compile).
  onnx::ModelProto model = graph_to_model(graph, /*large_constants_as_inputs=*/true);
  // Unknown shapes are cleared so inference may fill them, not merge with them.
  for (auto& vi : *model.mutable_graph()->mutable_value_info()) {
    const Value& v = graph.values[graph.find_value(vi.name())];
    if (!v.shape_is_static()) vi.mutable_type()->mutable_tensor_type()->clear_shape();
  }
  try {
    onnx::ShapeInferenceOptions options(/*check_type=*/false, /*error_mode=*/0, /*enable_data_propagation=*/true);
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::exception&) {
    return;  // the shapes stay as the load-time inference left them
  }
  auto refine = [&](const onnx::ValueInfoProto& vi) {
    ValueId id = graph.find_value(vi.name());
    if (id == kNoValue || graph.values[id].shape_is_static() || !vi.type().has_tensor_type()) return;
    const auto& tt = vi.type().tensor_type();
    if (!tt.has_shape()) return;
    Value& v = graph.values[id];
    Shape shape;
    std::vector<std::string> params;
    for (const auto& dim : tt.shape().dim()) {
      shape.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
      params.push_back(dim.has_dim_param() ? dim.dim_param() : "");
    }
    v.has_shape = true;
    v.shape = shape;
    v.dim_params = params;
    if (v.dtype == DType::kUndefined) v.dtype = dtype_from_onnx(tt.elem_type());
  };
  for (const auto& vi : model.graph().value_info()) refine(vi);
  for (const auto& vi : model.graph().output()) refine(vi);
}

}  // namespace hetsched
