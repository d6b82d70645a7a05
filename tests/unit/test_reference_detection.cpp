// The detection ops' reference kernels on the spec's traps that ONNX's node
// tests leave out: NonMaxSuppression keeps nothing by default and keeps a
// box whose IoU equals the threshold; RoiAlign before opset 16 behaves as
// output_half_pixel (torchvision's aligned=False) and its max mode.
#include <gtest/gtest.h>

#include "kernel_test_util.h"

namespace hetsched {
namespace {

using testing::attr_int;
using testing::attr_string;
using testing::f32;
using testing::i64;
using testing::run_reference_op;

// Two boxes of area 2 overlapping in area 1 (IoU 1/3), and one apart.
const Tensor kBoxes = f32({1, 3, 4}, {0, 0, 1, 2, 0, 1, 1, 3, 5, 5, 6, 6});
const Tensor kScores = f32({1, 1, 3}, {0.9f, 0.8f, 0.7f});

std::vector<int64_t> nms(const std::vector<Tensor>& inputs) {
  return run_reference_op("NonMaxSuppression", inputs, {}, 1, 11)[0].to_int64_vector();
}

TEST(ReferenceNonMaxSuppression, KeepsNothingByDefaultAndSuppressesOnlyAboveTheThreshold) {
  EXPECT_TRUE(nms({kBoxes, kScores}).empty());  // max_output_boxes_per_class 0
  // INT64_MAX (torchvision's "no limit") is no limit.
  EXPECT_EQ(nms({kBoxes, kScores, i64({1}, {INT64_MAX}), f32({1}, {0.5f})}).size(), 9u);
  // IoU 1/3: suppressed above 0.3, kept at exactly 1/3.
  EXPECT_EQ(nms({kBoxes, kScores, i64({1}, {10}), f32({1}, {0.3f})}), std::vector<int64_t>({0, 0, 0, 0, 0, 2}));
  EXPECT_EQ(nms({kBoxes, kScores, i64({1}, {10}), f32({1}, {1.0f / 3})}),
            std::vector<int64_t>({0, 0, 0, 0, 0, 1, 0, 0, 2}));
  // A score threshold is strict; corners may come in either diagonal order.
  Tensor flipped = f32({1, 3, 4}, {1, 2, 0, 0, 1, 3, 0, 1, 6, 6, 5, 5});
  EXPECT_EQ(nms({flipped, kScores, i64({1}, {10}), f32({1}, {0.5f}), f32({1}, {0.7f})}),
            std::vector<int64_t>({0, 0, 0, 0, 0, 1}));
}

TEST(ReferenceRoiAlign, BeforeOpset16IsOutputHalfPixel) {
  // A 4x4 ramp, one region [0.4, 0.4, 2.6, 2.6] pooled to 2x2.
  std::vector<float> ramp(16);
  for (size_t i = 0; i < ramp.size(); ++i) ramp[i] = static_cast<float>(i);
  std::vector<Tensor> in = {f32({1, 1, 4, 4}, ramp), f32({1, 4}, {0.4f, 0.4f, 2.6f, 2.6f}), i64({1}, {0})};
  std::map<std::string, Attribute> attrs = {{"output_height", attr_int(2)}, {"output_width", attr_int(2)},
                                            {"sampling_ratio", attr_int(2)}};
  Tensor opset10 = run_reference_op("RoiAlign", in, attrs, 1, 10)[0];
  attrs["coordinate_transformation_mode"] = attr_string("output_half_pixel");
  Tensor output_half_pixel = run_reference_op("RoiAlign", in, attrs, 1, 16)[0];
  attrs["coordinate_transformation_mode"] = attr_string("half_pixel");
  Tensor half_pixel = run_reference_op("RoiAlign", in, attrs, 1, 16)[0];
  EXPECT_EQ(opset10.to_double_vector(), output_half_pixel.to_double_vector());
  EXPECT_NE(opset10.to_double_vector(), half_pixel.to_double_vector());
  // On a linear ramp the average of bilinear samples is the ramp at the bin's
  // centre: bins of 1.1 from 0.4 have centres 0.95 and 2.05.
  std::vector<double> got = opset10.to_double_vector();
  std::vector<double> want = {0.95 * 4 + 0.95, 0.95 * 4 + 2.05, 2.05 * 4 + 0.95, 2.05 * 4 + 2.05};
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << i;
  // Max mode: the largest weighted corner of any sample, at most the largest pixel.
  attrs["mode"] = attr_string("max");
  std::vector<double> max = run_reference_op("RoiAlign", in, attrs, 1, 16)[0].to_double_vector();
  for (double v : max) EXPECT_TRUE(v > 0 && v <= 15) << v;
}

}  // namespace
}  // namespace hetsched
