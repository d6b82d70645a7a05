// TopK's reference kernel on the cases ONNX's node tests leave out: ties go
// to the lower index, NaN ranks above every number, k = 0, an integer input,
// and k beyond the axis (an error naming the node).
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "kernel_test_util.h"

namespace hetsched {
namespace {

using testing::attr_int;
using testing::f32;
using testing::i64;
using testing::run_reference_op;

std::vector<Tensor> top_k(const Tensor& x, int64_t k, std::map<std::string, Attribute> attrs = {}) {
  return run_reference_op("TopK", {x, i64({1}, {k})}, std::move(attrs), 2, 13);
}

TEST(ReferenceTopK, TiesGoToTheLowerIndex) {
  auto out = top_k(f32({6}, {1, 3, 2, 3, 1, 3}), 4);
  EXPECT_EQ(out[0].to_double_vector(), std::vector<double>({3, 3, 3, 2}));
  EXPECT_EQ(out[1].to_int64_vector(), std::vector<int64_t>({1, 3, 5, 2}));
  auto smallest = top_k(f32({6}, {1, 3, 2, 3, 1, 3}), 3, {{"largest", attr_int(0)}});
  EXPECT_EQ(smallest[0].to_double_vector(), std::vector<double>({1, 1, 2}));
  EXPECT_EQ(smallest[1].to_int64_vector(), std::vector<int64_t>({0, 4, 2}));
}

TEST(ReferenceTopK, NanRanksAboveEveryNumber) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto out = top_k(f32({4}, {2, nan, 5, nan}), 3);
  EXPECT_EQ(out[1].to_int64_vector(), std::vector<int64_t>({1, 3, 2}));
  auto smallest = top_k(f32({4}, {2, nan, 5, nan}), 3, {{"largest", attr_int(0)}});
  EXPECT_EQ(smallest[1].to_int64_vector(), std::vector<int64_t>({0, 2, 1}));
}

TEST(ReferenceTopK, AlongAnInnerAxisOfIntegers) {
  // [2, 3, 2], axis 1.
  auto out = run_reference_op("TopK", {i64({2, 3, 2}, {1, 9, 4, 2, 4, 7, 0, 0, 5, 1, 3, 8}), i64({1}, {2})},
                              {{"axis", attr_int(1)}}, 2, 13);
  EXPECT_EQ(out[0].shape(), Shape({2, 2, 2}));
  EXPECT_EQ(out[0].to_int64_vector(), std::vector<int64_t>({4, 9, 4, 7, 5, 8, 3, 1}));
  EXPECT_EQ(out[1].to_int64_vector(), std::vector<int64_t>({1, 0, 2, 2, 1, 2, 2, 1}));
}

TEST(ReferenceTopK, KZeroAndKTooLarge) {
  auto out = top_k(f32({2, 3}, {1, 2, 3, 4, 5, 6}), 0);
  EXPECT_EQ(out[0].shape(), Shape({2, 0}));
  try {
    top_k(f32({2, 3}, {1, 2, 3, 4, 5, 6}), 4);
    FAIL() << "k = 4 over an axis of 3";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("k = 4: expected 0..3"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace hetsched
