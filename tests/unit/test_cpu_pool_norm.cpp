// The CPU backend's oneDNN lowerings of pooling, normalisation, activation,
// softmax, LRN, concat and slice ops (src/backends/cpu/ops/{pool, batch_norm,
// eltwise_op, softmax, lrn, layer_norm, concat, slice}.cpp) against the reference
// kernels: tiny models run on cpu:0 and on the reference kernels with the same
// random inputs must agree to 1e-4 (relative), and the nodes must really run
// on oneDNN (no fallback, or exactly the refused ones). Several models put a
// Conv first so that the op under test reads a blocked layout.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "hetsched/session.h"
#include "onnx_model_util.h"

namespace hetsched {
namespace {

using namespace hetsched::testing;
constexpr int32_t kFloat = onnx::TensorProto_DataType_FLOAT;
constexpr int32_t kInt32 = onnx::TensorProto_DataType_INT32;

// Deterministic values uniform in [lo, hi).
std::vector<float> uniform(size_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::vector<float> v(n);
  uint64_t s = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  for (auto& x : v) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    x = lo + (hi - lo) * static_cast<float>((s >> 40) & 0xFFFFFF) / static_cast<float>(1 << 24);
  }
  return v;
}

size_t count(const std::vector<int64_t>& dims) {
  size_t n = 1;
  for (int64_t d : dims) n *= static_cast<size_t>(d);
  return n;
}

class Model {
 public:
  explicit Model(int64_t opset = 17) : m_(make_model(opset)) {}

  void input(const std::string& name, const std::vector<int64_t>& dims, int32_t type = kFloat) {
    *g()->add_input() = tensor_info(name, type, dims);
  }
  // A graph output of rank `rank`; its dims come from shape inference.
  void output(const std::string& name, size_t rank, int32_t type = kFloat) {
    auto* vi = g()->add_output();
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(type);
    auto* shape = tt->mutable_shape();
    for (size_t i = 0; i < rank; ++i) shape->add_dim();
  }
  void init(const std::string& name, const std::vector<int64_t>& dims, float lo = -1.0f, float hi = 1.0f) {
    *g()->add_initializer() = float_tensor(name, dims, uniform(count(dims), ++seed_, lo, hi));
  }
  // A 1-D int64 constant (Slice's starts, ends, axes, steps).
  void init_ints(const std::string& name, const std::vector<int64_t>& values) {
    onnx::TensorProto t;
    t.set_name(name);
    t.set_data_type(onnx::TensorProto_DataType_INT64);
    t.add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values) t.add_int64_data(v);
    *g()->add_initializer() = t;
  }
  void init_values(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& values) {
    *g()->add_initializer() = float_tensor(name, dims, values);
  }
  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& ins,
                        const std::vector<std::string>& outs) {
    auto* n = g()->add_node();
    *n = make_node(op, ins, outs, outs.empty() ? op : outs[0] + "_" + op);
    return *n;
  }
  // Conv with `out_c` output channels (16: oneDNN picks a blocked layout for its dst).
  void conv(const std::string& x, int64_t in_c, const std::string& y, int64_t out_c = 16, int64_t k = 3) {
    init(y + "_w", {out_c, in_c, k, k}, -0.3f, 0.3f);
    init(y + "_b", {out_c});
    auto& n = node("Conv", {x, y + "_w", y + "_b"}, {y});
    ints(n, "pads", {k / 2, k / 2, k / 2, k / 2});
  }
  // The input "x" of `dims`, through a Conv first when `blocked` (so that
  // the op under test reads the Conv's layout): the value to read.
  std::string input_maybe_after_conv(const std::vector<int64_t>& dims, bool blocked) {
    input("x", dims);
    if (!blocked) return "x";
    conv("x", dims[1], "c");
    return "c";
  }
  const onnx::ModelProto& proto() const { return m_; }

  static void ints(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  static void integer(onnx::NodeProto& n, const std::string& name, int64_t v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void real(onnx::NodeProto& n, const std::string& name, float v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }
  static void string(onnx::NodeProto& n, const std::string& name, const std::string& v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v);
  }

 private:
  onnx::GraphProto* g() { return m_.mutable_graph(); }
  onnx::ModelProto m_;
  uint64_t seed_ = 0;
};

// max |cpu - ref| / max |ref| over float outputs (NaN matches NaN, an
// infinity the same infinity); integer outputs must be equal.
double compare(const Tensor& cpu, const Tensor& ref, const std::string& name) {
  EXPECT_EQ(cpu.dtype(), ref.dtype()) << name;
  EXPECT_EQ(cpu.shape(), ref.shape()) << name;
  if (cpu.dtype() != ref.dtype() || cpu.shape() != ref.shape()) return INFINITY;
  std::vector<double> a = cpu.to_double_vector(), b = ref.to_double_vector();
  double diff = 0, scale = 1e-30;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    if (std::isnan(a[i]) != std::isnan(b[i])) return INFINITY;
    if (a[i] == b[i]) continue;  // equal infinities too
    diff = std::max(diff, std::fabs(a[i] - b[i]));
    if (std::isfinite(b[i])) scale = std::max(scale, std::fabs(b[i]));
  }
  if (cpu.dtype() != DType::kFloat32 && cpu.dtype() != DType::kFloat64) {
    EXPECT_EQ(diff, 0.0) << name;
  }
  return diff / scale;
}

// Runs `model` on cpu:0 and on the reference kernels; the outputs must agree
// and exactly `fallbacks` nodes may run on reference kernels. Returns the
// cpu session's summary.
ExecutionSummary check(const Model& model, const std::string& tag, int fallbacks = 0) {
  auto dir = temp_dir("cpu_pool_norm_" + tag);
  std::string path = (dir / "model.onnx").string();
  write_model(model.proto(), path);
  Session cpu = Session::load(path, {}, SessionOptions{"cpu:0", false});
  Session ref = Session::load(path, {}, SessionOptions{"cpu:0", true});
  const ExecutionSummary summary = cpu.summary();
  std::string why;
  for (const auto& f : summary.fallbacks) why += "\n  " + f;
  EXPECT_EQ(summary.n_fallbacks, fallbacks) << tag << " fallbacks:" << why << "\n  note: " << summary.note;
  for (uint64_t seed : {1u, 2u}) {
    TensorMap inputs = ref.random_inputs(seed);
    TensorMap a = cpu.run(inputs), b = ref.run(inputs);
    EXPECT_EQ(a.size(), b.size());
    for (const auto& [name, t] : b) {
      EXPECT_TRUE(a.count(name)) << name;
      if (!a.count(name)) continue;
      EXPECT_LE(compare(a.at(name), t, name), 1e-4) << tag << ": output " << name;
    }
  }
  std::filesystem::remove_all(dir);
  return summary;
}

// ---------------------------------------------------------------- pooling

struct PoolCase {
  std::string name;
  std::string op;
  std::vector<int64_t> x;  // input dims
  bool blocked;            // a Conv first
  std::vector<int64_t> kernel = {}, strides = {}, pads = {}, dilations = {};
  std::string auto_pad = "";
  int64_t ceil_mode = 0, count_include_pad = 0;
  int fallbacks = 0;
};

void run_pool(const PoolCase& c) {
  Model m(c.op == "MaxPool" ? 12 : 17);
  std::string in = m.input_maybe_after_conv(c.x, c.blocked);
  auto& n = m.node(c.op, {in}, {"y"});
  Model::ints(n, "kernel_shape", c.kernel);
  if (!c.strides.empty()) Model::ints(n, "strides", c.strides);
  if (!c.pads.empty()) Model::ints(n, "pads", c.pads);
  if (!c.dilations.empty()) Model::ints(n, "dilations", c.dilations);
  if (!c.auto_pad.empty()) Model::string(n, "auto_pad", c.auto_pad);
  if (c.ceil_mode) Model::integer(n, "ceil_mode", 1);
  if (c.count_include_pad) Model::integer(n, "count_include_pad", 1);
  m.output("y", c.x.size());
  check(m, c.name, c.fallbacks);
}

TEST(CpuPoolNorm, MaxPool) {
  std::vector<PoolCase> cases = {
      {"max_2x2", "MaxPool", {1, 3, 8, 8}, false, {2, 2}, {2, 2}},
      {"max_blocked_ceil", "MaxPool", {1, 3, 9, 9}, true, {3, 3}, {2, 2}, {}, {}, "", 1},
      {"max_blocked_pads", "MaxPool", {2, 3, 10, 7}, true, {3, 3}, {1, 1}, {1, 1, 1, 1}},
      {"max_asym_pads_ceil", "MaxPool", {1, 3, 10, 12}, true, {3, 2}, {2, 3}, {0, 1, 1, 0}, {}, "", 1},
      {"max_dilated", "MaxPool", {1, 3, 9, 9}, true, {2, 2}, {1, 1}, {}, {2, 3}},
      {"max_dilated_pads_ceil", "MaxPool", {1, 3, 10, 9}, true, {3, 2}, {2, 2}, {1, 1, 1, 1}, {2, 2}, "", 1},
      {"max_same_upper", "MaxPool", {1, 3, 9, 8}, true, {3, 3}, {2, 2}, {}, {}, "SAME_UPPER"},
      {"max_same_lower", "MaxPool", {1, 3, 9, 8}, true, {2, 2}, {2, 2}, {}, {}, "SAME_LOWER"},
      {"max_valid", "MaxPool", {1, 3, 9, 8}, true, {3, 3}, {2, 2}, {}, {}, "VALID"},
      {"max_1d", "MaxPool", {2, 5, 17}, false, {3}, {2}, {1, 1}},
      {"max_3d", "MaxPool", {1, 4, 7, 7, 5}, false, {2, 3, 2}, {2, 1, 2}, {0, 1, 1, 1, 0, 0}, {}, "", 1},
      // A window of padding only (pads >= kernel): the reference gives -inf there.
      {"max_pad_only_window", "MaxPool", {1, 3, 6, 6}, false, {2, 2}, {1, 1}, {2, 0, 0, 0}, {}, "", 0, 0, 1},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    run_pool(c);
  }
}

// Whether oneDNN writes a 1x1 Conv of these sizes channels-last on this
// CPU (its choice with tag::any, as the CPU backend asks).
bool conv_writes_channels_last(int64_t in_c, int64_t out_c, int64_t h, int64_t w) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::convolution_forward::primitive_desc pd(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                      dnnl::memory::desc({1, in_c, h, w}, dt::f32, tag::any),
                                      dnnl::memory::desc({out_c, in_c, 1, 1}, dt::f32, tag::any),
                                      dnnl::memory::desc({out_c}, dt::f32, tag::any),
                                      dnnl::memory::desc({1, out_c, h, w}, dt::f32, tag::any), {1, 1}, {0, 0}, {0, 0}),
      engine);
  return pd.dst_desc() == dnnl::memory::desc({1, out_c, h, w}, dt::f32, tag::nhwc);
}

// A max pool reading a Conv's channels-last output (googlenet's) runs in
// host code: the reference's results, NaN included (oneDNN's pool would
// drop a NaN for its window's largest number).
TEST(CpuPoolNorm, MaxPoolOfChannelsLastData) {
  struct Case {
    std::string name;
    std::vector<int64_t> x, kernel, strides, pads;
    int64_t ceil_mode = 0;
  };
  std::vector<Case> cases = {
      {"3x3_s1_p1", {2, 16, 9, 11}, {3, 3}, {1, 1}, {1, 1, 1, 1}},
      {"3x3_s2_ceil", {1, 16, 14, 14}, {3, 3}, {2, 2}, {0, 0, 0, 0}, 1},
      {"2x2_s2", {1, 16, 8, 6}, {2, 2}, {2, 2}, {0, 0, 0, 0}},
      {"3x2_asym", {1, 16, 10, 12}, {3, 2}, {2, 3}, {0, 1, 1, 0}, 1},
  };
  const int64_t out_c = 64;
  int channels_last = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Model m(12);
    m.input("x", c.x);
    m.conv("x", c.x[1], "c", out_c, 1);
    auto& n = m.node("MaxPool", {"c"}, {"y"});
    Model::ints(n, "kernel_shape", c.kernel);
    Model::ints(n, "strides", c.strides);
    Model::ints(n, "pads", c.pads);
    if (c.ceil_mode) Model::integer(n, "ceil_mode", 1);
    m.output("y", 4);
    EXPECT_LE(check(m, "max_channels_last_" + c.name).n_reorders, 2) << "the pool reads the Conv's layout";
    if (!conv_writes_channels_last(c.x[1], out_c, c.x[2], c.x[3])) continue;  // oneDNN's pool runs it
    ++channels_last;

    // A NaN at some pixels: the Conv makes every channel there NaN, and
    // each window holding one gives NaN.
    auto dir = temp_dir("cpu_pool_norm_nan_" + c.name);
    std::string path = (dir / "model.onnx").string();
    write_model(m.proto(), path);
    Session cpu = Session::load(path, {}, SessionOptions{"cpu:0", false});
    Session ref = Session::load(path, {}, SessionOptions{"cpu:0", true});
    TensorMap inputs = ref.random_inputs(3);
    float* x = inputs.at("x").data<float>();
    for (int64_t i = 0; i < inputs.at("x").numel(); i += 997) x[i] = NAN;
    Tensor got = cpu.run(inputs).at("y"), want = ref.run(inputs).at("y");
    EXPECT_LE(compare(got, want, "y"), 1e-4);
    std::vector<double> y = want.to_double_vector();
    EXPECT_GT(std::count_if(y.begin(), y.end(), [](double v) { return std::isnan(v); }), 0);
    EXPECT_LT(std::count_if(y.begin(), y.end(), [](double v) { return std::isnan(v); }),
              static_cast<int64_t>(y.size()));
    std::filesystem::remove_all(dir);
  }
  if (channels_last == 0) GTEST_SKIP() << "oneDNN writes these Convs in a blocked layout on this CPU";
}

TEST(CpuPoolNorm, MaxPoolInt8) {
  for (int32_t type : {onnx::TensorProto_DataType_INT8, onnx::TensorProto_DataType_UINT8}) {
    Model m(12);
    m.input("x", {2, 3, 9, 8}, type);
    auto& n = m.node("MaxPool", {"x"}, {"y"});
    Model::ints(n, "kernel_shape", {3, 3});
    Model::ints(n, "strides", {2, 2});
    Model::ints(n, "pads", {1, 1, 1, 1});
    Model::integer(n, "ceil_mode", 1);
    m.output("y", 4, type);
    check(m, type == onnx::TensorProto_DataType_INT8 ? "max_int8" : "max_uint8");
  }
}

TEST(CpuPoolNorm, MaxPoolIndicesOutputFallsBack) {
  Model m(12);
  m.input("x", {1, 3, 8, 8});
  auto& n = m.node("MaxPool", {"x"}, {"y", "i"});
  Model::ints(n, "kernel_shape", {2, 2});
  Model::ints(n, "strides", {2, 2});
  m.output("y", 4);
  m.output("i", 4, onnx::TensorProto_DataType_INT64);
  check(m, "max_indices", 1);
}

TEST(CpuPoolNorm, AveragePool) {
  std::vector<PoolCase> cases = {
      {"avg_2x2", "AveragePool", {1, 3, 8, 8}, false, {2, 2}, {2, 2}},
      // Inception's branch pool: 3x3, stride 1, pad 1, padding not counted.
      {"avg_exclude_pad", "AveragePool", {1, 3, 9, 9}, true, {3, 3}, {1, 1}, {1, 1, 1, 1}},
      {"avg_include_pad", "AveragePool", {1, 3, 9, 9}, true, {3, 3}, {1, 1}, {1, 1, 1, 1}, {}, "", 0, 1},
      {"avg_asym_include_pad", "AveragePool", {1, 3, 9, 10}, true, {3, 2}, {2, 2}, {1, 0, 2, 1}, {}, "", 0, 1},
      {"avg_ceil_exclude", "AveragePool", {1, 3, 10, 10}, true, {3, 3}, {2, 2}, {}, {}, "", 1},
      // ceil_mode windows that stay inside the end padding: counted like oneDNN.
      {"avg_ceil_include_inside", "AveragePool", {1, 3, 10, 10}, true, {3, 3}, {2, 2}, {0, 0, 1, 1}, {}, "", 1, 1},
      // ceil_mode windows past the end padding with count_include_pad: refused.
      {"avg_ceil_include_past", "AveragePool", {1, 3, 10, 10}, true, {3, 3}, {2, 2}, {}, {}, "", 1, 1, 1},
      {"avg_same_upper", "AveragePool", {1, 3, 9, 8}, true, {3, 3}, {2, 2}, {}, {}, "SAME_UPPER"},
      {"avg_same_lower_include", "AveragePool", {1, 3, 9, 8}, true, {2, 2}, {2, 2}, {}, {}, "SAME_LOWER", 0, 1},
      {"avg_1d", "AveragePool", {2, 5, 17}, false, {3}, {2}, {1, 1}},
      {"avg_3d", "AveragePool", {1, 4, 6, 7, 5}, false, {2, 3, 2}, {2, 1, 2}, {0, 1, 1, 1, 0, 0}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    run_pool(c);
  }
}

TEST(CpuPoolNorm, GlobalPools) {
  for (std::string op : {"GlobalAveragePool", "GlobalMaxPool"}) {
    for (bool blocked : {false, true}) {
      Model m;
      m.input("x", {2, 3, 7, 6});
      std::string in = blocked ? "c" : "x";
      if (blocked) m.conv("x", 3, "c");
      m.node(op, {in}, {"y"});
      m.output("y", 4);
      auto s = check(m, op + (blocked ? "_blocked" : "_plain"));
      if (blocked) {
        EXPECT_LE(s.n_reorders, 2) << "the pool reads the Conv's layout";
      }
    }
    Model m1d;
    m1d.input("x", {2, 5, 9});
    m1d.node(op, {"x"}, {"y"});
    m1d.output("y", 3);
    check(m1d, op + "_1d");
    Model m3d;
    m3d.input("x", {1, 4, 3, 5, 6});
    m3d.node(op, {"x"}, {"y"});
    m3d.output("y", 5);
    check(m3d, op + "_3d");
  }
}

// ---------------------------------------------------------------- batch norm

TEST(CpuPoolNorm, BatchNormalization) {
  // Standalone (nothing to fold into), on plain data of ranks 2 to 5.
  for (std::vector<int64_t> dims :
       std::vector<std::vector<int64_t>>{{4, 6}, {2, 6, 9}, {2, 6, 5, 7}, {1, 6, 3, 4, 5}}) {
    Model m;
    m.input("x", dims);
    m.init("scale", {6});
    m.init("bias", {6});
    m.init("mean", {6});
    m.init("var", {6}, 0.5f, 1.5f);
    auto& n = m.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"y"});
    Model::real(n, "epsilon", 1e-3f);
    m.output("y", dims.size());
    check(m, fmt::format("bn_rank{}", dims.size()));
  }
  // After a MaxPool of a Conv (not folded): blocked input.
  Model m;
  m.input("x", {1, 3, 12, 12});
  m.conv("x", 3, "c");
  auto& p = m.node("MaxPool", {"c"}, {"p"});
  Model::ints(p, "kernel_shape", {2, 2});
  Model::ints(p, "strides", {2, 2});
  m.init("scale", {16});
  m.init("bias", {16});
  m.init("mean", {16});
  m.init("var", {16}, 0.5f, 1.5f);
  m.node("BatchNormalization", {"p", "scale", "bias", "mean", "var"}, {"y"});
  m.output("y", 4);
  auto s = check(m, "bn_blocked");
  EXPECT_LE(s.n_reorders, 2);
}

TEST(CpuPoolNorm, BatchNormalizationAndRelu) {
  // DenseNet's pre-activation: BatchNormalization -> Relu -> Conv, the
  // first two in one step, with constant parameters and with run-time ones.
  for (bool runtime_mean : {false, true}) {
    SCOPED_TRACE(runtime_mean ? "mean at run time" : "constant parameters");
    Model m;
    m.input("x", {1, 3, 12, 12});
    m.conv("x", 3, "c");
    auto& p = m.node("MaxPool", {"c"}, {"p"});
    Model::ints(p, "kernel_shape", {2, 2});
    if (runtime_mean) m.input("mean", {16});
    else m.init("mean", {16});
    m.init("scale", {16});
    m.init("bias", {16});
    m.init("var", {16}, 0.5f, 1.5f);
    m.node("BatchNormalization", {"p", "scale", "bias", "mean", "var"}, {"bn"});
    m.node("Relu", {"bn"}, {"r"});
    m.conv("r", 16, "y");
    m.output("y", 4);
    auto s = check(m, runtime_mean ? "bn_relu_runtime" : "bn_relu");
    EXPECT_EQ(s.n_fused_nodes, 1);
    EXPECT_EQ(s.n_steps - s.n_reorders, 4);  // Conv, MaxPool, BatchNormalization + Relu, Conv
  }
  // The normalized value read by more than the Relu: not fused.
  Model m;
  m.input("x", {2, 6, 5, 5});
  for (const char* name : {"scale", "bias", "mean"}) m.init(name, {6});
  m.init("var", {6}, 0.5f, 1.5f);
  m.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"bn"});
  m.node("Relu", {"bn"}, {"r"});
  m.output("r", 4);
  m.output("bn", 4);
  EXPECT_EQ(check(m, "bn_read_twice").n_fused_nodes, 0);
}

TEST(CpuPoolNorm, BatchNormalizationRuntimeStatistics) {
  // Mean and var as graph inputs (float32 [C]): read at run time.
  Model m;
  m.input("x", {2, 4, 5, 5});
  m.input("mean", {4});
  m.init("scale", {4});
  m.init("bias", {4});
  m.init("var", {4}, 0.5f, 1.5f);
  m.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"y"});
  m.output("y", 4);
  check(m, "bn_runtime_mean");
}

// ---------------------------------------------------------------- activations

TEST(CpuPoolNorm, Activations) {
  struct Case {
    std::string op;
    int64_t opset;
    float alpha;  // NaN: no alpha attribute
  };
  const std::vector<Case> cases = {
      {"Relu", 14, NAN}, {"LeakyRelu", 16, 0.2f}, {"Sigmoid", 13, NAN}, {"Tanh", 13, NAN},    {"HardSwish", 14, NAN},
      {"Elu", 6, 0.7f},  {"Exp", 13, NAN},        {"Abs", 13, NAN},     {"Softplus", 1, NAN}, {"Neg", 13, NAN},
  };
  for (const auto& c : cases) {
    for (bool blocked : {false, true}) {
      SCOPED_TRACE(c.op + (blocked ? " blocked" : " plain"));
      Model m(c.opset < 11 ? 17 : c.opset);
      m.input("x", {2, 3, 6, 5});
      std::string in = "x";
      if (blocked) {
        // Conv + Relu fuse; the op under test then reads the blocked result.
        m.conv("x", 3, "c");
        m.node("Relu", {"c"}, {"r"});
        in = "r";
      }
      auto& n = m.node(c.op, {in}, {"y"});
      if (!std::isnan(c.alpha)) Model::real(n, "alpha", c.alpha);
      m.output("y", 4);
      auto s = check(m, c.op + (blocked ? "_blocked" : "_plain"));
      if (blocked) {
        EXPECT_LE(s.n_reorders, 2);
      }
    }
  }
}

// SiLU and HardSwish as PyTorch exports them (v * Sigmoid(v), v *
// HardSigmoid(v) with alpha 1/6 and beta 1/2 before opset 14): after a Conv
// or a Gemm, one swish or hardswish post-op; standalone, one primitive. A
// HardSigmoid alone (squeeze-and-excitation's gate) is two post-ops of the
// Conv, or two primitives. What is not a gate is left as it is.
TEST(CpuPoolNorm, GatesAndHardSigmoidRunAsOneActivation) {
  auto hard_sigmoid = [](onnx::NodeProto& n, float alpha) {
    Model::real(n, "alpha", alpha);
    Model::real(n, "beta", 0.5f);
  };
  for (bool hard : {false, true}) {
    SCOPED_TRACE(hard ? "HardSwish" : "SiLU");
    const std::string gate = hard ? "HardSigmoid" : "Sigmoid";
    auto gated = [&](Model& m, const std::string& v, const std::string& y, bool v_first) {
      auto& n = m.node(gate, {v}, {y + "_gate"});
      if (hard) hard_sigmoid(n, 1.0f / 6.0f);
      m.node("Mul", v_first ? std::vector<std::string>{v, y + "_gate"} : std::vector<std::string>{y + "_gate", v}, {y});
    };
    // After a Conv: one step for the three nodes.
    Model conv(13);
    conv.input("x", {1, 3, 10, 10});
    conv.conv("x", 3, "c");
    gated(conv, "c", "y", true);
    conv.output("y", 4);
    ExecutionSummary s = check(conv, gate + "_gate_after_conv");
    EXPECT_EQ(s.n_fused_nodes, 2);
    EXPECT_EQ(s.n_steps - s.n_reorders, 1);
    // After a Gemm, the Mul's inputs the other way round.
    Model gemm(13);
    gemm.input("a", {4, 8});
    gemm.init("b", {8, 6});
    gemm.node("Gemm", {"a", "b"}, {"g"});
    gated(gemm, "g", "y", false);
    gemm.output("y", 2);
    s = check(gemm, gate + "_gate_after_gemm");
    EXPECT_EQ(s.n_fused_nodes, 2);
    // Standalone, on a graph input that is read elsewhere too: one step.
    Model alone(13);
    alone.input("x", {2, 3, 4, 5});
    gated(alone, "x", "y", true);
    alone.node("Neg", {"x"}, {"z"});
    alone.output("y", 4);
    alone.output("z", 4);
    s = check(alone, gate + "_gate_alone");
    EXPECT_EQ(s.n_fused_nodes, 1);
    EXPECT_EQ(s.n_steps - s.n_reorders, 2);  // the gate, the Neg
  }
  // A HardSigmoid of other parameters is no HardSwish: Conv, two eltwise
  // steps, the Mul.
  Model near_miss(13);
  near_miss.input("x", {1, 3, 10, 10});
  near_miss.conv("x", 3, "c");
  hard_sigmoid(near_miss.node("HardSigmoid", {"c"}, {"h"}), 0.2f);
  near_miss.node("Mul", {"c", "h"}, {"y"});
  near_miss.output("y", 4);
  ExecutionSummary s = check(near_miss, "hardsigmoid_near_miss");
  EXPECT_EQ(s.n_fused_nodes, 0);
  // A HardSigmoid alone after a Conv (its default alpha 0.2): two post-ops.
  Model se(13);
  se.input("x", {1, 3, 10, 10});
  se.conv("x", 3, "c");
  se.node("HardSigmoid", {"c"}, {"y"});
  se.output("y", 4);
  s = check(se, "hardsigmoid_after_conv");
  EXPECT_EQ(s.n_fused_nodes, 1);
  // The Conv's output also a graph output: nothing fuses into it.
  Model read_twice(13);
  read_twice.input("x", {1, 3, 10, 10});
  read_twice.conv("x", 3, "c");
  read_twice.node("Sigmoid", {"c"}, {"sg"});
  read_twice.node("Mul", {"c", "sg"}, {"y"});
  read_twice.output("y", 4);
  read_twice.output("c", 4);
  s = check(read_twice, "gate_conv_output_read_twice");
  EXPECT_EQ(s.n_fused_nodes, 1);  // the standalone gate's Mul
}

TEST(CpuPoolNorm, LogAndSqrtOfPositiveValues) {
  Model m;
  m.input("x", {3, 40});
  m.node("Sigmoid", {"x"}, {"a"});
  m.node("Log", {"a"}, {"l"});
  m.node("Sqrt", {"a"}, {"s"});
  m.output("l", 2);
  m.output("s", 2);
  check(m, "log_sqrt");
}

TEST(CpuPoolNorm, Clip) {
  {  // opset 13: constant bounds as inputs (MobileNet's ReLU6), on blocked data.
    Model m(13);
    m.input("x", {1, 3, 6, 6});
    m.conv("x", 3, "c");
    Model::ints(m.node("MaxPool", {"c"}, {"p"}), "kernel_shape", {1, 1});
    m.init_values("lo", {}, {-0.25f});
    m.init_values("hi", {}, {0.5f});
    m.node("Clip", {"p", "lo", "hi"}, {"y"});
    m.output("y", 4);
    check(m, "clip_inputs");
  }
  {  // only a max
    Model m(13);
    m.input("x", {2, 7});
    m.init_values("hi", {}, {0.1f});
    m.node("Clip", {"x", "", "hi"}, {"y"});
    m.output("y", 2);
    check(m, "clip_max_only");
  }
  {  // opset 10: attributes
    Model m(10);
    m.input("x", {2, 7});
    auto& n = m.node("Clip", {"x"}, {"y"});
    Model::real(n, "min", -0.5f);
    Model::real(n, "max", 0.3f);
    m.output("y", 2);
    check(m, "clip_attrs");
  }
  {  // min > max: refused (the reference gives max everywhere)
    Model m(13);
    m.input("x", {2, 7});
    m.init_values("lo", {}, {0.5f});
    m.init_values("hi", {}, {-0.5f});
    m.node("Clip", {"x", "lo", "hi"}, {"y"});
    m.output("y", 2);
    check(m, "clip_min_above_max", 1);
  }
  {  // a bound computed at run time: refused
    Model m(13);
    m.input("x", {2, 7});
    m.input("hi", {});
    m.node("Clip", {"x", "", "hi"}, {"y"});
    m.output("y", 2);
    check(m, "clip_runtime_bound", 1);
  }
}

// ---------------------------------------------------------------- softmax

TEST(CpuPoolNorm, Softmax) {
  struct Case {
    std::string name;
    int64_t opset;
    std::vector<int64_t> x;
    int64_t axis;  // INT64_MIN: default
    bool blocked;
    int fallbacks;
  };
  const std::vector<Case> cases = {
      {"v13_last", 13, {3, 4, 10}, INT64_MIN, false, 0},
      {"v13_middle", 13, {3, 4, 10}, 1, false, 0},
      {"v13_channels_blocked", 13, {2, 3, 5, 4}, 1, true, 0},
      {"v13_first", 13, {3, 4, 10}, -3, false, 0},
      {"v11_2d", 11, {4, 10}, INT64_MIN, false, 0},
      {"v11_trailing_ones", 11, {2, 10, 1, 1}, 1, false, 0},
      {"v11_last", 11, {2, 3, 10}, -1, false, 0},
      {"v11_leading_ones", 11, {2, 1, 1, 10}, 1, false, 0},
      // Rows spanning two dims: refused.
      {"v11_two_dims", 11, {2, 3, 10}, 1, false, 1},
  };
  for (std::string op : {"Softmax", "LogSoftmax"}) {
    for (const auto& c : cases) {
      SCOPED_TRACE(op + " " + c.name);
      Model m(c.opset);
      std::string in = m.input_maybe_after_conv(c.x, c.blocked);
      auto& n = m.node(op, {in}, {"y"});
      if (c.axis != INT64_MIN) Model::integer(n, "axis", c.axis);
      m.output("y", c.x.size());
      check(m, op + "_" + c.name, c.fallbacks);
    }
  }
}

// ---------------------------------------------------------------- LRN

TEST(CpuPoolNorm, Lrn) {
  struct Case {
    std::string name;
    int64_t size;
    float alpha, beta, bias;
    bool blocked;
    std::vector<int64_t> x;
    int fallbacks;
  };
  const std::vector<Case> cases = {
      {"size5_blocked", 5, 1e-4f, 0.75f, 1.0f, true, {1, 3, 7, 6}, 0},
      {"size3_plain", 3, 0.5f, 0.6f, 2.0f, false, {2, 7, 4, 5}, 0},
      {"size1", 1, 0.3f, 0.9f, 1.5f, false, {1, 4, 3, 3}, 0},
      {"size5_big_alpha_blocked", 5, 2.0f, 0.75f, 1.0f, true, {1, 3, 5, 5}, 0},
      {"size3_3d", 3, 0.5f, 0.75f, 1.0f, false, {1, 6, 3, 4, 5}, 0},
      {"size3_1d", 3, 0.5f, 0.75f, 1.0f, false, {2, 6, 7}, 0},
      // An even size: ONNX's window is one channel longer after c than before.
      {"size4", 4, 0.5f, 0.75f, 1.0f, false, {1, 8, 3, 3}, 1},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    Model m;
    std::string in = m.input_maybe_after_conv(c.x, c.blocked);
    auto& n = m.node("LRN", {in}, {"y"});
    Model::integer(n, "size", c.size);
    Model::real(n, "alpha", c.alpha);
    Model::real(n, "beta", c.beta);
    Model::real(n, "bias", c.bias);
    m.output("y", c.x.size());
    auto s = check(m, "lrn_" + c.name, c.fallbacks);
    if (c.blocked) {
      EXPECT_LE(s.n_reorders, 2);
    }
  }
}

// ---------------------------------------------------------------- layer norm

TEST(CpuPoolNorm, LayerNormalization) {
  struct Case {
    std::string name;
    std::vector<int64_t> x;
    int64_t axis;
    std::vector<int64_t> scale_dims;  // empty: the normalised shape
    bool bias;
    int fallbacks;
  };
  const std::vector<Case> cases = {
      {"last", {2, 4, 32}, -1, {}, true, 0},
      {"no_bias", {2, 4, 32}, -1, {}, false, 0},
      {"rank2", {6, 48}, 1, {}, true, 0},
      {"rank4", {2, 3, 4, 16}, 3, {}, true, 0},
      {"ones_before_last", {2, 1, 1, 24}, 1, {}, true, 0},
      {"scale_broadcast", {2, 4, 32}, -1, {1}, true, 0},
      // Normalised over two dims that are not 1: refused.
      {"two_dims", {2, 4, 32}, 1, {}, true, 1},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    Model m(17);
    m.input("x", c.x);
    std::vector<int64_t> norm(c.x.begin() + (c.axis < 0 ? c.axis + static_cast<int64_t>(c.x.size()) : c.axis),
                              c.x.end());
    m.init("scale", c.scale_dims.empty() ? norm : c.scale_dims, 0.5f, 1.5f);
    std::vector<std::string> ins = {"x", "scale"};
    if (c.bias) {
      m.init("bias", norm);
      ins.push_back("bias");
    }
    auto& n = m.node("LayerNormalization", ins, {"y"});
    Model::integer(n, "axis", c.axis);
    Model::real(n, "epsilon", 1e-5f);
    m.output("y", c.x.size());
    check(m, "ln_" + c.name, c.fallbacks);
  }
  {  // The Mean output is wanted: refused.
    Model m(17);
    m.input("x", {2, 4, 32});
    m.init("scale", {32});
    m.node("LayerNormalization", {"x", "scale"}, {"y", "mean"});
    m.output("y", 3);
    m.output("mean", 3);
    check(m, "ln_mean_output", 1);
  }
}

// ---------------------------------------------------------------- concat

TEST(CpuPoolNorm, Slice) {
  struct Case {
    std::string name;
    bool blocked;  // the data from a Conv (channels-last)
    std::vector<int64_t> starts, ends, axes, steps;
  };
  const std::vector<Case> cases = {
      {"channel_halves", true, {0}, {8}, {1}, {}},           // ShuffleNet's split, channels-last in and out
      {"second_half", true, {8}, {1000}, {1}, {}},           // an end past the dim, clamped
      {"spatial_steps", true, {1, 0}, {5, -1}, {2, 3}, {2, 3}},
      {"backwards", false, {-1, 4}, {-100, 0}, {1, 3}, {-1, -2}},  // negative steps, plain data
      {"leading_axes", false, {0, 1}, {1, 3}, {0, 1}, {}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    Model m(13);
    std::string in = m.input_maybe_after_conv({2, 16, 6, 7}, c.blocked);
    m.init_ints("starts", c.starts);
    m.init_ints("ends", c.ends);
    m.init_ints("axes", c.axes);
    std::vector<std::string> inputs = {in, "starts", "ends", "axes"};
    if (!c.steps.empty()) {
      m.init_ints("steps", c.steps);
      inputs.push_back("steps");
    }
    m.node("Slice", inputs, {"s"});
    if (c.blocked) m.conv("s", c.name == "spatial_steps" ? 16 : 8, "y");  // the Convs' layout on both sides
    else m.node("Relu", {"s"}, {"y"});
    m.output("y", 4);
    ExecutionSummary s = check(m, "slice_" + c.name);
    if (c.blocked) {
      EXPECT_LE(s.n_reorders, 2);  // x in, y out: none around the Slice
    }
  }
  // Starts given at run time: the reference kernel.
  Model runtime(13);
  runtime.input("x", {3, 8});
  runtime.input("starts", {1}, onnx::TensorProto_DataType_INT64);
  runtime.init_ints("ends", {5});
  runtime.node("Slice", {"x", "starts", "ends"}, {"y"});
  runtime.output("y", 2);
  check(runtime, "slice_runtime_starts", 1);
}

// Split as strided copies in the data's layout: every part equal to the
// reference kernel's, no fallback, no reorder around it after a Conv.
TEST(CpuPoolNorm, Split) {
  struct Case {
    std::string name;
    bool blocked;  // the data from a Conv (channels-last)
    int64_t axis;
    std::vector<int64_t> sizes;  // the split input; empty: an even split
  };
  const std::vector<Case> cases = {
      {"channels_even", true, 1, {}},        // a channel split of a Conv's output (channels-last)
      {"channels_sizes", true, 1, {4, 12}},  // uneven parts
      {"rows", false, 2, {1, 2, 3}},         // plain data, a spatial axis, three parts
      {"last_axis", false, -1, {5, 2}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    Model m(13);
    std::string in = m.input_maybe_after_conv({2, 16, 6, 7}, c.blocked);
    std::vector<std::string> inputs = {in};
    if (!c.sizes.empty()) {
      m.init_ints("sizes", c.sizes);
      inputs.push_back("sizes");
    }
    size_t parts = c.sizes.empty() ? 2 : c.sizes.size();
    std::vector<std::string> outs;
    for (size_t i = 0; i < parts; ++i) outs.push_back("s" + std::to_string(i));
    Model::integer(m.node("Split", inputs, outs), "axis", c.axis);
    for (size_t i = 0; i < parts; ++i) {
      std::string y = "y" + std::to_string(i);
      if (c.blocked) m.conv(outs[i], c.sizes.empty() ? 8 : c.sizes[i], y);  // the Convs' layout on both sides
      else m.node("Relu", {outs[i]}, {y});
      m.output(y, 4);
    }
    ExecutionSummary s = check(m, "split_" + c.name);
    if (c.blocked) {
      EXPECT_LE(s.n_reorders, 1 + static_cast<int>(parts));  // x in, the parts' results out: none around the Split
    }
  }
  // Sizes given at run time: the reference kernel (not run here: random
  // sizes would not add up).
  Model runtime(13);
  runtime.input("x", {3, 8});
  runtime.input("sizes", {2}, onnx::TensorProto_DataType_INT64);
  runtime.node("Split", {"x", "sizes"}, {"a", "b"});
  runtime.output("a", 2);
  runtime.output("b", 2);
  auto dir = temp_dir("cpu_pool_norm_split_runtime");
  write_model(runtime.proto(), dir / "model.onnx");
  ExecutionSummary s = Session::load((dir / "model.onnx").string(), {}, SessionOptions{"cpu:0", false}).summary();
  ASSERT_EQ(s.fallbacks.size(), 1u);
  EXPECT_NE(s.fallbacks[0].find("Split"), std::string::npos) << s.fallbacks[0];
  std::filesystem::remove_all(dir);
}

TEST(CpuPoolNorm, Concat) {
  {  // GoogLeNet-like: blocked branches (Conv, Conv, MaxPool of the input) joined on channels.
    Model m;
    m.input("x", {1, 16, 8, 8});
    m.conv("x", 16, "a", 16, 1);
    m.conv("x", 16, "b", 32, 3);
    auto& p = m.node("MaxPool", {"x"}, {"p"});
    Model::ints(p, "kernel_shape", {3, 3});
    Model::ints(p, "pads", {1, 1, 1, 1});
    auto& n = m.node("Concat", {"a", "b", "p"}, {"y"});
    Model::integer(n, "axis", 1);
    m.output("y", 4);
    check(m, "concat_branches");
  }
  {  // Mixed: a blocked Conv output and a plain graph input, then a Relu on the result.
    Model m;
    m.input("x", {1, 3, 6, 6});
    m.input("z", {1, 5, 6, 6});
    m.conv("x", 3, "a");
    auto& n = m.node("Concat", {"a", "z"}, {"y"});
    Model::integer(n, "axis", 1);
    m.node("Relu", {"y"}, {"r"});
    m.output("r", 4);
    check(m, "concat_mixed");
  }
  {  // Plain, last axis negative, with a constant input.
    Model m;
    m.input("x", {2, 3, 4});
    m.input("z", {2, 3, 5});
    m.init("k", {2, 3, 2});
    auto& n = m.node("Concat", {"x", "k", "z"}, {"y"});
    Model::integer(n, "axis", -1);
    m.output("y", 3);
    check(m, "concat_last_axis");
  }
  {  // Axis 0, the same value twice.
    Model m;
    m.input("x", {2, 3});
    auto& n = m.node("Concat", {"x", "x"}, {"y"});
    Model::integer(n, "axis", 0);
    m.output("y", 2);
    check(m, "concat_axis0_twice");
  }
  {  // int32
    Model m;
    m.input("x", {2, 3}, kInt32);
    m.input("z", {2, 2}, kInt32);
    auto& n = m.node("Concat", {"x", "z"}, {"y"});
    Model::integer(n, "axis", 1);
    m.output("y", 2, kInt32);
    check(m, "concat_int32");
  }
}

// A small CNN chaining the ops on blocked data end to end: nothing falls back
// and only the final output is reordered to plain.
TEST(CpuPoolNorm, ChainStaysBlocked) {
  Model m(13);
  m.input("x", {1, 3, 16, 16});
  m.conv("x", 3, "c1");
  auto& p = m.node("MaxPool", {"c1"}, {"p"});
  Model::ints(p, "kernel_shape", {3, 3});
  Model::ints(p, "strides", {2, 2});
  Model::integer(p, "ceil_mode", 1);
  auto& lrn = m.node("LRN", {"p"}, {"n"});
  Model::integer(lrn, "size", 5);
  m.init("s", {16});
  m.init("b", {16});
  m.init("mu", {16});
  m.init("v", {16}, 0.5f, 1.5f);
  m.node("BatchNormalization", {"n", "s", "b", "mu", "v"}, {"bn"});
  m.node("Sigmoid", {"bn"}, {"sg"});
  m.conv("sg", 16, "c2", 16, 1);
  auto& a = m.node("AveragePool", {"sg"}, {"ap"});
  Model::ints(a, "kernel_shape", {3, 3});
  Model::ints(a, "pads", {1, 1, 1, 1});
  auto& cat = m.node("Concat", {"c2", "ap"}, {"cat"});
  Model::integer(cat, "axis", 1);
  m.node("GlobalAveragePool", {"cat"}, {"g"});
  auto& sm = m.node("Softmax", {"g"}, {"y"});
  Model::integer(sm, "axis", 1);
  m.output("y", 4);
  auto s = check(m, "chain");
  EXPECT_LE(s.n_reorders, 2) << "layouts flow between the ops";
}

}  // namespace
}  // namespace hetsched
