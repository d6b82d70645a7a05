// NASNet-A Mobile, "4 @ 1056" (Zoph et al. 2018), following the widely used
// PyTorch port (Cadene's pretrainedmodels nasnetamobile): 224x224 input, stem
// conv, two stem cells, then 3 x (4 normal cells) separated by 2 reduction
// cells, with 44 / 88 / 176 filters per branch; separable convs are
// ReLU -> (depthwise kxk, pointwise 1x1) -> BN -> ReLU -> (dw, pw) -> BN.
//
// Padding is TensorFlow "SAME", as in the original model: on even inputs a
// stride-2 window pads one less at the top/left. The PyTorch port emulates it
// with ZeroPad2d + crop around the op; here it is written directly as
// asymmetric pads on Conv/MaxPool/AveragePool, which is the same function
// (the padded zero row never enters a window). The "path 2" of factorised
// reductions keeps its Pad + Slice (shift by one pixel) + 1x1/2 AveragePool.
#include <algorithm>
#include <string>
#include <tuple>
#include <utility>

#include "zoo/model_builder.h"

namespace hetsched::zoo {
namespace {

constexpr float kEps = 1e-3f;
// Weight scale: He-uniform doubles the second moment to make up for the ReLU
// that follows; the depthwise half of a separable conv has no ReLU after it,
// and every cell sums pairs of branches, so those convs use 1/sqrt(2) to keep
// activations O(1) through the 18 cells.
constexpr double kLinearGain = 0.70710678118654752;

// TF SAME padding for one axis: (begin, end).
std::pair<int64_t, int64_t> same_pads(int64_t n, int64_t k, int64_t s) {
  const int64_t out = (n + s - 1) / s;
  const int64_t total = std::max<int64_t>((out - 1) * s + k - n, 0);
  return {total / 2, total - total / 2};
}

class NasNet {
 public:
  explicit NasNet(ModelBuilder& b) : b_(b) {}

  std::string conv_same(const std::string& x, int64_t out, int64_t k, int64_t stride, int64_t groups, double gain) {
    const Dims& d = b_.dims(x);
    const auto [top, bottom] = same_pads(d[2], k, stride);
    const auto [left, right] = same_pads(d[3], k, stride);
    ConvSpec spec;
    spec.out_channels = out;
    spec.kernel_h = spec.kernel_w = k;
    spec.stride_h = spec.stride_w = stride;
    spec.pad_top = top;
    spec.pad_bottom = bottom;
    spec.pad_left = left;
    spec.pad_right = right;
    spec.groups = groups;
    spec.gain = gain;
    return b_.conv(x, spec);
  }

  PoolSpec pool_same(const std::string& x, int64_t k, int64_t stride) {
    const Dims& d = b_.dims(x);
    PoolSpec spec = pool2d(k, stride);
    std::tie(spec.pad_top, spec.pad_bottom) = same_pads(d[2], k, stride);
    std::tie(spec.pad_left, spec.pad_right) = same_pads(d[3], k, stride);
    return spec;  // count_include_pad stays off, as in TF
  }

  std::string max_pool(const std::string& x, int64_t stride) { return b_.max_pool(x, pool_same(x, 3, stride)); }
  std::string avg_pool(const std::string& x, int64_t stride) { return b_.avg_pool(x, pool_same(x, 3, stride)); }

  // SeparableConv2d: depthwise kxk (stride) then pointwise 1x1.
  std::string separable(const std::string& x, int64_t out, int64_t k, int64_t stride) {
    const int64_t in = b_.channels(x);
    return b_.conv(conv_same(x, in, k, stride, in, kLinearGain), out, 1);
  }

  // BranchSeparables (stem = false: the first separable keeps the input
  // width) / BranchSeparablesStem (stem = true: it changes width at once).
  std::string branch(const std::string& name, const std::string& x, int64_t out, int64_t k, int64_t stride,
                     bool stem = false) {
    auto s = b_.scope(name);
    const int64_t mid = stem ? out : b_.channels(x);
    const std::string y = b_.batch_norm(separable(b_.relu(x), mid, k, stride), kEps);
    return b_.batch_norm(separable(b_.relu(y), out, k, 1), kEps);
  }

  std::string relu_conv_bn(const std::string& name, const std::string& x, int64_t out) {
    auto s = b_.scope(name);
    return b_.batch_norm(b_.conv(b_.relu(x), out, 1, 1, 0, 1, 1, false, kLinearGain), kEps);
  }

  // Factorised reduction of the previous cell's output (path_1, path_2,
  // final_path_bn): two 1x1/2 subsamplings offset by one pixel.
  std::string factorized_reduction(const std::string& x, int64_t out_each) {
    auto s = b_.scope("path");
    const std::string r = b_.relu(x);
    const std::string p1 = b_.conv(b_.avg_pool(r, pool2d(1, 2)), out_each, 1);
    std::string shifted = b_.pad(r, {0, 0, 0, 0, 0, 0, 1, 1});
    const int64_t big = int64_t{1} << 40;
    shifted = b_.slice(shifted, {1, 1}, {big, big}, {2, 3});
    const std::string p2 = b_.conv(b_.avg_pool(shifted, pool2d(1, 2)), out_each, 1);
    return b_.batch_norm(b_.concat({p1, p2}, 1), kEps);
  }

  // Reduction-style cell (CellStem0/1, ReductionCell0/1): `cur` gets the 5x5
  // separable and the pools, `prev` the 7x7 / 5x5 separables.
  std::string reduction_body(const std::string& cur, const std::string& prev, int64_t nf, bool prev_is_stem) {
    // One builder call per statement: the order of evaluation of function
    // arguments is unspecified, and node order must not depend on the compiler.
    const std::string c0l = branch("comb_iter_0_left", cur, nf, 5, 2);
    const std::string c0r = branch("comb_iter_0_right", prev, nf, 7, 2, prev_is_stem);
    const std::string c0 = b_.add(c0l, c0r);
    const std::string c1l = max_pool(cur, 2);
    const std::string c1r = branch("comb_iter_1_right", prev, nf, 7, 2, prev_is_stem);
    const std::string c1 = b_.add(c1l, c1r);
    const std::string c2l = avg_pool(cur, 2);
    const std::string c2r = branch("comb_iter_2_right", prev, nf, 5, 2, prev_is_stem);
    const std::string c2 = b_.add(c2l, c2r);
    const std::string c3r = avg_pool(c0, 1);
    const std::string c3 = b_.add(c3r, c1);
    const std::string c4l = branch("comb_iter_4_left", c0, nf, 3, 1);
    const std::string c4r = max_pool(cur, 2);
    const std::string c4 = b_.add(c4l, c4r);
    return b_.concat({c1, c2, c3, c4}, 1);
  }

  std::string cell_stem_0(const std::string& x, int64_t nf) {
    auto s = b_.scope("cell_stem_0");
    const std::string x1 = relu_conv_bn("conv_1x1", x, nf);
    return reduction_body(x1, x, nf, /*prev_is_stem=*/true);
  }

  std::string cell_stem_1(const std::string& x_conv0, const std::string& x_stem_0, int64_t nf) {
    auto s = b_.scope("cell_stem_1");
    const std::string left = relu_conv_bn("conv_1x1", x_stem_0, nf);
    const std::string right = factorized_reduction(x_conv0, nf / 2);
    return reduction_body(left, right, nf, false);
  }

  std::string reduction_cell(const std::string& name, const std::string& x, const std::string& x_prev, int64_t nf) {
    auto s = b_.scope(name);
    const std::string left = relu_conv_bn("conv_prev_1x1", x_prev, nf);
    const std::string right = relu_conv_bn("conv_1x1", x, nf);
    return reduction_body(right, left, nf, false);
  }

  // NormalCell; FirstCell when `first` (x_prev has twice the resolution and
  // goes through a factorised reduction).
  std::string normal_cell(const std::string& name, const std::string& x, const std::string& x_prev, int64_t out_left,
                          int64_t out_right, bool first) {
    auto s = b_.scope(name);
    std::string left, right;
    if (first) {
      right = relu_conv_bn("conv_1x1", x, out_right);
      left = factorized_reduction(x_prev, out_left);
    } else {
      left = relu_conv_bn("conv_prev_1x1", x_prev, out_left);
      right = relu_conv_bn("conv_1x1", x, out_right);
    }
    const int64_t nl = b_.channels(left);
    const std::string c0l = branch("comb_iter_0_left", right, out_right, 5, 1);
    const std::string c0r = branch("comb_iter_0_right", left, nl, 3, 1);
    const std::string c0 = b_.add(c0l, c0r);
    const std::string c1l = branch("comb_iter_1_left", left, nl, 5, 1);
    const std::string c1r = branch("comb_iter_1_right", left, nl, 3, 1);
    const std::string c1 = b_.add(c1l, c1r);
    const std::string c2l = avg_pool(right, 1);
    const std::string c2 = b_.add(c2l, left);
    // Two identical pools of the same input, as in the published cell.
    const std::string c3l = avg_pool(left, 1);
    const std::string c3r = avg_pool(left, 1);
    const std::string c3 = b_.add(c3l, c3r);
    const std::string c4l = branch("comb_iter_4_left", right, out_right, 3, 1);
    const std::string c4 = b_.add(c4l, right);
    return b_.concat({left, c0, c1, c2, c3, c4}, 1);
  }

 private:
  ModelBuilder& b_;
};

onnx::ModelProto build(const ZooArgs& args) {
  ModelBuilder b("nasnet", args.seed());
  NasNet n(b);
  const int64_t f = 1056 / 24;  // 44 filters in the first normal cells
  std::string x = b.input("input", onnx::TensorProto::FLOAT, {1, 3, 224, 224});
  std::string x_conv0;
  {
    auto s = b.scope("conv0");
    x_conv0 = b.batch_norm(b.conv(x, 32, 3, 2, 0), kEps);  // -> 111x111
  }
  const std::string stem0 = n.cell_stem_0(x_conv0, f / 4);         // 44 x 56x56
  const std::string stem1 = n.cell_stem_1(x_conv0, stem0, f / 2);  // 88 x 28x28

  std::string prev = stem0, cur = stem1;
  auto step = [&](const std::string& next) {
    prev = cur;
    cur = next;
  };
  step(n.normal_cell("cell_0", cur, prev, f / 2, f, true));  // 264 x 28x28
  for (int i = 1; i <= 3; ++i) step(n.normal_cell("cell_" + std::to_string(i), cur, prev, f, f, false));
  step(n.reduction_cell("reduction_cell_0", cur, prev, 2 * f));  // 352 x 14x14
  step(n.normal_cell("cell_6", cur, prev, f, 2 * f, true));      // 528 x 14x14
  for (int i = 7; i <= 9; ++i) step(n.normal_cell("cell_" + std::to_string(i), cur, prev, 2 * f, 2 * f, false));
  step(n.reduction_cell("reduction_cell_1", cur, prev, 4 * f));  // 704 x 7x7
  step(n.normal_cell("cell_12", cur, prev, 2 * f, 4 * f, true));  // 1056 x 7x7
  for (int i = 13; i <= 15; ++i) step(n.normal_cell("cell_" + std::to_string(i), cur, prev, 4 * f, 4 * f, false));
  {
    auto s = b.scope("head");
    x = b.avg_pool(b.relu(cur), pool2d(7, 1));
    x = b.gemm(b.flatten(x), 1000);
  }
  b.output(x, "output");
  return b.finish("NASNet-A Mobile 4@1056 (PyTorch port layout, TF SAME padding), 224x224, 5.3M parameters");
}

}  // namespace

HETSCHED_ZOO_MODEL({"nasnet", "NASNet-A Mobile (4 @ 1056), 224x224 -> 1000 logits", {}, &build});

}  // namespace hetsched::zoo
