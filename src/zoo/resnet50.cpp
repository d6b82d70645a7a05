// ResNet-50 (He et al. 2016, torchvision "v1.5" layout): Bottlenecks
// [3, 4, 6, 3] with the stride on the 3x3 conv and a 1x1 conv + BN shortcut
// on the first block of every stage.
#include <cmath>
#include <string>

#include "zoo/model_builder.h"

namespace hetsched::zoo {
namespace {

std::string bottleneck(ModelBuilder& b, const std::string& x, int64_t planes, int64_t stride, double residual_gain) {
  const int64_t out = planes * 4;
  std::string y = b.relu(b.batch_norm(b.conv(x, planes, 1)));
  y = b.relu(b.batch_norm(b.conv(y, planes, 3, stride, 1)));
  y = b.batch_norm(b.conv(y, out, 1, 1, 0, 1, 1, false, residual_gain));
  std::string identity = x;
  if (stride != 1 || b.channels(x) != out) identity = b.batch_norm(b.conv(x, out, 1, stride, 0));
  return b.relu(b.add(y, identity));
}

onnx::ModelProto build(const ZooArgs& args) {
  ModelBuilder b("resnet50", args.seed());
  std::string x = b.input("input", onnx::TensorProto::FLOAT, {1, 3, 224, 224});
  {
    auto s = b.scope("stem");
    x = b.max_pool(b.relu(b.batch_norm(b.conv(x, 64, 7, 2, 3))), pool2d(3, 2, 1));
  }
  const int64_t blocks[4] = {3, 4, 6, 3};
  // Each residual branch's last conv is scaled by 1/sqrt(#blocks) so that
  // the sum of branches keeps activations O(1) (Fixup-style).
  const double residual_gain = 1.0 / std::sqrt(16.0);
  for (int stage = 0; stage < 4; ++stage) {
    for (int64_t i = 0; i < blocks[stage]; ++i) {
      auto s = b.scope("layer" + std::to_string(stage + 1) + "." + std::to_string(i));
      x = bottleneck(b, x, int64_t{64} << stage, (stage > 0 && i == 0) ? 2 : 1, residual_gain);
    }
  }
  {
    auto s = b.scope("head");
    x = b.gemm(b.flatten(b.global_avg_pool(x)), 1000);
  }
  b.output(x, "output");
  return b.finish("ResNet-50 (torchvision layout), 224x224, 25.6M parameters");
}

}  // namespace

HETSCHED_ZOO_MODEL({"resnet50", "ResNet-50 (torchvision v1.5), 224x224 -> 1000 logits", {}, &build});

}  // namespace hetsched::zoo
