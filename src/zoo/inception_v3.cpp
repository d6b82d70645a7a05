// Inception v3 (Szegedy et al. 2016) as torchvision builds it, without the
// auxiliary classifier and with transform_input off: 299x299 input, every
// conv a BasicConv2d (Conv without bias + BatchNormalization(eps 1e-3) + ReLU),
// factorised 1x7/7x1 and 1x3/3x1 convolutions, average-pool branches with
// count_include_pad.
#include <string>

#include "zoo/model_builder.h"

namespace hetsched::zoo {
namespace {

std::string basic_conv(ModelBuilder& b, const std::string& x, int64_t out, int64_t kh, int64_t kw, int64_t stride = 1,
                       int64_t pad_h = 0, int64_t pad_w = 0) {
  ConvSpec spec;
  spec.out_channels = out;
  spec.kernel_h = kh;
  spec.kernel_w = kw;
  spec.stride_h = spec.stride_w = stride;
  spec.pad_top = spec.pad_bottom = pad_h;
  spec.pad_left = spec.pad_right = pad_w;
  return b.relu(b.batch_norm(b.conv(x, spec), 1e-3f));
}

std::string avg_pool_3x3(ModelBuilder& b, const std::string& x) {
  return b.avg_pool(x, pool2d(3, 1, 1, false, /*count_include_pad=*/true));
}

std::string inception_a(ModelBuilder& b, const std::string& name, const std::string& x, int64_t pool_features) {
  auto s = b.scope(name);
  const std::string b1 = basic_conv(b, x, 64, 1, 1);
  const std::string b5 = basic_conv(b, basic_conv(b, x, 48, 1, 1), 64, 5, 5, 1, 2, 2);
  std::string b3 = basic_conv(b, x, 64, 1, 1);
  b3 = basic_conv(b, b3, 96, 3, 3, 1, 1, 1);
  b3 = basic_conv(b, b3, 96, 3, 3, 1, 1, 1);
  const std::string bp = basic_conv(b, avg_pool_3x3(b, x), pool_features, 1, 1);
  return b.concat({b1, b5, b3, bp}, 1);
}

std::string inception_b(ModelBuilder& b, const std::string& name, const std::string& x) {
  auto s = b.scope(name);
  const std::string b3 = basic_conv(b, x, 384, 3, 3, 2);
  std::string bd = basic_conv(b, x, 64, 1, 1);
  bd = basic_conv(b, bd, 96, 3, 3, 1, 1, 1);
  bd = basic_conv(b, bd, 96, 3, 3, 2);
  const std::string bp = b.max_pool(x, pool2d(3, 2));
  return b.concat({b3, bd, bp}, 1);
}

std::string inception_c(ModelBuilder& b, const std::string& name, const std::string& x, int64_t c7) {
  auto s = b.scope(name);
  const std::string b1 = basic_conv(b, x, 192, 1, 1);
  std::string b7 = basic_conv(b, x, c7, 1, 1);
  b7 = basic_conv(b, b7, c7, 1, 7, 1, 0, 3);
  b7 = basic_conv(b, b7, 192, 7, 1, 1, 3, 0);
  std::string bd = basic_conv(b, x, c7, 1, 1);
  bd = basic_conv(b, bd, c7, 7, 1, 1, 3, 0);
  bd = basic_conv(b, bd, c7, 1, 7, 1, 0, 3);
  bd = basic_conv(b, bd, c7, 7, 1, 1, 3, 0);
  bd = basic_conv(b, bd, 192, 1, 7, 1, 0, 3);
  const std::string bp = basic_conv(b, avg_pool_3x3(b, x), 192, 1, 1);
  return b.concat({b1, b7, bd, bp}, 1);
}

std::string inception_d(ModelBuilder& b, const std::string& name, const std::string& x) {
  auto s = b.scope(name);
  const std::string b3 = basic_conv(b, basic_conv(b, x, 192, 1, 1), 320, 3, 3, 2);
  std::string b7 = basic_conv(b, x, 192, 1, 1);
  b7 = basic_conv(b, b7, 192, 1, 7, 1, 0, 3);
  b7 = basic_conv(b, b7, 192, 7, 1, 1, 3, 0);
  b7 = basic_conv(b, b7, 192, 3, 3, 2);
  const std::string bp = b.max_pool(x, pool2d(3, 2));
  return b.concat({b3, b7, bp}, 1);
}

std::string inception_e(ModelBuilder& b, const std::string& name, const std::string& x) {
  auto s = b.scope(name);
  const std::string b1 = basic_conv(b, x, 320, 1, 1);
  const std::string b3 = basic_conv(b, x, 384, 1, 1);
  const std::string b3a = basic_conv(b, b3, 384, 1, 3, 1, 0, 1);
  const std::string b3b = basic_conv(b, b3, 384, 3, 1, 1, 1, 0);
  const std::string b3cat = b.concat({b3a, b3b}, 1);
  std::string bd = basic_conv(b, x, 448, 1, 1);
  bd = basic_conv(b, bd, 384, 3, 3, 1, 1, 1);
  const std::string bda = basic_conv(b, bd, 384, 1, 3, 1, 0, 1);
  const std::string bdb = basic_conv(b, bd, 384, 3, 1, 1, 1, 0);
  const std::string bdcat = b.concat({bda, bdb}, 1);
  const std::string bp = basic_conv(b, avg_pool_3x3(b, x), 192, 1, 1);
  return b.concat({b1, b3cat, bdcat, bp}, 1);
}

onnx::ModelProto build(const ZooArgs& args) {
  ModelBuilder b("inception_v3", args.seed());
  std::string x = b.input("input", onnx::TensorProto::FLOAT, {1, 3, 299, 299});
  {
    auto s = b.scope("stem");
    x = basic_conv(b, x, 32, 3, 3, 2);           // Conv2d_1a_3x3 -> 149
    x = basic_conv(b, x, 32, 3, 3);              // Conv2d_2a_3x3 -> 147
    x = basic_conv(b, x, 64, 3, 3, 1, 1, 1);     // Conv2d_2b_3x3 -> 147
    x = b.max_pool(x, pool2d(3, 2));             // -> 73
    x = basic_conv(b, x, 80, 1, 1);              // Conv2d_3b_1x1
    x = basic_conv(b, x, 192, 3, 3);             // Conv2d_4a_3x3 -> 71
    x = b.max_pool(x, pool2d(3, 2));             // -> 35
  }
  x = inception_a(b, "Mixed_5b", x, 32);
  x = inception_a(b, "Mixed_5c", x, 64);
  x = inception_a(b, "Mixed_5d", x, 64);
  x = inception_b(b, "Mixed_6a", x);  // -> 17x17x768
  x = inception_c(b, "Mixed_6b", x, 128);
  x = inception_c(b, "Mixed_6c", x, 160);
  x = inception_c(b, "Mixed_6d", x, 160);
  x = inception_c(b, "Mixed_6e", x, 192);
  x = inception_d(b, "Mixed_7a", x);  // -> 8x8x1280
  x = inception_e(b, "Mixed_7b", x);
  x = inception_e(b, "Mixed_7c", x);  // -> 8x8x2048
  {
    auto s = b.scope("head");
    x = b.gemm(b.flatten(b.global_avg_pool(x)), 1000);
  }
  b.output(x, "output");
  return b.finish("Inception v3 (torchvision layout, no aux classifier), 299x299, 23.8M parameters");
}

}  // namespace

HETSCHED_ZOO_MODEL({"inception_v3", "Inception v3 (torchvision, no aux head), 299x299 -> 1000 logits", {}, &build});

}  // namespace hetsched::zoo
