// Unit tests for the neural-network reference kernels: Conv, ConvTranspose,
// Gemm, MatMul, MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool,
// BatchNormalization, LayerNormalization, InstanceNormalization, LRN,
// Softmax, LogSoftmax and Hardmax.
//
// Expected values come from the ONNX operator documentation examples, from
// hand computation, or from the naive loops below (direct transcriptions of
// the definitions, in double), on random data.
#include <algorithm>
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
using testing::attr_int;
using testing::attr_ints;
using testing::attr_string;
using testing::run_reference_op;
using testing::values_of;
using testing::run1;
using testing::f32;

using Attrs = std::map<std::string, Attribute>;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();


// 0, 1, 2, ... as float32.
Tensor iota(Shape shape, float start = 0.0f) {
  Tensor t(DType::kFloat32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = start + static_cast<float>(i);
  return t;
}

Tensor filled(Shape shape, float v) {
  Tensor t(DType::kFloat32, std::move(shape));
  std::fill(t.data<float>(), t.data<float>() + t.numel(), v);
  return t;
}

// Deterministic uniform values in [-1, 1).
Tensor random_tensor(Shape shape, uint32_t seed) {
  Tensor t(DType::kFloat32, std::move(shape));
  uint32_t s = seed * 2654435761u + 12345u;
  for (int64_t i = 0; i < t.numel(); ++i) {
    s = s * 1664525u + 1013904223u;
    t.data<float>()[i] = static_cast<float>(s >> 8) / static_cast<float>(1u << 23) - 1.0f;
  }
  return t;
}

Tensor to_f64(const Tensor& t) {
  std::vector<double> v = t.to_double_vector();
  return Tensor::from_vector<double>(t.shape(), v);
}

void expect_near(const Tensor& got, const std::vector<double>& want, double tol = 1e-5) {
  std::vector<double> g = got.to_double_vector();
  ASSERT_EQ(g.size(), want.size());
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(g[i])) << "at " << i;
    } else if (std::isinf(want[i])) {
      EXPECT_EQ(g[i], want[i]) << "at " << i;
    } else {
      EXPECT_NEAR(g[i], want[i], tol * std::max(1.0, std::fabs(want[i]))) << "at " << i;
    }
  }
}

void expect_tensor_near(const Tensor& got, const Tensor& want, double tol = 1e-5) {
  ASSERT_EQ(got.shape(), want.shape());
  EXPECT_EQ(got.dtype(), want.dtype());
  expect_near(got, want.to_double_vector(), tol);
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

// Runs the load-time check of `op` on a one-node graph whose inputs have the
// given dtypes and shapes (an empty optional shape: rank unknown).
using ValueSpec = testing::InputSpec;
void run_check(const std::string& op, const std::vector<ValueSpec>& ins, Attrs attrs = {},
               size_t n_outputs = 1, int64_t opset = 17) {
  const kernels::ReferenceKernel* kernel = kernels::find_reference_kernel(op);
  ASSERT_NE(kernel, nullptr) << op;
  ASSERT_NE(kernel->check, nullptr) << op;
  testing::OneNodeGraph g = testing::one_node_graph(op, ins, std::move(attrs), n_outputs, opset);
  kernel->check(g.node, g.graph);
}

// Calls fn(index) for every multi-index below `dims`, row-major.
void for_each_index(const Shape& dims, const std::function<void(const std::vector<int64_t>&)>& fn) {
  if (shape_numel(dims) == 0) return;
  std::vector<int64_t> idx(dims.size(), 0);
  while (true) {
    fn(idx);
    size_t d = dims.size();
    while (d > 0) {
      --d;
      if (++idx[d] < dims[d]) break;
      idx[d] = 0;
      if (d == 0) return;
    }
    if (dims.empty()) return;
  }
}

int64_t flat(const Shape& dims, const std::vector<int64_t>& idx) {
  int64_t off = 0;
  for (size_t i = 0; i < dims.size(); ++i) off = off * dims[i] + idx[i];
  return off;
}

// Conv by its definition: y[n, m, o] = B[m] + sum_{c, k} W[m, c, k] * X[n, g*Cg + c, o*s + k*d - pb].
Tensor naive_conv(const Tensor& X, const Tensor& W, const Tensor* B, int64_t group, const Shape& strides,
                  const Shape& dilations, const Shape& pad_begin, const Shape& out_spatial) {
  const Shape& xs = X.shape();
  const Shape& ws = W.shape();
  const int64_t N = xs[0], C = xs[1], M = ws[0], cg = C / group, mg = M / group;
  const Shape in_sp(xs.begin() + 2, xs.end()), k_sp(ws.begin() + 2, ws.end());
  Shape ys = {N, M};
  ys.insert(ys.end(), out_spatial.begin(), out_spatial.end());
  std::vector<double> x = X.to_double_vector(), w = W.to_double_vector(),
                      y(static_cast<size_t>(shape_numel(ys)));
  std::vector<double> b = B ? B->to_double_vector() : std::vector<double>(static_cast<size_t>(M), 0.0);
  for_each_index({N, M}, [&](const std::vector<int64_t>& nm) {
    int64_t n = nm[0], m = nm[1], gi = m / mg;
    for_each_index(out_spatial, [&](const std::vector<int64_t>& o) {
      double acc = b[static_cast<size_t>(m)];
      for (int64_t c = 0; c < cg; ++c)
        for_each_index(k_sp, [&](const std::vector<int64_t>& k) {
          std::vector<int64_t> i(o.size());
          for (size_t a = 0; a < o.size(); ++a) {
            i[a] = o[a] * strides[a] + k[a] * dilations[a] - pad_begin[a];
            if (i[a] < 0 || i[a] >= in_sp[a]) return;
          }
          acc += w[static_cast<size_t>((m * cg + c) * shape_numel(k_sp) + flat(k_sp, k))] *
                 x[static_cast<size_t>((n * C + gi * cg + c) * shape_numel(in_sp) + flat(in_sp, i))];
        });
      y[static_cast<size_t>((n * M + m) * shape_numel(out_spatial) + flat(out_spatial, o))] = acc;
    });
  });
  return Tensor::from_vector<float>(ys, std::vector<float>(y.begin(), y.end()));
}

// ConvTranspose by its definition: X[n, c, i] * W[c, m, k] lands on o = i*s + k*d - pb.
Tensor naive_conv_transpose(const Tensor& X, const Tensor& W, const Tensor* B, int64_t group,
                            const Shape& strides, const Shape& dilations, const Shape& pad_begin,
                            const Shape& out_spatial) {
  const Shape& xs = X.shape();
  const Shape& ws = W.shape();
  const int64_t N = xs[0], C = xs[1], cg = C / group, mg = ws[1], M = mg * group;
  const Shape in_sp(xs.begin() + 2, xs.end()), k_sp(ws.begin() + 2, ws.end());
  Shape ys = {N, M};
  ys.insert(ys.end(), out_spatial.begin(), out_spatial.end());
  std::vector<double> x = X.to_double_vector(), w = W.to_double_vector(),
                      y(static_cast<size_t>(shape_numel(ys)));
  const int64_t out_plane = shape_numel(out_spatial);
  if (B)
    for (int64_t n = 0; n < N; ++n)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t p = 0; p < out_plane; ++p)
          y[static_cast<size_t>((n * M + m) * out_plane + p)] = B->to_double_vector()[static_cast<size_t>(m)];
  for_each_index({N, C}, [&](const std::vector<int64_t>& nc) {
    int64_t n = nc[0], c = nc[1], gi = c / cg;
    for_each_index(in_sp, [&](const std::vector<int64_t>& i) {
      double xv = x[static_cast<size_t>((n * C + c) * shape_numel(in_sp) + flat(in_sp, i))];
      for (int64_t m = 0; m < mg; ++m)
        for_each_index(k_sp, [&](const std::vector<int64_t>& k) {
          std::vector<int64_t> o(i.size());
          for (size_t a = 0; a < i.size(); ++a) {
            o[a] = i[a] * strides[a] + k[a] * dilations[a] - pad_begin[a];
            if (o[a] < 0 || o[a] >= out_spatial[a]) return;
          }
          y[static_cast<size_t>((n * M + gi * mg + m) * out_plane + flat(out_spatial, o))] +=
              xv * w[static_cast<size_t>((c * mg + m) * shape_numel(k_sp) + flat(k_sp, k))];
        });
    });
  });
  return Tensor::from_vector<float>(ys, std::vector<float>(y.begin(), y.end()));
}

// Max or average pool by definition; `padded_end[a]` bounds the taps counted
// by count_include_pad (in + pad_end).
Tensor naive_pool(const Tensor& X, bool is_max, bool count_pad, const Shape& kernel, const Shape& strides,
                  const Shape& dilations, const Shape& pad_begin, const Shape& pad_end,
                  const Shape& out_spatial) {
  const Shape& xs = X.shape();
  const int64_t N = xs[0], C = xs[1];
  const Shape in_sp(xs.begin() + 2, xs.end());
  Shape ys = {N, C};
  ys.insert(ys.end(), out_spatial.begin(), out_spatial.end());
  std::vector<double> x = X.to_double_vector(), y(static_cast<size_t>(shape_numel(ys)));
  for_each_index({N * C}, [&](const std::vector<int64_t>& p) {
    for_each_index(out_spatial, [&](const std::vector<int64_t>& o) {
      double best = -INFINITY, sum = 0;
      int64_t valid = 0, padded = 0;
      for_each_index(kernel, [&](const std::vector<int64_t>& k) {
        bool inside = true, in_pad = true;
        std::vector<int64_t> i(o.size());
        for (size_t a = 0; a < o.size(); ++a) {
          i[a] = o[a] * strides[a] + k[a] * dilations[a] - pad_begin[a];
          inside = inside && i[a] >= 0 && i[a] < in_sp[a];
          in_pad = in_pad && i[a] < in_sp[a] + pad_end[a];
        }
        padded += in_pad;
        if (!inside) return;
        double v = x[static_cast<size_t>(p[0] * shape_numel(in_sp) + flat(in_sp, i))];
        best = std::max(best, v);
        sum += v;
        ++valid;
      });
      y[static_cast<size_t>(p[0] * shape_numel(out_spatial) + flat(out_spatial, o))] =
          is_max ? best : sum / static_cast<double>(count_pad ? padded : valid);
    });
  });
  return Tensor::from_vector<float>(ys, std::vector<float>(y.begin(), y.end()));
}

// ---------------------------------------------------------------------------
// Conv

TEST(ReferenceConv, OnnxExampleWithAndWithoutPadding) {
  Tensor x = iota({1, 1, 5, 5}), w = filled({1, 1, 3, 3}, 1.0f);
  Tensor padded =
      run1("Conv", {x, w}, {{"kernel_shape", attr_ints({3, 3})}, {"pads", attr_ints({1, 1, 1, 1})}});
  EXPECT_EQ(padded.shape(), Shape({1, 1, 5, 5}));
  expect_near(padded, {12,  21, 27, 33,  24,  33,  54,  63, 72,  51,  63,  99, 108,
                       117, 81, 93, 144, 153, 162, 111, 72, 111, 117, 123, 84});
  Tensor valid = run1("Conv", {x, w}, {{"kernel_shape", attr_ints({3, 3})}});
  EXPECT_EQ(valid.shape(), Shape({1, 1, 3, 3}));
  expect_near(valid, {54, 63, 72, 99, 108, 117, 144, 153, 162});
}

TEST(ReferenceConv, OnnxExampleStridesAndAsymmetricPadding) {
  Tensor x = iota({1, 1, 7, 5}), w = filled({1, 1, 3, 3}, 1.0f);
  Tensor y = run1("Conv", {x, w}, {{"strides", attr_ints({2, 2})}, {"pads", attr_ints({1, 1, 1, 1})}});
  EXPECT_EQ(y.shape(), Shape({1, 1, 4, 3}));
  expect_near(y, {12, 27, 24, 63, 108, 81, 123, 198, 141, 112, 177, 124});
  Tensor asym = run1("Conv", {x, w}, {{"strides", attr_ints({2, 2})}, {"pads", attr_ints({1, 0, 1, 0})}});
  EXPECT_EQ(asym.shape(), Shape({1, 1, 4, 2}));
  expect_near(asym, {21, 33, 99, 117, 189, 207, 171, 183});
}

TEST(ReferenceConv, AutoPadSameUpperLowerAndValid) {
  // 1-D, kernel 2: the single pad goes at the end (SAME_UPPER) or the beginning (SAME_LOWER).
  Tensor x = f32({1, 1, 4}, {1, 2, 3, 4}), w = f32({1, 1, 2}, {1, 1});
  expect_near(run1("Conv", {x, w}, {{"auto_pad", attr_string("SAME_UPPER")}}), {3, 5, 7, 4});
  expect_near(run1("Conv", {x, w}, {{"auto_pad", attr_string("SAME_LOWER")}}), {1, 3, 5, 7});
  // VALID ignores pads.
  Tensor v = run1("Conv", {x, w}, {{"auto_pad", attr_string("VALID")}, {"pads", attr_ints({3, 3})}});
  EXPECT_EQ(v.shape(), Shape({1, 1, 3}));
  expect_near(v, {3, 5, 7});
  // ONNX's test_conv_with_autopad_same: SAME_LOWER, strides 2 on 5x5 -> 3x3, pads (1, 1) each side.
  Tensor x2 = iota({1, 1, 5, 5}), w2 = filled({1, 1, 3, 3}, 1.0f);
  Tensor y2 =
      run1("Conv", {x2, w2}, {{"auto_pad", attr_string("SAME_LOWER")}, {"strides", attr_ints({2, 2})}});
  EXPECT_EQ(y2.shape(), Shape({1, 1, 3, 3}));
  expect_near(y2, {12, 27, 24, 63, 108, 81, 72, 117, 84});
  // Even input, stride 2, kernel 3: total pad 1, placed by the mode.
  Tensor x3 = iota({1, 1, 4, 4}), w3 = random_tensor({2, 1, 3, 3}, 3);
  for (const char* mode : {"SAME_UPPER", "SAME_LOWER"}) {
    Tensor y = run1("Conv", {x3, w3}, {{"auto_pad", attr_string(mode)}, {"strides", attr_ints({2, 2})}});
    int64_t pb = std::string(mode) == "SAME_UPPER" ? 0 : 1;
    expect_tensor_near(y, naive_conv(x3, w3, nullptr, 1, {2, 2}, {1, 1}, {pb, pb}, {2, 2}));
  }
}

TEST(ReferenceConv, GroupsDilationsStridesBiasAgainstNaive) {
  Tensor x = random_tensor({2, 4, 9, 11}, 1), w = random_tensor({6, 2, 3, 2}, 2), b = random_tensor({6}, 3);
  Attrs attrs = {{"group", attr_int(2)},
                 {"strides", attr_ints({2, 1})},
                 {"dilations", attr_ints({2, 3})},
                 {"pads", attr_ints({1, 2, 0, 1})}};
  Tensor y = run1("Conv", {x, w, b}, attrs);
  // H: (9 + 1 - 5) / 2 + 1 = 3; W: (11 + 3 - 4) / 1 + 1 = 11.
  expect_tensor_near(y, naive_conv(x, w, &b, 2, {2, 1}, {2, 3}, {1, 2}, {3, 11}));
}

TEST(ReferenceConv, DepthwiseAndPointwise) {
  Tensor x = random_tensor({1, 5, 6, 7}, 4);
  Tensor wd = random_tensor({5, 1, 3, 3}, 5);
  Tensor yd = run1("Conv", {x, wd}, {{"group", attr_int(5)}, {"pads", attr_ints({1, 1, 1, 1})}});
  expect_tensor_near(yd, naive_conv(x, wd, nullptr, 5, {1, 1}, {1, 1}, {1, 1}, {6, 7}));
  // 1x1, stride 1, no pads: the direct GEMM path; 13 x 300 exercises edge tiles and k blocks.
  Tensor xp = random_tensor({2, 300, 5, 7}, 6), wp = random_tensor({13, 300, 1, 1}, 7),
         bp = random_tensor({13}, 8);
  Tensor yp = run1("Conv", {xp, wp, bp});
  expect_tensor_near(yp, naive_conv(xp, wp, &bp, 1, {1, 1}, {1, 1}, {0, 0}, {5, 7}), 1e-4);
}

TEST(ReferenceConv, OneDAndThreeD) {
  Tensor x1 = random_tensor({2, 3, 10}, 9), w1 = random_tensor({4, 3, 3}, 10), b1 = random_tensor({4}, 11);
  Tensor y1 = run1("Conv", {x1, w1, b1}, {{"strides", attr_ints({3})}, {"pads", attr_ints({2, 1})}});
  expect_tensor_near(y1, naive_conv(x1, w1, &b1, 1, {3}, {1}, {2}, {4}));
  Tensor x3 = random_tensor({1, 2, 5, 6, 4}, 12), w3 = random_tensor({3, 2, 2, 3, 2}, 13);
  Tensor y3 = run1("Conv", {x3, w3},
                   {{"strides", attr_ints({1, 2, 1})},
                    {"dilations", attr_ints({2, 1, 1})},
                    {"pads", attr_ints({1, 1, 0, 0, 1, 1})}});
  // D: (5 + 1 - 3) + 1 = 4; H: (6 + 2 - 3) / 2 + 1 = 3; W: (4 + 1 - 2) + 1 = 4.
  expect_tensor_near(y3, naive_conv(x3, w3, nullptr, 1, {1, 2, 1}, {2, 1, 1}, {1, 1, 0}, {4, 3, 4}));
}

TEST(ReferenceConv, ManyChunksOfIm2col) {
  // K * OW * rows (432 * 100 * 100) exceeds the im2col buffer (4M elements),
  // so the output is built in chunks of 97 and 3 rows.
  Tensor x = random_tensor({1, 48, 100, 100}, 14), w = random_tensor({2, 48, 3, 3}, 15);
  Tensor y = run1("Conv", {x, w}, {{"pads", attr_ints({1, 1, 1, 1})}});
  expect_tensor_near(y, naive_conv(x, w, nullptr, 1, {1, 1}, {1, 1}, {1, 1}, {100, 100}), 1e-4);
}

TEST(ReferenceConv, Float64) {
  Tensor x = random_tensor({1, 2, 5, 5}, 16), w = random_tensor({3, 2, 3, 3}, 17);
  Tensor y = run1("Conv", {to_f64(x), to_f64(w)}, {{"strides", attr_ints({2, 2})}});
  EXPECT_EQ(y.dtype(), DType::kFloat64);
  expect_near(y, naive_conv(x, w, nullptr, 1, {2, 2}, {1, 1}, {0, 0}, {2, 2}).to_double_vector(), 1e-5);
}

TEST(ReferenceConv, Errors) {
  Tensor x = random_tensor({1, 4, 5, 5}, 1), w = random_tensor({2, 3, 3, 3}, 2);
  EXPECT_EQ(error_code_of([&] { run1("Conv", {x, w}); }), ErrorCode::kRuntime);  // C != W[1] * group
  Tensor w2 = random_tensor({2, 4, 3, 3}, 2);
  EXPECT_EQ(error_code_of([&] {
              run1("Conv", {x, w2}, {{"kernel_shape", attr_ints({2, 2})}});
            }),
            ErrorCode::kRuntime);
  EXPECT_EQ(error_code_of([&] {
              run1("Conv", {x, w2}, {{"auto_pad", attr_string("SAME")}});
            }),
            ErrorCode::kInvalidModel);
  EXPECT_EQ(error_code_of([&] {
              run1("Conv", {x, w2}, {{"pads", attr_ints({1, 1})}});
            }),
            ErrorCode::kInvalidModel);
  EXPECT_EQ(error_code_of([&] { run1("Conv", {x, random_tensor({2, 4, 7, 7}, 3)}); }), ErrorCode::kRuntime);
  // Load-time refusals.
  EXPECT_EQ(error_code_of([&] {
              run_check("Conv", {{DType::kFloat32, Shape{1, 1, 2, 2, 2, 2}},
                                 {DType::kFloat32, Shape{1, 1, 1, 1, 1, 1}}});
            }),
            ErrorCode::kUnsupported);
  EXPECT_EQ(error_code_of([&] {
              run_check("Conv", {{DType::kInt32, {}}, {DType::kInt32, {}}});
            }),
            ErrorCode::kUnsupported);
  EXPECT_EQ(error_code_of([&] {
              run_check("Conv", {{DType::kFloat32, Shape{1, 4, 5, 5}}, {DType::kFloat32, Shape{2, 4, 3, 3}}},
                        {{"kernel_shape", attr_ints({5, 5})}});
            }),
            ErrorCode::kInvalidModel);
  run_check("Conv", {{DType::kFloat32, Shape{1, 4, 5, 5}}, {DType::kFloat32, Shape{2, 2, 3, 3}}},
            {{"group", attr_int(2)}});
  run_check("Conv", {{DType::kFloat32, {}}, {DType::kFloat32, {}}});  // unknown shapes are accepted
}

// ---------------------------------------------------------------------------
// ConvTranspose

TEST(ReferenceConvTranspose, OnnxExamples) {
  Tensor x = iota({1, 1, 3, 3}), w = filled({1, 2, 3, 3}, 1.0f);
  Tensor y = run1("ConvTranspose", {x, w});
  EXPECT_EQ(y.shape(), Shape({1, 2, 5, 5}));
  std::vector<double> plane = {0,  1,  3, 3,  2,  3,  8,  15, 12, 7,  9,  21, 36,
                               27, 15, 9, 20, 33, 24, 13, 6,  13, 21, 15, 8};
  std::vector<double> both = plane;
  both.insert(both.end(), plane.begin(), plane.end());
  expect_near(y, both);

  Tensor y1 = run1("ConvTranspose", {iota({1, 1, 3}), filled({1, 2, 3}, 1.0f)});
  EXPECT_EQ(y1.shape(), Shape({1, 2, 5}));
  expect_near(y1, {0, 1, 3, 3, 2, 0, 1, 3, 3, 2});

  // test_convtranspose_pads: strides [3, 2], pads [1, 2, 1, 2] -> 7 x 3.
  Tensor yp =
      run1("ConvTranspose", {x, w}, {{"strides", attr_ints({3, 2})}, {"pads", attr_ints({1, 2, 1, 2})}});
  EXPECT_EQ(yp.shape(), Shape({1, 2, 7, 3}));
  std::vector<double> pp = {1, 1, 3, 1, 1, 3, 7, 4, 9, 7, 4, 9, 7, 4, 9, 13, 7, 15, 13, 7, 15};
  std::vector<double> pboth = pp;
  pboth.insert(pboth.end(), pp.begin(), pp.end());
  expect_near(yp, pboth);

  // test_convtranspose_dilations.
  Tensor xd = f32({1, 1, 3, 3}, {3, 8, 1, 9, 5, 7, 3, 2, 6}), wd = f32({1, 1, 2, 2}, {7, 2, 1, 9});
  Tensor yd = run1("ConvTranspose", {xd, wd}, {{"dilations", attr_ints({2, 2})}});
  EXPECT_EQ(yd.shape(), Shape({1, 1, 5, 5}));
  expect_near(
      yd, {21, 56, 13, 16, 2, 63, 35, 67, 10, 14, 24, 22, 76, 76, 21, 9, 5, 88, 45, 63, 3, 2, 33, 18, 54});
}

TEST(ReferenceConvTranspose, OutputShapeAndAutoPad) {
  Tensor x = iota({1, 1, 3, 3}), w = filled({1, 2, 3, 3}, 1.0f);
  // Output larger than the full result: it is extended at the end with zeros.
  Tensor y =
      run1("ConvTranspose", {x, w}, {{"strides", attr_ints({3, 2})}, {"output_shape", attr_ints({10, 8})}});
  EXPECT_EQ(y.shape(), Shape({1, 2, 10, 8}));
  std::vector<double> v = y.to_double_vector();
  expect_near(run1("ConvTranspose", {iota({1, 1, 3}), filled({1, 1, 3}, 1.0f)},
                   {{"strides", attr_ints({2})}, {"output_shape", attr_ints({8})}}),
              {0, 0, 1, 1, 3, 2, 2, 0});
  std::vector<double> row0(v.begin(), v.begin() + 8), last(v.begin() + 72, v.begin() + 80);
  EXPECT_EQ(row0, std::vector<double>({0, 0, 1, 1, 3, 2, 2, 0}));
  EXPECT_EQ(last, std::vector<double>(8, 0.0));
  // output_shape given with N and C in front is accepted too.
  Tensor y4 = run1("ConvTranspose", {x, w},
                   {{"strides", attr_ints({3, 2})}, {"output_shape", attr_ints({1, 2, 10, 8})}});
  expect_tensor_near(y4, y);
  // With output_padding the full result already has the requested size.
  Tensor yk = run1("ConvTranspose", {x, w},
                   {{"strides", attr_ints({3, 2})},
                    {"output_shape", attr_ints({10, 8})},
                    {"output_padding", attr_ints({1, 1})},
                    {"kernel_shape", attr_ints({3, 3})}});
  expect_tensor_near(yk, y);

  // SAME_UPPER (test_convtranspose_autopad_same): out = in * stride, odd pad at the end.
  Tensor ys = run1("ConvTranspose", {x, w},
                   {{"auto_pad", attr_string("SAME_UPPER")}, {"strides", attr_ints({2, 2})}});
  EXPECT_EQ(ys.shape(), Shape({1, 2, 6, 6}));
  std::vector<double> sv = ys.to_double_vector();
  EXPECT_EQ(std::vector<double>(sv.begin(), sv.begin() + 12),
            std::vector<double>({0, 0, 1, 1, 3, 2, 0, 0, 1, 1, 3, 2}));
  EXPECT_EQ(std::vector<double>(sv.begin() + 12, sv.begin() + 18), std::vector<double>({3, 3, 8, 5, 12, 7}));
  // SAME_LOWER: the odd pad at the beginning.
  Tensor yl = run1("ConvTranspose", {iota({1, 1, 3}), filled({1, 1, 3}, 1.0f)},
                   {{"auto_pad", attr_string("SAME_LOWER")}, {"strides", attr_ints({2})}});
  expect_near(yl, {0, 1, 1, 3, 2, 2});
  // output_shape smaller than the full result, NOTSET: the odd pad at the beginning.
  Tensor yo = run1("ConvTranspose", {iota({1, 1, 3}), filled({1, 1, 3}, 1.0f)},
                   {{"strides", attr_ints({2})}, {"output_shape", attr_ints({4})}});
  expect_near(yo, {1, 1, 3, 2});
}

TEST(ReferenceConvTranspose, AgainstNaive) {
  Tensor x = random_tensor({2, 4, 4, 5}, 21), w = random_tensor({4, 3, 3, 2}, 22), b = random_tensor({6}, 23);
  Attrs attrs = {{"group", attr_int(2)},
                 {"strides", attr_ints({2, 3})},
                 {"dilations", attr_ints({2, 1})},
                 {"pads", attr_ints({1, 0, 2, 1})},
                 {"output_padding", attr_ints({1, 0})}};
  Tensor y = run1("ConvTranspose", {x, w, b}, attrs);
  // H: 2*3 + 1 + 5 - 3 = 9; W: 3*4 + 0 + 2 - 1 = 13.
  expect_tensor_near(y, naive_conv_transpose(x, w, &b, 2, {2, 3}, {2, 1}, {1, 0}, {9, 13}));

  Tensor x1 = random_tensor({1, 3, 7}, 24), w1 = random_tensor({3, 2, 4}, 25);
  Tensor y1 = run1("ConvTranspose", {x1, w1}, {{"strides", attr_ints({3})}, {"pads", attr_ints({2, 1})}});
  // 3*6 + 4 - 3 = 19.
  expect_tensor_near(y1, naive_conv_transpose(x1, w1, nullptr, 1, {3}, {1}, {2}, {19}));

  Tensor x3 = random_tensor({1, 2, 3, 2, 3}, 26), w3 = random_tensor({2, 2, 2, 3, 2}, 27);
  Tensor y3 = run1("ConvTranspose", {x3, w3}, {{"strides", attr_ints({2, 1, 2})}});
  expect_tensor_near(y3,
                     naive_conv_transpose(x3, w3, nullptr, 1, {2, 1, 2}, {1, 1, 1}, {0, 0, 0}, {6, 4, 6}));

  Tensor y64 = run1("ConvTranspose", {to_f64(x1), to_f64(w1)}, {{"strides", attr_ints({3})}});
  EXPECT_EQ(y64.dtype(), DType::kFloat64);
  expect_near(y64, naive_conv_transpose(x1, w1, nullptr, 1, {3}, {1}, {0}, {22}).to_double_vector());
}

TEST(ReferenceConvTranspose, Errors) {
  Tensor x = random_tensor({1, 4, 3, 3}, 1);
  EXPECT_EQ(error_code_of([&] {
              run1("ConvTranspose", {x, random_tensor({3, 2, 3, 3}, 2)});
            }),
            ErrorCode::kRuntime);
  EXPECT_EQ(error_code_of([&] {
              run1("ConvTranspose", {x, random_tensor({4, 2, 3, 3}, 2)}, {{"output_shape", attr_ints({5})}});
            }),
            ErrorCode::kInvalidModel);
  EXPECT_EQ(error_code_of([&] {
              run_check("ConvTranspose", {{DType::kFloat32, Shape{1, 1, 2, 2, 2, 2}}, {DType::kFloat32, {}}});
            }),
            ErrorCode::kUnsupported);
}

// ---------------------------------------------------------------------------
// Gemm and MatMul

// A (M x K) * B (K x N) in double.
std::vector<double> naive_matmul(const std::vector<double>& a, const std::vector<double>& b, int64_t M,
                                 int64_t N, int64_t K) {
  std::vector<double> y(static_cast<size_t>(M * N), 0.0);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j)
      for (int64_t k = 0; k < K; ++k)
        y[static_cast<size_t>(i * N + j)] +=
            a[static_cast<size_t>(i * K + k)] * b[static_cast<size_t>(k * N + j)];
  return y;
}

std::vector<double> transpose(const std::vector<double>& a, int64_t rows, int64_t cols) {
  std::vector<double> t(a.size());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      t[static_cast<size_t>(j * rows + i)] = a[static_cast<size_t>(i * cols + j)];
  return t;
}

TEST(ReferenceGemm, TransposesAlphaBetaAndBiasShapes) {
  const int64_t M = 5, N = 11, K = 7;
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      Tensor a = random_tensor(ta ? Shape{K, M} : Shape{M, K}, 31);
      Tensor b = random_tensor(tb ? Shape{N, K} : Shape{K, N}, 32);
      std::vector<double> av = a.to_double_vector(), bv = b.to_double_vector();
      if (ta) av = transpose(av, K, M);
      if (tb) bv = transpose(bv, N, K);
      std::vector<double> ab = naive_matmul(av, bv, M, N, K);
      for (Shape cs : {Shape{}, Shape{1}, Shape{N}, Shape{1, N}, Shape{M, 1}, Shape{M, N}}) {
        Tensor c = random_tensor(cs, 33);
        std::vector<double> cv = c.to_double_vector();
        std::vector<int64_t> st = {cs.size() == 2 && cs[0] == M ? (cs[1] == N ? N : 1) : 0,
                                   !cs.empty() && cs.back() == N ? 1 : 0};
        std::vector<double> want(ab.size());
        for (int64_t i = 0; i < M; ++i)
          for (int64_t j = 0; j < N; ++j)
            want[static_cast<size_t>(i * N + j)] = 0.5 * ab[static_cast<size_t>(i * N + j)] -
                                                   2.0 * cv[static_cast<size_t>(i * st[0] + j * st[1])];
        Tensor y = run1("Gemm", {a, b, c},
                        {{"transA", attr_int(ta)},
                         {"transB", attr_int(tb)},
                         {"alpha", attr_float(0.5f)},
                         {"beta", attr_float(-2.0f)}});
        EXPECT_EQ(y.shape(), Shape({M, N}));
        expect_near(y, want);
      }
      // No C.
      Tensor y = run1("Gemm", {a, b}, {{"transA", attr_int(ta)}, {"transB", attr_int(tb)}});
      expect_near(y, ab);
    }
}

TEST(ReferenceGemm, BlockedSizesAndBetaZero) {
  const int64_t M = 70, N = 530, K = 300;  // crosses the m, n and k blocks and the tile edges
  Tensor a = random_tensor({M, K}, 34), b = random_tensor({K, N}, 35);
  Tensor y = run1("Gemm", {a, b, filled({N}, kNaN)}, {{"beta", attr_float(0.0f)}});
  expect_near(y, naive_matmul(a.to_double_vector(), b.to_double_vector(), M, N, K), 1e-4);
  Tensor y64 = run1("Gemm", {to_f64(a), to_f64(b)});
  EXPECT_EQ(y64.dtype(), DType::kFloat64);
  expect_near(y64, naive_matmul(a.to_double_vector(), b.to_double_vector(), M, N, K), 1e-12);
}

TEST(ReferenceGemm, Errors) {
  Tensor a = random_tensor({2, 3}, 1), b = random_tensor({4, 5}, 2);
  EXPECT_EQ(error_code_of([&] { run1("Gemm", {a, b}); }), ErrorCode::kRuntime);
  Tensor b2 = random_tensor({3, 5}, 2);
  EXPECT_EQ(error_code_of([&] { run1("Gemm", {a, b2, random_tensor({3, 5}, 3)}); }), ErrorCode::kRuntime);
  EXPECT_EQ(error_code_of([&] { run1("Gemm", {random_tensor({2, 3, 1}, 1), b2}); }), ErrorCode::kRuntime);
  EXPECT_EQ(error_code_of([&] {
              run_check("Gemm", {{DType::kInt64, {}}, {DType::kInt64, {}}});
            }),
            ErrorCode::kUnsupported);
  EXPECT_EQ(error_code_of([&] {
              run_check("Gemm", {{DType::kFloat32, Shape{2, 3, 4}}, {DType::kFloat32, {}}});
            }),
            ErrorCode::kInvalidModel);
  run_check("Gemm", {{DType::kFloat32, Shape{2, 3}}, {DType::kFloat32, {}}, {DType::kFloat32, Shape{3}}});
}

TEST(ReferenceMatMul, ShapesAndVectors) {
  Tensor a = random_tensor({3, 4}, 41), b = random_tensor({4, 5}, 42);
  Tensor y = run1("MatMul", {a, b});
  EXPECT_EQ(y.shape(), Shape({3, 5}));
  expect_near(y, naive_matmul(a.to_double_vector(), b.to_double_vector(), 3, 5, 4));
  // 1-D A: [4] x [4, 5] -> [5].
  Tensor v = random_tensor({4}, 43);
  Tensor yv = run1("MatMul", {v, b});
  EXPECT_EQ(yv.shape(), Shape({5}));
  expect_near(yv, naive_matmul(v.to_double_vector(), b.to_double_vector(), 1, 5, 4));
  // 1-D B: [3, 4] x [4] -> [3].
  Tensor ya = run1("MatMul", {a, v});
  EXPECT_EQ(ya.shape(), Shape({3}));
  expect_near(ya, naive_matmul(a.to_double_vector(), v.to_double_vector(), 3, 1, 4));
  // 1-D x 1-D -> scalar.
  Tensor ys = run1("MatMul", {v, v});
  EXPECT_EQ(ys.shape(), Shape({}));
  expect_near(ys, naive_matmul(v.to_double_vector(), v.to_double_vector(), 1, 1, 4));
  // 1-D A against a batched B: [4] x [2, 4, 5] -> [2, 5].
  Tensor bb = random_tensor({2, 4, 5}, 44);
  Tensor yb = run1("MatMul", {v, bb});
  EXPECT_EQ(yb.shape(), Shape({2, 5}));
}

TEST(ReferenceMatMul, BatchBroadcast) {
  // [2, 1, 3, 4] x [5, 4, 2] -> [2, 5, 3, 2].
  Tensor a = random_tensor({2, 1, 3, 4}, 45), b = random_tensor({5, 4, 2}, 46);
  Tensor y = run1("MatMul", {a, b});
  EXPECT_EQ(y.shape(), Shape({2, 5, 3, 2}));
  std::vector<double> av = a.to_double_vector(), bv = b.to_double_vector(), want;
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 5; ++j) {
      std::vector<double> am(av.begin() + i * 12, av.begin() + (i + 1) * 12);
      std::vector<double> bm(bv.begin() + j * 8, bv.begin() + (j + 1) * 8);
      std::vector<double> r = naive_matmul(am, bm, 3, 2, 4);
      want.insert(want.end(), r.begin(), r.end());
    }
  expect_near(y, want);
  // Shared B (folded into one GEMM): [2, 3, 4] x [4, 5].
  Tensor a3 = random_tensor({2, 3, 4}, 47), b2 = random_tensor({4, 5}, 48);
  Tensor y3 = run1("MatMul", {a3, b2});
  EXPECT_EQ(y3.shape(), Shape({2, 3, 5}));
  expect_near(y3, naive_matmul(a3.to_double_vector(), b2.to_double_vector(), 6, 5, 4));
  // Shared A broadcast against a batched B: [3, 4] x [2, 4, 5].
  Tensor a2 = random_tensor({3, 4}, 49), b3 = random_tensor({2, 4, 5}, 50);
  Tensor y23 = run1("MatMul", {a2, b3});
  EXPECT_EQ(y23.shape(), Shape({2, 3, 5}));
  std::vector<double> w2, b3v = b3.to_double_vector();
  for (int64_t j = 0; j < 2; ++j) {
    std::vector<double> bm(b3v.begin() + j * 20, b3v.begin() + (j + 1) * 20);
    std::vector<double> r = naive_matmul(a2.to_double_vector(), bm, 3, 5, 4);
    w2.insert(w2.end(), r.begin(), r.end());
  }
  expect_near(y23, w2);
}

TEST(ReferenceMatMul, IntegersAndErrors) {
  Tensor a = Tensor::from_vector<int64_t>({2, 2}, {1, 2, 3, 4}),
         b = Tensor::from_vector<int64_t>({2, 1}, {5, 6});
  Tensor y = run1("MatMul", {a, b});
  EXPECT_EQ(y.dtype(), DType::kInt64);
  EXPECT_EQ(values_of<int64_t>(y), std::vector<int64_t>({17, 39}));
  Tensor a32 = Tensor::from_vector<int32_t>({1, 2}, {2000000000, 2000000000});
  Tensor b32 = Tensor::from_vector<int32_t>({2, 1}, {1, 1});
  // Wraps around like two's complement: 4e9 - 2^32.
  EXPECT_EQ(values_of<int32_t>(run1("MatMul", {a32, b32})), std::vector<int32_t>({-294967296}));
  EXPECT_EQ(error_code_of([&] {
              run1("MatMul", {random_tensor({2, 3}, 1), random_tensor({4, 2}, 2)});
            }),
            ErrorCode::kRuntime);
  EXPECT_EQ(error_code_of([&] {
              run1("MatMul", {random_tensor({2, 2, 3}, 1), random_tensor({3, 3, 2}, 2)});
            }),
            ErrorCode::kRuntime);
  EXPECT_EQ(error_code_of([&] { run1("MatMul", {a, random_tensor({2, 1}, 2)}); }), ErrorCode::kRuntime);
  EXPECT_EQ(error_code_of([&] {
              run_check("MatMul", {{DType::kUInt8, {}}, {DType::kUInt8, {}}});
            }),
            ErrorCode::kUnsupported);
  EXPECT_EQ(error_code_of([&] {
              run_check("MatMul", {{DType::kFloat32, Shape{}}, {DType::kFloat32, {}}});
            }),
            ErrorCode::kInvalidModel);
  EXPECT_EQ(error_code_of([&] { run1("MatMul", {f32({}, {1}), f32({1}, {1})}); }), ErrorCode::kRuntime);
}

// ---------------------------------------------------------------------------
// MaxPool and AveragePool

TEST(ReferenceMaxPool, OnnxExamples) {
  Tensor x = iota({1, 1, 5, 5}, 1.0f);
  Tensor p = run1("MaxPool", {x}, {{"kernel_shape", attr_ints({5, 5})}, {"pads", attr_ints({2, 2, 2, 2})}});
  EXPECT_EQ(p.shape(), Shape({1, 1, 5, 5}));
  expect_near(p, {13, 14, 15, 15, 15, 18, 19, 20, 20, 20, 23, 24, 25,
                  25, 25, 23, 24, 25, 25, 25, 23, 24, 25, 25, 25});
  Tensor s = run1("MaxPool", {x},
                  {{"kernel_shape", attr_ints({3, 3})},
                   {"strides", attr_ints({2, 2})},
                   {"auto_pad", attr_string("SAME_UPPER")}});
  EXPECT_EQ(s.shape(), Shape({1, 1, 3, 3}));
  expect_near(s, {7, 9, 10, 17, 19, 20, 22, 24, 25});
  Tensor x4 = iota({1, 1, 4, 4}, 1.0f);
  Tensor c =
      run1("MaxPool", {x4},
           {{"kernel_shape", attr_ints({3, 3})}, {"strides", attr_ints({2, 2})}, {"ceil_mode", attr_int(1)}});
  EXPECT_EQ(c.shape(), Shape({1, 1, 2, 2}));
  expect_near(c, {11, 12, 15, 16});
  Tensor d = run1("MaxPool", {x4}, {{"kernel_shape", attr_ints({2, 2})}, {"dilations", attr_ints({2, 2})}});
  EXPECT_EQ(d.shape(), Shape({1, 1, 2, 2}));
  expect_near(d, {11, 12, 15, 16});
}

TEST(ReferenceMaxPool, CeilModeDropsWindowStartingInPadding) {
  Tensor x = iota({1, 1, 2, 2}, 1.0f);
  Tensor y =
      run1("MaxPool", {x},
           {{"kernel_shape", attr_ints({1, 1})}, {"strides", attr_ints({2, 2})}, {"ceil_mode", attr_int(1)}});
  EXPECT_EQ(y.shape(), Shape({1, 1, 1, 1}));
  expect_near(y, {1});
}

TEST(ReferenceMaxPool, SameLowerVersusUpper1D) {
  Tensor x = f32({1, 1, 4}, {1, 5, 2, 3});
  expect_near(
      run1("MaxPool", {x}, {{"kernel_shape", attr_ints({2})}, {"auto_pad", attr_string("SAME_UPPER")}}),
      {5, 5, 3, 3});
  expect_near(
      run1("MaxPool", {x}, {{"kernel_shape", attr_ints({2})}, {"auto_pad", attr_string("SAME_LOWER")}}),
      {1, 5, 5, 3});
}

TEST(ReferenceMaxPool, IndicesRowAndColumnMajor) {
  Tensor x = iota({1, 2, 5, 5}, 1.0f);
  Attrs attrs = {{"kernel_shape", attr_ints({2, 2})}, {"strides", attr_ints({2, 2})}};
  std::vector<Tensor> r = run_reference_op("MaxPool", {x}, attrs, 2);
  ASSERT_EQ(r.size(), 2u);
  expect_near(r[0], {7, 9, 17, 19, 32, 34, 42, 44});
  EXPECT_EQ(r[1].dtype(), DType::kInt64);
  EXPECT_EQ(values_of<int64_t>(r[1]), std::vector<int64_t>({6, 8, 16, 18, 31, 33, 41, 43}));
  attrs["storage_order"] = attr_int(1);
  std::vector<Tensor> c = run_reference_op("MaxPool", {x}, attrs, 2);
  EXPECT_EQ(values_of<int64_t>(c[1]), std::vector<int64_t>({6, 16, 8, 18, 31, 41, 33, 43}));
  // 3-D: max at (0, 1, 2) of a 2x3x4 window: row-major 0*12 + 1*4 + 2 = 6,
  // column-major (first spatial dim fastest) 0 + 1*2 + 2*2*3 = 14.
  Tensor x3 = filled({1, 1, 2, 3, 4}, 0.0f);
  x3.data<float>()[6] = 5.0f;
  Attrs a3 = {{"kernel_shape", attr_ints({2, 3, 4})}};
  EXPECT_EQ(values_of<int64_t>(run_reference_op("MaxPool", {x3}, a3, 2)[1]), std::vector<int64_t>({6}));
  a3["storage_order"] = attr_int(1);
  EXPECT_EQ(values_of<int64_t>(run_reference_op("MaxPool", {x3}, a3, 2)[1]), std::vector<int64_t>({14}));
}

TEST(ReferenceMaxPool, NaNIntegersAndPaddingNeverWins) {
  Tensor x = f32({1, 1, 4}, {1, kNaN, 3, -kInf});
  expect_near(run1("MaxPool", {x}, {{"kernel_shape", attr_ints({2})}, {"strides", attr_ints({2})}}),
              {kNaN, 3});
  Tensor neg = f32({1, 1, 2}, {-kInf, -5});
  expect_near(run1("MaxPool", {neg}, {{"kernel_shape", attr_ints({2})}, {"pads", attr_ints({1, 1})}}),
              {-kInf, -5, -5});
  Tensor u8 = Tensor::from_vector<uint8_t>({1, 1, 4}, {3, 250, 7, 9});
  Tensor y8 = run1("MaxPool", {u8}, {{"kernel_shape", attr_ints({2})}});
  EXPECT_EQ(y8.dtype(), DType::kUInt8);
  EXPECT_EQ(values_of<uint8_t>(y8), std::vector<uint8_t>({250, 250, 9}));
  Tensor i8 = Tensor::from_vector<int8_t>({1, 1, 3}, {-128, -100, -128});
  EXPECT_EQ(values_of<int8_t>(
                run1("MaxPool", {i8}, {{"kernel_shape", attr_ints({2})}, {"pads", attr_ints({1, 1})}})),
            std::vector<int8_t>({-128, -100, -100, -128}));
}

TEST(ReferenceMaxPool, ThreeDAndTwoDAgainstNaive) {
  Tensor x = random_tensor({2, 3, 5, 6, 7}, 51);
  Tensor y = run1("MaxPool", {x},
                  {{"kernel_shape", attr_ints({2, 3, 2})},
                   {"strides", attr_ints({2, 1, 3})},
                   {"pads", attr_ints({1, 0, 1, 0, 1, 1})},
                   {"dilations", attr_ints({1, 2, 1})}});
  // D: (5 + 1 - 2) / 2 + 1 = 3; H: (6 + 1 - 5) + 1 = 3; W: (7 + 2 - 2) / 3 + 1 = 3.
  expect_tensor_near(
      y, naive_pool(x, true, false, {2, 3, 2}, {2, 1, 3}, {1, 2, 1}, {1, 0, 1}, {0, 1, 1}, {3, 3, 3}));
  Tensor x2 = random_tensor({1, 2, 7, 8}, 52);
  Tensor y2 = run1("MaxPool", {x2},
                   {{"kernel_shape", attr_ints({3, 3})},
                    {"strides", attr_ints({2, 2})},
                    {"pads", attr_ints({1, 1, 1, 1})},
                    {"ceil_mode", attr_int(1)}});
  // H: ceil((7 + 2 - 3) / 2) + 1 = 4; W: ceil((8 + 2 - 3) / 2) + 1 = 5.
  expect_tensor_near(y2, naive_pool(x2, true, false, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, {4, 5}));
}

TEST(ReferenceAveragePool, OnnxExamples) {
  Tensor x = iota({1, 1, 5, 5}, 1.0f);
  Attrs attrs = {{"kernel_shape", attr_ints({5, 5})}, {"pads", attr_ints({2, 2, 2, 2})}};
  expect_near(run1("AveragePool", {x}, attrs),
              {7,    7.5, 8,    8.5, 9,    9.5, 10,   10.5, 11,   11.5, 12,   12.5, 13,
               13.5, 14,  14.5, 15,  15.5, 16,  16.5, 17,   17.5, 18,   18.5, 19});
  attrs["count_include_pad"] = attr_int(1);
  expect_near(run1("AveragePool", {x}, attrs),
              {2.52, 3.6, 4.8,  4.08, 3.24, 4.56,  6.4,  8.4,  7.04, 5.52, 7.2,  10.0, 13.0,
               10.8, 8.4, 6.96, 9.6,  12.4, 10.24, 7.92, 6.12, 8.4,  10.8, 8.88, 6.84});
  Tensor x4 = iota({1, 1, 4, 4}, 1.0f);
  Tensor c =
      run1("AveragePool", {x4},
           {{"kernel_shape", attr_ints({3, 3})}, {"strides", attr_ints({2, 2})}, {"ceil_mode", attr_int(1)}});
  expect_near(c, {6, 7.5, 12, 13.5});
  // SAME_UPPER: the padding is not counted by default.
  Tensor s = run1("AveragePool", {x},
                  {{"kernel_shape", attr_ints({2, 2})}, {"auto_pad", attr_string("SAME_UPPER")}});
  EXPECT_EQ(s.shape(), Shape({1, 1, 5, 5}));
  std::vector<double> sv = s.to_double_vector();
  EXPECT_DOUBLE_EQ(sv[0], (1 + 2 + 6 + 7) / 4.0);
  EXPECT_DOUBLE_EQ(sv[4], (5 + 10) / 2.0);
  EXPECT_DOUBLE_EQ(sv[24], 25.0);
}

TEST(ReferenceAveragePool, CeilModeWindowBeyondEndPadding) {
  // in 4, k 3, s 2, pads 1/1, ceil: windows [-1, 1], [1, 3], [3, 5]; position 5 lies
  // beyond the end padding, so count_include_pad counts 2 taps in the last window.
  Tensor x = f32({1, 1, 4}, {1, 2, 3, 4});
  Attrs attrs = {{"kernel_shape", attr_ints({3})},
                 {"strides", attr_ints({2})},
                 {"pads", attr_ints({1, 1})},
                 {"ceil_mode", attr_int(1)}};
  expect_near(run1("AveragePool", {x}, attrs), {1.5, 3, 4});
  attrs["count_include_pad"] = attr_int(1);
  expect_near(run1("AveragePool", {x}, attrs), {1, 3, 2});
}

TEST(ReferenceAveragePool, AgainstNaive) {
  Tensor x = random_tensor({2, 2, 6, 7, 5}, 53);
  for (int cip = 0; cip < 2; ++cip) {
    Tensor y = run1("AveragePool", {x},
                    {{"kernel_shape", attr_ints({3, 2, 3})},
                     {"strides", attr_ints({2, 2, 1})},
                     {"pads", attr_ints({1, 0, 2, 1, 1, 0})},
                     {"count_include_pad", attr_int(cip)}});
    // D: (6 + 2 - 3) / 2 + 1 = 3; H: (7 + 1 - 2) / 2 + 1 = 4; W: (5 + 2 - 3) + 1 = 5.
    expect_tensor_near(
        y, naive_pool(x, false, cip, {3, 2, 3}, {2, 2, 1}, {1, 1, 1}, {1, 0, 2}, {1, 1, 0}, {3, 4, 5}));
  }
  Tensor x1 = random_tensor({1, 3, 9}, 54);
  Tensor y1 =
      run1("AveragePool", {to_f64(x1)}, {{"kernel_shape", attr_ints({4})}, {"strides", attr_ints({2})}});
  EXPECT_EQ(y1.dtype(), DType::kFloat64);
  expect_near(y1, naive_pool(x1, false, false, {4}, {2}, {1}, {0}, {0}, {3}).to_double_vector());
}

TEST(ReferencePool, Errors) {
  Tensor x = random_tensor({1, 1, 3, 3}, 1);
  EXPECT_EQ(error_code_of([&] { run1("MaxPool", {x}); }), ErrorCode::kInvalidModel);  // no kernel_shape
  EXPECT_EQ(error_code_of([&] {
              run1("MaxPool", {x}, {{"kernel_shape", attr_ints({2})}});
            }),
            ErrorCode::kInvalidModel);
  EXPECT_EQ(error_code_of([&] {
              run1("AveragePool", {x}, {{"kernel_shape", attr_ints({4, 4})}});
            }),
            ErrorCode::kRuntime);
  EXPECT_EQ(error_code_of([&] {
              run_check("AveragePool", {{DType::kUInt8, {}}}, {{"kernel_shape", attr_ints({2})}});
            }),
            ErrorCode::kUnsupported);
  EXPECT_EQ(error_code_of([&] {
              run_check("MaxPool", {{DType::kFloat32, Shape{1, 1, 2, 2, 2, 2}}},
                        {{"kernel_shape", attr_ints({1, 1, 1, 1})}});
            }),
            ErrorCode::kUnsupported);
  run_check("MaxPool", {{DType::kInt8, Shape{1, 1, 4, 4}}}, {{"kernel_shape", attr_ints({2, 2})}}, 2);
}

TEST(ReferenceGlobalPool, AverageAndMax) {
  Tensor x = f32({1, 2, 2, 2}, {1, 2, 3, 4, -1, -2, -3, kNaN});
  Tensor a = run1("GlobalAveragePool", {x});
  EXPECT_EQ(a.shape(), Shape({1, 2, 1, 1}));
  expect_near(a, {2.5, kNaN});
  Tensor m = run1("GlobalMaxPool", {x});
  EXPECT_EQ(m.shape(), Shape({1, 2, 1, 1}));
  expect_near(m, {4, kNaN});
  Tensor x3 = random_tensor({2, 3, 7}, 61);
  Tensor m3 = run1("GlobalMaxPool", {to_f64(x3)});
  EXPECT_EQ(m3.shape(), Shape({2, 3, 1}));
  EXPECT_EQ(m3.dtype(), DType::kFloat64);
  std::vector<double> v = x3.to_double_vector();
  for (int64_t p = 0; p < 6; ++p)
    EXPECT_EQ(m3.to_double_vector()[static_cast<size_t>(p)],
              *std::max_element(v.begin() + p * 7, v.begin() + p * 7 + 7));
  EXPECT_EQ(error_code_of([&] {
              run_check("GlobalAveragePool", {{DType::kInt32, {}}});
            }),
            ErrorCode::kUnsupported);
}

// ---------------------------------------------------------------------------
// Normalizations

TEST(ReferenceBatchNormalization, InferenceFormula) {
  Tensor x = random_tensor({2, 3, 4, 5}, 71);
  Tensor s = f32({3}, {1.0f, 1.5f, -2.0f}), b = f32({3}, {0, 1, 2}), mean = f32({3}, {0.1f, -0.2f, 0.3f}),
         var = f32({3}, {0.5f, 1.0f, 2.0f});
  const double eps = 1e-2;
  Tensor y = run1("BatchNormalization", {x, s, b, mean, var}, {{"epsilon", attr_float(1e-2f)}});
  std::vector<double> xv = x.to_double_vector(), want(xv.size());
  for (size_t i = 0; i < xv.size(); ++i) {
    size_t c = (i / 20) % 3;
    want[i] = (xv[i] - mean.to_double_vector()[c]) / std::sqrt(var.to_double_vector()[c] + eps) *
                  s.to_double_vector()[c] +
              b.to_double_vector()[c];
  }
  expect_near(y, want);
  // Parameters may be float64 with a float32 X (opset 15).
  Tensor y2 = run1("BatchNormalization", {x, to_f64(s), to_f64(b), to_f64(mean), to_f64(var)},
                   {{"epsilon", attr_float(1e-2f)}});
  EXPECT_EQ(y2.dtype(), DType::kFloat32);
  expect_near(y2, want);
  // Rank 2 input: one value per channel.
  Tensor x2 = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor r2 = run1("BatchNormalization", {x2, s, b, mean, var}, {{"epsilon", attr_float(1e-2f)}});
  EXPECT_NEAR(r2.to_double_vector()[4], (5 + 0.2) / std::sqrt(1.0 + eps) * 1.5 + 1, 1e-5);
}

TEST(ReferenceBatchNormalization, SpatialZeroAndRefusals) {
  Tensor x = random_tensor({2, 2, 3}, 72);
  Tensor s = random_tensor({2, 3}, 73), b = random_tensor({2, 3}, 74), mean = random_tensor({2, 3}, 75);
  Tensor var = filled({2, 3}, 0.25f);
  Tensor y = run1("BatchNormalization", {x, s, b, mean, var}, {{"spatial", attr_int(0)}}, 7);
  std::vector<double> xv = x.to_double_vector(), want(xv.size());
  for (size_t i = 0; i < xv.size(); ++i) {
    size_t p = i % 6;
    want[i] = (xv[i] - mean.to_double_vector()[p]) / std::sqrt(0.25 + 1e-5) * s.to_double_vector()[p] +
              b.to_double_vector()[p];
  }
  expect_near(y, want);
  // With spatial = 1 those parameters have the wrong size.
  EXPECT_EQ(error_code_of([&] {
              run1("BatchNormalization", {x, s, b, mean, var}, {}, 7);
            }),
            ErrorCode::kRuntime);

  std::vector<ValueSpec> ins(5, ValueSpec{DType::kFloat32, {}});
  EXPECT_EQ(error_code_of([&] {
              run_check("BatchNormalization", ins, {{"training_mode", attr_int(1)}});
            }),
            ErrorCode::kUnsupported);
  EXPECT_EQ(error_code_of([&] { run_check("BatchNormalization", ins, {}, 3, 14); }), ErrorCode::kUnsupported);
  EXPECT_EQ(error_code_of([&] { run_check("BatchNormalization", ins, {}, 5, 9); }), ErrorCode::kUnsupported);
  run_check("BatchNormalization", ins);
  Tensor x4 = random_tensor({1, 2, 2, 2}, 76), p = filled({2}, 1.0f);
  EXPECT_EQ(error_code_of([&] {
              run_reference_op("BatchNormalization", {x4, p, p, p, p}, {{"training_mode", attr_int(1)}}, 3);
            }),
            ErrorCode::kUnsupported);
}

std::vector<double> naive_layer_norm(const Tensor& x, int64_t axis, double eps,
                                     const std::vector<double>& scale, const std::vector<double>& bias,
                                     std::vector<double>* means = nullptr,
                                     std::vector<double>* invs = nullptr) {
  std::vector<double> v = x.to_double_vector(), y(v.size());
  int64_t inner = 1;
  for (int64_t d = axis; d < x.rank(); ++d) inner *= x.dim(d);
  for (int64_t o = 0; o < x.numel() / inner; ++o) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < inner; ++i)
      mean += v[static_cast<size_t>(o * inner + i)] / static_cast<double>(inner);
    for (int64_t i = 0; i < inner; ++i) {
      double d = v[static_cast<size_t>(o * inner + i)] - mean;
      var += d * d / static_cast<double>(inner);
    }
    for (int64_t i = 0; i < inner; ++i)
      y[static_cast<size_t>(o * inner + i)] = (v[static_cast<size_t>(o * inner + i)] - mean) /
                                                  std::sqrt(var + eps) * scale[static_cast<size_t>(i)] +
                                              bias[static_cast<size_t>(i)];
    if (means) means->push_back(mean);
    if (invs) invs->push_back(1.0 / std::sqrt(var + eps));
  }
  return y;
}

TEST(ReferenceLayerNormalization, AxesOutputsAndBroadcast) {
  Tensor x = random_tensor({2, 3, 4}, 81);
  for (int64_t axis : {-1, 1, 0, -2}) {
    int64_t a = axis < 0 ? axis + 3 : axis;
    Shape ns(x.shape().begin() + a, x.shape().end());
    Tensor s = random_tensor(ns, 82), b = random_tensor(ns, 83);
    std::vector<double> means, invs;
    std::vector<double> want =
        naive_layer_norm(x, a, 1e-3, s.to_double_vector(), b.to_double_vector(), &means, &invs);
    std::vector<Tensor> r = run_reference_op("LayerNormalization", {x, s, b},
                                             {{"axis", attr_int(axis)}, {"epsilon", attr_float(1e-3f)}}, 3);
    ASSERT_EQ(r.size(), 3u);
    expect_near(r[0], want);
    Shape stat(x.shape().begin(), x.shape().begin() + a);
    stat.resize(3, 1);
    EXPECT_EQ(r[1].shape(), stat);
    EXPECT_EQ(r[2].shape(), stat);
    EXPECT_EQ(r[1].dtype(), DType::kFloat32);
    expect_near(r[1], means);
    expect_near(r[2], invs);
  }
  // Default axis -1, no B, a Scale of shape [1] broadcast over the normalized dims.
  Tensor one = f32({1}, {2.0f});
  Tensor y = run1("LayerNormalization", {x, one});
  expect_near(y, naive_layer_norm(x, 2, 1e-5, std::vector<double>(4, 2.0), std::vector<double>(4, 0.0)));
  // Float64 with B omitted.
  Tensor s = random_tensor({4}, 84);
  std::vector<Tensor> r = run_reference_op("LayerNormalization", {to_f64(x), to_f64(s), Tensor()}, {}, 1);
  EXPECT_EQ(r[0].dtype(), DType::kFloat64);
  expect_near(r[0], naive_layer_norm(x, 2, 1e-5, s.to_double_vector(), std::vector<double>(4, 0.0)), 1e-9);
}

TEST(ReferenceLayerNormalization, Errors) {
  Tensor x = random_tensor({2, 3}, 85);
  EXPECT_EQ(error_code_of([&] {
              run1("LayerNormalization", {x, random_tensor({2}, 1)});
            }),
            ErrorCode::kRuntime);
  EXPECT_EQ(error_code_of([&] {
              run1("LayerNormalization", {x, random_tensor({3}, 1)}, {{"axis", attr_int(2)}});
            }),
            ErrorCode::kInvalidModel);
  EXPECT_EQ(error_code_of([&] {
              run_check("LayerNormalization", {{DType::kFloat32, {}}, {DType::kFloat32, {}}},
                        {{"stash_type", attr_int(11)}});
            }),
            ErrorCode::kUnsupported);
}

TEST(ReferenceInstanceNormalization, Formula) {
  Tensor x = f32({1, 2, 1, 3}, {-1, 0, 1, 2, 3, 4});
  Tensor s = f32({2}, {1.0f, 1.5f}), b = f32({2}, {0.0f, 1.0f});
  Tensor y = run1("InstanceNormalization", {x, s, b});
  const double k = 1.0 / std::sqrt(2.0 / 3.0 + 1e-5);
  expect_near(y, {-k, 0, k, -1.5 * k + 1, 1, 1.5 * k + 1});
  Tensor x2 = random_tensor({2, 3, 4, 5}, 86), s2 = random_tensor({3}, 87), b2 = random_tensor({3}, 88);
  Tensor y2 =
      run1("InstanceNormalization", {to_f64(x2), to_f64(s2), to_f64(b2)}, {{"epsilon", attr_float(0.1f)}});
  std::vector<double> want, x2v = x2.to_double_vector();
  for (int64_t p = 0; p < 6; ++p) {
    Tensor plane = Tensor::from_vector<double>(
        {1, 20}, std::vector<double>(x2v.begin() + p * 20, x2v.begin() + p * 20 + 20));
    double sc = s2.to_double_vector()[static_cast<size_t>(p % 3)],
           bi = b2.to_double_vector()[static_cast<size_t>(p % 3)];
    std::vector<double> r = naive_layer_norm(plane, 1, static_cast<double>(0.1f), std::vector<double>(20, sc),
                                             std::vector<double>(20, bi));
    want.insert(want.end(), r.begin(), r.end());
  }
  expect_near(y2, want, 1e-9);
  EXPECT_EQ(error_code_of([&] {
              run1("InstanceNormalization", {x, f32({3}, {1, 1, 1}), b});
            }),
            ErrorCode::kRuntime);
}

TEST(ReferenceLRN, Definition) {
  Tensor x = random_tensor({2, 5, 3, 2}, 91);
  for (int64_t size : {1, 2, 3, 4}) {
    const double bias = 1.5;
    Tensor y = run1("LRN", {x},
                    {{"size", attr_int(size)},
                     {"alpha", attr_float(2e-2f)},
                     {"beta", attr_float(0.6f)},
                     {"bias", attr_float(1.5f)}});
    std::vector<double> v = x.to_double_vector(), want(v.size());
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t c = 0; c < 5; ++c)
        for (int64_t i = 0; i < 6; ++i) {
          double sq = 0;
          for (int64_t j = c - (size - 1) / 2; j <= c + size / 2; ++j)  // ceil((size-1)/2) == size/2
            if (j >= 0 && j < 5)
              sq += v[static_cast<size_t>((n * 5 + j) * 6 + i)] * v[static_cast<size_t>((n * 5 + j) * 6 + i)];
          size_t at = static_cast<size_t>((n * 5 + c) * 6 + i);
          want[at] = v[at] / std::pow(bias + static_cast<double>(2e-2f) / static_cast<double>(size) * sq,
                                      static_cast<double>(0.6f));
        }
    expect_near(y, want);
  }
  EXPECT_EQ(error_code_of([&] { run1("LRN", {x}); }), ErrorCode::kInvalidModel);  // size is required
}

// ---------------------------------------------------------------------------
// Softmax, LogSoftmax, Hardmax

TEST(ReferenceSoftmax, Opset13SingleAxis) {
  Tensor x = random_tensor({2, 3, 4}, 101);
  std::vector<double> v = x.to_double_vector();
  for (int64_t axis : {-1, 0, 1, 2, -3}) {
    int64_t a = axis < 0 ? axis + 3 : axis;
    Shape dims = {2, 3, 4};
    int64_t len = dims[static_cast<size_t>(a)], inner = 1;
    for (int64_t d = a + 1; d < 3; ++d) inner *= dims[static_cast<size_t>(d)];
    std::vector<double> sm(v.size()), lsm(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      int64_t o = static_cast<int64_t>(i) / (len * inner), in = static_cast<int64_t>(i) % inner;
      double sum = 0;
      for (int64_t k = 0; k < len; ++k) sum += std::exp(v[static_cast<size_t>((o * len + k) * inner + in)]);
      sm[i] = std::exp(v[i]) / sum;
      lsm[i] = v[i] - std::log(sum);
    }
    expect_near(run1("Softmax", {x}, {{"axis", attr_int(axis)}}, 13), sm);
    expect_near(run1("LogSoftmax", {x}, {{"axis", attr_int(axis)}}, 13), lsm);
  }
  // Default axis is -1 from opset 13.
  expect_tensor_near(run1("Softmax", {x}, {}, 13), run1("Softmax", {x}, {{"axis", attr_int(2)}}, 13));
}

TEST(ReferenceSoftmax, LegacyCoercesTo2D) {
  Tensor x = random_tensor({2, 3, 4}, 102);
  std::vector<double> v = x.to_double_vector();
  // Opset 11, default axis 1: each batch entry's 12 values form one row.
  std::vector<double> want(v.size());
  for (size_t r = 0; r < 2; ++r) {
    double sum = 0;
    for (size_t i = 0; i < 12; ++i) sum += std::exp(v[r * 12 + i]);
    for (size_t i = 0; i < 12; ++i) want[r * 12 + i] = std::exp(v[r * 12 + i]) / sum;
  }
  expect_near(run1("Softmax", {x}, {}, 11), want);
  expect_near(run1("Softmax", {x}, {{"axis", attr_int(-2)}}, 11), want);
  std::vector<double> lwant(want.size());
  for (size_t i = 0; i < want.size(); ++i) lwant[i] = std::log(want[i]);
  expect_near(run1("LogSoftmax", {x}, {}, 11), lwant);
  // axis 0: the whole tensor is one row.
  double total = 0;
  for (double e : v) total += std::exp(e);
  std::vector<double> all(v.size());
  for (size_t i = 0; i < v.size(); ++i) all[i] = std::exp(v[i]) / total;
  expect_near(run1("Softmax", {x}, {{"axis", attr_int(0)}}, 1), all);
  // The last axis is the same in both semantics.
  expect_tensor_near(run1("Softmax", {x}, {{"axis", attr_int(2)}}, 11), run1("Softmax", {x}, {}, 13));
}

TEST(ReferenceSoftmax, LargeNumbersAndErrors) {
  Tensor x = f32({2, 4}, {0, 1, 2, 3, 10000, 10001, 10002, 10003});
  std::vector<double> row = {0.032058604, 0.087144315, 0.23688284, 0.6439142};
  std::vector<double> want = row;
  want.insert(want.end(), row.begin(), row.end());
  expect_near(run1("Softmax", {x}, {}, 13), want);
  std::vector<double> lrow = {-3.4401896, -2.4401896, -1.4401897, -0.44018975};
  std::vector<double> lwant = lrow;
  lwant.insert(lwant.end(), lrow.begin(), lrow.end());
  expect_near(run1("LogSoftmax", {x}, {}, 13), lwant);
  expect_near(run1("Softmax", {to_f64(x)}, {}, 13), want, 1e-7);
  EXPECT_EQ(error_code_of([&] {
              run1("Softmax", {x}, {{"axis", attr_int(2)}}, 13);
            }),
            ErrorCode::kInvalidModel);
  EXPECT_EQ(error_code_of([&] { run_check("Softmax", {{DType::kInt32, {}}}); }), ErrorCode::kUnsupported);
}

TEST(ReferenceHardmax, AxesTiesAndOpsets) {
  Tensor x = f32({2, 2, 3}, {3, 0, 3, 1, 7, 2, 0, 0, 0, 5, 5, 1});
  // Opset 13, default axis -1: first max of each row of 3.
  expect_near(run1("Hardmax", {x}, {}, 13), {1, 0, 0, 0, 1, 0, 1, 0, 0, 1, 0, 0});
  // Opset 13, axis 1: along the dim of 2.
  expect_near(run1("Hardmax", {x}, {{"axis", attr_int(1)}}, 13), {1, 0, 1, 0, 1, 0, 0, 0, 0, 1, 1, 1});
  // Opset 11, default axis 1: each batch entry's 6 values form one row.
  expect_near(run1("Hardmax", {x}, {}, 11), {0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0});
  expect_near(run1("Hardmax", {x}, {{"axis", attr_int(0)}}, 11), {0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0});
  Tensor n = f32({1, 3}, {1, kNaN, 5});
  expect_near(run1("Hardmax", {to_f64(n)}, {}, 13), {0, 1, 0});
}

}  // namespace
}  // namespace hetsched
