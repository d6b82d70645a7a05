// NonMaxSuppression — reference kernel.
//
// Per batch and class: the boxes whose score is above score_threshold
// (strictly; all boxes without one), by descending score (ties: the lower
// box index first), each kept unless its IoU with a box kept before is above
// iou_threshold (strictly), at most max_output_boxes_per_class of them (0,
// the default, keeps none). Boxes are [y1, x1, y2, x2] with the corners in
// either diagonal order (center_point_box 0), or [x_center, y_center,
// width, height] (1). A box of zero area overlaps nothing. Output: int64
// [n_selected, 3] rows of (batch, class, box), by batch, then class, then
// selection order; its length depends on the data.
// Supported: float32 and float64 boxes and scores.
// Refused: other dtypes.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_map>

#include <fmt/format.h>

#include "kernels/reference/common.h"

namespace hetsched::kernels {
namespace {

struct Box {
  double y1, x1, y2, x2;
  double area() const { return (y2 - y1) * (x2 - x1); }
};

// The boxes kept so far for one class, binned by x1 in columns as wide as
// the widest candidate, so that a candidate is compared only with the kept
// boxes that may overlap it: those starting within one width of its own x1
// (the bins beside its own, with one more on each side against rounding).
// torchvision's batched NMS offsets each class's boxes apart, so Faster
// R-CNN's second NMS (13,500 boxes, ~10,000 kept) compared each candidate
// with every kept box of every class. Without usable bins (a box
// coordinate that is not finite, no width, or a negative threshold, where
// boxes that do not overlap suppress too) every kept box is a neighbour.
class KeptBoxes {
 public:
  KeptBoxes(const std::vector<Box>& candidates, double iou_threshold) {
    double widest = 0;
    bool finite = iou_threshold >= 0;
    for (const Box& b : candidates) {
      finite = finite && std::isfinite(b.x1) && std::isfinite(b.x2);
      widest = std::max(widest, b.x2 - b.x1);
    }
    width_ = finite && widest > 0 ? widest : 0;
    for (const Box& b : candidates)
      if (width_ > 0 && std::fabs(b.x1 / width_) > 1e15) width_ = 0;  // bins beyond int64
  }

  size_t size() const { return n_; }

  template <typename Fn>
  bool any_near(const Box& candidate, Fn&& fn) const {
    if (width_ == 0) return std::any_of(all_.begin(), all_.end(), fn);
    int64_t middle = column(candidate.x1);
    for (int64_t c = middle - 2; c <= middle + 2; ++c) {
      auto it = columns_.find(c);
      if (it != columns_.end() && std::any_of(it->second.begin(), it->second.end(), fn)) return true;
    }
    return false;
  }

  void add(const Box& box) {
    ++n_;
    if (width_ == 0)
      all_.push_back(box);
    else
      columns_[column(box.x1)].push_back(box);
  }

 private:
  int64_t column(double x1) const { return static_cast<int64_t>(std::floor(x1 / width_)); }

  double width_ = 0;
  size_t n_ = 0;
  std::vector<Box> all_;
  std::unordered_map<int64_t, std::vector<Box>> columns_;
};

double iou(const Box& a, const Box& b) {
  const double h = std::min(a.y2, b.y2) - std::max(a.y1, b.y1), w = std::min(a.x2, b.x2) - std::max(a.x1, b.x1);
  if (h <= 0 || w <= 0 || a.area() <= 0 || b.area() <= 0) return 0;
  const double overlap = h * w;
  return overlap / (a.area() + b.area() - overlap);
}

void check_nms(const Node& node, const Graph& graph) {
  check_input_dtypes(node, graph, kFloatTypes, {0, 1});
  int64_t center = node.attr_int("center_point_box", 0);
  if (center != 0 && center != 1) throw_invalid(node, fmt::format("center_point_box {}: expected 0 or 1", center));
}

double scalar_or(const std::vector<const Tensor*>& inputs, size_t i, double fallback) {
  if (i >= inputs.size() || !inputs[i] || inputs[i]->numel() == 0) return fallback;
  return inputs[i]->to_double_vector()[0];
}

std::vector<Tensor> compute_nms(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& boxes_t = required_input(node, inputs, 0);
  const Tensor& scores_t = required_input(node, inputs, 1);
  if (boxes_t.rank() != 3 || boxes_t.dim(2) != 4 || scores_t.rank() != 3 || scores_t.dim(0) != boxes_t.dim(0) ||
      scores_t.dim(2) != boxes_t.dim(1))
    throw_runtime(node, fmt::format("boxes {} and scores {}: expected [batches, boxes, 4] and [batches, classes, boxes]",
                                    shape_to_string(boxes_t.shape()), shape_to_string(scores_t.shape())));
  const int64_t n_batches = boxes_t.dim(0), n_boxes = boxes_t.dim(1), n_classes = scores_t.dim(1);
  // As int64: exporters pass INT64_MAX for "no limit" (torchvision), beyond a double's exact range.
  const int64_t max_per_class =
      inputs.size() > 2 && inputs[2] && inputs[2]->numel() > 0 ? inputs[2]->to_int64_vector()[0] : 0;
  const double iou_threshold = scalar_or(inputs, 3, 0);
  const bool has_score_threshold = inputs.size() > 4 && inputs[4] && inputs[4]->numel() > 0;
  const double score_threshold = scalar_or(inputs, 4, 0);
  const bool center = node.attr_int("center_point_box", 0) == 1;
  const std::vector<double> b = boxes_t.to_double_vector(), s = scores_t.to_double_vector();
  auto box = [&](int64_t batch, int64_t i) {
    const double* v = &b[static_cast<size_t>((batch * n_boxes + i) * 4)];
    if (center) return Box{v[1] - v[3] / 2, v[0] - v[2] / 2, v[1] + v[3] / 2, v[0] + v[2] / 2};
    return Box{std::min(v[0], v[2]), std::min(v[1], v[3]), std::max(v[0], v[2]), std::max(v[1], v[3])};
  };
  std::vector<int64_t> selected;  // (batch, class, box) triples
  std::vector<int64_t> order;
  std::vector<Box> candidates;
  for (int64_t batch = 0; batch < n_batches; ++batch)
    for (int64_t cls = 0; cls < n_classes; ++cls) {
      const double* score = &s[static_cast<size_t>((batch * n_classes + cls) * n_boxes)];
      order.clear();
      for (int64_t i = 0; i < n_boxes; ++i)
        if (!has_score_threshold || score[i] > score_threshold) order.push_back(i);
      std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return score[x] > score[y]; });
      candidates.clear();
      for (int64_t i : order) candidates.push_back(box(batch, i));
      KeptBoxes kept(candidates, iou_threshold);
      for (size_t c = 0; c < order.size(); ++c) {
        if (static_cast<int64_t>(kept.size()) >= max_per_class) break;
        const Box& candidate = candidates[c];
        if (kept.any_near(candidate, [&](const Box& k) { return iou(k, candidate) > iou_threshold; })) continue;
        kept.add(candidate);
        selected.insert(selected.end(), {batch, cls, order[c]});
      }
    }
  return {Tensor::from_vector<int64_t>({static_cast<int64_t>(selected.size() / 3), 3}, selected)};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("NonMaxSuppression", check_nms, compute_nms);

}  // namespace hetsched::kernels
