// ResNet-18 (He et al. 2016, torchvision layout): BasicBlocks [2, 2, 2, 2],
// downsampling by the first 3x3 conv of a stage and a 1x1 conv + BN shortcut.
#include <cmath>
#include <string>

#include "zoo/model_builder.h"

namespace hetsched::zoo {
namespace {

std::string basic_block(ModelBuilder& b, const std::string& x, int64_t planes, int64_t stride, double residual_gain) {
  std::string y = b.relu(b.batch_norm(b.conv(x, planes, 3, stride, 1)));
  y = b.batch_norm(b.conv(y, planes, 3, 1, 1, 1, 1, false, residual_gain));
  std::string identity = x;
  if (stride != 1 || b.channels(x) != planes) identity = b.batch_norm(b.conv(x, planes, 1, stride, 0));
  return b.relu(b.add(y, identity));
}

onnx::ModelProto build(const ZooArgs& args) {
  ModelBuilder b("resnet18", args.seed());
  std::string x = b.input("input", onnx::TensorProto::FLOAT, {1, 3, 224, 224});
  {
    auto s = b.scope("stem");
    x = b.max_pool(b.relu(b.batch_norm(b.conv(x, 64, 7, 2, 3))), pool2d(3, 2, 1));
  }
  const int64_t blocks[4] = {2, 2, 2, 2};
  // Each residual branch's last conv is scaled by 1/sqrt(#blocks) so that
  // the sum of branches keeps activations O(1) (Fixup-style).
  const double residual_gain = 1.0 / std::sqrt(8.0);
  for (int stage = 0; stage < 4; ++stage) {
    for (int64_t i = 0; i < blocks[stage]; ++i) {
      auto s = b.scope("layer" + std::to_string(stage + 1) + "." + std::to_string(i));
      x = basic_block(b, x, int64_t{64} << stage, (stage > 0 && i == 0) ? 2 : 1, residual_gain);
    }
  }
  {
    auto s = b.scope("head");
    x = b.gemm(b.flatten(b.global_avg_pool(x)), 1000);
  }
  b.output(x, "output");
  return b.finish("ResNet-18 (torchvision layout), 224x224, 11.7M parameters");
}

}  // namespace

HETSCHED_ZOO_MODEL({"resnet18", "ResNet-18 (torchvision), 224x224 -> 1000 logits", {}, &build});

}  // namespace hetsched::zoo
