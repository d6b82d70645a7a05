#include "graph/onnx_import.h"

#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <queue>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include "graph/half_as_float.h"
#include "graph/tensor_proto.h"
#include "kernels/kernel.h"

namespace hetsched {

namespace fs = std::filesystem;

// Models of opsets 1..6 load when every op they use is defined as in opset
// 7, from which on the kernels implement each op's versions
// (check_ops_known).
constexpr int64_t kMinOpset = 1;
constexpr int64_t kKernelMinOpset = 7;
constexpr int64_t kMaxOpset = 18;

namespace {

// ONNX's messages span several lines; errors here are one line.
std::string one_line(std::string text) {
  for (char& c : text)
    if (c == '\n' || c == '\r') c = ' ';
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

bool is_default_domain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

// Pass 1.
int64_t default_opset(const onnx::ModelProto& model) {
  int64_t opset = -1;
  for (const auto& imp : model.opset_import())
    if (is_default_domain(imp.domain())) opset = imp.version();
  if (opset < 0) {
    for (const auto& imp : model.opset_import())
      throw Error(ErrorCode::kUnsupported,
                  fmt::format("domain '{}' is not supported (only the default ONNX domain)", imp.domain()));
    throw Error(ErrorCode::kInvalidModel, "model imports no opset for the default ONNX domain");
  }
  if (opset < kMinOpset || opset > kMaxOpset)
    throw Error(ErrorCode::kUnsupported,
                fmt::format("opset {} is not supported (supported: {}..{})", opset, kMinOpset, kMaxOpset));
  return opset;
}

std::string node_label(const onnx::NodeProto& node, int index) {
  return fmt::format("{} '{}'", node.op_type(), node.name().empty() ? fmt::format("#{}", index) : node.name());
}

// Pass 2, subgraphs (If's branches, Loop's body) included.
void check_ops_known(const onnx::GraphProto& graph, int64_t opset) {
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto& node = graph.node(i);
    for (const auto& a : node.attribute())
      if (a.type() == onnx::AttributeProto::GRAPH) check_ops_known(a.g(), opset);
    if (!is_default_domain(node.domain()))
      throw Error(ErrorCode::kUnsupported,
                  fmt::format("node {}: domain '{}' is not supported (only the default ONNX domain)",
                              node_label(node, i), node.domain()));
    const auto* schema = onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(opset), "");
    if (kernels::find_reference_kernel(node.op_type())) {
      if (opset >= kKernelMinOpset || !schema) continue;
      // An op defined before opset 7 as it is in opset 7 (Elu, Not,
      // GlobalAveragePool) runs as such; one that changed (the binary ops'
      // legacy broadcast attribute, Reshape's shape attribute) does not.
      const auto* at_min = onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(kKernelMinOpset), "");
      if (at_min && at_min->SinceVersion() == schema->SinceVersion()) continue;
      throw Error(ErrorCode::kUnsupported,
                  fmt::format("node {}: op {} of opset {} differs from its opset {} form (supported: opsets {}..{}, "
                              "and older ones for ops unchanged since)",
                              node_label(node, i), node.op_type(), opset, kKernelMinOpset, kKernelMinOpset,
                              kMaxOpset));
    }
    if (!schema)
      throw Error(ErrorCode::kUnsupported, fmt::format("node {}: unknown op '{}' (not in ONNX opset {})",
                                                       node_label(node, i), node.op_type(), opset));
    throw Error(ErrorCode::kUnsupported, fmt::format("node {}: op {} (opset {}) is not supported",
                                                     node_label(node, i), node.op_type(), opset));
  }
}

// Pass 3: every input and graph output defined; nodes reordered
// topologically (ONNX requires sorted nodes; we accept any acyclic order and
// report cycles clearly).
void check_structure_and_sort(onnx::GraphProto& graph) {
  std::set<std::string> defined;
  for (const auto& in : graph.input()) defined.insert(in.name());
  for (const auto& init : graph.initializer()) defined.insert(init.name());
  std::map<std::string, int> producer;
  for (int i = 0; i < graph.node_size(); ++i)
    for (const auto& out : graph.node(i).output()) {
      if (out.empty()) continue;
      if (producer.count(out) || defined.count(out))
        throw Error(ErrorCode::kInvalidModel, fmt::format("node {}: output '{}' is already defined elsewhere",
                                                          node_label(graph.node(i), i), out));
      producer[out] = i;
    }
  for (const auto& out : graph.output())
    if (!defined.count(out.name()) && !producer.count(out.name()))
      throw Error(ErrorCode::kInvalidModel,
                  fmt::format("graph output '{}' is not a graph input, an initializer or any node's output",
                              out.name()));
  int n = graph.node_size();
  std::vector<std::vector<int>> succ(n);
  std::vector<int> pending(n, 0);
  for (int i = 0; i < n; ++i) {
    std::set<int> preds;
    for (const auto& in : graph.node(i).input()) {
      if (in.empty() || defined.count(in)) continue;
      auto it = producer.find(in);
      if (it == producer.end())
        throw Error(ErrorCode::kInvalidModel,
                    fmt::format("node {}: input '{}' is not a graph input, an initializer or any node's output "
                                "(missing initializer?)",
                                node_label(graph.node(i), i), in));
      preds.insert(it->second);
    }
    pending[i] = static_cast<int>(preds.size());
    for (int p : preds) succ[p].push_back(i);
  }
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;
  for (int i = 0; i < n; ++i)
    if (pending[i] == 0) ready.push(i);
  std::vector<int> order;
  while (!ready.empty()) {
    int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int s : succ[i])
      if (--pending[s] == 0) ready.push(s);
  }
  if (static_cast<int>(order.size()) != n) {
    for (int i = 0; i < n; ++i)
      if (pending[i] > 0)
        throw Error(ErrorCode::kInvalidModel,
                    fmt::format("graph has a cycle through node {}", node_label(graph.node(i), i)));
  }
  bool sorted = true;
  for (int i = 0; i < n; ++i) sorted = sorted && order[i] == i;
  if (sorted) return;
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (int i : order) *nodes.Add() = graph.node(i);
  graph.mutable_node()->Swap(&nodes);
}

// Pass 3b: external data is read (and its path checked) before ONNX's
// checker, which would look for the files relative to the working folder.
// Then every tensor's data is checked against its dtype and dims: the
// checker and shape inference read it on trust (a raw_data shorter than its
// dims say is read past its end).
void inline_all_external_data(onnx::GraphProto& graph, const fs::path& model_dir) {
  for (auto& init : *graph.mutable_initializer()) {
    std::string context = fmt::format("initializer '{}'", init.name());
    inline_external_data(init, model_dir, context);
    check_tensor_data(init, context);
  }
  for (int i = 0; i < graph.node_size(); ++i)
    for (auto& attr : *graph.mutable_node(i)->mutable_attribute())
      if (attr.has_t()) {
        std::string context = fmt::format("node {} attribute '{}'", node_label(graph.node(i), i), attr.name());
        inline_external_data(*attr.mutable_t(), model_dir, context);
        check_tensor_data(attr.t(), context);
      }
}

// Pass 3c: attributes ONNX's shape inference divides by or sizes with
// before any check of its own (a zero stride there is a division by zero,
// not an error; DepthToSpace divides a dim by blocksize squared, which is 0
// for a blocksize of 2^32); the kernels' checks come later, at pass 6.
void check_attributes_for_inference(const onnx::GraphProto& graph) {
  static const std::set<std::string> conv_pool = {"Conv", "ConvTranspose", "MaxPool", "AveragePool", "LpPool"};
  static const std::set<std::string> block_ops = {"DepthToSpace", "SpaceToDepth"};
  constexpr int64_t kMaxBlocksize = std::numeric_limits<int32_t>::max();
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto& node = graph.node(i);
    for (const auto& attr : node.attribute()) {
      if (conv_pool.count(node.op_type()) &&
          (attr.name() == "strides" || attr.name() == "dilations" || attr.name() == "kernel_shape")) {
        for (int64_t v : attr.ints())
          if (v <= 0)
            throw Error(ErrorCode::kInvalidModel, fmt::format("node {}: attribute '{}' must be positive, got {}",
                                                              node_label(node, i), attr.name(), v));
      }
      if (block_ops.count(node.op_type()) && attr.name() == "blocksize" && (attr.i() <= 0 || attr.i() > kMaxBlocksize))
        throw Error(ErrorCode::kInvalidModel,
                    fmt::format("node {}: attribute 'blocksize' must be between 1 and {}, got {}", node_label(node, i),
                                kMaxBlocksize, attr.i()));
    }
  }
}

// Pass 3d: a dim of a declared type (graph inputs, outputs, value_info) is
// unknown (no value, or a dim_param) or a size >= 0. ONNX's checker lets a
// negative value through, and shape inference then indexes with it
// (GatherND reads the data's dims from its indices' last dim): -1, which
// some exporters write for "unknown", becomes unknown; any other negative
// value is an error.
void check_declared_dims(onnx::GraphProto& graph) {
  auto check = [](onnx::ValueInfoProto& info, const char* what) {
    if (!info.type().has_tensor_type() || !info.type().tensor_type().has_shape()) return;
    auto* dims = info.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim();
    for (int d = 0; d < dims->size(); ++d) {
      auto* dim = dims->Mutable(d);
      if (!dim->has_dim_value() || dim->dim_value() >= 0) continue;
      if (dim->dim_value() == -1) {
        dim->clear_dim_value();
        continue;
      }
      throw Error(ErrorCode::kInvalidModel,
                  fmt::format("{} '{}': dim {} is {}, expected a size >= 0 (an unknown dim has no value, a "
                              "dim_param or -1)",
                              what, info.name(), d, dim->dim_value()));
    }
  };
  for (auto& info : *graph.mutable_input()) check(info, "graph input");
  for (auto& info : *graph.mutable_output()) check(info, "graph output");
  for (auto& info : *graph.mutable_value_info()) check(info, "value_info");
}

// Pass 5b: ONNX's shape inference (1.12) trusts what it should check, and a
// malformed model then crashes it instead of failing it. Two of its
// functions are wrapped, once per process, so that they fail (an error) or
// skip instead. The checks need what inference itself computes (a W or an
// input may be computed by an earlier node), so they cannot run before it.
// The registry holds its schemas as mutable objects; Schema() only hands
// them out const.
//  - Conv and ConvTranspose read W's dims and attribute arrays sized by X's
//    rank without comparing the two ranks, which the spec says are equal.
//  - Data propagation (Shape, Gather, Concat... computing shape values)
//    reads its inputs' types without checking that they exist; they do not
//    when an earlier node's inference failed, as inference goes on past a
//    failed node to report every error at the end.
void guard_onnx_inference() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (const char* op : {"Conv", "ConvTranspose"})
      for (int version = 1; version <= static_cast<int>(kMaxOpset); ++version) {
        const onnx::OpSchema* found = onnx::OpSchemaRegistry::Schema(op, version, "");
        if (!found || found->SinceVersion() != version || !found->GetTypeAndShapeInferenceFunction()) continue;
        auto* schema = const_cast<onnx::OpSchema*>(found);
        onnx::InferenceFunction inner = schema->GetTypeAndShapeInferenceFunction();
        schema->TypeAndShapeInferenceFunction([inner](onnx::InferenceContext& ctx) {
          if (ctx.getNumInputs() >= 2 && onnx::hasInputShape(ctx, 0) && onnx::hasInputShape(ctx, 1)) {
            int x_rank = onnx::getInputShape(ctx, 0).dim_size();
            int w_rank = onnx::getInputShape(ctx, 1).dim_size();
            if (w_rank != x_rank)
              fail_shape_inference("W has rank ", w_rank, ", X rank ", x_rank, ": they must be equal");
          }
          inner(ctx);
        });
      }
    for (const onnx::OpSchema& listed : onnx::OpSchemaRegistry::get_all_schemas_with_history()) {
      if (!listed.GetDataPropagationFunction()) continue;
      auto* schema = const_cast<onnx::OpSchema*>(
          onnx::OpSchemaRegistry::Schema(listed.Name(), listed.SinceVersion(), listed.domain()));
      if (!schema || schema->SinceVersion() != listed.SinceVersion()) continue;
      onnx::DataPropagationFunction inner = schema->GetDataPropagationFunction();
      schema->PartialDataPropagationFunction([inner](onnx::DataPropagationContext& ctx) {
        for (size_t i = 0; i < ctx.getNumInputs(); ++i)
          if (!ctx.getInputType(i)) return;  // nothing known to propagate
        inner(ctx);
      });
    }
  });
}

// Pass 5a.
void apply_shape_overrides(onnx::GraphProto& graph, const std::map<std::string, Shape>& overrides) {
  std::set<std::string> initializers;
  for (const auto& init : graph.initializer()) initializers.insert(init.name());
  for (const auto& [name, shape] : overrides) {
    onnx::ValueInfoProto* input = nullptr;
    std::string known;
    for (auto& in : *graph.mutable_input()) {
      if (initializers.count(in.name())) continue;
      known += (known.empty() ? "" : ", ") + in.name();
      if (in.name() == name) input = &in;
    }
    if (!input)
      throw Error(ErrorCode::kUsage, fmt::format("--shape {}: the model has no input '{}' (inputs: {})", name, name, known));
    auto* tensor_type = input->mutable_type()->mutable_tensor_type();
    auto* dims = tensor_type->mutable_shape()->mutable_dim();
    if (tensor_type->has_shape() && dims->size() != 0 && dims->size() != static_cast<int>(shape.size()))
      throw Error(ErrorCode::kUsage, fmt::format("--shape {}: the model's input has rank {}, got {}", name,
                                                 dims->size(), shape_to_string(shape)));
    for (int d = 0; d < dims->size(); ++d) {
      const auto& dim = dims->Get(d);
      if (dim.has_dim_value() && dim.dim_value() != shape[d])
        throw Error(ErrorCode::kUsage, fmt::format("--shape {}: dim {} is fixed to {} in the model, got {}", name,
                                                   d, dim.dim_value(), shape[d]));
    }
    dims->Clear();
    for (int64_t d : shape) dims->Add()->set_dim_value(d);
  }
}

void read_value_type(Value& value, const onnx::TypeProto& type, const std::string& context) {
  if (!type.has_tensor_type()) {
    if (type.value_case() == onnx::TypeProto::VALUE_NOT_SET) return;
    throw Error(ErrorCode::kUnsupported,
                fmt::format("{} '{}' is not a tensor (sequence, map and optional values are not supported)",
                            context, value.name));
  }
  const auto& tt = type.tensor_type();
  if (tt.elem_type() != onnx::TensorProto_DataType_UNDEFINED) {
    DType dtype = dtype_from_onnx(tt.elem_type());
    if (dtype == DType::kUndefined)
      throw Error(ErrorCode::kUnsupported, fmt::format("{} '{}' has dtype {}, which is not supported", context,
                                                       value.name, onnx_dtype_name(tt.elem_type())));
    value.dtype = dtype;
  }
  if (tt.has_shape()) {
    value.has_shape = true;
    value.shape.clear();
    value.dim_params.clear();
    for (const auto& dim : tt.shape().dim()) {
      value.shape.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
      value.dim_params.push_back(dim.has_dim_param() ? dim.dim_param() : "");
    }
  }
}

Attribute read_attribute(const onnx::AttributeProto& a, const fs::path& model_dir, const std::string& context) {
  Attribute out;
  switch (a.type()) {
    case onnx::AttributeProto::INT: out.kind = Attribute::Kind::kInt; out.i = a.i(); break;
    case onnx::AttributeProto::FLOAT: out.kind = Attribute::Kind::kFloat; out.f = a.f(); break;
    case onnx::AttributeProto::STRING: out.kind = Attribute::Kind::kString; out.s = a.s(); break;
    case onnx::AttributeProto::INTS:
      out.kind = Attribute::Kind::kInts;
      out.ints.assign(a.ints().begin(), a.ints().end());
      break;
    case onnx::AttributeProto::FLOATS:
      out.kind = Attribute::Kind::kFloats;
      out.floats.assign(a.floats().begin(), a.floats().end());
      break;
    case onnx::AttributeProto::STRINGS:
      out.kind = Attribute::Kind::kStrings;
      out.strings.assign(a.strings().begin(), a.strings().end());
      break;
    case onnx::AttributeProto::TENSOR:
      out.kind = Attribute::Kind::kTensor;
      out.t = tensor_from_proto(a.t(), model_dir, context + " attribute '" + a.name() + "'");
      break;
    case onnx::AttributeProto::GRAPH:
    case onnx::AttributeProto::GRAPHS: out.kind = Attribute::Kind::kGraph; break;
    default:
      throw Error(ErrorCode::kUnsupported,
                  fmt::format("{}: attribute '{}' has a type that is not supported ({})", context, a.name(),
                              onnx::AttributeProto_AttributeType_Name(a.type())));
  }
  return out;
}

// Pass 6.
// A GraphProto as a Graph. `enclosing`: the names the enclosing graphs
// define (nullptr for the model's graph). A name this graph reads but does
// not define is read from an enclosing graph: it becomes an input after the
// graph's own, its name appended to `captured`. Each node's subgraphs are
// built the same way; what they read from this graph or beyond becomes the
// node's implicit inputs.
Graph build_graph(const onnx::GraphProto& gp, const fs::path& model_dir, int64_t opset,
                  const std::set<std::string>* enclosing, std::vector<std::string>* captured) {
  Graph graph;
  graph.name = gp.name();
  std::map<std::string, ValueId> by_name;
  auto value_of = [&](const std::string& name) {
    auto it = by_name.find(name);
    if (it != by_name.end()) return it->second;
    Value v;
    v.name = name;
    ValueId id = graph.add_value(std::move(v));
    by_name[name] = id;
    return id;
  };
  std::set<std::string> defined;  // by this graph
  for (const auto& init : gp.initializer()) defined.insert(init.name());
  for (const auto& in : gp.input()) defined.insert(in.name());
  for (const auto& np : gp.node())
    for (const auto& out : np.output()) defined.insert(out);
  // A value of an enclosing graph, read here: an input of this graph.
  std::vector<ValueId> captures;
  auto read = [&](const std::string& name) {
    if (defined.count(name) || !enclosing || !enclosing->count(name) || by_name.count(name)) return value_of(name);
    ValueId id = value_of(name);
    captures.push_back(id);
    captured->push_back(name);
    return id;
  };

  for (const auto& init : gp.initializer()) {
    ValueId id = value_of(init.name());
    Value& v = graph.values[id];
    v.initializer = tensor_from_proto(init, model_dir, fmt::format("initializer '{}'", init.name()));
    v.dtype = v.initializer->dtype();
    v.has_shape = true;
    v.shape = v.initializer->shape();
  }
  for (const auto& in : gp.input()) {
    ValueId id = value_of(in.name());
    if (graph.values[id].is_constant()) continue;  // IR < 4 lists initializers as inputs
    read_value_type(graph.values[id], in.type(), "input");
    graph.inputs.push_back(id);
  }
  for (const auto& vi : gp.value_info()) read_value_type(graph.values[value_of(vi.name())], vi.type(), "value");
  for (const auto& out : gp.output()) {
    ValueId id = read(out.name());
    read_value_type(graph.values[id], out.type(), "output");
    graph.outputs.push_back(id);
  }

  std::set<std::string> scope = defined;  // what a subgraph of this graph may read
  if (enclosing) scope.insert(enclosing->begin(), enclosing->end());
  std::set<std::string> node_names;
  for (int i = 0; i < gp.node_size(); ++i) {
    const auto& np = gp.node(i);
    Node node;
    node.op_type = np.op_type();
    node.domain = np.domain();
    node.opset = opset;
    std::string base = np.name().empty() ? fmt::format("{}_{}", np.op_type(), i) : np.name();
    node.name = base;
    for (int k = 1; node_names.count(node.name); ++k) node.name = fmt::format("{}_{}", base, k);
    node_names.insert(node.name);
    for (const auto& in : np.input()) node.inputs.push_back(in.empty() ? kNoValue : read(in));
    for (const auto& out : np.output()) node.outputs.push_back(out.empty() ? kNoValue : value_of(out));
    std::map<std::string, size_t> implicit;  // name -> node input
    for (const auto& a : np.attribute()) {
      if (!a.ref_attr_name().empty())
        throw Error(ErrorCode::kUnsupported, fmt::format("node {}: attribute references are not supported", node.label()));
      Attribute attr = read_attribute(a, model_dir, "node " + node.label());
      if (a.type() == onnx::AttributeProto::GRAPH) {
        std::vector<std::string> reads;
        attr.graph = std::make_shared<const Graph>(build_graph(a.g(), model_dir, opset, &scope, &reads));
        a.g().SerializeToString(&attr.onnx);
        for (const std::string& name : reads) {
          auto [it, first] = implicit.emplace(name, node.inputs.size());
          if (first) node.inputs.push_back(read(name));
          attr.captured_inputs.push_back(it->second);
        }
      }
      node.attributes[a.name()] = std::move(attr);
    }
    node.n_implicit_inputs = static_cast<int>(implicit.size());
    graph.add_node(std::move(node));
  }
  graph.inputs.insert(graph.inputs.end(), captures.begin(), captures.end());
  graph.finalize();
  // 16-bit floats are computed in float32 (half_as_float.h): the kernels'
  // checks below see the float32 graph.
  if (enclosing == nullptr) compute_half_as_float(graph);
  // Every node reachable from a graph output is what is run; nodes whose
  // outputs nobody reads stay (an exporter's dead ends cost little and keep
  // the graph faithful to the file).
  for (const Node& node : graph.nodes) {
    const auto* kernel = kernels::find_reference_kernel(node.op_type);
    if (kernel->check) kernel->check(node, graph);
  }
  return graph;
}

}  // namespace

onnx::ModelProto read_model_proto(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw Error(ErrorCode::kIo, fmt::format("{}: no such file", path.string()));
  if (fs::is_directory(path, ec)) throw Error(ErrorCode::kIo, fmt::format("{}: is a directory, not a model file", path.string()));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kIo, fmt::format("{}: cannot open for reading", path.string()));
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string bytes = buffer.str();
  if (bytes.empty()) throw Error(ErrorCode::kInvalidModel, fmt::format("{}: file is empty", path.string()));
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes))
    throw Error(ErrorCode::kInvalidModel,
                fmt::format("{}: not a valid ONNX model (protobuf parse failed: truncated or not an .onnx file)",
                            path.string()));
  if (!model.has_graph())
    throw Error(ErrorCode::kInvalidModel,
                fmt::format("{}: not a valid ONNX model (no graph; is this an .onnx file?)", path.string()));
  return model;
}

Graph import_model(onnx::ModelProto model, const fs::path& model_dir, const LoadOptions& options) {
  int64_t opset = default_opset(model);
  check_ops_known(model.graph(), opset);
  check_structure_and_sort(*model.mutable_graph());
  inline_all_external_data(*model.mutable_graph(), model_dir);
  check_attributes_for_inference(model.graph());
  check_declared_dims(*model.mutable_graph());
  // Graph outputs declared without a type or a shape: ONNX's checker
  // requires both, ONNX Runtime loads them (shape inference gives them).
  // The checker sees the graph without them; inference fills them in.
  auto* outputs = model.mutable_graph()->mutable_output();
  google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> declared = *outputs;
  outputs->Clear();
  for (const auto& out : declared) {
    bool undeclared = !out.has_type() || (out.type().has_tensor_type() && !out.type().tensor_type().has_shape());
    if (!undeclared) *outputs->Add() = out;
  }
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    throw Error(ErrorCode::kInvalidModel, "ONNX checker: " + one_line(e.what()));
  }
  *outputs = declared;
  apply_shape_overrides(*model.mutable_graph(), options.input_shapes);
  guard_onnx_inference();
  try {
    onnx::ShapeInferenceOptions inference(/*check_type=*/true, /*error_mode=*/1, /*enable_data_propagation=*/true);
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), inference);
  } catch (const std::exception& e) {
    throw Error(ErrorCode::kInvalidModel, "shape inference: " + one_line(e.what()));
  }
  for (const auto& out : model.graph().output())
    if (!out.has_type() ||
        (out.type().has_tensor_type() && out.type().tensor_type().elem_type() == onnx::TensorProto::UNDEFINED))
      throw Error(ErrorCode::kInvalidModel,
                  fmt::format("output '{}': declared without a type, and shape inference gives it none", out.name()));
  return build_graph(model.graph(), model_dir, opset, nullptr, nullptr);
}

}  // namespace hetsched
