// The Open Inference Protocol's tensors (serve/oip.h), without HTTP: what a
// request's JSON and binary bytes decode to, and what is refused.
#include <cstring>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "graph_test_util.h"
#include "hetsched/error.h"
#include "serve/oip.h"

namespace hetsched::serve {
namespace {

using nlohmann::json;

// x: float32 [2, 3], flags: bool [2], ids: int8 [free]; out = Relu(x).
Graph model() {
  Graph g = testing::relu_chain(1, 3);
  g.values[g.inputs[0]].shape = {2, 3};
  for (auto [name, dtype, shape] :
       {std::tuple{"flags", DType::kBool, Shape{2}}, std::tuple{"ids", DType::kInt8, Shape{-1}}}) {
    ValueId v = testing::add_float_value(g, name, shape);
    g.values[v].dtype = dtype;
    g.inputs.push_back(v);
  }
  return g;
}

json request(json x_data, json ids_data = {1, -2}) {
  return {{"inputs",
           {{{"name", "x"}, {"datatype", "FP32"}, {"shape", {2, 3}}, {"data", x_data}},
            {{"name", "flags"}, {"datatype", "BOOL"}, {"shape", {2}}, {"data", {true, false}}},
            {{"name", "ids"}, {"datatype", "INT8"}, {"shape", {ids_data.size()}}, {"data", ids_data}}}}};
}

std::string refusal(const json& header, std::string_view tail = {}) {
  try {
    decode_infer_request(header, tail, model());
  } catch (const RequestError& e) {
    EXPECT_EQ(e.status(), 400);
    return e.what();
  }
  return "accepted";
}

TEST(OipDecode, NestedAndFlatDataIntegersInFloatsBoolsAndFreeDims) {
  Graph g = model();
  InferRequest nested = decode_infer_request(request({{1, 2, 3}, {4, 5.5, -6}}), {}, g);
  InferRequest flat = decode_infer_request(request({1, 2, 3, 4, 5.5, -6}, {7, 8, 9}), {}, g);
  for (const InferRequest* r : {&nested, &flat}) {
    const Tensor& x = r->inputs.at("x");
    EXPECT_EQ(x.shape(), (Shape{2, 3}));
    EXPECT_FLOAT_EQ(x.data<float>()[4], 5.5f);
    EXPECT_FLOAT_EQ(x.data<float>()[5], -6.f);
    EXPECT_TRUE(r->inputs.at("flags").data<bool>()[0]);
    EXPECT_FALSE(r->inputs.at("flags").data<bool>()[1]);
  }
  EXPECT_EQ(flat.inputs.at("ids").shape(), (Shape{3}));
  EXPECT_EQ(nested.inputs.at("ids").data<int8_t>()[1], -2);
  EXPECT_EQ(nested.outputs, std::vector<std::string>{g.values[g.outputs[0]].name});
  EXPECT_EQ(nested.binary, std::vector<bool>{false});
}

TEST(OipDecode, RefusesWhatDoesNotFitTheModel) {
  EXPECT_NE(refusal(request({1, 2, 3, 4, 5})).find("5 data values, expected 6"), std::string::npos);
  EXPECT_NE(refusal(request({1, 2, 3, 4, 5, 6, 7})).find("more than 6 data values"), std::string::npos);
  EXPECT_NE(refusal(request({1, 2, 3, 4, 5, 6}, {1, 300})).find("out of range for INT8"), std::string::npos);
  EXPECT_NE(refusal(request({1, 2, 3, 4, 5, 6}, {1.5, 2})).find("expected an integer"), std::string::npos);
  EXPECT_NE(refusal(request({1, 2, 3, 4, 5, "6"})).find("expected a number"), std::string::npos);
  json wrong = request({1, 2, 3, 4, 5, 6});
  wrong["inputs"][0]["shape"] = {3, 2};
  EXPECT_NE(refusal(wrong).find("shape [3,2], expected [2,3]"), std::string::npos);
  wrong["inputs"][0]["shape"] = {4611686018427387904LL, 4};
  EXPECT_NE(refusal(wrong).find("shape"), std::string::npos);
  wrong = request({1, 2, 3, 4, 5, 6});
  wrong["inputs"][1]["data"] = {1, 0};
  EXPECT_NE(refusal(wrong).find("expected true or false"), std::string::npos);
  wrong["inputs"].erase(1);
  EXPECT_NE(refusal(wrong).find("input 'flags': missing"), std::string::npos);
  wrong = request({1, 2, 3, 4, 5, 6});
  wrong["outputs"] = {{{"name", "nope"}}};
  EXPECT_NE(refusal(wrong).find("output 'nope'"), std::string::npos);
  EXPECT_NE(refusal(json::array()).find("JSON object"), std::string::npos);
}

TEST(OipDecode, BinaryTensorDataMustMatchTheShapeAndTheBytesSent) {
  json header = request({1, 2, 3, 4, 5, 6});
  header["inputs"][0].erase("data");
  header["inputs"][0]["parameters"] = {{"binary_data_size", 24}};
  float values[6] = {1, 2, 3, 4, 5, 6};
  std::string tail(reinterpret_cast<const char*>(values), sizeof(values));
  InferRequest r = decode_infer_request(header, tail, model());
  EXPECT_FLOAT_EQ(r.inputs.at("x").data<float>()[5], 6.f);
  EXPECT_NE(refusal(header, tail + "xx").find("2" "6 bytes follow"), std::string::npos);
  EXPECT_NE(refusal(header, tail.substr(0, 20)).find("only 20 bytes follow"), std::string::npos);
  header["inputs"][0]["parameters"]["binary_data_size"] = 20;
  EXPECT_NE(refusal(header, tail).find("expected 24"), std::string::npos);
}

TEST(OipEncode, JsonAndBinaryOutputs) {
  InferRequest request;
  request.id = "7";
  request.outputs = {"a", "b"};
  request.binary = {false, true};
  Tensor a(DType::kInt64, {2});
  a.data<int64_t>()[0] = 3;
  a.data<int64_t>()[1] = -4;
  Tensor b(DType::kFloat32, {1});
  b.data<float>()[0] = 0.5f;
  InferResponse response = encode_infer_response("m", request, {{"a", a}, {"b", b}});
  json header = json::parse(response.header);
  EXPECT_EQ(header["id"], "7");
  EXPECT_EQ(header["model_name"], "m");
  EXPECT_EQ(header["outputs"][0]["data"], json({3, -4}));
  EXPECT_EQ(header["outputs"][0]["datatype"], "INT64");
  EXPECT_EQ(header["outputs"][1]["parameters"]["binary_data_size"], 4);
  ASSERT_EQ(response.tail.size(), 4u);
  float got = 0;
  std::memcpy(&got, response.tail.data(), 4);
  EXPECT_EQ(got, 0.5f);
  EXPECT_EQ(json_depth(R"({"a": [[1], "[[[["], {"b": []}})"), 3);
}

}  // namespace
}  // namespace hetsched::serve
