// The detection ops' reference kernels on the spec's traps that ONNX's node
// tests leave out: NonMaxSuppression keeps nothing by default and keeps a
// box whose IoU equals the threshold; RoiAlign before opset 16 behaves as
// output_half_pixel (torchvision's aligned=False) and its max mode.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

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

// The kernel compares a candidate only with the kept boxes near it in x;
// its selection must be the greedy one that compares with every kept box.
// Boxes as torchvision's batched NMS gives them (each class shifted apart),
// with identical, touching, nested and very wide boxes among them, and
// negative coordinates.
std::vector<int64_t> greedy_nms(const std::vector<float>& b, const std::vector<float>& score, int64_t limit,
                                double threshold) {
  auto iou = [&](size_t i, size_t j) {
    auto box = [&](size_t k, int c) { return static_cast<double>(b[4 * k + static_cast<size_t>(c)]); };
    double h = std::min(box(i, 2), box(j, 2)) - std::max(box(i, 0), box(j, 0));
    double w = std::min(box(i, 3), box(j, 3)) - std::max(box(i, 1), box(j, 1));
    double ai = (box(i, 2) - box(i, 0)) * (box(i, 3) - box(i, 1)), aj = (box(j, 2) - box(j, 0)) * (box(j, 3) - box(j, 1));
    if (h <= 0 || w <= 0 || ai <= 0 || aj <= 0) return 0.0;
    return h * w / (ai + aj - h * w);
  };
  std::vector<size_t> order(score.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return score[x] > score[y]; });
  std::vector<size_t> kept;
  std::vector<int64_t> out;
  for (size_t i : order) {
    if (static_cast<int64_t>(kept.size()) >= limit) break;
    if (std::any_of(kept.begin(), kept.end(), [&](size_t k) { return iou(k, i) > threshold; })) continue;
    kept.push_back(i);
    out.insert(out.end(), {0, 0, static_cast<int64_t>(i)});
  }
  return out;
}

TEST(ReferenceNonMaxSuppression, ComparesWithNearbyBoxesOnlyAndSelectsAsTheGreedyRule) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> unit(0, 1);
  std::vector<float> boxes, scores;
  for (int cls = 0; cls < 20; ++cls) {
    float offset = static_cast<float>(cls) * 101 - 500;  // classes apart, some at negative x
    for (int i = 0; i < 60; ++i) {
      float y = unit(rng) * 80, x = unit(rng) * 80 + offset, h = 1 + unit(rng) * 20, w = 1 + unit(rng) * 20;
      if (i % 17 == 0 && !boxes.empty()) {  // a copy of the box before, or one touching it
        std::vector<float> last(boxes.end() - 4, boxes.end());
        if (i % 34 == 0) last[1] = last[3], last[3] += w;  // x1 at the previous x2
        boxes.insert(boxes.end(), last.begin(), last.end());
      } else {
        boxes.insert(boxes.end(), {y, x, y + h, x + w});
      }
      scores.push_back(unit(rng));
    }
  }
  for (bool wide : {false, true}) {
    if (wide) {  // one box across every class: a column as wide as everything
      boxes.insert(boxes.end(), {0, -600, 90, 1600});
      scores.push_back(0.5f);
    }
    int64_t n = static_cast<int64_t>(scores.size());
    Tensor b = f32({1, n, 4}, boxes), s = f32({1, 1, n}, scores);
    for (double threshold : {0.0, 0.3, 0.5, 0.9}) {
      std::vector<int64_t> want = greedy_nms(boxes, scores, 1000, threshold);
      EXPECT_EQ(nms({b, s, i64({1}, {1000}), f32({1}, {static_cast<float>(threshold)})}), want) << threshold;
      EXPECT_GT(want.size(), 3u * 20);
    }
    EXPECT_EQ(nms({b, s, i64({1}, {25}), f32({1}, {0.5f})}), greedy_nms(boxes, scores, 25, 0.5));
  }
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
