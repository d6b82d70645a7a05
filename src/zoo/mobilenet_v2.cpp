// MobileNetV2 (Sandler et al. 2018, torchvision layout, width 1.0):
// inverted residual blocks (1x1 expand + ReLU6, 3x3 depthwise + ReLU6, 1x1
// linear projection), each conv followed by BatchNormalization; ReLU6 is
// Clip(0, 6).
#include <cmath>
#include <string>

#include "zoo/model_builder.h"

namespace hetsched::zoo {
namespace {

std::string inverted_residual(ModelBuilder& b, const std::string& x, int64_t out, int64_t stride, int64_t expand,
                              double project_gain) {
  const int64_t in = b.channels(x);
  const int64_t hidden = in * expand;
  std::string y = x;
  if (expand != 1) y = b.relu6(b.batch_norm(b.conv(y, hidden, 1)));
  y = b.relu6(b.batch_norm(b.conv(y, hidden, 3, stride, 1, /*groups=*/hidden)));
  y = b.batch_norm(b.conv(y, out, 1, 1, 0, 1, 1, false, project_gain));
  return (stride == 1 && in == out) ? b.add(x, y) : y;
}

onnx::ModelProto build(const ZooArgs& args) {
  ModelBuilder b("mobilenet_v2", args.seed());
  std::string x = b.input("input", onnx::TensorProto::FLOAT, {1, 3, 224, 224});
  {
    auto s = b.scope("features.0");
    x = b.relu6(b.batch_norm(b.conv(x, 32, 3, 2, 1)));
  }
  struct Setting {
    int64_t t, c, n, s;
  };
  const Setting settings[] = {{1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 3, 2}, {6, 64, 4, 2},
                              {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  // The projection has no ReLU after it: gain 1/sqrt(2) keeps its output's
  // second moment equal to its input's; residual blocks get a further
  // 1/sqrt(2) so that the adds do not compound.
  int index = 1;
  for (const auto& st : settings) {
    for (int64_t i = 0; i < st.n; ++i) {
      auto s = b.scope("features." + std::to_string(index++));
      const bool residual = i > 0;
      x = inverted_residual(b, x, st.c, i == 0 ? st.s : 1, st.t, residual ? 0.5 : std::sqrt(0.5));
    }
  }
  {
    auto s = b.scope("features.18");
    x = b.relu6(b.batch_norm(b.conv(x, 1280, 1)));
  }
  {
    auto s = b.scope("classifier");
    x = b.gemm(b.flatten(b.global_avg_pool(x)), 1000);
  }
  b.output(x, "output");
  return b.finish("MobileNetV2 (torchvision layout, width 1.0), 224x224, 3.5M parameters");
}

}  // namespace

HETSCHED_ZOO_MODEL({"mobilenet_v2", "MobileNetV2 (torchvision, width 1.0), 224x224 -> 1000 logits", {}, &build});

}  // namespace hetsched::zoo
