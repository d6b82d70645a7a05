// Unit tests for the shape and data-movement reference kernels (concat.cpp,
// split.cpp, slice.cpp, gather.cpp, reshape.cpp, transpose.cpp, squeeze.cpp,
// expand.cpp, tile.cpp, pad.cpp, resize.cpp, identity.cpp, constant.cpp,
// shape.cpp, range.cpp, dropout.cpp, depth_space.cpp, trilu.cpp, one_hot.cpp,
// scatter.cpp, eye_like.cpp, non_zero.cpp).
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernel_test_util.h"
#include "kernels/kernel.h"

namespace hetsched {
namespace {

using testing::attr_float;
using testing::attr_floats;
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

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();


// 0, 1, 2, ... as float32 of the given shape.
Tensor iota_f32(Shape shape) {
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  return f32(std::move(shape), v);
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want, float tol = 1e-5f) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "at " << i;
}

std::optional<ErrorCode> error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.code();
  }
  return std::nullopt;
}

// A one-node graph for check(): inputs of the given dtypes (kUndefined with
// `omitted` marks an omitted optional input), optionally constant.
struct CheckCase {
  Graph graph;
  Node node;

  CheckCase(const std::string& op, std::vector<DType> input_types, std::map<std::string, Attribute> attrs = {},
            int64_t opset = 17) {
    testing::OneNodeGraph g = testing::one_node_graph(op, testing::specs_of(input_types), std::move(attrs), 1, opset);
    graph = std::move(g.graph);
    node = std::move(g.node);
  }
  void omit(size_t i) { node.inputs[i] = kNoValue; }
  void make_constant(size_t i, Tensor t) {
    graph.values[node.inputs[i]].dtype = t.dtype();
    graph.values[node.inputs[i]].initializer = std::move(t);
  }
  std::optional<ErrorCode> check() const {
    const kernels::ReferenceKernel* k = kernels::find_reference_kernel(node.op_type);
    if (!k) return ErrorCode::kUnsupported;
    if (!k->check) return std::nullopt;
    return error_of([&] { k->check(node, graph); });
  }
};

// ---------------------------------------------------------------- Concat

TEST(ReferenceShapeConcat, NegativeAxisJoinsColumns) {
  Tensor y = run1("Concat", {f32({2, 2}, {1, 2, 3, 4}), f32({2, 1}, {5, 6})}, {{"axis", attr_int(-1)}});
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(values_of<float>(y), (std::vector<float>{1, 2, 5, 3, 4, 6}));
}

TEST(ReferenceShapeConcat, Int64IsExactAndEmptyInputsAreSkipped) {
  int64_t big = (int64_t{1} << 60) + 1;
  Tensor y = run1("Concat", {i64({1}, {big}), i64({0}, {}), i64({2}, {-3, kMin})}, {{"axis", attr_int(0)}});
  EXPECT_EQ(values_of<int64_t>(y), (std::vector<int64_t>{big, -3, kMin}));
}

TEST(ReferenceShapeConcat, MismatchedShapesThrow) {
  EXPECT_EQ(error_of([] { run1("Concat", {f32({2, 2}, {1, 2, 3, 4}), f32({3, 1}, {5, 6, 7})}, {{"axis", attr_int(1)}}); }),
            ErrorCode::kRuntime);
  CheckCase c("Concat", {DType::kFloat32, DType::kInt64});
  c.node.attributes["axis"] = attr_int(0);
  EXPECT_EQ(c.check(), ErrorCode::kInvalidModel);
}

// ---------------------------------------------------------------- Split

TEST(ReferenceShapeSplit, EvenSplitIntoOutputs) {
  auto outs = run_reference_op("Split", {iota_f32({6})}, {}, 3, 13);
  ASSERT_EQ(outs.size(), 3u);
  EXPECT_EQ(values_of<float>(outs[0]), (std::vector<float>{0, 1}));
  EXPECT_EQ(values_of<float>(outs[2]), (std::vector<float>{4, 5}));
  EXPECT_EQ(error_of([] { run_reference_op("Split", {iota_f32({7})}, {}, 3, 13); }), ErrorCode::kRuntime);
}

TEST(ReferenceShapeSplit, SplitAttributeBeforeOpset13) {
  auto outs = run_reference_op("Split", {iota_f32({2, 3})}, {{"axis", attr_int(-1)}, {"split", attr_ints({1, 2})}}, 2,
                               11);
  EXPECT_EQ(outs[0].shape(), (Shape{2, 1}));
  EXPECT_EQ(values_of<float>(outs[0]), (std::vector<float>{0, 3}));
  EXPECT_EQ(values_of<float>(outs[1]), (std::vector<float>{1, 2, 4, 5}));
}

TEST(ReferenceShapeSplit, SplitInputFromOpset13) {
  auto outs = run_reference_op("Split", {iota_f32({6}), i64({3}, {4, 0, 2})}, {}, 3, 13);
  EXPECT_EQ(values_of<float>(outs[0]), (std::vector<float>{0, 1, 2, 3}));
  EXPECT_EQ(outs[1].shape(), (Shape{0}));
  EXPECT_EQ(values_of<float>(outs[2]), (std::vector<float>{4, 5}));
  EXPECT_EQ(error_of([] { run_reference_op("Split", {iota_f32({6}), i64({2}, {4, 1})}, {}, 2, 13); }),
            ErrorCode::kRuntime);
}

TEST(ReferenceShapeSplit, NumOutputsMakesTheLastChunkSmaller) {
  auto outs = run_reference_op("Split", {iota_f32({5})}, {{"num_outputs", attr_int(3)}}, 3, 18);
  EXPECT_EQ(values_of<float>(outs[0]), (std::vector<float>{0, 1}));
  EXPECT_EQ(values_of<float>(outs[1]), (std::vector<float>{2, 3}));
  EXPECT_EQ(values_of<float>(outs[2]), (std::vector<float>{4}));
}

// ---------------------------------------------------------------- Slice

TEST(ReferenceShapeSlice, NegativeStepFromTheEnd) {
  Tensor y = run1("Slice", {iota_f32({4, 5}), i64({1}, {-1}), i64({1}, {kMin}), i64({1}, {1}), i64({1}, {-2})});
  EXPECT_EQ(y.shape(), (Shape{4, 3}));
  EXPECT_EQ(values_of<float>(y), (std::vector<float>{4, 2, 0, 9, 7, 5, 14, 12, 10, 19, 17, 15}));
}

TEST(ReferenceShapeSlice, ClampsStartsAndEnds) {
  // start beyond the dim: empty; end beyond: clamped; negative axis.
  Tensor empty = run1("Slice", {iota_f32({4, 5}), i64({1}, {10}), i64({1}, {20}), i64({1}, {1})});
  EXPECT_EQ(empty.shape(), (Shape{4, 0}));
  Tensor rows = run1("Slice", {iota_f32({4, 5}), i64({1}, {1}), i64({1}, {1000}), i64({1}, {-2})});
  EXPECT_EQ(rows.shape(), (Shape{3, 5}));
  EXPECT_EQ(values_of<float>(rows).front(), 5.0f);
  // Negative step: start clamps to dim-1, end to -1 (so index 0 is included).
  Tensor rev = run1("Slice", {iota_f32({3}), i64({1}, {100}), i64({1}, {-100}), Tensor{}, i64({1}, {-1})});
  EXPECT_EQ(values_of<float>(rev), (std::vector<float>{2, 1, 0}));
  // int32 starts/ends, default axes and a huge step.
  Tensor one = run1("Slice", {iota_f32({6}), i32({1}, {1}), i32({1}, {6}), Tensor{}, i64({1}, {kMax})});
  EXPECT_EQ(values_of<float>(one), (std::vector<float>{1}));
}

TEST(ReferenceShapeSlice, AttributeFormBeforeOpset10) {
  Tensor y = run1("Slice", {iota_f32({4, 5})},
                  {{"starts", attr_ints({0, 1})}, {"ends", attr_ints({2, 3})}, {"axes", attr_ints({0, 1})}}, 9);
  EXPECT_EQ(values_of<float>(y), (std::vector<float>{1, 2, 6, 7}));
}

TEST(ReferenceShapeSlice, ErrorPaths) {
  EXPECT_EQ(error_of([] { run1("Slice", {iota_f32({4}), i64({1}, {0}), i64({1}, {4}), i64({1}, {0}), i64({1}, {0})}); }),
            ErrorCode::kRuntime);
  EXPECT_EQ(error_of([] { run1("Slice", {iota_f32({4}), i64({1}, {0}), i64({1}, {4}), i64({1}, {3})}); }),
            ErrorCode::kRuntime);
  CheckCase c("Slice", {DType::kFloat32, DType::kFloat32, DType::kInt64});
  EXPECT_EQ(c.check(), ErrorCode::kUnsupported);
}

// ---------------------------------------------------------------- Gather family

TEST(ReferenceShapeGather, NegativeIndicesAndIndexShape) {
  Tensor data = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor y = run1("Gather", {data, i64({2, 2}, {0, -1, 1, 0})});
  EXPECT_EQ(y.shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(values_of<float>(y), (std::vector<float>{1, 2, 5, 6, 3, 4, 1, 2}));
  Tensor col = run1("Gather", {data, Tensor::scalar<int32_t>(-1)}, {{"axis", attr_int(1)}});
  EXPECT_EQ(col.shape(), (Shape{3}));
  EXPECT_EQ(values_of<float>(col), (std::vector<float>{2, 4, 6}));
  EXPECT_EQ(error_of([&] { run1("Gather", {data, i64({1}, {3})}); }), ErrorCode::kRuntime);
}

TEST(ReferenceShapeGather, Int64DataIsExact) {
  int64_t big = (int64_t{1} << 53) + 1;
  Tensor y = run1("Gather", {i64({3}, {7, big, kMax}), i64({2}, {2, 1})});
  EXPECT_EQ(values_of<int64_t>(y), (std::vector<int64_t>{kMax, big}));
}

TEST(ReferenceShapeGather, GatherElements) {
  Tensor data = f32({2, 2}, {1, 2, 3, 4});
  EXPECT_EQ(values_of<float>(run1("GatherElements", {data, i64({2, 2}, {0, 0, 1, 0})}, {{"axis", attr_int(1)}})),
            (std::vector<float>{1, 1, 4, 3}));
  EXPECT_EQ(values_of<float>(run1("GatherElements", {data, i32({2, 2}, {-1, 0, 0, -2})})),
            (std::vector<float>{3, 2, 1, 2}));
  EXPECT_EQ(error_of([&] { run1("GatherElements", {data, i64({1, 2}, {0, 2})}); }), ErrorCode::kRuntime);
}

TEST(ReferenceShapeGather, GatherND) {
  Tensor y = run1("GatherND", {f32({2, 2}, {0, 1, 2, 3}), i64({2, 1}, {1, -2})});
  EXPECT_EQ(y.shape(), (Shape{2, 2}));
  EXPECT_EQ(values_of<float>(y), (std::vector<float>{2, 3, 0, 1}));
  Tensor points = run1("GatherND", {f32({2, 2}, {0, 1, 2, 3}), i64({2, 2}, {0, 0, 1, 1})});
  EXPECT_EQ(values_of<float>(points), (std::vector<float>{0, 3}));
  Tensor batched = run1("GatherND", {iota_f32({2, 2, 2}), i64({2, 1}, {1, 0})}, {{"batch_dims", attr_int(1)}});
  EXPECT_EQ(batched.shape(), (Shape{2, 2}));
  EXPECT_EQ(values_of<float>(batched), (std::vector<float>{2, 3, 4, 5}));
}

// ---------------------------------------------------------------- Reshape, Flatten

TEST(ReferenceShapeReshape, ZeroCopiesAndMinusOneInfers) {
  Tensor y = run1("Reshape", {iota_f32({2, 3, 4}), i64({2}, {0, -1})});
  EXPECT_EQ(y.shape(), (Shape{2, 12}));
  EXPECT_EQ(values_of<float>(y)[13], 13.0f);
  EXPECT_EQ(error_of([] { run1("Reshape", {iota_f32({2, 3}), i64({2}, {-1, -1})}); }), ErrorCode::kRuntime);
}

TEST(ReferenceShapeReshape, AllowZero) {
  Tensor empty = f32({0, 3}, {});
  EXPECT_EQ(run1("Reshape", {empty, i64({2}, {3, 0})}, {{"allowzero", attr_int(1)}}).shape(), (Shape{3, 0}));
  // Without allowzero the 0 copies dim 1 (3): 0 elements cannot become 3x3.
  EXPECT_EQ(error_of([&] { run1("Reshape", {empty, i64({2}, {3, 0})}); }), ErrorCode::kRuntime);
}

// An empty tensor with a 0 beside the -1 (a detector that found no box): the
// -1 is the input's non-zero dims over the shape's, as ONNX Runtime does.
TEST(ReferenceShapeReshape, EmptyTensorWithZeroBesideMinusOne) {
  EXPECT_EQ(run1("Reshape", {f32({0, 91, 4}, {}), i64({2}, {0, -1})}).shape(), (Shape{0, 364}));
  EXPECT_EQ(run1("Reshape", {f32({0, 364}, {}), i64({3}, {0, -1, 4})}).shape(), (Shape{0, 91, 4}));
  EXPECT_EQ(error_of([] { run1("Reshape", {f32({0, 5}, {}), i64({3}, {0, -1, 2})}); }), ErrorCode::kRuntime);
}

TEST(ReferenceShapeReshape, OutputDoesNotAliasTheInput) {
  Tensor x = iota_f32({4});
  Tensor y = run1("Reshape", {x, i64({2}, {2, 2})});
  y.data<float>()[0] = 42;
  EXPECT_EQ(x.data<float>()[0], 0.0f);
}

TEST(ReferenceShapeReshape, Flatten) {
  EXPECT_EQ(run1("Flatten", {iota_f32({2, 3, 4})}, {{"axis", attr_int(0)}}).shape(), (Shape{1, 24}));
  EXPECT_EQ(run1("Flatten", {iota_f32({2, 3, 4})}).shape(), (Shape{2, 12}));
  EXPECT_EQ(run1("Flatten", {iota_f32({2, 3, 4})}, {{"axis", attr_int(-1)}}).shape(), (Shape{6, 4}));
  EXPECT_EQ(run1("Flatten", {iota_f32({2, 3, 4})}, {{"axis", attr_int(3)}}).shape(), (Shape{24, 1}));
  EXPECT_EQ(error_of([] { run1("Flatten", {iota_f32({2, 3})}, {{"axis", attr_int(3)}}); }), ErrorCode::kRuntime);
}

// ---------------------------------------------------------------- Transpose

TEST(ReferenceShapeTranspose, DefaultReversesAxes) {
  Tensor x = iota_f32({2, 3, 4});
  Tensor y = run1("Transpose", {x});
  ASSERT_EQ(y.shape(), (Shape{4, 3, 2}));
  const float* p = y.data<float>();
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 3; ++b)
      for (int c = 0; c < 4; ++c) EXPECT_EQ(p[(c * 3 + b) * 2 + a], static_cast<float>((a * 3 + b) * 4 + c));
}

TEST(ReferenceShapeTranspose, PermOnBool) {
  Tensor y = run1("Transpose", {b8({2, 3}, {true, false, false, true, true, false})}, {{"perm", attr_ints({1, 0})}});
  EXPECT_EQ(y.shape(), (Shape{3, 2}));
  EXPECT_EQ(values_of<bool>(y), (std::vector<bool>{true, true, false, true, false, false}));
  EXPECT_EQ(error_of([] { run1("Transpose", {iota_f32({2, 3})}, {{"perm", attr_ints({0, 0})}}); }),
            ErrorCode::kRuntime);
}

// ---------------------------------------------------------------- Squeeze, Unsqueeze

TEST(ReferenceShapeSqueeze, AttributeInputAndDefault) {
  Tensor x = iota_f32({1, 3, 1, 2});
  EXPECT_EQ(run1("Squeeze", {x}, {{"axes", attr_ints({0, -2})}}, 11).shape(), (Shape{3, 2}));
  EXPECT_EQ(run1("Squeeze", {x, i64({1}, {2})}, {}, 13).shape(), (Shape{1, 3, 2}));
  EXPECT_EQ(run1("Squeeze", {x}, {}, 13).shape(), (Shape{3, 2}));
  EXPECT_EQ(error_of([&] { run1("Squeeze", {x, i64({1}, {1})}, {}, 13); }), ErrorCode::kRuntime);
}

TEST(ReferenceShapeSqueeze, UnsqueezeUnsortedAndNegativeAxes) {
  Tensor x = iota_f32({3, 4});
  Tensor y = run1("Unsqueeze", {x, i64({2}, {2, 0})}, {}, 13);
  EXPECT_EQ(y.shape(), (Shape{1, 3, 1, 4}));
  EXPECT_EQ(values_of<float>(y), values_of<float>(x));
  EXPECT_EQ(run1("Unsqueeze", {x}, {{"axes", attr_ints({-1})}}, 11).shape(), (Shape{3, 4, 1}));
  EXPECT_EQ(error_of([&] { run1("Unsqueeze", {x, i64({2}, {0, 0})}, {}, 13); }), ErrorCode::kRuntime);
  CheckCase c("Unsqueeze", {DType::kFloat32}, {}, 13);
  EXPECT_EQ(c.check(), ErrorCode::kInvalidModel);
}

// ---------------------------------------------------------------- Expand, Tile

TEST(ReferenceShapeExpand, BroadcastsBothWays) {
  Tensor y = run1("Expand", {f32({3, 1}, {1, 2, 3}), i64({3}, {2, 1, 4})});
  ASSERT_EQ(y.shape(), (Shape{2, 3, 4}));
  const float* p = y.data<float>();
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 4; ++j) EXPECT_EQ(p[(b * 3 + i) * 4 + j], static_cast<float>(i + 1));
  EXPECT_EQ(run1("Expand", {iota_f32({2, 3}), i64({1}, {1})}).shape(), (Shape{2, 3}));
  EXPECT_EQ(error_of([] { run1("Expand", {iota_f32({2, 3}), i64({1}, {2})}); }), ErrorCode::kRuntime);
}

TEST(ReferenceShapeTile, RepeatsEachAxis) {
  Tensor x = iota_f32({2, 3});
  Tensor y = run1("Tile", {x, i64({2}, {2, 3})});
  ASSERT_EQ(y.shape(), (Shape{4, 9}));
  const float* p = y.data<float>();
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 9; ++j) EXPECT_EQ(p[i * 9 + j], static_cast<float>((i % 2) * 3 + j % 3));
  EXPECT_EQ(error_of([&] { run1("Tile", {x, i64({1}, {2})}); }), ErrorCode::kRuntime);
}

// ---------------------------------------------------------------- Pad

TEST(ReferenceShapePad, ConstantWithValueInput) {
  Tensor y = run1("Pad", {f32({2, 2}, {1, 2, 3, 4}), i64({4}, {1, 0, 0, 1}), Tensor::scalar<float>(9)}, {}, 13);
  EXPECT_EQ(y.shape(), (Shape{3, 3}));
  EXPECT_EQ(values_of<float>(y), (std::vector<float>{9, 9, 9, 1, 2, 9, 3, 4, 9}));
}

TEST(ReferenceShapePad, ReflectAndEdge) {
  Tensor x = f32({1, 3}, {1, 2, 3});
  Tensor pads = i64({4}, {0, 2, 0, 2});
  EXPECT_EQ(values_of<float>(run1("Pad", {x, pads}, {{"mode", attr_string("reflect")}}, 13)),
            (std::vector<float>{3, 2, 1, 2, 3, 2, 1}));
  EXPECT_EQ(values_of<float>(run1("Pad", {x, pads}, {{"mode", attr_string("edge")}}, 13)),
            (std::vector<float>{1, 1, 1, 2, 3, 3, 3}));
  // Beyond one period, reflect keeps going like numpy.pad.
  EXPECT_EQ(values_of<float>(run1("Pad", {f32({3}, {1, 2, 3}), i64({2}, {5, 0})}, {{"mode", attr_string("reflect")}})),
            (std::vector<float>{2, 1, 2, 3, 2, 1, 2, 3}));
}

TEST(ReferenceShapePad, NegativePadsCrop) {
  EXPECT_EQ(values_of<float>(run1("Pad", {f32({4}, {1, 2, 3, 4}), i64({2}, {-1, 1})}, {}, 13)),
            (std::vector<float>{2, 3, 4, 0}));
}

TEST(ReferenceShapePad, AttributeFormBeforeOpset11) {
  Tensor y = run1("Pad", {f32({2}, {1, 2})}, {{"pads", attr_ints({1, 1})}, {"value", attr_float(5.5f)}}, 10);
  EXPECT_EQ(values_of<float>(y), (std::vector<float>{5.5f, 1, 2, 5.5f}));
}

TEST(ReferenceShapePad, AxesInputAndExactInt64Constant) {
  Tensor y = run1("Pad", {f32({2, 2}, {1, 2, 3, 4}), i64({2}, {1, 1}), Tensor{}, i64({1}, {-1})},
                  {{"mode", attr_string("edge")}}, 18);
  EXPECT_EQ(values_of<float>(y), (std::vector<float>{1, 1, 2, 2, 3, 3, 4, 4}));
  int64_t big = (int64_t{1} << 60) + 1;
  Tensor z = run1("Pad", {i64({1}, {5}), i64({2}, {1, 0}), Tensor::scalar<int64_t>(big)}, {}, 13);
  EXPECT_EQ(values_of<int64_t>(z), (std::vector<int64_t>{big, 5}));
}

TEST(ReferenceShapePad, CheckRefusesUnknownModes) {
  CheckCase c("Pad", {DType::kFloat32, DType::kInt64}, {{"mode", attr_string("wrap")}}, 18);
  EXPECT_EQ(c.check(), ErrorCode::kUnsupported);
  CheckCase ok("Pad", {DType::kFloat32, DType::kInt64}, {{"mode", attr_string("reflect")}}, 13);
  EXPECT_EQ(ok.check(), std::nullopt);
}

// ---------------------------------------------------------------- Resize, Upsample

Tensor resize(const Tensor& x, std::vector<float> scales, std::map<std::string, Attribute> attrs, int64_t opset = 13) {
  return run1("Resize", {x, Tensor{}, f32({static_cast<int64_t>(scales.size())}, scales)}, std::move(attrs), opset);
}
Tensor resize_sizes(const Tensor& x, std::vector<int64_t> sizes, std::map<std::string, Attribute> attrs) {
  return run1("Resize", {x, Tensor{}, Tensor{}, i64({static_cast<int64_t>(sizes.size())}, sizes)}, std::move(attrs),
              13);
}

TEST(ReferenceShapeResize, NearestHalfPixelUpsample) {
  Tensor y = resize(f32({1, 1, 2, 2}, {1, 2, 3, 4}), {1, 1, 2, 2}, {{"mode", attr_string("nearest")}});
  EXPECT_EQ(y.shape(), (Shape{1, 1, 4, 4}));
  EXPECT_EQ(values_of<float>(y), (std::vector<float>{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}));
}

TEST(ReferenceShapeResize, NearestModes) {
  Tensor x = f32({1, 4}, {1, 2, 3, 4});
  // half_pixel, scale 0.5: original coordinates 0.5 and 2.5.
  auto run = [&](const char* mode) {
    return values_of<float>(resize_sizes(x, {1, 2}, {{"nearest_mode", attr_string(mode)}}));
  };
  EXPECT_EQ(run("round_prefer_floor"), (std::vector<float>{1, 3}));
  EXPECT_EQ(run("round_prefer_ceil"), (std::vector<float>{2, 4}));
  EXPECT_EQ(run("floor"), (std::vector<float>{1, 3}));
  EXPECT_EQ(run("ceil"), (std::vector<float>{2, 4}));
  Tensor asym = resize_sizes(x, {1, 2}, {{"coordinate_transformation_mode", attr_string("asymmetric")},
                                         {"nearest_mode", attr_string("ceil")}});
  EXPECT_EQ(values_of<float>(asym), (std::vector<float>{1, 3}));
}

TEST(ReferenceShapeResize, NearestOnInt64) {
  Tensor y = resize(i64({1, 2}, {kMax, -5}), {1, 2}, {{"coordinate_transformation_mode", attr_string("asymmetric")}});
  EXPECT_EQ(values_of<int64_t>(y), (std::vector<int64_t>{kMax, kMax, -5, -5}));
}

TEST(ReferenceShapeResize, LinearHalfPixelAndAlignCorners) {
  Tensor x = f32({1, 2}, {1, 3});
  expect_near(values_of<float>(resize(x, {1, 2}, {{"mode", attr_string("linear")}})), {1, 1.5f, 2.5f, 3});
  expect_near(values_of<float>(resize(x, {1, 2}, {{"mode", attr_string("linear")},
                                                   {"coordinate_transformation_mode", attr_string("align_corners")}})),
              {1, 5.0f / 3, 7.0f / 3, 3});
  // With scales, align_corners uses scale * length as the output length (as
  // the ONNX reference does): 4 * 0.6 = 2.4, so x = 1 maps to 3 / 1.4.
  Tensor d = resize(iota_f32({1, 1, 2, 4}), {1, 1, 0.6f, 0.6f},
                    {{"mode", attr_string("linear")}, {"coordinate_transformation_mode", attr_string("align_corners")}});
  EXPECT_EQ(d.shape(), (Shape{1, 1, 1, 2}));
  expect_near(values_of<float>(d), {0, 3.0f / 1.4f});
}

TEST(ReferenceShapeResize, BilinearMatchesAHandComputedValue) {
  // 2x2 -> 3x3 with align_corners: the centre is the mean of all four.
  Tensor y = resize_sizes(f32({2, 2}, {1, 2, 3, 5}), {3, 3},
                          {{"mode", attr_string("linear")},
                           {"coordinate_transformation_mode", attr_string("align_corners")}});
  expect_near(values_of<float>(y), {1, 1.5f, 2, 2, 2.75f, 3.5f, 3, 4, 5});
}

TEST(ReferenceShapeResize, TfCropAndResizeExtrapolates) {
  Tensor y = run1("Resize", {f32({1, 4}, {1, 2, 3, 4}), f32({4}, {0, 0, 1, 1.5f}), Tensor{}, i64({2}, {1, 3})},
                  {{"mode", attr_string("linear")},
                   {"coordinate_transformation_mode", attr_string("tf_crop_and_resize")},
                   {"extrapolation_value", attr_float(10)}},
                  13);
  expect_near(values_of<float>(y), {1, 3.25f, 10});
}

TEST(ReferenceShapeResize, AxesAttributeFromOpset18) {
  Tensor y = run1("Resize", {f32({2, 2}, {1, 2, 3, 4}), Tensor{}, f32({1}, {2})},
                  {{"axes", attr_ints({-1})}, {"coordinate_transformation_mode", attr_string("asymmetric")}}, 18);
  EXPECT_EQ(y.shape(), (Shape{2, 4}));
  EXPECT_EQ(values_of<float>(y), (std::vector<float>{1, 1, 2, 2, 3, 3, 4, 4}));
}

TEST(ReferenceShapeResize, Opset10IsAsymmetricWithCeilWhenDownsampling) {
  Tensor y = run1("Resize", {f32({1, 5}, {1, 2, 3, 4, 5}), f32({2}, {1, 0.6f})}, {}, 10);
  EXPECT_EQ(values_of<float>(y), (std::vector<float>{1, 3, 5}));
  Tensor lin = run1("Resize", {f32({1, 2}, {1, 3}), f32({2}, {1, 2})}, {{"mode", attr_string("linear")}}, 10);
  expect_near(values_of<float>(lin), {1, 2, 3, 3});
}

TEST(ReferenceShapeResize, Upsample) {
  Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor y = run1("Upsample", {x, f32({4}, {1, 1, 2, 3})}, {{"mode", attr_string("nearest")}}, 9);
  ASSERT_EQ(y.shape(), (Shape{1, 1, 4, 6}));
  const float* p = y.data<float>();
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 6; ++j) EXPECT_EQ(p[i * 6 + j], static_cast<float>((i / 2) * 2 + j / 3 + 1));
  Tensor z = run1("Upsample", {x}, {{"scales", attr_floats({1, 1, 1, 2})}, {"mode", attr_string("linear")}}, 7);
  expect_near(values_of<float>(z), {1, 1.5f, 2, 2, 3, 3.5f, 4, 4});
  EXPECT_EQ(error_of([&] { run1("Upsample", {x, f32({4}, {1, 1, 0.5f, 1})}, {}, 9); }), ErrorCode::kRuntime);
}

TEST(ReferenceShapeResize, CubicKeepsSamplesAndConstantsAndWeighsFourNeighbours) {
  auto cubic = [](std::map<std::string, Attribute> extra) {
    extra.emplace("mode", attr_string("cubic"));
    extra.emplace("coordinate_transformation_mode", attr_string("asymmetric"));
    return extra;
  };
  Tensor x = f32({1, 1, 1, 4}, {1, 5, 2, 7});
  Tensor scales = f32({4}, {1, 1, 1, 2});
  std::vector<float> y = values_of<float>(run1("Resize", {x, Tensor(), scales}, cubic({}), 13));
  ASSERT_EQ(y.size(), 8u);
  // Even outputs sit on the inputs: weight 1 on that sample.
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(y[2 * i], x.data<float>()[i]);
  // Halfway between samples 1 and 2 (A = -0.75): weights -0.09375, 0.59375,
  // 0.59375, -0.09375 on samples 0..3.
  EXPECT_NEAR(y[3], -0.09375 * 1 + 0.59375 * 5 + 0.59375 * 2 - 0.09375 * 7, 1e-6);
  // Half past the last sample (taps on samples 2..5): the edge repeats
  // (7, 7), or with exclude_outside the two taps outside get no weight.
  EXPECT_NEAR(y[7], -0.09375 * 2 + 0.59375 * 7 + 0.59375 * 7 - 0.09375 * 7, 1e-6);
  std::vector<float> excluded =
      values_of<float>(run1("Resize", {x, Tensor(), scales}, cubic({{"exclude_outside", attr_int(1)}}), 13));
  EXPECT_NEAR(excluded[7], (-0.09375 * 2 + 0.59375 * 7) / (0.59375 - 0.09375), 1e-6);
  // Weights sum to 1: a constant stays constant, in two dims at once.
  Tensor flat = f32({1, 1, 3, 3}, std::vector<float>(9, 2.5f));
  for (float v : values_of<float>(run1("Resize", {flat, Tensor(), f32({4}, {1, 1, 1.5f, 2})}, cubic({}), 13)))
    EXPECT_NEAR(v, 2.5f, 1e-6);
}

TEST(ReferenceShapeResize, CheckRefusesWhatIsNotImplemented) {
  std::vector<DType> types{DType::kFloat32, DType::kFloat32, DType::kFloat32};
  EXPECT_EQ(CheckCase("Resize", types, {{"mode", attr_string("cubic")}}, 10).check(), ErrorCode::kUnsupported);
  EXPECT_EQ(CheckCase("Resize", types, {{"mode", attr_string("cubic")}}, 13).check(), std::nullopt);
  EXPECT_EQ(CheckCase("Resize", {DType::kInt32, DType::kFloat32, DType::kFloat32}, {{"mode", attr_string("cubic")}},
                      13)
                .check(),
            ErrorCode::kUnsupported);
  EXPECT_EQ(CheckCase("Resize", types, {{"antialias", attr_int(1)}}, 18).check(), ErrorCode::kUnsupported);
  EXPECT_EQ(CheckCase("Resize", types, {{"coordinate_transformation_mode", attr_string("half_pixel_symmetric")}}, 18)
                .check(),
            ErrorCode::kUnsupported);
  EXPECT_EQ(CheckCase("Resize", {DType::kInt32, DType::kFloat32, DType::kFloat32}, {{"mode", attr_string("linear")}},
                      13)
                .check(),
            ErrorCode::kUnsupported);
  EXPECT_EQ(CheckCase("Resize", {DType::kInt32, DType::kFloat32, DType::kFloat32}, {}, 13).check(), std::nullopt);
}

// ---------------------------------------------------------------- Identity, Constant, ConstantOfShape

TEST(ReferenceShapeIdentity, CopiesTheInput) {
  Tensor x = i64({2}, {kMin, 3});
  Tensor y = run1("Identity", {x});
  EXPECT_EQ(values_of<int64_t>(y), values_of<int64_t>(x));
  y.data<int64_t>()[1] = 0;
  EXPECT_EQ(x.data<int64_t>()[1], 3);
}

TEST(ReferenceShapeConstant, ValueAttributes) {
  EXPECT_EQ(values_of<int64_t>(run1("Constant", {}, {{"value_ints", attr_ints({1, 2, kMax})}})),
            (std::vector<int64_t>{1, 2, kMax}));
  Tensor s = run1("Constant", {}, {{"value_float", attr_float(2.5f)}});
  EXPECT_EQ(s.shape(), Shape{});
  EXPECT_EQ(s.data<float>()[0], 2.5f);
  Attribute t;
  t.kind = Attribute::Kind::kTensor;
  t.t = i32({2}, {7, 8});
  EXPECT_EQ(values_of<int32_t>(run1("Constant", {}, {{"value", t}})), (std::vector<int32_t>{7, 8}));
  EXPECT_EQ(CheckCase("Constant", {}, {{"value_string", attr_string("x")}}).check(), ErrorCode::kUnsupported);
  EXPECT_EQ(CheckCase("Constant", {}, {}).check(), ErrorCode::kInvalidModel);
}

TEST(ReferenceShapeConstant, ConstantOfShape) {
  Attribute v;
  v.kind = Attribute::Kind::kTensor;
  v.t = i64({1}, {kMin});
  Tensor y = run1("ConstantOfShape", {i64({2}, {2, 3})}, {{"value", v}});
  EXPECT_EQ(y.dtype(), DType::kInt64);
  EXPECT_EQ(values_of<int64_t>(y), std::vector<int64_t>(6, kMin));
  Tensor z = run1("ConstantOfShape", {i64({1}, {3})});
  EXPECT_EQ(z.dtype(), DType::kFloat32);
  EXPECT_EQ(values_of<float>(z), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(run1("ConstantOfShape", {i64({0}, {})}, {{"value", v}}).shape(), Shape{});
  EXPECT_EQ(error_of([&] { run1("ConstantOfShape", {i64({1}, {-1})}); }), ErrorCode::kRuntime);
}

// ---------------------------------------------------------------- Shape, Size, Range

TEST(ReferenceShapeShape, StartEndClampAndSize) {
  Tensor x = iota_f32({2, 3, 4, 5});
  EXPECT_EQ(values_of<int64_t>(run1("Shape", {x})), (std::vector<int64_t>{2, 3, 4, 5}));
  EXPECT_EQ(values_of<int64_t>(run1("Shape", {x}, {{"start", attr_int(1)}, {"end", attr_int(-1)}}, 15)),
            (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(values_of<int64_t>(run1("Shape", {x}, {{"start", attr_int(-10)}, {"end", attr_int(10)}}, 15)),
            (std::vector<int64_t>{2, 3, 4, 5}));
  EXPECT_EQ(run1("Shape", {x}, {{"start", attr_int(3)}, {"end", attr_int(1)}}, 15).shape(), (Shape{0}));
  Tensor size = run1("Size", {x});
  EXPECT_EQ(size.shape(), Shape{});
  EXPECT_EQ(size.data<int64_t>()[0], 120);
}

TEST(ReferenceShapeRange, IntegerAndFloat) {
  EXPECT_EQ(values_of<int32_t>(run1("Range", {Tensor::scalar<int32_t>(10), Tensor::scalar<int32_t>(4),
                                              Tensor::scalar<int32_t>(-3)})),
            (std::vector<int32_t>{10, 7}));
  EXPECT_EQ(values_of<int64_t>(run1("Range", {Tensor::scalar<int64_t>(0), Tensor::scalar<int64_t>(10),
                                              Tensor::scalar<int64_t>(3)})),
            (std::vector<int64_t>{0, 3, 6, 9}));
  EXPECT_EQ(values_of<float>(run1("Range", {Tensor::scalar<float>(1), Tensor::scalar<float>(5),
                                            Tensor::scalar<float>(2)})),
            (std::vector<float>{1, 3}));
  EXPECT_EQ(run1("Range", {Tensor::scalar<int64_t>(0), Tensor::scalar<int64_t>(5), Tensor::scalar<int64_t>(-1)})
                .shape(),
            (Shape{0}));
  EXPECT_EQ(error_of([] {
              run1("Range", {Tensor::scalar<int64_t>(0), Tensor::scalar<int64_t>(5), Tensor::scalar<int64_t>(0)});
            }),
            ErrorCode::kRuntime);
}

// ---------------------------------------------------------------- Dropout

TEST(ReferenceShapeDropout, InferenceCopiesAndMaskIsTrue) {
  Tensor x = f32({3}, {1, -2, 3});
  auto outs = run_reference_op("Dropout", {x, Tensor::scalar<float>(0.5f)}, {}, 2, 13);
  EXPECT_EQ(values_of<float>(outs[0]), (std::vector<float>{1, -2, 3}));
  EXPECT_EQ(values_of<bool>(outs[1]), (std::vector<bool>{true, true, true}));
  auto old = run_reference_op("Dropout", {x}, {{"ratio", attr_float(0.3f)}}, 2, 7);
  EXPECT_EQ(values_of<float>(old[1]), (std::vector<float>{1, 1, 1}));
  // Training mode given at run time: only ratio 0 (the identity) runs.
  EXPECT_EQ(error_of([&] { run_reference_op("Dropout", {x, Tensor{}, b8({}, {true})}, {}, 1, 13); }),
            ErrorCode::kRuntime);
  auto zero = run_reference_op("Dropout", {x, Tensor::scalar<float>(0), b8({}, {true})}, {}, 1, 13);
  EXPECT_EQ(values_of<float>(zero[0]), (std::vector<float>{1, -2, 3}));
}

TEST(ReferenceShapeDropout, CheckRefusesTrainingMode) {
  CheckCase training("Dropout", {DType::kFloat32, DType::kFloat32, DType::kBool}, {}, 13);
  training.make_constant(2, b8({}, {true}));
  EXPECT_EQ(training.check(), ErrorCode::kUnsupported);
  CheckCase inference("Dropout", {DType::kFloat32, DType::kFloat32, DType::kBool}, {}, 13);
  inference.make_constant(2, b8({}, {false}));
  EXPECT_EQ(inference.check(), std::nullopt);
  // training_mode fed at run time could switch random dropout on: refused.
  CheckCase runtime("Dropout", {DType::kFloat32, DType::kFloat32, DType::kBool}, {}, 13);
  EXPECT_EQ(runtime.check(), ErrorCode::kUnsupported);
}

// ---------------------------------------------------------------- DepthToSpace, SpaceToDepth

TEST(ReferenceShapeDepthSpace, DcrAndCrdOrders) {
  const int64_t n = 2, c = 8, h = 2, w = 3, b = 2, oc = c / (b * b);
  Tensor x = iota_f32({n, c, h, w});
  const float* in = x.data<float>();
  auto at = [&](int64_t ni, int64_t ci, int64_t hi, int64_t wi) { return in[((ni * c + ci) * h + hi) * w + wi]; };
  for (std::string mode : {"DCR", "CRD"}) {
    Tensor y = run1("DepthToSpace", {x}, {{"blocksize", attr_int(b)}, {"mode", attr_string(mode)}}, 13);
    ASSERT_EQ(y.shape(), (Shape{n, oc, h * b, w * b}));
    const float* p = y.data<float>();
    for (int64_t ni = 0; ni < n; ++ni)
      for (int64_t ci = 0; ci < oc; ++ci)
        for (int64_t yi = 0; yi < h * b; ++yi)
          for (int64_t xi = 0; xi < w * b; ++xi) {
            int64_t i = yi % b, j = xi % b;
            int64_t src_c = mode == "DCR" ? (i * b + j) * oc + ci : ci * b * b + i * b + j;
            EXPECT_EQ(p[((ni * oc + ci) * h * b + yi) * w * b + xi], at(ni, src_c, yi / b, xi / b)) << mode;
          }
  }
}

TEST(ReferenceShapeDepthSpace, SpaceToDepthInvertsDcr) {
  Tensor x = iota_f32({1, 2, 4, 6});
  Tensor d = run1("SpaceToDepth", {x}, {{"blocksize", attr_int(2)}});
  EXPECT_EQ(d.shape(), (Shape{1, 8, 2, 3}));
  // Channel (i*b + j)*C + c at (h, w) holds x[c][h*b + i][w*b + j]; with
  // i=1, j=0, c=1, h=1, w=2: channel 5 (flat 35) holds x[1][3][4] (flat 46).
  EXPECT_EQ(d.data<float>()[35], x.data<float>()[46]);
  Tensor back = run1("DepthToSpace", {d}, {{"blocksize", attr_int(2)}});
  EXPECT_EQ(values_of<float>(back), values_of<float>(x));
  EXPECT_EQ(error_of([] { run1("SpaceToDepth", {iota_f32({1, 1, 3, 4})}, {{"blocksize", attr_int(2)}}); }),
            ErrorCode::kRuntime);
}

// ---------------------------------------------------------------- Trilu

TEST(ReferenceShapeTrilu, UpperAndLowerWithK) {
  Tensor x = iota_f32({2, 3, 4});
  for (int64_t upper : {0, 1})
    for (int64_t k : {-5, -1, 0, 2, 7}) {
      Tensor y = run1("Trilu", {x, Tensor::scalar<int64_t>(k)}, {{"upper", attr_int(upper)}}, 14);
      const float* p = y.data<float>();
      for (int m = 0; m < 2; ++m)
        for (int i = 0; i < 3; ++i)
          for (int j = 0; j < 4; ++j) {
            bool keep = upper ? j - i >= k : j - i <= k;
            int idx = (m * 3 + i) * 4 + j;
            EXPECT_EQ(p[idx], keep ? static_cast<float>(idx) : 0.0f) << "upper " << upper << " k " << k;
          }
    }
}

// ---------------------------------------------------------------- OneHot

TEST(ReferenceShapeOneHot, AxisNegativeAndOutOfRange) {
  Tensor idx = i64({4}, {0, -1, 5, 2});
  Tensor y = run1("OneHot", {idx, Tensor::scalar<float>(3), f32({2}, {0, 1})}, {}, 11);
  EXPECT_EQ(y.shape(), (Shape{4, 3}));
  EXPECT_EQ(values_of<float>(y), (std::vector<float>{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1}));
  Tensor t = run1("OneHot", {idx, Tensor::scalar<int64_t>(3), i32({2}, {-2, 7})}, {{"axis", attr_int(0)}}, 11);
  EXPECT_EQ(t.shape(), (Shape{3, 4}));
  EXPECT_EQ(values_of<int32_t>(t), (std::vector<int32_t>{7, -2, -2, -2, -2, -2, -2, -2, -2, 7, -2, 7}));
}

// ---------------------------------------------------------------- Scatter family

TEST(ReferenceShapeScatter, ScatterElements) {
  Tensor data = f32({1, 5}, {1, 2, 3, 4, 5});
  Tensor upd = f32({1, 2}, {1.5f, 2.5f});
  EXPECT_EQ(values_of<float>(run1("ScatterElements", {data, i64({1, 2}, {1, -2}), upd}, {{"axis", attr_int(1)}})),
            (std::vector<float>{1, 1.5f, 3, 2.5f, 5}));
  EXPECT_EQ(values_of<float>(run1("ScatterElements", {data, i64({1, 2}, {1, 1}), upd},
                                  {{"axis", attr_int(1)}, {"reduction", attr_string("add")}}, 16)),
            (std::vector<float>{1, 6, 3, 4, 5}));
  EXPECT_EQ(values_of<float>(run1("Scatter", {data, i32({1, 2}, {0, 4}), upd}, {{"axis", attr_int(1)}}, 10)),
            (std::vector<float>{1.5f, 2, 3, 4, 2.5f}));
  EXPECT_EQ(error_of([&] { run1("ScatterElements", {data, i64({1, 2}, {1, 5}), upd}, {{"axis", attr_int(1)}}); }),
            ErrorCode::kRuntime);
  EXPECT_EQ(values_of<float>(data), (std::vector<float>{1, 2, 3, 4, 5}));  // input untouched
}

TEST(ReferenceShapeScatter, ScatterND) {
  Tensor data = f32({8}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor idx = i64({4, 1}, {4, 3, 1, 7});
  Tensor upd = f32({4}, {9, 10, 11, 12});
  EXPECT_EQ(values_of<float>(run1("ScatterND", {data, idx, upd})), (std::vector<float>{1, 11, 3, 10, 9, 6, 7, 12}));
  EXPECT_EQ(values_of<float>(run1("ScatterND", {data, idx, upd}, {{"reduction", attr_string("mul")}}, 16)),
            (std::vector<float>{1, 22, 3, 40, 45, 6, 7, 96}));
  // Slices: rows of a 2x3 matrix.
  Tensor rows = run1("ScatterND", {iota_f32({2, 3}), i64({1, 1}, {-1}), f32({1, 3}, {7, 8, 9})});
  EXPECT_EQ(values_of<float>(rows), (std::vector<float>{0, 1, 2, 7, 8, 9}));
  EXPECT_EQ(CheckCase("ScatterND", {DType::kFloat32, DType::kInt64, DType::kFloat32},
                      {{"reduction", attr_string("avg")}}, 18)
                .check(),
            ErrorCode::kUnsupported);
  EXPECT_EQ(CheckCase("ScatterND", {DType::kBool, DType::kInt64, DType::kBool}, {{"reduction", attr_string("add")}},
                      16)
                .check(),
            ErrorCode::kUnsupported);
}

// ---------------------------------------------------------------- EyeLike, NonZero

TEST(ReferenceShapeEyeLike, DiagonalOffsetAndDtype) {
  Tensor y = run1("EyeLike", {iota_f32({3, 4})}, {{"k", attr_int(1)}}, 9);
  EXPECT_EQ(values_of<float>(y), (std::vector<float>{0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}));
  Tensor z = run1("EyeLike", {iota_f32({3, 3})}, {{"k", attr_int(-2)}, {"dtype", attr_int(7)}}, 9);
  EXPECT_EQ(z.dtype(), DType::kInt64);
  EXPECT_EQ(values_of<int64_t>(z), (std::vector<int64_t>{0, 0, 0, 0, 0, 0, 1, 0, 0}));
  EXPECT_EQ(CheckCase("EyeLike", {DType::kFloat32}, {{"dtype", attr_int(8)}}, 9).check(), ErrorCode::kUnsupported);
}

TEST(ReferenceShapeNonZero, RowMajorCoordinates) {
  Tensor y = run1("NonZero", {f32({2, 2}, {1, 0, 1, 1})});
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(values_of<int64_t>(y), (std::vector<int64_t>{0, 1, 1, 0, 0, 1}));
  EXPECT_EQ(run1("NonZero", {b8({3}, {false, false, false})}).shape(), (Shape{1, 0}));
}

TEST(ReferenceShapeUnique, SlicesInOrderOfFirstOccurrenceWithTheirIndicesInverseAndCounts) {
  // Columns of a 2x4 matrix: (1,5) (0,2) (1,5) (0,1); not sorted.
  Tensor x = i64({2, 4}, {1, 0, 1, 0, 5, 2, 5, 1});
  std::vector<Tensor> out =
      run_reference_op("Unique", {x}, {{"axis", attr_int(1)}, {"sorted", attr_int(0)}}, 4, 11);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(values_of<int64_t>(out[0]), (std::vector<int64_t>{1, 0, 0, 5, 2, 1}));
  EXPECT_EQ(values_of<int64_t>(out[1]), (std::vector<int64_t>{0, 1, 3}));
  EXPECT_EQ(values_of<int64_t>(out[2]), (std::vector<int64_t>{0, 1, 0, 2}));
  EXPECT_EQ(values_of<int64_t>(out[3]), (std::vector<int64_t>{2, 1, 1}));
  // Sorted, flattened: ascending.
  out = run_reference_op("Unique", {f32({5}, {2.5f, -1, 2.5f, 0, -1})}, {}, 4, 11);
  EXPECT_EQ(values_of<float>(out[0]), (std::vector<float>{-1, 0, 2.5f}));
  EXPECT_EQ(values_of<int64_t>(out[1]), (std::vector<int64_t>{1, 3, 0}));
  EXPECT_EQ(values_of<int64_t>(out[2]), (std::vector<int64_t>{2, 0, 2, 1, 0}));
  EXPECT_EQ(values_of<int64_t>(out[3]), (std::vector<int64_t>{2, 1, 2}));
}

TEST(ReferenceShapeSignal, WindowsAndMelRefuseAnOutputDatatypeTheyDoNotMake) {
  EXPECT_EQ(CheckCase("HannWindow", {DType::kInt64}, {}, 17).check(), std::nullopt);
  EXPECT_EQ(CheckCase("HannWindow", {DType::kInt64}, {{"output_datatype", attr_int(7)}}, 17).check(),
            ErrorCode::kUnsupported);
  EXPECT_EQ(CheckCase("MelWeightMatrix", {DType::kInt64, DType::kInt64, DType::kInt64, DType::kFloat32, DType::kFloat32},
                      {{"output_datatype", attr_int(10)}}, 17)
                .check(),
            ErrorCode::kUnsupported);
  // A symmetric Hann window of 5: 0, 0.5, 1, 0.5, 0 in double.
  std::vector<Tensor> w = run_reference_op("HannWindow", {i64({}, {5})},
                                           {{"periodic", attr_int(0)}, {"output_datatype", attr_int(11)}}, 1, 17);
  ASSERT_EQ(w.at(0).dtype(), DType::kFloat64);
  std::vector<double> v = values_of<double>(w[0]);
  std::vector<double> want{0, 0.5, 1, 0.5, 0};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(v[i], want[i], 1e-12);
}

}  // namespace
}  // namespace hetsched
