// SqueezeNet 1.0 (Iandola et al. 2016, torchvision layout): Fire modules
// (1x1 squeeze -> 1x1 and 3x3 expands, concatenated), convs with bias and no
// BatchNormalization, as published; classifier = 1x1 conv + ReLU + global
// average pool.
#include <string>

#include "zoo/model_builder.h"

namespace hetsched::zoo {
namespace {

std::string fire(ModelBuilder& b, const std::string& name, const std::string& x, int64_t squeeze, int64_t expand1,
                 int64_t expand3) {
  auto s = b.scope(name);
  const std::string sq = b.relu(b.conv(x, squeeze, 1, 1, 0, 1, 1, true));
  const std::string e1 = b.relu(b.conv(sq, expand1, 1, 1, 0, 1, 1, true));
  const std::string e3 = b.relu(b.conv(sq, expand3, 3, 1, 1, 1, 1, true));
  return b.concat({e1, e3}, 1);
}

onnx::ModelProto build(const ZooArgs& args) {
  ModelBuilder b("squeezenet1_0", args.seed());
  std::string x = b.input("input", onnx::TensorProto::FLOAT, {1, 3, 224, 224});
  const PoolSpec pool = pool2d(3, 2, 0, /*ceil_mode=*/true);
  {
    auto s = b.scope("features.0");
    x = b.max_pool(b.relu(b.conv(x, 96, 7, 2, 0, 1, 1, true)), pool);
  }
  x = fire(b, "features.3", x, 16, 64, 64);
  x = fire(b, "features.4", x, 16, 64, 64);
  x = fire(b, "features.5", x, 32, 128, 128);
  x = b.max_pool(x, pool);
  x = fire(b, "features.7", x, 32, 128, 128);
  x = fire(b, "features.8", x, 48, 192, 192);
  x = fire(b, "features.9", x, 48, 192, 192);
  x = fire(b, "features.10", x, 64, 256, 256);
  x = b.max_pool(x, pool);
  x = fire(b, "features.12", x, 64, 256, 256);
  {
    auto s = b.scope("classifier");
    x = b.flatten(b.global_avg_pool(b.relu(b.conv(x, 1000, 1, 1, 0, 1, 1, true))));
  }
  b.output(x, "output");
  return b.finish("SqueezeNet 1.0 (torchvision layout, no BatchNormalization as published), 224x224, 1.2M parameters");
}

}  // namespace

HETSCHED_ZOO_MODEL({"squeezenet1_0", "SqueezeNet 1.0 (torchvision; convs with bias, no BN), 224x224 -> 1000 logits",
                    {}, &build});

}  // namespace hetsched::zoo
