// GoogLeNet (Szegedy et al. 2015) as torchvision builds it: every conv is a
// "BasicConv2d" (Conv without bias + BatchNormalization(eps 1e-3) + ReLU),
// the inception "5x5" branch uses a 3x3 conv (torchvision's known deviation,
// kept for fidelity with the widely used model), the auxiliary heads are
// omitted (inference) and transform_input is off.
#include <string>

#include "zoo/model_builder.h"

namespace hetsched::zoo {
namespace {

std::string basic_conv(ModelBuilder& b, const std::string& x, int64_t out, int64_t k, int64_t stride = 1,
                       int64_t pad = 0) {
  return b.relu(b.batch_norm(b.conv(x, out, k, stride, pad), 1e-3f));
}

std::string inception(ModelBuilder& b, const std::string& name, const std::string& x, int64_t ch1x1, int64_t ch3x3red,
                      int64_t ch3x3, int64_t ch5x5red, int64_t ch5x5, int64_t pool_proj) {
  auto s = b.scope(name);
  const std::string b1 = basic_conv(b, x, ch1x1, 1);
  const std::string b2 = basic_conv(b, basic_conv(b, x, ch3x3red, 1), ch3x3, 3, 1, 1);
  const std::string b3 = basic_conv(b, basic_conv(b, x, ch5x5red, 1), ch5x5, 3, 1, 1);
  const std::string b4 = basic_conv(b, b.max_pool(x, pool2d(3, 1, 1, /*ceil_mode=*/true)), pool_proj, 1);
  return b.concat({b1, b2, b3, b4}, 1);
}

onnx::ModelProto build(const ZooArgs& args) {
  ModelBuilder b("googlenet", args.seed());
  std::string x = b.input("input", onnx::TensorProto::FLOAT, {1, 3, 224, 224});
  {
    auto s = b.scope("stem");
    x = b.max_pool(basic_conv(b, x, 64, 7, 2, 3), pool2d(3, 2, 0, true));
    x = basic_conv(b, x, 64, 1);
    x = b.max_pool(basic_conv(b, x, 192, 3, 1, 1), pool2d(3, 2, 0, true));
  }
  x = inception(b, "inception3a", x, 64, 96, 128, 16, 32, 32);
  x = inception(b, "inception3b", x, 128, 128, 192, 32, 96, 64);
  x = b.max_pool(x, pool2d(3, 2, 0, true));
  x = inception(b, "inception4a", x, 192, 96, 208, 16, 48, 64);
  x = inception(b, "inception4b", x, 160, 112, 224, 24, 64, 64);
  x = inception(b, "inception4c", x, 128, 128, 256, 24, 64, 64);
  x = inception(b, "inception4d", x, 112, 144, 288, 32, 64, 64);
  x = inception(b, "inception4e", x, 256, 160, 320, 32, 128, 128);
  x = b.max_pool(x, pool2d(2, 2, 0, true));
  x = inception(b, "inception5a", x, 256, 160, 320, 32, 128, 128);
  x = inception(b, "inception5b", x, 384, 192, 384, 48, 128, 128);
  {
    auto s = b.scope("head");
    x = b.gemm(b.flatten(b.global_avg_pool(x)), 1000);
  }
  b.output(x, "output");
  return b.finish("GoogLeNet (torchvision layout: Conv+BN+ReLU, 3x3 in the '5x5' branch, no aux heads), 224x224, 6.6M "
                  "parameters");
}

}  // namespace

HETSCHED_ZOO_MODEL({"googlenet", "GoogLeNet / Inception v1 (torchvision, with BN, no aux heads), 224x224 -> 1000 logits",
                    {}, &build});

}  // namespace hetsched::zoo
