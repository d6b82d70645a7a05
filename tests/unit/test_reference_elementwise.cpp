// Unit tests for the elementwise, logical, cast and reduction reference
// kernels (binary.cpp, unary.cpp, activation.cpp, clip.cpp, cast.cpp,
// reduce.cpp, cumsum.cpp).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernel_test_util.h"
#include "kernels/kernel.h"

namespace hetsched {
namespace {

using testing::attr_float;
using testing::attr_int;
using testing::attr_ints;
using testing::attr_string;
using testing::run_reference_op;
using testing::values_of;
using testing::run1;
using testing::f32;
using testing::i32;
using testing::i64;
using testing::b8;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();


void expect_floats_near(const std::vector<float>& got, const std::vector<float>& want, float tol = 1e-6f) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "at " << i;
    } else if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << "at " << i;
    } else {
      EXPECT_NEAR(got[i], want[i], tol * std::max(1.0f, std::fabs(want[i]))) << "at " << i;
    }
  }
}

ErrorCode error_code_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.code();
  }
  ADD_FAILURE() << "no hetsched::Error thrown";
  return ErrorCode::kUsage;
}

// Runs the kernel's load-time check on a one-node graph whose inputs have the
// given dtypes (kUndefined: unknown).
void run_check(const std::string& op, const std::vector<DType>& input_dtypes,
               std::map<std::string, Attribute> attrs = {}, int64_t opset = 17) {
  const kernels::ReferenceKernel* kernel = kernels::find_reference_kernel(op);
  ASSERT_NE(kernel, nullptr) << op;
  ASSERT_NE(kernel->check, nullptr) << op;
  testing::OneNodeGraph g = testing::one_node_graph(op, testing::specs_of(input_dtypes), std::move(attrs), 1, opset);
  kernel->check(g.node, g.graph);
}

// ---------------------------------------------------------------------------
// Broadcasting arithmetic.

TEST(ReferenceElementwise, AddBroadcastsLikeNumpy) {
  // [2,1,3] + [4,1] -> [2,4,3]
  std::vector<float> a(6), b(4);
  for (int i = 0; i < 6; ++i) a[i] = static_cast<float>(i);
  for (int i = 0; i < 4; ++i) b[i] = 100.0f * static_cast<float>(i + 1);
  Tensor out = run1("Add", {f32({2, 1, 3}, a), f32({4, 1}, b)});
  ASSERT_EQ(out.shape(), Shape({2, 4, 3}));
  std::vector<float> want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 3; ++k) want.push_back(a[i * 3 + k] + b[j]);
  EXPECT_EQ(values_of<float>(out), want);
}

TEST(ReferenceElementwise, SubBroadcastsBothWaysAndScalars) {
  // [3,1] - [1,2] -> [3,2]
  Tensor out = run1("Sub", {f32({3, 1}, {1, 2, 3}), f32({1, 2}, {10, 20})});
  ASSERT_EQ(out.shape(), Shape({3, 2}));
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{-9, -19, -8, -18, -7, -17}));
  // rank-0 with rank-0 stays rank 0; rank-0 with [2] gives [2].
  Tensor s = run1("Mul", {Tensor::scalar<float>(3), Tensor::scalar<float>(4)});
  EXPECT_EQ(s.shape(), Shape({}));
  EXPECT_EQ(values_of<float>(s), std::vector<float>{12});
  Tensor v = run1("Mul", {Tensor::scalar<float>(3), f32({2}, {1, 2})});
  EXPECT_EQ(v.shape(), Shape({2}));
  EXPECT_EQ(values_of<float>(v), (std::vector<float>{3, 6}));
}

TEST(ReferenceElementwise, BroadcastOfZeroSizedDimAndMismatch) {
  Tensor out = run1("Add", {f32({0, 3}, {}), f32({1, 3}, {1, 2, 3})});
  EXPECT_EQ(out.shape(), Shape({0, 3}));
  EXPECT_EQ(error_code_of([] { run1("Add", {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({2}, {1, 2})}); }),
            ErrorCode::kRuntime);
  EXPECT_EQ(error_code_of([] { run1("Add", {f32({1}, {1}), i32({1}, {1})}); }), ErrorCode::kRuntime);
}

TEST(ReferenceElementwise, IntegerDivTruncatesAndWraps) {
  Tensor out = run1("Div", {i32({4}, {-7, 7, 7, std::numeric_limits<int32_t>::min()}), i32({4}, {2, -2, 2, -1})});
  EXPECT_EQ(values_of<int32_t>(out),
            (std::vector<int32_t>{-3, -3, 3, std::numeric_limits<int32_t>::min()}));
  EXPECT_EQ(error_code_of([] { run1("Div", {i32({2}, {1, 2}), i32({1}, {0})}); }), ErrorCode::kRuntime);
  Tensor f = run1("Div", {f32({2}, {1, -1}), f32({1}, {0})});
  EXPECT_EQ(values_of<float>(f), (std::vector<float>{kInf, -kInf}));
  Tensor wrap = run1("Add", {i32({1}, {std::numeric_limits<int32_t>::max()}), i32({1}, {1})});
  EXPECT_EQ(values_of<int32_t>(wrap)[0], std::numeric_limits<int32_t>::min());
  Tensor u8 = run1("Mul", {Tensor::from_vector<uint8_t>({2}, {200, 3}), Tensor::from_vector<uint8_t>({2}, {2, 5})});
  EXPECT_EQ(values_of<uint8_t>(u8), (std::vector<uint8_t>{144, 15}));
}

TEST(ReferenceElementwise, UnsignedIntegersWrapCompareAndShift) {
  using U64 = std::vector<uint64_t>;
  auto u64 = [](U64 v) { return Tensor::from_vector<uint64_t>({static_cast<int64_t>(v.size())}, v); };
  // Full 64-bit range: no trip through int64 or double.
  uint64_t big = std::numeric_limits<uint64_t>::max() - 1;
  EXPECT_EQ(values_of<uint64_t>(run1("Sub", {u64({1, big}), u64({2, 1})})), (U64{big + 1, big - 1}));
  EXPECT_EQ(values_of<uint64_t>(run1("Max", {u64({big, 3}), u64({5, 4})})), (U64{big, 4}));
  EXPECT_EQ(values_of<uint64_t>(run1("Mod", {u64({big, 7}), u64({10, 3})})), (U64{big % 10, 1}));
  EXPECT_EQ(values_of<bool>(run1("Greater", {u64({big, 1}), u64({1, big})})), (std::vector<bool>{true, false}));
  EXPECT_EQ(values_of<bool>(run1("Equal", {u64({big, 1}), u64({big, 2})})), (std::vector<bool>{true, false}));
  // BitShift: a shift by the width or more gives 0.
  auto u32 = [](std::vector<uint32_t> v) {
    return Tensor::from_vector<uint32_t>({static_cast<int64_t>(v.size())}, v);
  };
  EXPECT_EQ(values_of<uint32_t>(run1("BitShift", {u32({1, 3, 1}), u32({31, 1, 32})},
                                     {{"direction", attr_string("LEFT")}}, 11)),
            (std::vector<uint32_t>{0x80000000u, 6, 0}));
  EXPECT_EQ(values_of<uint32_t>(run1("BitShift", {u32({0x80000000u, 6}), u32({31, 40})},
                                     {{"direction", attr_string("RIGHT")}}, 11)),
            (std::vector<uint32_t>{1, 0}));
  EXPECT_EQ(error_code_of([] { run_check("BitShift", {DType::kUInt8, DType::kUInt8}, {}); }), ErrorCode::kInvalidModel);
  EXPECT_EQ(error_code_of([] {
              run_check("BitShift", {DType::kInt32, DType::kInt32}, {{"direction", attr_string("LEFT")}});
            }),
            ErrorCode::kUnsupported);
}

TEST(ReferenceElementwise, ModSignFollowsDivisorOrDividend) {
  Tensor x = i32({4}, {-7, 7, -7, 7});
  Tensor y = i32({4}, {3, -3, -3, 3});
  EXPECT_EQ(values_of<int32_t>(run1("Mod", {x, y})), (std::vector<int32_t>{2, -2, -1, 1}));
  EXPECT_EQ(values_of<int32_t>(run1("Mod", {x, y}, {{"fmod", attr_int(1)}})), (std::vector<int32_t>{-1, 1, -1, 1}));
  Tensor f = run1("Mod", {f32({2}, {-7.5f, 7.5f}), f32({1}, {2})}, {{"fmod", attr_int(1)}});
  EXPECT_EQ(values_of<float>(f), (std::vector<float>{-1.5f, 1.5f}));
  EXPECT_EQ(error_code_of([] { run1("Mod", {f32({1}, {1}), f32({1}, {2})}); }), ErrorCode::kInvalidModel);
  EXPECT_EQ(error_code_of([] { run1("Mod", {i32({1}, {1}), i32({1}, {0})}); }), ErrorCode::kRuntime);
  EXPECT_EQ(error_code_of([] { run_check("Mod", {DType::kFloat32, DType::kFloat32}); }), ErrorCode::kInvalidModel);
  EXPECT_NO_THROW(run_check("Mod", {DType::kFloat32, DType::kFloat32}, {{"fmod", attr_int(1)}}));
}

TEST(ReferenceElementwise, PowMixedDtypesKeepsBaseDtype) {
  Tensor a = run1("Pow", {f32({3}, {2, 3, 4}), i64({3}, {3, -1, 0})});
  ASSERT_EQ(a.dtype(), DType::kFloat32);
  expect_floats_near(values_of<float>(a), {8, 1.0f / 3, 1});
  Tensor b = run1("Pow", {i32({3}, {2, 3, 10}), f32({3}, {0.5f, 2, -1})});
  ASSERT_EQ(b.dtype(), DType::kInt32);
  EXPECT_EQ(values_of<int32_t>(b), (std::vector<int32_t>{1, 9, 0}));
  Tensor c = run1("Pow", {i64({4}, {2, -1, 1, 3}), i64({4}, {40, -3, -5, 4})});
  EXPECT_EQ(values_of<int64_t>(c), (std::vector<int64_t>{int64_t(1) << 40, -1, 1, 81}));
  // Broadcast exponent.
  Tensor d = run1("Pow", {f32({2, 2}, {1, 2, 3, 4}), f32({}, {2})});
  EXPECT_EQ(values_of<float>(d), (std::vector<float>{1, 4, 9, 16}));
}

// ---------------------------------------------------------------------------
// Variadic.

TEST(ReferenceElementwise, VariadicOpsBroadcastAcrossAllInputs) {
  Tensor a = f32({2, 1}, {1, 2});
  Tensor b = f32({3}, {10, 20, 30});
  Tensor c = f32({}, {100});
  Tensor sum = run1("Sum", {a, b, c});
  ASSERT_EQ(sum.shape(), Shape({2, 3}));
  EXPECT_EQ(values_of<float>(sum), (std::vector<float>{111, 121, 131, 112, 122, 132}));
  Tensor mean = run1("Mean", {a, b, c});
  expect_floats_near(values_of<float>(mean), {37, 121.0f / 3, 131.0f / 3, 112.0f / 3, 122.0f / 3, 44});
  Tensor one = run1("Max", {a});
  EXPECT_EQ(values_of<float>(one), (std::vector<float>{1, 2}));
  Tensor mx = run1("Max", {f32({3}, {1, kNaN, 5}), f32({3}, {kNaN, 2, 4}), f32({1}, {3})});
  expect_floats_near(values_of<float>(mx), {kNaN, kNaN, 5});
  Tensor mn = run1("Min", {i32({3}, {5, -2, 7}), i32({1}, {0})});
  EXPECT_EQ(values_of<int32_t>(mn), (std::vector<int32_t>{0, -2, 0}));
  EXPECT_EQ(error_code_of([] { run_check("Sum", {DType::kInt32, DType::kInt32}); }), ErrorCode::kUnsupported);
}

// ---------------------------------------------------------------------------
// Comparisons and logic.

TEST(ReferenceElementwise, ComparisonsBroadcastToBool) {
  Tensor a = f32({2, 2}, {1, 2, 3, kNaN});
  Tensor b = f32({2}, {2, 2});
  EXPECT_EQ(values_of<bool>(run1("Greater", {a, b})), (std::vector<bool>{false, false, true, false}));
  EXPECT_EQ(values_of<bool>(run1("Less", {a, b})), (std::vector<bool>{true, false, false, false}));
  EXPECT_EQ(values_of<bool>(run1("GreaterOrEqual", {a, b})), (std::vector<bool>{false, true, true, false}));
  EXPECT_EQ(values_of<bool>(run1("LessOrEqual", {a, b})), (std::vector<bool>{true, true, false, false}));
  EXPECT_EQ(values_of<bool>(run1("Equal", {a, b})), (std::vector<bool>{false, true, false, false}));
  EXPECT_EQ(values_of<bool>(run1("Equal", {b8({3}, {true, false, true}), b8({1}, {true})})),
            (std::vector<bool>{true, false, true}));
  EXPECT_EQ(values_of<bool>(run1("Equal", {i64({2}, {4, 5}), i64({}, {5})})), (std::vector<bool>{false, true}));
  EXPECT_EQ(error_code_of([] { run_check("Greater", {DType::kBool, DType::kBool}); }), ErrorCode::kUnsupported);
}

TEST(ReferenceElementwise, LogicOpsAndNot) {
  Tensor a = b8({2, 2}, {false, false, true, true});
  Tensor b = b8({2}, {false, true});
  EXPECT_EQ(values_of<bool>(run1("And", {a, b})), (std::vector<bool>{false, false, false, true}));
  EXPECT_EQ(values_of<bool>(run1("Or", {a, b})), (std::vector<bool>{false, true, true, true}));
  EXPECT_EQ(values_of<bool>(run1("Xor", {a, b})), (std::vector<bool>{false, true, true, false}));
  EXPECT_EQ(values_of<bool>(run1("Not", {b})), (std::vector<bool>{true, false}));
  EXPECT_EQ(error_code_of([] { run_check("And", {DType::kInt32, DType::kBool}); }), ErrorCode::kUnsupported);
}

TEST(ReferenceElementwise, WhereBroadcastsThreeWays) {
  // cond [2,1], x [1,3], y scalar -> [2,3]
  Tensor out = run1("Where", {b8({2, 1}, {true, false}), i64({1, 3}, {1, 2, 3}), i64({}, {-1})});
  ASSERT_EQ(out.shape(), Shape({2, 3}));
  EXPECT_EQ(values_of<int64_t>(out), (std::vector<int64_t>{1, 2, 3, -1, -1, -1}));
  // cond [3], x [2,1], y [2,3]
  Tensor out2 = run1("Where", {b8({3}, {true, false, true}), f32({2, 1}, {7, 8}), f32({2, 3}, {0, 1, 2, 3, 4, 5})});
  EXPECT_EQ(values_of<float>(out2), (std::vector<float>{7, 1, 7, 8, 4, 8}));
  EXPECT_EQ(error_code_of([] { run1("Where", {i32({1}, {1}), f32({1}, {1}), f32({1}, {2})}); }),
            ErrorCode::kUnsupported);
}

TEST(ReferenceElementwise, PReluBroadcastsSlopeToX) {
  // X [1,2,2], slope [2,1] (per channel)
  Tensor out = run1("PRelu", {f32({1, 2, 2}, {-1, 2, -3, 4}), f32({2, 1}, {0.5f, 0.25f})});
  ASSERT_EQ(out.shape(), Shape({1, 2, 2}));
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{-0.5f, 2, -0.75f, 4}));
  // A slope that would grow the output is refused.
  EXPECT_EQ(error_code_of([] { run1("PRelu", {f32({2}, {1, 2}), f32({2, 2}, {1, 2, 3, 4})}); }),
            ErrorCode::kRuntime);
}

// ---------------------------------------------------------------------------
// Unary math.

TEST(ReferenceElementwise, RoundIsHalfToEven) {
  Tensor out = run1("Round", {f32({9}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 2.4f, -2.6f, 3.5f})});
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{0, 2, 2, -0.0f, -2, -2, 2, -3, 4}));
}

TEST(ReferenceElementwise, UnaryMathValues) {
  std::vector<float> x = {0.25f, 0.5f, 0.9f};
  struct Case {
    const char* op;
    double (*f)(double);
  };
  for (const Case& c : std::vector<Case>{{"Sqrt", std::sqrt},   {"Exp", std::exp},   {"Log", std::log},
                                         {"Erf", std::erf},     {"Sin", std::sin},   {"Cos", std::cos},
                                         {"Tan", std::tan},     {"Asin", std::asin}, {"Acos", std::acos},
                                         {"Atan", std::atan},   {"Sinh", std::sinh}, {"Cosh", std::cosh},
                                         {"Asinh", std::asinh}, {"Atanh", std::atanh}}) {
    std::vector<float> want;
    for (float v : x) want.push_back(static_cast<float>(c.f(v)));
    SCOPED_TRACE(c.op);
    expect_floats_near(values_of<float>(run1(c.op, {f32({3}, x)})), want);
  }
  expect_floats_near(values_of<float>(run1("Acosh", {f32({2}, {1, 2})})), {0, std::acosh(2.0f)});
  expect_floats_near(values_of<float>(run1("Reciprocal", {f32({2}, {4, -0.5f})})), {0.25f, -2});
  expect_floats_near(values_of<float>(run1("Floor", {f32({2}, {-1.5f, 1.5f})})), {-2, 1});
  expect_floats_near(values_of<float>(run1("Ceil", {f32({2}, {-1.5f, 1.5f})})), {-1, 2});
  expect_floats_near(values_of<float>(run1("Log", {f32({2}, {0, -1})})), {-kInf, kNaN});
  Tensor d = run1("Sqrt", {Tensor::from_vector<double>({1}, {2.0})});
  EXPECT_EQ(values_of<double>(d)[0], std::sqrt(2.0));
  EXPECT_EQ(error_code_of([] { run_check("Sqrt", {DType::kInt32}); }), ErrorCode::kUnsupported);
}

TEST(ReferenceElementwise, AbsNegSignOnIntegers) {
  Tensor x = Tensor::from_vector<int8_t>({4}, {-128, -3, 0, 5});
  EXPECT_EQ(values_of<int8_t>(run1("Abs", {x})), (std::vector<int8_t>{-128, 3, 0, 5}));
  EXPECT_EQ(values_of<int8_t>(run1("Neg", {x})), (std::vector<int8_t>{-128, 3, 0, -5}));
  EXPECT_EQ(values_of<int8_t>(run1("Sign", {x})), (std::vector<int8_t>{-1, -1, 0, 1}));
  expect_floats_near(values_of<float>(run1("Sign", {f32({4}, {-2, 0, 3, kNaN})})), {-1, 0, 1, kNaN});
  EXPECT_EQ(error_code_of([] { run_check("Neg", {DType::kUInt8}); }), ErrorCode::kUnsupported);
}

TEST(ReferenceElementwise, IsNaNAndIsInf) {
  Tensor x = f32({4}, {1, kNaN, kInf, -kInf});
  EXPECT_EQ(values_of<bool>(run1("IsNaN", {x})), (std::vector<bool>{false, true, false, false}));
  EXPECT_EQ(values_of<bool>(run1("IsInf", {x})), (std::vector<bool>{false, false, true, true}));
  EXPECT_EQ(values_of<bool>(run1("IsInf", {x}, {{"detect_negative", attr_int(0)}})),
            (std::vector<bool>{false, false, true, false}));
  EXPECT_EQ(values_of<bool>(run1("IsInf", {x}, {{"detect_positive", attr_int(0)}})),
            (std::vector<bool>{false, false, false, true}));
}

// ---------------------------------------------------------------------------
// Activations.

TEST(ReferenceElementwise, ActivationsWithAttributes) {
  std::vector<float> x = {-2, -0.5f, 0, 0.5f, 3};
  Tensor t = f32({5}, x);
  auto expect_map = [&](const char* op, std::map<std::string, Attribute> attrs, auto f) {
    std::vector<float> want;
    for (float v : x) want.push_back(static_cast<float>(f(static_cast<double>(v))));
    SCOPED_TRACE(op);
    expect_floats_near(values_of<float>(run1(op, {t}, std::move(attrs))), want, 1e-5f);
  };
  expect_map("Relu", {}, [](double v) { return v > 0 ? v : 0; });
  expect_map("LeakyRelu", {}, [](double v) { return v < 0 ? 0.01 * v : v; });
  expect_map("LeakyRelu", {{"alpha", attr_float(0.5f)}}, [](double v) { return v < 0 ? 0.5 * v : v; });
  expect_map("Elu", {{"alpha", attr_float(2)}}, [](double v) { return v < 0 ? 2 * (std::exp(v) - 1) : v; });
  expect_map("Selu", {}, [](double v) {
    return v > 0 ? 1.0507009873554805 * v : 1.0507009873554805 * 1.6732632423543772 * (std::exp(v) - 1);
  });
  expect_map("Celu", {{"alpha", attr_float(2)}},
             [](double v) { return std::max(0.0, v) + std::min(0.0, 2 * (std::exp(v / 2) - 1)); });
  expect_map("ThresholdedRelu", {{"alpha", attr_float(0.5f)}}, [](double v) { return v > 0.5 ? v : 0; });
  expect_map("ThresholdedRelu", {}, [](double v) { return v > 1 ? v : 0; });
  expect_map("Sigmoid", {}, [](double v) { return 1 / (1 + std::exp(-v)); });
  expect_map("HardSigmoid", {{"alpha", attr_float(0.5f)}, {"beta", attr_float(0.6f)}},
             [](double v) { return std::clamp(0.5 * v + 0.6, 0.0, 1.0); });
  expect_map("HardSwish", {}, [](double v) { return v * std::clamp(v / 6 + 0.5, 0.0, 1.0); });
  expect_map("Tanh", {}, [](double v) { return std::tanh(v); });
  expect_map("Softplus", {}, [](double v) { return std::log(std::exp(v) + 1); });
  expect_map("Softsign", {}, [](double v) { return v / (1 + std::fabs(v)); });
  expect_map("Mish", {}, [](double v) { return v * std::tanh(std::log(1 + std::exp(v))); });
  expect_map("Gelu", {}, [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); });
  expect_map("Gelu", {{"approximate", attr_string("tanh")}}, [](double v) {
    return 0.5 * v * (1 + std::tanh(std::sqrt(2 / 3.14159265358979323846) * (v + 0.044715 * v * v * v)));
  });
}

TEST(ReferenceElementwise, ActivationsStayFiniteAtExtremes) {
  Tensor t = f32({2}, {-1000, 1000});
  expect_floats_near(values_of<float>(run1("Sigmoid", {t})), {0, 1});
  expect_floats_near(values_of<float>(run1("Softplus", {t})), {0, 1000});
  expect_floats_near(values_of<float>(run1("Mish", {t})), {0, 1000});
  Tensor r = run1("Relu", {i32({3}, {-5, 0, 7})});
  EXPECT_EQ(values_of<int32_t>(r), (std::vector<int32_t>{0, 0, 7}));
}

TEST(ReferenceElementwise, ActivationChecksRefuseBadAttributes) {
  EXPECT_EQ(error_code_of([] { run_check("Gelu", {DType::kFloat32}, {{"approximate", attr_string("erf")}}); }),
            ErrorCode::kUnsupported);
  EXPECT_EQ(error_code_of([] { run_check("Elu", {DType::kFloat16}); }), ErrorCode::kUnsupported);
  EXPECT_EQ(error_code_of([] { run_check("Relu", {DType::kUInt8}); }), ErrorCode::kUnsupported);
  EXPECT_NO_THROW(run_check("Relu", {DType::kUndefined}));
}

// ---------------------------------------------------------------------------
// Clip.

TEST(ReferenceElementwise, ClipAttributeFormBeforeOpset11) {
  Tensor x = f32({4}, {-3, -1, 1, 3});
  Tensor out = run1("Clip", {x}, {{"min", attr_float(-2)}, {"max", attr_float(2)}}, 7);
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{-2, -1, 1, 2}));
  Tensor only_max = run1("Clip", {x}, {{"max", attr_float(0)}}, 7);
  EXPECT_EQ(values_of<float>(only_max), (std::vector<float>{-3, -1, 0, 0}));
  // Opset-6 defaults are +-FLT_MAX: infinities are clipped.
  Tensor inf = run1("Clip", {f32({2}, {-kInf, kInf})}, {}, 7);
  EXPECT_EQ(values_of<float>(inf),
            (std::vector<float>{std::numeric_limits<float>::lowest(), std::numeric_limits<float>::max()}));
}

TEST(ReferenceElementwise, ClipInputFormFromOpset11) {
  Tensor x = f32({5}, {-kInf, -1, 1, 3, kNaN});
  // Only max given (min omitted): no lower bound, -inf stays.
  Tensor out = run1("Clip", {x, Tensor(), f32({}, {2})}, {}, 13);
  expect_floats_near(values_of<float>(out), {-kInf, -1, 1, 2, kNaN});
  Tensor both = run1("Clip", {x, f32({}, {0}), f32({}, {2})}, {}, 11);
  expect_floats_near(values_of<float>(both), {0, 0, 1, 2, kNaN});
  // min > max: everything becomes max.
  Tensor inv = run1("Clip", {f32({3}, {-5, 0, 5}), f32({}, {3}), f32({}, {1})}, {}, 13);
  EXPECT_EQ(values_of<float>(inv), (std::vector<float>{1, 1, 1}));
  Tensor i8 = run1("Clip", {Tensor::from_vector<int8_t>({3}, {-100, 0, 100}), Tensor::from_vector<int8_t>({}, {-5})},
                   {}, 13);
  EXPECT_EQ(values_of<int8_t>(i8), (std::vector<int8_t>{-5, 0, 100}));
  Tensor none = run1("Clip", {x}, {}, 13);
  expect_floats_near(values_of<float>(none), {-kInf, -1, 1, 3, kNaN});
  EXPECT_EQ(error_code_of([] { run1("Clip", {f32({1}, {1}), f32({2}, {0, 1})}, {}, 13); }), ErrorCode::kRuntime);
  EXPECT_EQ(error_code_of([] { run_check("Clip", {DType::kInt32}, {}, 7); }), ErrorCode::kUnsupported);
  EXPECT_NO_THROW(run_check("Clip", {DType::kInt32, DType::kInt32}, {}, 13));
}

// ---------------------------------------------------------------------------
// Cast.

TEST(ReferenceElementwise, CastConversions) {
  Tensor x = f32({6}, {-1.7f, 1.7f, 300, -300, kNaN, 0});
  auto to = [](int64_t code) { return std::map<std::string, Attribute>{{"to", attr_int(code)}}; };
  EXPECT_EQ(values_of<int32_t>(run1("Cast", {x}, to(6))), (std::vector<int32_t>{-1, 1, 300, -300, 0, 0}));
  EXPECT_EQ(values_of<int8_t>(run1("Cast", {x}, to(3))), (std::vector<int8_t>{-1, 1, 127, -128, 0, 0}));
  EXPECT_EQ(values_of<bool>(run1("Cast", {x}, to(9))), (std::vector<bool>{true, true, true, true, true, false}));
  // Integers wrap.
  EXPECT_EQ(values_of<uint8_t>(run1("Cast", {i32({3}, {-1, 256, 257})}, to(2))), (std::vector<uint8_t>{255, 0, 1}));
  EXPECT_EQ(values_of<double>(run1("Cast", {b8({2}, {true, false})}, to(11))), (std::vector<double>{1, 0}));
  Tensor same = run1("Cast", {x}, to(1));
  EXPECT_NE(same.raw(), x.raw());
  Tensor like = run1("CastLike", {i64({2}, {3, -4}), Tensor::from_vector<double>({1}, {0})});
  EXPECT_EQ(like.dtype(), DType::kFloat64);
  EXPECT_EQ(values_of<double>(like), (std::vector<double>{3, -4}));
  // float16 and bfloat16 round to nearest even, through float32.
  Tensor h = run1("Cast", {Tensor::from_vector<double>({3}, {1.0 + 1.0 / 4096, 65504.0, -0.1})}, to(10));
  ASSERT_EQ(h.dtype(), DType::kFloat16);
  EXPECT_EQ(values_of<double>(run1("Cast", {h}, to(11))), (std::vector<double>{1.0, 65504.0, -0.0999755859375}));
  Tensor b = run1("Cast", {h}, to(16));
  ASSERT_EQ(b.dtype(), DType::kBFloat16);
  EXPECT_EQ(values_of<int64_t>(run1("Cast", {b}, to(7))), (std::vector<int64_t>{1, 65536, 0}));
  EXPECT_EQ(error_code_of([&] { run_check("Cast", {DType::kFloat32}, to(8)); }), ErrorCode::kUnsupported);
  EXPECT_EQ(error_code_of([&] { run_check("Cast", {DType::kFloat32}, to(4)); }), ErrorCode::kUnsupported);
  EXPECT_EQ(error_code_of([&] { run_check("Cast", {DType::kFloat32}); }), ErrorCode::kInvalidModel);
}

// ---------------------------------------------------------------------------
// Reductions.

// x[2,3,4] = 0..23
Tensor iota_234() {
  std::vector<float> v(24);
  for (int i = 0; i < 24; ++i) v[i] = static_cast<float>(i);
  return f32({2, 3, 4}, v);
}

TEST(ReferenceElementwise, ReduceSumAxesAsAttributeOrInput) {
  Tensor x = iota_234();
  // Sum over axis 1 by loop.
  std::vector<float> want;
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 4; ++k) {
      float s = 0;
      for (int j = 0; j < 3; ++j) s += static_cast<float>(i * 12 + j * 4 + k);
      want.push_back(s);
    }
  Tensor a = run1("ReduceSum", {x}, {{"axes", attr_ints({1})}}, 11);
  EXPECT_EQ(a.shape(), Shape({2, 1, 4}));
  EXPECT_EQ(values_of<float>(a), want);
  Tensor b = run1("ReduceSum", {x, i64({1}, {-2})}, {{"keepdims", attr_int(0)}}, 13);
  EXPECT_EQ(b.shape(), Shape({2, 4}));
  EXPECT_EQ(values_of<float>(b), want);
  // No axes: everything.
  Tensor all = run1("ReduceSum", {x}, {}, 13);
  EXPECT_EQ(all.shape(), Shape({1, 1, 1}));
  EXPECT_EQ(values_of<float>(all)[0], 276.0f);
  // Empty axes input + noop_with_empty_axes: identity.
  Tensor noop = run1("ReduceSum", {x, i64({0}, {})}, {{"noop_with_empty_axes", attr_int(1)}}, 13);
  EXPECT_EQ(noop.shape(), x.shape());
  EXPECT_EQ(values_of<float>(noop), values_of<float>(x));
  // Empty axes input without noop: reduce all.
  Tensor empty = run1("ReduceSum", {x, i64({0}, {})}, {{"keepdims", attr_int(0)}}, 13);
  EXPECT_EQ(empty.shape(), Shape({}));
  EXPECT_EQ(values_of<float>(empty)[0], 276.0f);
}

TEST(ReferenceElementwise, ReduceFamilyOverTwoAxes) {
  Tensor x = f32({2, 2, 2}, {1, -2, 3, -4, 0.5f, 2, -1, 3});
  // Reduce over axes {0, 2} -> out [1, 2, 1]; groups: j=0 -> {1,-2,0.5,2}, j=1 -> {3,-4,-1,3}.
  std::vector<std::vector<double>> groups = {{1, -2, 0.5, 2}, {3, -4, -1, 3}};
  auto check = [&](const char* op, auto f, int64_t opset) {
    std::vector<float> want;
    for (const auto& g : groups) want.push_back(static_cast<float>(f(g)));
    SCOPED_TRACE(op);
    Tensor out = opset >= 18 ? run1(op, {x, i64({2}, {0, -1})}, {}, opset)
                             : run1(op, {x}, {{"axes", attr_ints({0, -1})}}, opset);
    EXPECT_EQ(out.shape(), Shape({1, 2, 1}));
    expect_floats_near(values_of<float>(out), want, 1e-5f);
  };
  for (int64_t opset : {13, 18}) {
    check("ReduceMean", [](auto g) { double s = 0; for (double v : g) s += v; return s / 4; }, opset);
    check("ReduceMax", [](auto g) { double m = -1e9; for (double v : g) m = std::max(m, v); return m; }, opset);
    check("ReduceMin", [](auto g) { double m = 1e9; for (double v : g) m = std::min(m, v); return m; }, opset);
    check("ReduceProd", [](auto g) { double p = 1; for (double v : g) p *= v; return p; }, opset);
    check("ReduceL1", [](auto g) { double s = 0; for (double v : g) s += std::fabs(v); return s; }, opset);
    check("ReduceL2", [](auto g) { double s = 0; for (double v : g) s += v * v; return std::sqrt(s); }, opset);
    check("ReduceSumSquare", [](auto g) { double s = 0; for (double v : g) s += v * v; return s; }, opset);
    check("ReduceLogSumExp", [](auto g) { double s = 0; for (double v : g) s += std::exp(v); return std::log(s); },
          opset);
  }
  Tensor pos = f32({2, 2}, {1, 2, 3, 4});
  Tensor ls = run1("ReduceLogSum", {pos}, {{"axes", attr_ints({1})}, {"keepdims", attr_int(0)}}, 13);
  expect_floats_near(values_of<float>(ls), {std::log(3.0f), std::log(7.0f)});
}

TEST(ReferenceElementwise, ReduceEdgeCases) {
  // LogSumExp of large values does not overflow.
  Tensor big = run1("ReduceLogSumExp", {f32({2}, {1000, 1000})}, {{"keepdims", attr_int(0)}}, 13);
  expect_floats_near(values_of<float>(big), {1000 + std::log(2.0f)});
  // NaN propagates through Max.
  Tensor nan = run1("ReduceMax", {f32({3}, {1, kNaN, 2})}, {}, 13);
  EXPECT_TRUE(std::isnan(values_of<float>(nan)[0]));
  // Reducing an empty dim gives the identity.
  Tensor e = f32({2, 0}, {});
  EXPECT_EQ(values_of<float>(run1("ReduceSum", {e, i64({1}, {1})}, {}, 13)), (std::vector<float>{0, 0}));
  EXPECT_EQ(values_of<float>(run1("ReduceProd", {e}, {{"axes", attr_ints({1})}}, 13)), (std::vector<float>{1, 1}));
  EXPECT_EQ(values_of<float>(run1("ReduceMax", {e}, {{"axes", attr_ints({1})}}, 13)),
            (std::vector<float>{-kInf, -kInf}));
  // Integers: wrap and truncate.
  Tensor ints = i32({2, 2}, {-3, 2, 7, 0});
  EXPECT_EQ(values_of<int32_t>(run1("ReduceMean", {ints}, {{"axes", attr_ints({1})}}, 13)),
            (std::vector<int32_t>{0, 3}));
  EXPECT_EQ(values_of<int32_t>(run1("ReduceL1", {ints}, {{"axes", attr_ints({0})}}, 13)),
            (std::vector<int32_t>{10, 2}));
  Tensor i8 = Tensor::from_vector<int8_t>({2}, {100, 100});
  EXPECT_EQ(values_of<int8_t>(run1("ReduceSum", {i8}, {}, 11)), (std::vector<int8_t>{-56}));
  // Duplicate / out-of-range axes.
  EXPECT_EQ(error_code_of([] { run1("ReduceSum", {iota_234(), i64({2}, {1, -2})}, {}, 13); }),
            ErrorCode::kInvalidModel);
  EXPECT_EQ(error_code_of([] { run1("ReduceMean", {iota_234()}, {{"axes", attr_ints({3})}}, 11); }),
            ErrorCode::kInvalidModel);
  EXPECT_EQ(error_code_of([] { run_check("ReduceMean", {DType::kFloat32}, {{"axes", attr_ints({0, 0})}}, 11); }),
            ErrorCode::kInvalidModel);
  EXPECT_EQ(error_code_of([] { run_check("ReduceL2", {DType::kInt32}, {}, 13); }), ErrorCode::kUnsupported);
  EXPECT_NO_THROW(run_check("ReduceSum", {DType::kInt32, DType::kInt64}, {}, 13));
}

TEST(ReferenceElementwise, ArgMaxArgMin) {
  Tensor x = f32({2, 3}, {1, 5, 5, 7, 2, 7});
  Tensor a = run1("ArgMax", {x}, {{"axis", attr_int(1)}});
  EXPECT_EQ(a.shape(), Shape({2, 1}));
  EXPECT_EQ(values_of<int64_t>(a), (std::vector<int64_t>{1, 0}));
  Tensor last = run1("ArgMax", {x}, {{"axis", attr_int(-1)}, {"select_last_index", attr_int(1)}});
  EXPECT_EQ(values_of<int64_t>(last), (std::vector<int64_t>{2, 2}));
  Tensor b = run1("ArgMin", {x}, {{"keepdims", attr_int(0)}});
  EXPECT_EQ(b.shape(), Shape({3}));
  EXPECT_EQ(values_of<int64_t>(b), (std::vector<int64_t>{0, 1, 0}));
  Tensor c = run1("ArgMin", {i32({4}, {3, 1, 1, 2})}, {{"select_last_index", attr_int(1)}});
  EXPECT_EQ(c.shape(), Shape({1}));
  EXPECT_EQ(values_of<int64_t>(c), (std::vector<int64_t>{2}));
  EXPECT_EQ(error_code_of([&] { run1("ArgMax", {x}, {{"axis", attr_int(2)}}); }), ErrorCode::kInvalidModel);
}

TEST(ReferenceElementwise, CumSumModes) {
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  auto run = [&](Tensor axis, int64_t exclusive, int64_t reverse) {
    return values_of<float>(
        run1("CumSum", {x, axis}, {{"exclusive", attr_int(exclusive)}, {"reverse", attr_int(reverse)}}));
  };
  EXPECT_EQ(run(i64({}, {1}), 0, 0), (std::vector<float>{1, 3, 6, 4, 9, 15}));
  EXPECT_EQ(run(i32({}, {-1}), 1, 0), (std::vector<float>{0, 1, 3, 0, 4, 9}));
  EXPECT_EQ(run(i64({1}, {1}), 0, 1), (std::vector<float>{6, 5, 3, 15, 11, 6}));
  EXPECT_EQ(run(i64({}, {1}), 1, 1), (std::vector<float>{5, 3, 0, 11, 6, 0}));
  EXPECT_EQ(run(i64({}, {0}), 0, 0), (std::vector<float>{1, 2, 3, 5, 7, 9}));
  Tensor ints = run1("CumSum", {i32({3}, {std::numeric_limits<int32_t>::max(), 1, 1}), i64({}, {0})});
  EXPECT_EQ(values_of<int32_t>(ints), (std::vector<int32_t>{std::numeric_limits<int32_t>::max(),
                                                            std::numeric_limits<int32_t>::min(),
                                                            std::numeric_limits<int32_t>::min() + 1}));
  EXPECT_EQ(error_code_of([&] { run1("CumSum", {x, i64({2}, {0, 1})}); }), ErrorCode::kRuntime);
  EXPECT_EQ(error_code_of([&] { run1("CumSum", {x, i64({}, {2})}); }), ErrorCode::kInvalidModel);
}

TEST(ReferenceElementwise, BroadcastLoopHandlesLargerRanks) {
  // [2,1,3,1] * [1,4,1,5] -> [2,4,3,5], checked against an obvious loop.
  std::vector<float> a(6), b(20);
  for (int i = 0; i < 6; ++i) a[i] = static_cast<float>(i + 1);
  for (int i = 0; i < 20; ++i) b[i] = static_cast<float>(i * 10);
  Tensor out = run1("Mul", {f32({2, 1, 3, 1}, a), f32({1, 4, 1, 5}, b)});
  ASSERT_EQ(out.shape(), Shape({2, 4, 3, 5}));
  std::vector<float> want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 3; ++k)
        for (int l = 0; l < 5; ++l) want.push_back(a[i * 3 + k] * b[j * 5 + l]);
  EXPECT_EQ(values_of<float>(out), want);
}

}  // namespace
}  // namespace hetsched
