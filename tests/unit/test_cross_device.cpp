// The cross-device harness: the same graph on every device kind against the
// reference kernels (the ground truth). Whole zoo models here, and single
// ops with their attribute variants; each backend's own test files add op
// cases.
#include <cmath>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "hetsched/session.h"
#include "kernel_test_util.h"
#include "onnx_model_util.h"

namespace hetsched {
namespace {

using namespace hetsched::testing;

// Device specs to check against the reference kernels.
const std::vector<std::string> kDevices = {"cpu:0", "cpu"};


// Runs `graph` on `devices` and on the reference kernels with the same
// inputs; every output must agree within `tolerance` (relative to its
// largest value). Returns the device session's summary.
ExecutionSummary expect_matches_reference(const Graph& graph, const std::string& devices, double tolerance) {
  Session device(graph, SessionOptions{devices, false});
  Session reference(graph, SessionOptions{devices, true});
  TensorMap inputs = reference.random_inputs(42);
  TensorMap want = reference.run(inputs);
  TensorMap got = device.run(inputs);
  EXPECT_EQ(got.size(), want.size());
  for (const auto& [name, t] : want) {
    if (!got.count(name)) {
      ADD_FAILURE() << "missing output " << name;
      continue;
    }
    EXPECT_EQ(got[name].shape(), t.shape()) << name;
    EXPECT_EQ(got[name].dtype(), t.dtype()) << name;
    if (got[name].shape() == t.shape()) {
      EXPECT_LE(relative_error(got[name], t), tolerance) << name << " on " << devices;
    }
  }
  return device.summary();
}

// ---------------------------------------------------------------- zoo models

class CrossDeviceZoo : public ::testing::TestWithParam<std::string> {};

TEST_P(CrossDeviceZoo, MatchesReference) {
  LoadOptions opts;
  if (GetParam() == "bert") opts.zoo_params = {{"layers", "2"}, {"seq", "16"}};
  Graph graph = load_model("zoo:" + GetParam(), opts);
  for (const auto& devices : kDevices) {
    ExecutionSummary s = expect_matches_reference(graph, devices, 1e-4);
    EXPECT_TRUE(s.note.empty()) << s.note;
  }
}

INSTANTIATE_TEST_SUITE_P(Zoo, CrossDeviceZoo,
                         ::testing::Values("squeezenet1_0", "resnet18", "resnet50", "googlenet", "inception_v3",
                                           "mobilenet_v2", "nasnet", "randwire", "bert"));

// ---------------------------------------------------------------- single ops

void set_ints(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
void set_int(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
void set_string(onnx::NodeProto* n, const std::string& name, const std::string& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}

std::vector<float> pseudo_random(size_t n, uint32_t seed, float scale) {
  std::vector<float> v(n);
  uint32_t s = seed * 2654435761u + 1;
  for (auto& x : v) {
    s = s * 1664525u + 1013904223u;
    x = scale * (static_cast<float>(s >> 8) / 16777216.0f * 2 - 1);
  }
  return v;
}

struct ConvCase {
  std::string name;
  int64_t channels, out_channels, group, kernel, stride, dilation, pad;
  std::string auto_pad;  // "" for explicit pads
  // "", "Relu", "Clip", "LeakyRelu", "AddRelu" (residual Add + Relu), "Add",
  // "AddKeep" (the residual is also a graph output: the sum cannot be in place)
  std::string then;
  int spatial = 2;
};

Graph conv_graph(const ConvCase& c) {
  onnx::ModelProto m = make_model(13);
  auto* g = m.mutable_graph();
  std::vector<int64_t> x_dims = {1, c.channels};
  for (int i = 0; i < c.spatial; ++i) x_dims.push_back(9);
  *g->add_input() = tensor_info("x", onnx::TensorProto_DataType_FLOAT, x_dims);
  std::vector<int64_t> w_dims = {c.out_channels, c.channels / c.group};
  for (int i = 0; i < c.spatial; ++i) w_dims.push_back(c.kernel);
  size_t w_size = 1;
  for (int64_t d : w_dims) w_size *= static_cast<size_t>(d);
  *g->add_initializer() = float_tensor("w", w_dims, pseudo_random(w_size, 1, 0.3f));
  *g->add_initializer() = float_tensor("b", {c.out_channels}, pseudo_random(static_cast<size_t>(c.out_channels), 2, 0.1f));
  auto* conv = g->add_node();
  *conv = make_node("Conv", {"x", "w", "b"}, {"c"}, "conv");
  set_int(conv, "group", c.group);
  set_ints(conv, "strides", std::vector<int64_t>(static_cast<size_t>(c.spatial), c.stride));
  set_ints(conv, "dilations", std::vector<int64_t>(static_cast<size_t>(c.spatial), c.dilation));
  if (c.auto_pad.empty()) set_ints(conv, "pads", std::vector<int64_t>(2 * static_cast<size_t>(c.spatial), c.pad));
  else set_string(conv, "auto_pad", c.auto_pad);
  std::string last = "c";
  if (c.then == "AddRelu" || c.then == "Add" || c.then == "AddKeep") {
    // The residual: a second Conv over x with the same output shape, computed first.
    auto* res = g->add_node();
    *res = make_node("Conv", {"x", "w", "b"}, {"r"}, "residual_conv");
    g->mutable_node()->SwapElements(0, 1);
    res = g->mutable_node(0);
    set_int(res, "group", c.group);
    set_ints(res, "strides", std::vector<int64_t>(static_cast<size_t>(c.spatial), c.stride));
    set_ints(res, "dilations", std::vector<int64_t>(static_cast<size_t>(c.spatial), c.dilation));
    if (c.auto_pad.empty()) set_ints(res, "pads", std::vector<int64_t>(2 * static_cast<size_t>(c.spatial), c.pad));
    else set_string(res, "auto_pad", c.auto_pad);
    *g->add_node() = make_node("Add", {"r", "c"}, {"sum"}, "add");
    last = "sum";
  }
  if (c.then == "Relu" || c.then == "AddRelu") {
    *g->add_node() = make_node("Relu", {last}, {"y"}, "relu");
  } else if (c.then == "Clip") {
    *g->add_initializer() = float_tensor("lo", {}, {0.0f});
    *g->add_initializer() = float_tensor("hi", {}, {0.5f});
    *g->add_node() = make_node("Clip", {last, "lo", "hi"}, {"y"}, "clip");
  } else if (c.then == "LeakyRelu") {
    *g->add_node() = make_node("LeakyRelu", {last}, {"y"}, "leaky");
  } else {
    *g->add_node() = make_node("Identity", {last}, {"y"}, "identity");
  }
  // Output dims left for shape inference: known rank, no values.
  *g->add_output() = tensor_info("y", onnx::TensorProto_DataType_FLOAT, {});
  auto* y_shape = g->mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  for (size_t i = 0; i < x_dims.size(); ++i) y_shape->add_dim();
  if (c.then == "AddKeep") {
    *g->add_output() = *g->mutable_output(0);
    g->mutable_output(1)->set_name("r");
  }
  auto dir = temp_dir("conv_" + c.name);
  write_model(m, dir / "m.onnx");
  Graph graph = load_model((dir / "m.onnx").string());
  std::filesystem::remove_all(dir);
  return graph;
}

class CrossDeviceConv : public ::testing::TestWithParam<ConvCase> {};

TEST_P(CrossDeviceConv, MatchesReferenceAndFuses) {
  const ConvCase& c = GetParam();
  Graph graph = conv_graph(c);
  for (const auto& devices : kDevices) {
    ExecutionSummary s = expect_matches_reference(graph, devices, 1e-5);
    EXPECT_EQ(s.n_fallbacks, 0) << ::testing::PrintToString(s.fallbacks);
    // Every op after the Conv is a post-op: one kernel does the lot.
    int fused = c.then.empty() ? 0 : c.then == "AddRelu" ? 2 : 1;
    EXPECT_EQ(s.n_fused_nodes, fused);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Conv, CrossDeviceConv,
    ::testing::Values(ConvCase{"plain", 8, 16, 1, 3, 1, 1, 1, "", ""},
                      ConvCase{"stride2", 8, 16, 1, 3, 2, 1, 1, "", "Relu"},
                      ConvCase{"dilated", 8, 8, 1, 3, 1, 2, 2, "", "Clip"},
                      ConvCase{"grouped", 8, 16, 4, 3, 1, 1, 1, "", "LeakyRelu"},
                      ConvCase{"depthwise", 16, 16, 16, 3, 1, 1, 1, "", "Relu"},
                      ConvCase{"pointwise", 16, 32, 1, 1, 1, 1, 0, "", "AddRelu"},
                      ConvCase{"residual_only", 8, 8, 1, 3, 1, 1, 1, "", "Add"},
                      ConvCase{"residual_kept", 8, 8, 1, 3, 1, 1, 1, "", "AddKeep"},
                      ConvCase{"same_upper", 8, 8, 1, 4, 2, 1, 0, "SAME_UPPER", ""},
                      ConvCase{"same_lower", 8, 8, 1, 4, 2, 1, 0, "SAME_LOWER", "Relu"},
                      ConvCase{"valid", 8, 8, 1, 3, 1, 1, 0, "VALID", ""},
                      ConvCase{"conv1d", 8, 8, 2, 3, 1, 1, 1, "", "Relu", 1},
                      ConvCase{"conv3d", 4, 8, 1, 3, 1, 1, 1, "", "AddRelu", 3}),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace hetsched
