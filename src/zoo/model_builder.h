// Shared machinery of the model zoo (see zoo.h):
//   - Rng: a tiny splitmix64 generator, identical on every platform;
//   - ModelBuilder: appends ONNX nodes and initializers with unique names,
//     tracks every value's static shape, and draws deterministic weights;
//   - ZooModelDef / HETSCHED_ZOO_MODEL: how each src/zoo/<name>.cpp registers
//     itself (the registry lives in zoo.cpp).
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace hetsched::zoo {

using Dims = std::vector<int64_t>;

// splitmix64 (Steele, Lea, Flood 2014). Integer-only, so every platform draws
// the same sequence; the float helpers use one correctly rounded operation
// per step, so they agree too.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next();
  // Uniform integer in [0, n), n > 0 (rejection sampling: unbiased).
  uint64_t below(uint64_t n);
  // Uniform in [0, 1) with 53 random bits.
  double uniform01();
  // Symmetric uniform in (-bound, bound), 24 random bits, as float.
  float symmetric(double bound);

 private:
  uint64_t state_;
};

// 64-bit FNV-1a: stable hash of a name, used to give each initializer its own
// random stream (so weights do not depend on the order tensors are created).
uint64_t hash_name(const std::string& text);
// Mixes a seed with a hash into a new seed.
uint64_t mix_seed(uint64_t seed, uint64_t salt);

// Convolution geometry (NCHW). Pads are explicit per side, so TF "SAME"
// padding (NASNet) and 1x7 kernels (Inception) need no extra ops.
struct ConvSpec {
  int64_t out_channels = 0;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int64_t groups = 1;
  int64_t dilation = 1;
  bool bias = false;
  // Multiplies the He-uniform bound sqrt(6 / fan_in). Residual branches use a
  // gain < 1 so that activations stay O(1) through deep residual stacks.
  double gain = 1.0;
};

struct PoolSpec {
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  bool ceil_mode = false;
  bool count_include_pad = false;  // AveragePool only
};

// Square-kernel shorthand: kernel k, stride s, symmetric padding p.
PoolSpec pool2d(int64_t k, int64_t s, int64_t p = 0, bool ceil_mode = false, bool count_include_pad = false);

class ModelBuilder {
 public:
  // `graph_name` names the graph; `seed` (with each initializer's name)
  // determines every weight.
  ModelBuilder(std::string graph_name, uint64_t seed);

  // ---- graph interface ------------------------------------------------------
  // Declares a graph input (elem_type: onnx::TensorProto::FLOAT, INT64, ...).
  std::string input(const std::string& name, int32_t elem_type, const Dims& dims);
  // Makes `value` (produced by a node) the graph output `name`, renaming it.
  void output(const std::string& value, const std::string& name);
  // The finished model: ir_version 8, opset 17, doc_string = description.
  onnx::ModelProto finish(const std::string& description);

  // ---- naming ----------------------------------------------------------------
  // Names created while a Scope is alive are prefixed "outer/inner/".
  class Scope {
   public:
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    ~Scope();

   private:
    friend class ModelBuilder;
    explicit Scope(ModelBuilder& builder) : builder_(builder) {}
    ModelBuilder& builder_;
  };
  [[nodiscard]] Scope scope(const std::string& name);

  // ---- values -----------------------------------------------------------------
  const Dims& dims(const std::string& value) const;
  int64_t channels(const std::string& value) const { return dims(value).at(1); }

  // ---- initializers (names are unique; returns the name) -------------------
  // Uniform in (-bound, bound).
  std::string init_uniform(const std::string& base, const Dims& dims, double bound);
  // Uniform in (center - half_width, center + half_width).
  std::string init_around(const std::string& base, const Dims& dims, double center, double half_width);
  std::string init_floats(const std::string& base, const Dims& dims, const std::vector<float>& values);
  std::string init_int64s(const std::string& base, const Dims& dims, const std::vector<int64_t>& values);
  // A float scalar (rank 0) constant.
  std::string scalar(float value);

  // ---- layers (each returns its output value) -----------------------------------
  std::string conv(const std::string& x, const ConvSpec& spec);
  // Square kernel k, stride s, symmetric padding p.
  std::string conv(const std::string& x, int64_t out_channels, int64_t k, int64_t stride = 1, int64_t pad = 0,
                   int64_t groups = 1, int64_t dilation = 1, bool bias = false, double gain = 1.0);
  // Inference-mode BatchNormalization with random statistics near identity:
  // gamma ~ U(0.8, 1.2), beta ~ U(-0.1, 0.1), mean ~ U(-0.1, 0.1), var ~ U(0.8, 1.2).
  std::string batch_norm(const std::string& x, float epsilon = 1e-5f);
  std::string relu(const std::string& x);
  std::string relu6(const std::string& x);  // Clip(x, 0, 6)
  std::string max_pool(const std::string& x, const PoolSpec& spec);
  std::string avg_pool(const std::string& x, const PoolSpec& spec);
  std::string global_avg_pool(const std::string& x);
  std::string flatten(const std::string& x, int64_t axis = 1);
  // Gemm(x, W^T) + b with W [out, in] (torch.nn.Linear layout, transB = 1).
  std::string gemm(const std::string& x, int64_t out_features);
  std::string concat(const std::vector<std::string>& xs, int64_t axis);
  std::string add(const std::string& a, const std::string& b);
  std::string mul(const std::string& a, const std::string& b);
  std::string div(const std::string& a, const std::string& b);
  // Pad (constant mode, zeros); pads = [x1_begin, x2_begin, ..., x1_end, ...].
  std::string pad(const std::string& x, const std::vector<int64_t>& pads);
  // Slice with explicit starts/ends/axes (steps 1); ends are clamped by ONNX.
  std::string slice(const std::string& x, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                    const std::vector<int64_t>& axes);
  // MatMul(x, W) + b with W [in, out] (the layout ONNX exports of BERT use).
  std::string linear(const std::string& x, int64_t out_features);
  std::string matmul(const std::string& a, const std::string& b);
  std::string gather(const std::string& table, const std::string& indices, int64_t axis = 0);
  std::string reshape(const std::string& x, const Dims& shape);
  std::string transpose(const std::string& x, const std::vector<int64_t>& perm);
  std::string softmax(const std::string& x, int64_t axis = -1);
  std::string erf(const std::string& x);
  // LayerNormalization over the last axis, gamma ~ U(0.8, 1.2), beta ~ U(-0.1, 0.1).
  std::string layer_norm(const std::string& x, float epsilon);

  // Generic node with one output of the given dims.
  std::string node(const std::string& op_type, const std::vector<std::string>& inputs, const Dims& out_dims,
                   const std::vector<onnx::AttributeProto>& attributes = {});

 private:
  std::string unique(const std::string& base);
  std::string scoped(const std::string& base) const;
  std::string add_initializer(onnx::TensorProto tensor, const std::string& base, const Dims& dims);
  std::string pool(const std::string& op_type, const std::string& x, const PoolSpec& spec);
  std::string binary(const std::string& op_type, const std::string& a, const std::string& b);

  onnx::ModelProto model_;
  onnx::GraphProto* graph_;
  uint64_t seed_;
  std::vector<std::string> scopes_;
  std::set<std::string> used_names_;
  std::map<std::string, int> next_suffix_;
  std::map<std::string, Dims> dims_;
  std::map<float, std::string> scalars_;
};

// ---- registration -------------------------------------------------------------

// An integer model parameter. Every model also takes `seed` (uint64, default 0).
struct ZooParamSpec {
  std::string name;
  int64_t default_value = 0;
  int64_t min_value = 1;
  int64_t max_value = 1 << 20;
};

// Parsed, validated parameters handed to a model's build function.
class ZooArgs {
 public:
  ZooArgs(uint64_t seed, std::map<std::string, int64_t> values) : seed_(seed), values_(std::move(values)) {}
  uint64_t seed() const { return seed_; }
  int64_t get(const std::string& name) const { return values_.at(name); }

 private:
  uint64_t seed_;
  std::map<std::string, int64_t> values_;
};

struct ZooModelDef {
  std::string name;
  std::string description;
  std::vector<ZooParamSpec> params;  // besides `seed`
  onnx::ModelProto (*build)(const ZooArgs& args) = nullptr;
};

void register_zoo_model(ZooModelDef def);

struct ZooRegistrar {
  explicit ZooRegistrar(ZooModelDef def) { register_zoo_model(std::move(def)); }
};

}  // namespace hetsched::zoo

#define HETSCHED_ZOO_CONCAT_INNER(a, b) a##b
#define HETSCHED_ZOO_CONCAT(a, b) HETSCHED_ZOO_CONCAT_INNER(a, b)
// HETSCHED_ZOO_MODEL({"resnet50", "description", {params...}, &build_fn});
#define HETSCHED_ZOO_MODEL(...)                                                  \
  static ::hetsched::zoo::ZooRegistrar HETSCHED_ZOO_CONCAT(hetsched_zoo_model_, \
                                                           __LINE__)(::hetsched::zoo::ZooModelDef __VA_ARGS__)
