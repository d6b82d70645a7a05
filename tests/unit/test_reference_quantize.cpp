// The quantization reference kernels on the spec's traps the ONNX node tests
// leave out: ties rounding to even, saturation at both ends of uint8 and
// int8, per-axis parameters on another axis than 1, int32 (bias) input,
// NaN, an all-zero DynamicQuantizeLinear, per-row and per-column zero points
// of MatMulInteger, per-channel weight scales of QLinearConv.
#include <algorithm>
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "kernel_test_util.h"

namespace hetsched {
namespace {

using testing::attr_int;
using testing::f32;
using testing::i32;
using testing::run1;
using testing::run_reference_op;
using testing::values_of;

Tensor u8(Shape shape, std::vector<uint8_t> v) { return Tensor::from_vector<uint8_t>(std::move(shape), v); }
Tensor s8(Shape shape, std::vector<int8_t> v) { return Tensor::from_vector<int8_t>(std::move(shape), v); }

TEST(ReferenceQuantize, QuantizeLinearRoundsTiesToEvenAndSaturates) {
  Tensor x = f32({8}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 1000.0f, -1000.0f, std::nanf("")});
  EXPECT_EQ(values_of<uint8_t>(run1("QuantizeLinear", {x, f32({}, {1.0f}), u8({}, {10})}, {}, 13)),
            (std::vector<uint8_t>{10, 12, 12, 10, 8, 255, 0, 10}));
  EXPECT_EQ(values_of<int8_t>(run1("QuantizeLinear", {x, f32({}, {0.5f}), s8({}, {-1})}, {}, 13)),
            (std::vector<int8_t>{0, 2, 4, -2, -4, 127, -128, -1}));
  // No zero point: uint8, zero point 0.
  Tensor y = run1("QuantizeLinear", {f32({2}, {-3.0f, 3.0f}), f32({}, {2.0f})}, {}, 13);
  ASSERT_EQ(y.dtype(), DType::kUInt8);
  EXPECT_EQ(values_of<uint8_t>(y), (std::vector<uint8_t>{0, 2}));
}

TEST(ReferenceQuantize, PerAxisParametersFollowTheAxisAttribute) {
  // x[2, 3], scales per column (axis -1).
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor q = run1("QuantizeLinear", {x, f32({3}, {1, 2, 4}), s8({3}, {0, 1, -1})}, {{"axis", attr_int(-1)}}, 13);
  // 3/4 rounds to 1, 5/2 = 2.5 to 2 and 6/4 = 1.5 to 2 (ties to even), before the zero points.
  EXPECT_EQ(values_of<int8_t>(q), (std::vector<int8_t>{1, 2, 0, 4, 3, 1}));
  Tensor d = run1("DequantizeLinear", {q, f32({3}, {1, 2, 4}), s8({3}, {0, 1, -1})}, {{"axis", attr_int(1)}}, 13);
  EXPECT_EQ(values_of<float>(d), (std::vector<float>{1, 2, 4, 4, 4, 8}));
  // A per-row scale on axis 0.
  Tensor r = run1("DequantizeLinear", {q, f32({2}, {1, 10})}, {{"axis", attr_int(0)}}, 13);
  EXPECT_EQ(values_of<float>(r), (std::vector<float>{1, 2, 0, 40, 30, 10}));
  // A scale that matches no axis is an error naming the node.
  EXPECT_THROW(run1("DequantizeLinear", {q, f32({2}, {1, 10})}, {{"axis", attr_int(1)}}, 13), Error);
}

TEST(ReferenceQuantize, DequantizeLinearTakesAnInt32BiasWithoutZeroPoint) {
  Tensor d = run1("DequantizeLinear", {i32({3}, {-2000000000, 0, 7}), f32({}, {0.5f})}, {}, 13);
  EXPECT_EQ(values_of<float>(d), (std::vector<float>{-1e9f, 0.0f, 3.5f}));
}

TEST(ReferenceQuantize, DynamicQuantizeLinearOfZerosIsZero) {
  std::vector<Tensor> out = run_reference_op("DynamicQuantizeLinear", {f32({3}, {0, 0, 0})}, {}, 3, 11);
  EXPECT_EQ(values_of<uint8_t>(out[0]), (std::vector<uint8_t>{0, 0, 0}));
  EXPECT_EQ(out[1].data<float>()[0], 0.0f);
  EXPECT_EQ(out[2].data<uint8_t>()[0], 0);
  // Positive values only: the range still starts at 0, so the zero point is 0.
  out = run_reference_op("DynamicQuantizeLinear", {f32({2}, {1.0f, 2.55f})}, {}, 3, 11);
  EXPECT_EQ(out[2].data<uint8_t>()[0], 0);
  EXPECT_EQ(values_of<uint8_t>(out[0]), (std::vector<uint8_t>{100, 255}));
}

TEST(ReferenceQuantize, DynamicQuantizeLinearRoundsEveryValueAsTheSpecSays) {
  // Random values (a range around 0 giving a zero point inside 0..255), every
  // half step of the scale (the ties), and values far out: each element
  // against the spec's formula, computed here in double.
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-3.0f, 7.0f);
  std::vector<float> x(4099);
  for (float& v : x) v = u(rng);
  x[0] = -3.0f, x[1] = 7.0f;
  float scale = (7.0f - -3.0f) / 255.0f;
  for (int k = 0; k < 250; ++k) x[2 + static_cast<size_t>(k)] = (static_cast<float>(k - 76) + 0.5f) * scale;
  std::vector<Tensor> out = run_reference_op("DynamicQuantizeLinear", {f32({4099}, x)}, {}, 3, 11);
  ASSERT_EQ(out[1].data<float>()[0], scale);
  double zp = std::clamp(std::nearbyint(0.0 - static_cast<double>(-3.0f / scale)), 0.0, 255.0);
  ASSERT_EQ(out[2].data<uint8_t>()[0], static_cast<uint8_t>(zp));
  for (size_t i = 0; i < x.size(); ++i) {
    double want = std::clamp(std::nearbyint(static_cast<double>(x[i] / scale)) + zp, 0.0, 255.0);
    ASSERT_EQ(out[0].data<uint8_t>()[i], static_cast<uint8_t>(want)) << i << ": " << x[i];
  }
}

TEST(ReferenceQuantize, MatMulIntegerSubtractsPerRowAndPerColumnZeroPoints) {
  // A[2, 2] int8 with zero points per row, B[2, 2] uint8 with zero points per column.
  Tensor a = s8({2, 2}, {1, 2, 3, 4});
  Tensor b = u8({2, 2}, {10, 20, 30, 40});
  Tensor y = run1("MatMulInteger", {a, b, s8({2}, {1, -1}), u8({2}, {10, 0})}, {}, 10);
  ASSERT_EQ(y.dtype(), DType::kInt32);
  // (A - [[1], [-1]]) = [[0, 1], [4, 5]]; (B - [10, 0]) = [[0, 20], [20, 40]].
  EXPECT_EQ(values_of<int32_t>(y), (std::vector<int32_t>{20, 40, 100, 280}));
}

TEST(ReferenceQuantize, QLinearConvScalesEachOutputChannelByItsOwnWeightScale) {
  // x[1, 1, 1, 2] uint8, w[2, 1, 1, 1] int8 (two 1x1 filters), bias [1, -1].
  std::map<std::string, Attribute> no_attrs;
  Tensor y = run1("QLinearConv",
                  {u8({1, 1, 1, 2}, {12, 14}), f32({}, {0.5f}), u8({}, {10}), s8({2, 1, 1, 1}, {3, -5}),
                   f32({2}, {1.0f, 0.25f}), s8({2}, {0, 0}), f32({}, {0.5f}), s8({}, {1}), i32({2}, {1, -1})},
                  no_attrs, 10);
  ASSERT_EQ(y.dtype(), DType::kInt8);
  // Channel 0: acc = 3 * [2, 4] + 1 = [7, 13], times 0.5 * 1 / 0.5 = 1, plus 1.
  // Channel 1: acc = -5 * [2, 4] - 1 = [-11, -21], times 0.5 * 0.25 / 0.5 = 0.25:
  // -2.75 and -5.25 round to -3 and -5, plus 1.
  EXPECT_EQ(values_of<int8_t>(y), (std::vector<int8_t>{8, 14, -2, -4}));
}

}  // namespace
}  // namespace hetsched
