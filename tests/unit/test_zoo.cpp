// The built-in model zoo (src/zoo): every model is a valid ONNX model (checker
// and strict shape inference), has the published architecture's layer counts
// and parameter counts, and is a deterministic function of its parameters.
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include "hetsched/error.h"
#include "zoo/zoo.h"

namespace hetsched {
namespace {

using ::testing::HasSubstr;
using zoo::ZooParams;

struct ZooCase {
  std::string name;
  ZooParams params;
  std::vector<int64_t> input_dims;
  std::vector<int64_t> output_dims;
  // Exact node counts per op type (ops not listed must be absent).
  std::map<std::string, int> ops;
  // Trainable parameters (weights, biases, BN/LN scale and shift; not BN
  // running statistics) of the reference implementation.
  int64_t parameters = 0;
};

// How gtest names a case in its output.
void PrintTo(const ZooCase& c, std::ostream* os) { *os << "zoo:" << c.name; }

// Counts checked against the reference implementations (torchvision 0.14 for
// the CNNs, the PyTorch port of NASNet-A Mobile) — e.g. ResNet-50 has 53 Conv
// including the 4 downsample convs, GoogLeNet 57 (3 stem + 9 x 6), Inception
// v3 94 (5 stem + 3x7 + 4 + 4x10 + 6 + 2x9), MobileNetV2 52.
std::vector<ZooCase> zoo_cases() {
  const std::vector<int64_t> image = {1, 3, 224, 224};
  const std::vector<int64_t> logits = {1, 1000};
  return {
      {"squeezenet1_0", {}, image, logits,
       // 2 stem + 8 Fire x 3 convs; every conv has a ReLU; no BN as published.
       {{"Conv", 26}, {"Relu", 26}, {"MaxPool", 3}, {"Concat", 8}, {"GlobalAveragePool", 1}, {"Flatten", 1}},
       1248424},
      {"resnet18", {}, image, logits,
       {{"Conv", 20}, {"BatchNormalization", 20}, {"Relu", 17}, {"Add", 8}, {"MaxPool", 1},
        {"GlobalAveragePool", 1}, {"Flatten", 1}, {"Gemm", 1}},
       11689512},
      {"resnet50", {}, image, logits,
       {{"Conv", 53}, {"BatchNormalization", 53}, {"Relu", 49}, {"Add", 16}, {"MaxPool", 1},
        {"GlobalAveragePool", 1}, {"Flatten", 1}, {"Gemm", 1}},
       25557032},
      {"googlenet", {}, image, logits,
       // 4 stem/between-stage pools + 9 inception pool branches.
       {{"Conv", 57}, {"BatchNormalization", 57}, {"Relu", 57}, {"MaxPool", 13}, {"Concat", 9},
        {"GlobalAveragePool", 1}, {"Flatten", 1}, {"Gemm", 1}},
       6624904},
      {"inception_v3", {}, {1, 3, 299, 299}, logits,
       // Concats: A 1 x3, B 1, C 1 x4, D 1, E 3 x2; AveragePool branches: A, C, E.
       {{"Conv", 94}, {"BatchNormalization", 94}, {"Relu", 94}, {"MaxPool", 4}, {"AveragePool", 9},
        {"Concat", 15}, {"GlobalAveragePool", 1}, {"Flatten", 1}, {"Gemm", 1}},
       23834568},
      {"mobilenet_v2", {}, image, logits,
       // 17 inverted residuals (the first without expansion), 10 with a skip Add.
       {{"Conv", 52}, {"BatchNormalization", 52}, {"Clip", 35}, {"Add", 10}, {"GlobalAveragePool", 1},
        {"Flatten", 1}, {"Gemm", 1}},
       3504872},
      {"nasnet", {}, image, logits,
       // 1 stem conv; 5 separable branches (4 convs, 2 BN, 2 ReLU) per cell in
       // 18 cells; 1x1 convs; 4 factorised reductions with Pad + Slice.
       {{"Conv", 356}, {"BatchNormalization", 192}, {"Relu", 192}, {"Add", 80}, {"AveragePool", 53},
        {"MaxPool", 8}, {"Concat", 20}, {"Pad", 4}, {"Slice", 4}, {"Flatten", 1}, {"Gemm", 1}},
       5289978},
      {"randwire", {}, image, logits,
       // Per stage 32 nodes of ReLU + 2 Conv + BN; conv1, conv2 and the
       // classifier add 3 Conv, 3 BN, 3 ReLU. The Add/Mul counts depend on the
       // graphs drawn from the seed (these are seed 0's).
       {{"Conv", 195}, {"BatchNormalization", 99}, {"Relu", 99}, {"Mul", 195}, {"Add", 137},
        {"GlobalAveragePool", 1}, {"Flatten", 1}, {"Gemm", 1}},
       // seed 0's graphs; the paper reports 5.6M for the small regime.
       5351299},
      {"bert", {{"layers", "2"}, {"seq", "16"}}, {1, 16}, {1, 16, 768},
       // Per layer: 6 linear (MatMul + Add) + 2 attention MatMuls, 2 residual
       // Adds + GELU's Add, Div for the scale and in GELU, 2 Mul in GELU.
       {{"Gather", 2}, {"MatMul", 16}, {"Add", 19}, {"Reshape", 8}, {"Transpose", 8}, {"Div", 4},
        {"Softmax", 2}, {"Erf", 2}, {"Mul", 4}, {"LayerNormalization", 5}},
       // word 1000x768 + position 512x768 + 3 LN + 2 x (4 x 768^2 + 2 x 768 x 3072 + biases + 2 LN)
       1000 * 768 + 512 * 768 + 2 * 768 +
           2 * (4 * (768 * 768 + 768) + (768 * 3072 + 3072) + (3072 * 768 + 768) + 4 * 768)},
  };
}

std::map<std::string, int> count_ops(const onnx::ModelProto& model) {
  std::map<std::string, int> counts;
  for (const auto& node : model.graph().node()) ++counts[node.op_type()];
  return counts;
}

int64_t element_count(const onnx::TensorProto& t) {
  int64_t n = 1;
  for (int64_t d : t.dims()) n *= d;
  return n;
}

int64_t trainable_parameters(const onnx::ModelProto& model) {
  std::set<std::string> running_stats;
  for (const auto& node : model.graph().node())
    if (node.op_type() == "BatchNormalization") {
      running_stats.insert(node.input(3));
      running_stats.insert(node.input(4));
    }
  int64_t total = 0;
  for (const auto& t : model.graph().initializer())
    if (t.data_type() == onnx::TensorProto::FLOAT && t.dims_size() > 0 && !running_stats.count(t.name()))
      total += element_count(t);
  return total;
}

std::vector<float> floats_of(const onnx::TensorProto& t) {
  std::vector<float> values(t.raw_data().size() / 4);
  std::memcpy(values.data(), t.raw_data().data(), values.size() * 4);  // the test hosts are little-endian
  return values;
}

const onnx::TensorProto* find_initializer(const onnx::ModelProto& model, const std::string& name) {
  for (const auto& t : model.graph().initializer())
    if (t.name() == name) return &t;
  return nullptr;
}

std::vector<int64_t> dims_of(const onnx::ValueInfoProto& vi) {
  std::vector<int64_t> dims;
  for (const auto& d : vi.type().tensor_type().shape().dim()) dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
  return dims;
}

class ZooModelTest : public ::testing::TestWithParam<ZooCase> {};

TEST_P(ZooModelTest, PassesCheckerAndStrictShapeInference) {
  const ZooCase& c = GetParam();
  onnx::ModelProto model = zoo::build_zoo_model(c.name, c.params);
  EXPECT_EQ(model.ir_version(), 8);
  ASSERT_EQ(model.opset_import_size(), 1);
  EXPECT_EQ(model.opset_import(0).domain(), "");
  EXPECT_EQ(model.opset_import(0).version(), 17);
  EXPECT_NO_THROW(onnx::checker::check_model(model));

  ASSERT_EQ(model.graph().input_size(), 1);
  EXPECT_EQ(dims_of(model.graph().input(0)), c.input_dims);
  ASSERT_EQ(model.graph().output_size(), 1);
  EXPECT_EQ(model.graph().output(0).name(), "output");
  EXPECT_EQ(model.graph().output(0).type().tensor_type().elem_type(), onnx::TensorProto::FLOAT);
  EXPECT_EQ(dims_of(model.graph().output(0)), c.output_dims);

  // Strict inference, with the declared output shape removed so that the
  // inferred one is what gets checked.
  model.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->clear_shape();
  ASSERT_NO_THROW(onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(),
                                                     onnx::ShapeInferenceOptions(true, 1, true)));
  EXPECT_EQ(dims_of(model.graph().output(0)), c.output_dims);
  // Every intermediate value got a fully static shape.
  std::set<std::string> typed;
  for (const auto& vi : model.graph().value_info()) {
    for (int64_t d : dims_of(vi)) EXPECT_GT(d, 0) << vi.name();
    typed.insert(vi.name());
  }
  for (const auto& node : model.graph().node())
    for (const auto& out : node.output())
      if (out != "output") {
        EXPECT_TRUE(typed.count(out)) << "no inferred shape for " << out;
      }
}

TEST_P(ZooModelTest, OpCountsMatchArchitecture) {
  const ZooCase& c = GetParam();
  const onnx::ModelProto model = zoo::build_zoo_model(c.name, c.params);
  EXPECT_EQ(count_ops(model), c.ops);
}

TEST_P(ZooModelTest, ParameterCountMatchesReference) {
  const ZooCase& c = GetParam();
  const onnx::ModelProto model = zoo::build_zoo_model(c.name, c.params);
  EXPECT_EQ(trainable_parameters(model), c.parameters);
}

TEST_P(ZooModelTest, NamesAreUniqueAndWeightsSane) {
  const ZooCase& c = GetParam();
  const onnx::ModelProto model = zoo::build_zoo_model(c.name, c.params);
  std::set<std::string> values, nodes;
  for (const auto& t : model.graph().initializer()) EXPECT_TRUE(values.insert(t.name()).second) << t.name();
  for (const auto& node : model.graph().node()) {
    EXPECT_TRUE(nodes.insert(node.name()).second) << node.name();
    for (const auto& out : node.output()) EXPECT_TRUE(values.insert(out).second) << out;
  }
  for (const auto& t : model.graph().initializer()) {
    if (t.data_type() != onnx::TensorProto::FLOAT || t.dims_size() == 0) continue;  // weights, not scalar constants
    ASSERT_EQ(static_cast<int64_t>(t.raw_data().size()), 4 * element_count(t)) << t.name();
    for (float v : floats_of(t)) ASSERT_TRUE(std::isfinite(v) && std::fabs(v) < 8.0f) << t.name() << " " << v;
  }
  // BatchNormalization nodes carry random statistics near identity (so that
  // folding them into the conv has real work), never all-equal constants.
  for (const auto& node : model.graph().node()) {
    if (node.op_type() != "BatchNormalization") continue;
    for (int i = 1; i <= 4; ++i) {
      const auto values = floats_of(*find_initializer(model, node.input(i)));
      const float center = (i == 1 || i == 4) ? 1.0f : 0.0f;
      std::set<float> distinct(values.begin(), values.end());
      EXPECT_GT(distinct.size(), values.size() / 2) << node.input(i);
      for (float v : values) ASSERT_NEAR(v, center, 0.2f) << node.input(i);
    }
  }
}

TEST_P(ZooModelTest, BuildingTwiceGivesIdenticalBytes) {
  const ZooCase& c = GetParam();
  std::string first, second;
  ASSERT_TRUE(zoo::build_zoo_model(c.name, c.params).SerializeToString(&first));
  ASSERT_TRUE(zoo::build_zoo_model(c.name, c.params).SerializeToString(&second));
  EXPECT_EQ(first.size(), second.size());
  EXPECT_TRUE(first == second);
}

TEST_P(ZooModelTest, SeedChangesWeights) {
  const ZooCase& c = GetParam();
  ZooParams seeded = c.params;
  seeded["seed"] = "1";
  const onnx::ModelProto a = zoo::build_zoo_model(c.name, c.params);
  const onnx::ModelProto b = zoo::build_zoo_model(c.name, seeded);
  ZooParams zero = c.params;
  zero["seed"] = "0";
  std::string default_bytes, zero_bytes;
  a.SerializeToString(&default_bytes);
  zoo::build_zoo_model(c.name, zero).SerializeToString(&zero_bytes);
  EXPECT_TRUE(default_bytes == zero_bytes) << "seed defaults to 0";

  int compared = 0, differing = 0;
  for (const auto& ta : a.graph().initializer()) {
    if (ta.data_type() != onnx::TensorProto::FLOAT || element_count(ta) < 16) continue;
    const onnx::TensorProto* tb = find_initializer(b, ta.name());
    if (!tb) continue;  // randwire: a different seed may give a different graph
    ++compared;
    if (ta.raw_data() != tb->raw_data()) ++differing;
  }
  EXPECT_GT(compared, 0);
  EXPECT_EQ(differing, compared);
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooModelTest, ::testing::ValuesIn(zoo_cases()),
                         [](const ::testing::TestParamInfo<ZooCase>& info) { return info.param.name; });

TEST(Zoo, ListsEveryModelSortedWithItsParameters) {
  const auto models = zoo::zoo_models();
  std::vector<std::string> names;
  for (const auto& m : models) {
    names.push_back(m.name);
    EXPECT_FALSE(m.description.empty()) << m.name;
    EXPECT_THAT(m.params, HasSubstr("seed=0")) << m.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"bert", "googlenet", "inception_v3", "mobilenet_v2", "nasnet",
                                             "randwire", "resnet18", "resnet50", "squeezenet1_0"}));
  for (const auto& m : models) {
    if (m.name == "bert") {
      EXPECT_EQ(m.params, "layers=12 seq=128 hidden=768 heads=12 vocab=1000 seed=0");
    }
    if (m.name == "randwire") {
      EXPECT_EQ(m.params, "nodes=32 channels=78 seed=0");
    }
    if (m.name == "resnet50") {
      EXPECT_EQ(m.params, "seed=0");
    }
  }
}

// The generator is integer-only splitmix64, so these bytes are the same on
// every platform and compiler; a change here changes every zoo model.
TEST(Zoo, WeightsArePlatformIndependent) {
  const onnx::ModelProto model = zoo::build_zoo_model("resnet18");
  const onnx::TensorProto* w = find_initializer(model, "stem/conv.weight");
  ASSERT_NE(w, nullptr);
  ASSERT_EQ(w->raw_data().size(), 64u * 3 * 7 * 7 * 4);
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char ch : w->raw_data()) {
    h ^= ch;
    h *= 0x100000001B3ull;
  }
  EXPECT_EQ(h, 0x08012960f8cf323aull);
  const unsigned char first[4] = {0xe5, 0xbc, 0xc3, 0x3c};  // 0x3cc3bce5 little-endian = 0.0238937829
  EXPECT_EQ(std::memcmp(w->raw_data().data(), first, 4), 0);
  // He-uniform: |w| < sqrt(6 / fan_in) with fan_in = 3 * 7 * 7.
  for (float v : floats_of(*w)) EXPECT_LE(std::fabs(v), std::sqrt(6.0 / 147.0) * 1.000001);
}

void expect_usage_error(const std::string& name, const ZooParams& params, const std::vector<std::string>& parts) {
  try {
    zoo::build_zoo_model(name, params);
    ADD_FAILURE() << "no error for zoo:" << name;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUsage) << e.what();
    for (const auto& part : parts) EXPECT_THAT(e.what(), HasSubstr(part));
  }
}

TEST(Zoo, UnknownModelIsUsageErrorListingKnownOnes) {
  expect_usage_error("resnet51", {}, {"resnet51", "resnet50", "bert", "squeezenet1_0"});
  expect_usage_error("", {}, {"known models"});
}

TEST(Zoo, BadParametersAreUsageErrors) {
  expect_usage_error("resnet50", {{"layers", "2"}}, {"'layers'", "seed"});
  expect_usage_error("bert", {{"depth", "2"}}, {"'depth'", "layers", "seq", "hidden", "heads", "vocab", "seed"});
  expect_usage_error("bert", {{"layers", "two"}}, {"'layers'", "two"});
  expect_usage_error("bert", {{"layers", "2x"}}, {"'layers'"});
  expect_usage_error("bert", {{"layers", ""}}, {"'layers'"});
  expect_usage_error("bert", {{"layers", "0"}}, {"'layers'", "[1, 48]"});
  expect_usage_error("bert", {{"seq", "-3"}}, {"'seq'"});
  // hetsched run feeds random token ids in [0, 10): smaller vocabularies are refused.
  expect_usage_error("bert", {{"vocab", "9"}}, {"'vocab'", "[10, 250000]"});
  expect_usage_error("bert", {{"hidden", "100"}, {"heads", "12"}}, {"'hidden'", "'heads'"});
  expect_usage_error("randwire", {{"nodes", "4"}}, {"'nodes'"});
  expect_usage_error("resnet18", {{"seed", "-1"}}, {"'seed'"});
  expect_usage_error("resnet18", {{"seed", "0x10"}}, {"'seed'"});
  expect_usage_error("resnet18", {{"seed", "99999999999999999999999"}}, {"'seed'"});
}

TEST(Zoo, SeedAcceptsTheFullUnsignedRange) {
  EXPECT_NO_THROW(zoo::build_zoo_model("squeezenet1_0", {{"seed", "18446744073709551615"}}));
}

TEST(Zoo, BertParametersShapeTheModel) {
  onnx::ModelProto model = zoo::build_zoo_model(
      "bert", {{"layers", "1"}, {"seq", "8"}, {"hidden", "64"}, {"heads", "4"}, {"vocab", "50"}});
  EXPECT_NO_THROW(onnx::checker::check_model(model));
  EXPECT_EQ(model.graph().input(0).name(), "input_ids");
  EXPECT_EQ(model.graph().input(0).type().tensor_type().elem_type(), onnx::TensorProto::INT64);
  EXPECT_EQ(dims_of(model.graph().input(0)), (std::vector<int64_t>{1, 8}));
  EXPECT_EQ(dims_of(model.graph().output(0)), (std::vector<int64_t>{1, 8, 64}));
  const onnx::TensorProto* words = find_initializer(model, "embeddings/word_embeddings.weight");
  ASSERT_NE(words, nullptr);
  EXPECT_EQ(std::vector<int64_t>(words->dims().begin(), words->dims().end()), (std::vector<int64_t>{50, 64}));
  EXPECT_EQ(count_ops(model)["LayerNormalization"], 3);
  // Heads: Reshape to [1, seq, heads, hidden / heads].
  bool found = false;
  for (const auto& node : model.graph().node())
    if (node.op_type() == "Reshape") {
      const auto* shape = find_initializer(model, node.input(1));
      ASSERT_NE(shape, nullptr);
      std::vector<int64_t> dims(shape->raw_data().size() / 8);
      std::memcpy(dims.data(), shape->raw_data().data(), shape->raw_data().size());
      if (dims.size() == 4) {
        EXPECT_EQ(dims, (std::vector<int64_t>{1, 8, 4, 16}));
        found = true;
      }
    }
  EXPECT_TRUE(found);
  ASSERT_NO_THROW(onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(),
                                                     onnx::ShapeInferenceOptions(true, 1, true)));
}

TEST(Zoo, RandwireGraphFollowsSeedAndParameters) {
  // Every node is ReLU -> separable conv (2 Conv) -> BN; plus conv1, conv2
  // and the classifier's 1x1 conv.
  const onnx::ModelProto small = zoo::build_zoo_model("randwire", {{"nodes", "8"}, {"channels", "16"}});
  auto ops = count_ops(small);
  EXPECT_EQ(ops["Conv"], 2 * 3 * 8 + 3);
  EXPECT_EQ(ops["BatchNormalization"], 3 * 8 + 3);
  EXPECT_EQ(ops["Relu"], 3 * 8 + 3);
  EXPECT_GT(ops["Mul"], 0);
  EXPECT_NO_THROW(onnx::checker::check_model(small));

  // WS(32, 4, 0.75) keeps 64 undirected edges per stage; each edge is one
  // weighted (Mul) input of its later node.
  const auto full = count_ops(zoo::build_zoo_model("randwire"));
  EXPECT_EQ(full.at("Conv"), 195);
  EXPECT_GE(full.at("Mul"), 3 * 64);
  EXPECT_LE(full.at("Mul"), 3 * 64 + 3);  // + one averaging Mul per stage with several outputs

  // Another seed draws other graphs: the wiring (node inputs) differs.
  auto wiring = [](const onnx::ModelProto& m) {
    std::vector<std::string> w;
    for (const auto& node : m.graph().node())
      if (node.op_type() == "Mul" || node.op_type() == "Add") w.push_back(node.input(0) + "|" + node.input(1));
    return w;
  };
  const onnx::ModelProto a = zoo::build_zoo_model("randwire", {{"nodes", "16"}, {"channels", "8"}});
  const onnx::ModelProto b =
      zoo::build_zoo_model("randwire", {{"nodes", "16"}, {"channels", "8"}, {"seed", "7"}});
  EXPECT_NE(wiring(a), wiring(b));
}

}  // namespace
}  // namespace hetsched
