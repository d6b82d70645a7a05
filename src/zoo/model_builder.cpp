#include "zoo/model_builder.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace hetsched::zoo {

// ---- random numbers -------------------------------------------------------------

uint64_t Rng::next() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t Rng::below(uint64_t n) {
  if (n == 0) throw std::logic_error("Rng::below(0)");
  const uint64_t limit = std::numeric_limits<uint64_t>::max() - std::numeric_limits<uint64_t>::max() % n;
  uint64_t x = next();
  while (x >= limit) x = next();
  return x % n;
}

double Rng::uniform01() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

float Rng::symmetric(double bound) {
  // t: an odd integer in [-(2^24 - 1), 2^24 - 1], exact in a double; the
  // product is the only rounding before the conversion to float.
  const int64_t k = static_cast<int64_t>(next() >> 40);
  const double t = static_cast<double>(2 * k + 1 - (int64_t{1} << 24));
  const double scaled = t * (bound * 0x1.0p-24);
  return static_cast<float>(scaled);
}

uint64_t hash_name(const std::string& text) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001B3ull;
  }
  return h;
}

uint64_t mix_seed(uint64_t seed, uint64_t salt) {
  Rng rng(seed ^ (salt * 0xD1B54A32D192ED03ull));
  rng.next();
  return rng.next();
}

PoolSpec pool2d(int64_t k, int64_t s, int64_t p, bool ceil_mode, bool count_include_pad) {
  PoolSpec spec;
  spec.kernel_h = spec.kernel_w = k;
  spec.stride_h = spec.stride_w = s;
  spec.pad_top = spec.pad_left = spec.pad_bottom = spec.pad_right = p;
  spec.ceil_mode = ceil_mode;
  spec.count_include_pad = count_include_pad;
  return spec;
}

// ---- helpers ---------------------------------------------------------------------

namespace {

[[noreturn]] void fail(const std::string& message) { throw std::logic_error("zoo model builder: " + message); }

int64_t element_count(const Dims& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::string dims_text(const Dims& dims) {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) text += ',';
    text += std::to_string(dims[i]);
  }
  text += ']';
  return text;
}

onnx::AttributeProto attr_int(const std::string& name, int64_t value) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(value);
  return a;
}

onnx::AttributeProto attr_float(const std::string& name, float value) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::FLOAT);
  a.set_f(value);
  return a;
}

onnx::AttributeProto attr_ints(const std::string& name, const std::vector<int64_t>& values) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a.add_ints(v);
  return a;
}

// Little-endian bytes whatever the host's byte order.
void append_le32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
void append_le64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

std::string node_base_name(const std::string& op_type) {
  if (op_type == "BatchNormalization") return "bn";
  if (op_type == "LayerNormalization") return "ln";
  if (op_type == "GlobalAveragePool") return "gap";
  std::string base = op_type;
  for (char& c : base) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return base;
}

// Output size of a conv/pool window along one axis; ceil_mode follows
// PyTorch (the last window must start inside the input or its begin padding),
// and refuses the cases where that differs from ONNX's plain ceil.
int64_t window_out(int64_t in, int64_t pad_begin, int64_t pad_end, int64_t effective_kernel, int64_t stride,
                   bool ceil_mode) {
  const int64_t span = in + pad_begin + pad_end - effective_kernel;
  if (span < 0) fail("window larger than its padded input");
  int64_t out = span / stride + 1;
  if (ceil_mode && span % stride != 0) {
    ++out;
    if ((out - 1) * stride >= in + pad_begin) fail("ceil_mode window starting in the end padding");
  }
  return out;
}

Dims broadcast(const Dims& a, const Dims& b) {
  Dims out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t da = i < out.size() - a.size() ? 1 : a[i - (out.size() - a.size())];
    const int64_t db = i < out.size() - b.size() ? 1 : b[i - (out.size() - b.size())];
    if (da != db && da != 1 && db != 1) fail("cannot broadcast " + dims_text(a) + " with " + dims_text(b));
    out[i] = std::max(da, db);
  }
  return out;
}

}  // namespace

// ---- builder -----------------------------------------------------------------------

ModelBuilder::ModelBuilder(std::string graph_name, uint64_t seed) : graph_(model_.mutable_graph()), seed_(seed) {
  graph_->set_name(std::move(graph_name));
}

ModelBuilder::Scope::~Scope() { builder_.scopes_.pop_back(); }

ModelBuilder::Scope ModelBuilder::scope(const std::string& name) {
  scopes_.push_back(name);
  return Scope(*this);
}

std::string ModelBuilder::scoped(const std::string& base) const {
  std::string name;
  for (const auto& s : scopes_) name += s + "/";
  return name + base;
}

std::string ModelBuilder::unique(const std::string& base) {
  const std::string wanted = scoped(base);
  std::string name = wanted;
  int& suffix = next_suffix_[wanted];
  while (used_names_.count(name)) name = wanted + "_" + std::to_string(++suffix);
  used_names_.insert(name);
  return name;
}

const Dims& ModelBuilder::dims(const std::string& value) const {
  auto it = dims_.find(value);
  if (it == dims_.end()) fail("unknown value '" + value + "'");
  return it->second;
}

std::string ModelBuilder::input(const std::string& name, int32_t elem_type, const Dims& dims) {
  if (used_names_.count(name)) fail("duplicate input name '" + name + "'");
  used_names_.insert(name);
  auto* vi = graph_->add_input();
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem_type);
  for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
  dims_[name] = dims;
  return name;
}

void ModelBuilder::output(const std::string& value, const std::string& name) {
  if (used_names_.count(name)) fail("output name '" + name + "' already used");
  onnx::NodeProto* producer = nullptr;
  for (auto& node : *graph_->mutable_node()) {
    for (auto& out : *node.mutable_output())
      if (out == value) {
        producer = &node;
        out = name;
      }
    for (auto& in : *node.mutable_input())
      if (in == value) in = name;
  }
  if (!producer) fail("graph output '" + value + "' has no producer");
  used_names_.insert(name);
  dims_[name] = dims(value);
  auto* vi = graph_->add_output();
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);  // every zoo model outputs float32
  for (int64_t d : dims_[name]) tt->mutable_shape()->add_dim()->set_dim_value(d);
}

onnx::ModelProto ModelBuilder::finish(const std::string& description) {
  model_.set_ir_version(8);
  model_.set_producer_name("hetsched-zoo");
  model_.set_producer_version("1");
  model_.set_model_version(1);
  model_.set_doc_string(description);
  auto* opset = model_.add_opset_import();
  opset->set_domain("");
  opset->set_version(17);
  onnx::ModelProto result = std::move(model_);
  model_.Clear();
  graph_ = model_.mutable_graph();
  return result;
}

// ---- initializers ---------------------------------------------------------------------

std::string ModelBuilder::add_initializer(onnx::TensorProto tensor, const std::string& base, const Dims& dims) {
  const std::string name = unique(base);
  tensor.set_name(name);
  for (int64_t d : dims) tensor.add_dims(d);
  *graph_->add_initializer() = std::move(tensor);
  dims_[name] = dims;
  return name;
}

std::string ModelBuilder::init_uniform(const std::string& base, const Dims& dims, double bound) {
  return init_around(base, dims, 0.0, bound);
}

std::string ModelBuilder::init_around(const std::string& base, const Dims& dims, double center, double half_width) {
  // The stream depends on the seed and the scoped base name only.
  Rng rng(mix_seed(seed_, hash_name(scoped(base))));
  const int64_t n = element_count(dims);
  std::string raw;
  raw.reserve(static_cast<size_t>(n) * 4);
  for (int64_t i = 0; i < n; ++i) {
    const float offset = rng.symmetric(half_width);
    const float value = static_cast<float>(center + static_cast<double>(offset));
    append_le32(raw, std::bit_cast<uint32_t>(value));
  }
  onnx::TensorProto tensor;
  tensor.set_data_type(onnx::TensorProto::FLOAT);
  tensor.set_raw_data(std::move(raw));
  return add_initializer(std::move(tensor), base, dims);
}

std::string ModelBuilder::init_floats(const std::string& base, const Dims& dims, const std::vector<float>& values) {
  if (static_cast<int64_t>(values.size()) != element_count(dims)) fail("init_floats: size mismatch");
  std::string raw;
  for (float v : values) append_le32(raw, std::bit_cast<uint32_t>(v));
  onnx::TensorProto tensor;
  tensor.set_data_type(onnx::TensorProto::FLOAT);
  tensor.set_raw_data(std::move(raw));
  return add_initializer(std::move(tensor), base, dims);
}

std::string ModelBuilder::init_int64s(const std::string& base, const Dims& dims, const std::vector<int64_t>& values) {
  if (static_cast<int64_t>(values.size()) != element_count(dims)) fail("init_int64s: size mismatch");
  std::string raw;
  for (int64_t v : values) append_le64(raw, static_cast<uint64_t>(v));
  onnx::TensorProto tensor;
  tensor.set_data_type(onnx::TensorProto::INT64);
  tensor.set_raw_data(std::move(raw));
  return add_initializer(std::move(tensor), base, dims);
}

std::string ModelBuilder::scalar(float value) {
  auto it = scalars_.find(value);
  if (it != scalars_.end()) return it->second;
  // Scalars are shared graph-wide, so they are named outside any scope.
  std::vector<std::string> saved;
  saved.swap(scopes_);
  const std::string name = init_floats("const", {}, {value});
  saved.swap(scopes_);
  scalars_.emplace(value, name);
  return name;
}

// ---- nodes ---------------------------------------------------------------------------------

std::string ModelBuilder::node(const std::string& op_type, const std::vector<std::string>& inputs,
                               const Dims& out_dims, const std::vector<onnx::AttributeProto>& attributes) {
  const std::string name = unique(node_base_name(op_type));
  auto* n = graph_->add_node();
  n->set_name(name);
  n->set_op_type(op_type);
  for (const auto& in : inputs) {
    if (!in.empty() && !dims_.count(in)) fail(op_type + ": unknown input '" + in + "'");
    n->add_input(in);
  }
  n->add_output(name);
  for (const auto& a : attributes) *n->add_attribute() = a;
  dims_[name] = out_dims;
  return name;
}

std::string ModelBuilder::conv(const std::string& x, const ConvSpec& s) {
  const Dims& in = dims(x);
  if (in.size() != 4) fail("conv input must be NCHW, got " + dims_text(in));
  const int64_t in_ch = in[1];
  if (s.groups <= 0 || in_ch % s.groups != 0 || s.out_channels % s.groups != 0)
    fail("conv channels " + std::to_string(in_ch) + "->" + std::to_string(s.out_channels) + " not divisible by " +
         std::to_string(s.groups) + " groups");
  const int64_t oh = window_out(in[2], s.pad_top, s.pad_bottom, s.dilation * (s.kernel_h - 1) + 1, s.stride_h, false);
  const int64_t ow = window_out(in[3], s.pad_left, s.pad_right, s.dilation * (s.kernel_w - 1) + 1, s.stride_w, false);

  const std::string name = unique("conv");
  const int64_t fan_in = in_ch / s.groups * s.kernel_h * s.kernel_w;
  std::vector<std::string> inputs = {x};
  // Bases are relative to the current scope; strip it from the node name.
  const std::string local = name.substr(scoped("").size());
  inputs.push_back(init_uniform(local + ".weight", {s.out_channels, in_ch / s.groups, s.kernel_h, s.kernel_w},
                                s.gain * std::sqrt(6.0 / static_cast<double>(fan_in))));
  if (s.bias) inputs.push_back(init_uniform(local + ".bias", {s.out_channels}, 1.0 / std::sqrt(double(fan_in))));

  auto* n = graph_->add_node();
  n->set_name(name);
  n->set_op_type("Conv");
  for (const auto& i : inputs) n->add_input(i);
  n->add_output(name);
  *n->add_attribute() = attr_ints("dilations", {s.dilation, s.dilation});
  *n->add_attribute() = attr_int("group", s.groups);
  *n->add_attribute() = attr_ints("kernel_shape", {s.kernel_h, s.kernel_w});
  *n->add_attribute() = attr_ints("pads", {s.pad_top, s.pad_left, s.pad_bottom, s.pad_right});
  *n->add_attribute() = attr_ints("strides", {s.stride_h, s.stride_w});
  dims_[name] = {in[0], s.out_channels, oh, ow};
  return name;
}

std::string ModelBuilder::conv(const std::string& x, int64_t out_channels, int64_t k, int64_t stride, int64_t pad,
                               int64_t groups, int64_t dilation, bool bias, double gain) {
  ConvSpec s;
  s.out_channels = out_channels;
  s.kernel_h = s.kernel_w = k;
  s.stride_h = s.stride_w = stride;
  s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = pad;
  s.groups = groups;
  s.dilation = dilation;
  s.bias = bias;
  s.gain = gain;
  return conv(x, s);
}

std::string ModelBuilder::batch_norm(const std::string& x, float epsilon) {
  const Dims& in = dims(x);
  const int64_t c = in.at(1);
  const std::string name = unique("bn");
  const std::string local = name.substr(scoped("").size());
  const std::string gamma = init_around(local + ".weight", {c}, 1.0, 0.2);
  const std::string beta = init_uniform(local + ".bias", {c}, 0.1);
  const std::string mean = init_uniform(local + ".running_mean", {c}, 0.1);
  const std::string var = init_around(local + ".running_var", {c}, 1.0, 0.2);
  auto* n = graph_->add_node();
  n->set_name(name);
  n->set_op_type("BatchNormalization");
  for (const auto& i : {x, gamma, beta, mean, var}) n->add_input(i);
  n->add_output(name);
  *n->add_attribute() = attr_float("epsilon", epsilon);
  dims_[name] = in;
  return name;
}

std::string ModelBuilder::relu(const std::string& x) { return node("Relu", {x}, dims(x)); }

std::string ModelBuilder::relu6(const std::string& x) {
  const std::string lo = scalar(0.0f);
  const std::string hi = scalar(6.0f);
  return node("Clip", {x, lo, hi}, dims(x));
}

std::string ModelBuilder::pool(const std::string& op_type, const std::string& x, const PoolSpec& s) {
  const Dims& in = dims(x);
  if (in.size() != 4) fail(op_type + " input must be NCHW");
  const int64_t oh = window_out(in[2], s.pad_top, s.pad_bottom, s.kernel_h, s.stride_h, s.ceil_mode);
  const int64_t ow = window_out(in[3], s.pad_left, s.pad_right, s.kernel_w, s.stride_w, s.ceil_mode);
  std::vector<onnx::AttributeProto> attrs;
  if (s.ceil_mode) attrs.push_back(attr_int("ceil_mode", 1));
  if (op_type == "AveragePool") attrs.push_back(attr_int("count_include_pad", s.count_include_pad ? 1 : 0));
  attrs.push_back(attr_ints("kernel_shape", {s.kernel_h, s.kernel_w}));
  attrs.push_back(attr_ints("pads", {s.pad_top, s.pad_left, s.pad_bottom, s.pad_right}));
  attrs.push_back(attr_ints("strides", {s.stride_h, s.stride_w}));
  return node(op_type, {x}, {in[0], in[1], oh, ow}, attrs);
}

std::string ModelBuilder::max_pool(const std::string& x, const PoolSpec& spec) { return pool("MaxPool", x, spec); }
std::string ModelBuilder::avg_pool(const std::string& x, const PoolSpec& spec) { return pool("AveragePool", x, spec); }

std::string ModelBuilder::global_avg_pool(const std::string& x) {
  const Dims& in = dims(x);
  Dims out = in;
  for (size_t i = 2; i < out.size(); ++i) out[i] = 1;
  return node("GlobalAveragePool", {x}, out);
}

std::string ModelBuilder::flatten(const std::string& x, int64_t axis) {
  const Dims& in = dims(x);
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < in.size(); ++i) (static_cast<int64_t>(i) < axis ? outer : inner) *= in[i];
  return node("Flatten", {x}, {outer, inner}, {attr_int("axis", axis)});
}

std::string ModelBuilder::gemm(const std::string& x, int64_t out_features) {
  const Dims& in = dims(x);
  if (in.size() != 2) fail("gemm input must be 2-D");
  const std::string name = unique("gemm");
  const std::string local = name.substr(scoped("").size());
  const double fan_in = static_cast<double>(in[1]);
  const std::string w = init_uniform(local + ".weight", {out_features, in[1]}, std::sqrt(3.0 / fan_in));
  const std::string b = init_uniform(local + ".bias", {out_features}, 1.0 / std::sqrt(fan_in));
  auto* n = graph_->add_node();
  n->set_name(name);
  n->set_op_type("Gemm");
  for (const auto& i : {x, w, b}) n->add_input(i);
  n->add_output(name);
  *n->add_attribute() = attr_int("transB", 1);
  dims_[name] = {in[0], out_features};
  return name;
}

std::string ModelBuilder::concat(const std::vector<std::string>& xs, int64_t axis) {
  if (xs.empty()) fail("concat of nothing");
  Dims out = dims(xs[0]);
  const auto ax = static_cast<size_t>(axis < 0 ? axis + static_cast<int64_t>(out.size()) : axis);
  for (size_t i = 1; i < xs.size(); ++i) {
    const Dims& d = dims(xs[i]);
    if (d.size() != out.size()) fail("concat rank mismatch");
    for (size_t j = 0; j < d.size(); ++j)
      if (j != ax && d[j] != out[j]) fail("concat dims " + dims_text(d) + " vs " + dims_text(out));
    out[ax] += d[ax];
  }
  return node("Concat", xs, out, {attr_int("axis", axis)});
}

std::string ModelBuilder::binary(const std::string& op_type, const std::string& a, const std::string& b) {
  return node(op_type, {a, b}, broadcast(dims(a), dims(b)));
}

std::string ModelBuilder::add(const std::string& a, const std::string& b) { return binary("Add", a, b); }
std::string ModelBuilder::mul(const std::string& a, const std::string& b) { return binary("Mul", a, b); }
std::string ModelBuilder::div(const std::string& a, const std::string& b) { return binary("Div", a, b); }

std::string ModelBuilder::pad(const std::string& x, const std::vector<int64_t>& pads) {
  const Dims& in = dims(x);
  if (pads.size() != 2 * in.size()) fail("pad: need 2 * rank pads");
  Dims out = in;
  for (size_t i = 0; i < in.size(); ++i) out[i] += pads[i] + pads[i + in.size()];
  const std::string p = init_int64s("pads", {static_cast<int64_t>(pads.size())}, pads);
  return node("Pad", {x, p}, out);
}

std::string ModelBuilder::slice(const std::string& x, const std::vector<int64_t>& starts,
                                const std::vector<int64_t>& ends, const std::vector<int64_t>& axes) {
  const Dims& in = dims(x);
  if (starts.size() != ends.size() || starts.size() != axes.size()) fail("slice: size mismatch");
  Dims out = in;
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t d = in.at(static_cast<size_t>(axes[i]));
    const int64_t s = std::clamp<int64_t>(starts[i], 0, d);
    const int64_t e = std::clamp<int64_t>(ends[i], 0, d);
    if (starts[i] < 0 || ends[i] < 0) fail("slice: negative bounds not supported by the builder");
    out[static_cast<size_t>(axes[i])] = std::max<int64_t>(0, e - s);
  }
  const auto n = static_cast<int64_t>(axes.size());
  const std::string s = init_int64s("starts", {n}, starts);
  const std::string e = init_int64s("ends", {n}, ends);
  const std::string a = init_int64s("axes", {n}, axes);
  return node("Slice", {x, s, e, a}, out);
}

std::string ModelBuilder::matmul(const std::string& a, const std::string& b) {
  const Dims& da = dims(a);
  const Dims& db = dims(b);
  if (da.size() < 2 || db.size() < 2) fail("matmul needs rank >= 2");
  if (da.back() != db[db.size() - 2]) fail("matmul " + dims_text(da) + " x " + dims_text(db));
  Dims batch = broadcast(Dims(da.begin(), da.end() - 2), Dims(db.begin(), db.end() - 2));
  batch.push_back(da[da.size() - 2]);
  batch.push_back(db.back());
  return node("MatMul", {a, b}, batch);
}

std::string ModelBuilder::linear(const std::string& x, int64_t out_features) {
  const Dims& in = dims(x);
  const int64_t in_features = in.back();
  const std::string name = unique("linear");
  const std::string local = name.substr(scoped("").size());
  const double bound = std::sqrt(6.0 / static_cast<double>(in_features + out_features));  // Xavier-uniform
  const std::string w = init_uniform(local + ".weight", {in_features, out_features}, bound);
  const std::string b = init_uniform(local + ".bias", {out_features}, 0.02);
  return add(matmul(x, w), b);
}

std::string ModelBuilder::gather(const std::string& table, const std::string& indices, int64_t axis) {
  const Dims& t = dims(table);
  const Dims& i = dims(indices);
  Dims out(t.begin(), t.begin() + axis);
  out.insert(out.end(), i.begin(), i.end());
  out.insert(out.end(), t.begin() + axis + 1, t.end());
  return node("Gather", {table, indices}, out, {attr_int("axis", axis)});
}

std::string ModelBuilder::reshape(const std::string& x, const Dims& shape) {
  if (element_count(shape) != element_count(dims(x)))
    fail("reshape " + dims_text(dims(x)) + " to " + dims_text(shape));
  const std::string s = init_int64s("shape", {static_cast<int64_t>(shape.size())}, shape);
  return node("Reshape", {x, s}, shape);
}

std::string ModelBuilder::transpose(const std::string& x, const std::vector<int64_t>& perm) {
  const Dims& in = dims(x);
  if (perm.size() != in.size()) fail("transpose: perm rank");
  Dims out;
  for (int64_t p : perm) out.push_back(in.at(static_cast<size_t>(p)));
  return node("Transpose", {x}, out, {attr_ints("perm", perm)});
}

std::string ModelBuilder::softmax(const std::string& x, int64_t axis) {
  return node("Softmax", {x}, dims(x), {attr_int("axis", axis)});
}

std::string ModelBuilder::erf(const std::string& x) { return node("Erf", {x}, dims(x)); }

std::string ModelBuilder::layer_norm(const std::string& x, float epsilon) {
  const Dims& in = dims(x);
  const int64_t c = in.back();
  const std::string name = unique("ln");
  const std::string local = name.substr(scoped("").size());
  const std::string gamma = init_around(local + ".weight", {c}, 1.0, 0.2);
  const std::string beta = init_uniform(local + ".bias", {c}, 0.1);
  auto* n = graph_->add_node();
  n->set_name(name);
  n->set_op_type("LayerNormalization");
  for (const auto& i : {x, gamma, beta}) n->add_input(i);
  n->add_output(name);
  *n->add_attribute() = attr_int("axis", -1);
  *n->add_attribute() = attr_float("epsilon", epsilon);
  dims_[name] = in;
  return name;
}

}  // namespace hetsched::zoo
