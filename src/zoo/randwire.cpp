// RandWire-WS, small regime (Xie et al. 2019, "Exploring Randomly Wired
// Neural Networks for Image Recognition", Table 1): conv1 3x3/2 (C/2) + BN,
// conv2 ReLU-3x3/2 (C) + BN, then three randomly wired stages of N nodes with
// C, 2C, 4C channels (each halving the resolution: 28, 14, 7), and a
// classifier ReLU-1x1 conv (1280)-BN-ReLU, global average pool, fc.
//
// Each stage's graph is a Watts-Strogatz graph WS(N, k=4, p=0.75) drawn from
// the seed (the networkx algorithm), made a DAG by orienting every edge from
// the lower to the higher node index. A node aggregates its inputs by a
// weighted sum with positive weights (the sigmoid of a learnt scalar; stored
// here already sigmoid-ed, as Mul by a constant, + Add), then applies
// ReLU -> 3x3 separable conv (depthwise 3x3, pointwise 1x1) -> BN. Nodes
// without inputs read the stage input with stride 2; the stage output is the
// average of the nodes without outputs.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "zoo/model_builder.h"

namespace hetsched::zoo {
namespace {

// He-uniform on both halves of the separable conv: the x2 in second moment
// makes up for the aggregation weights (sigmoids, ~0.5), which keeps the
// activations O(1) through the stages.
constexpr double kDepthwiseGain = 1.0;

// Watts-Strogatz small-world graph, as networkx.watts_strogatz_graph builds it.
std::vector<std::set<int>> watts_strogatz(int n, int k, double p, Rng& rng) {
  std::vector<std::set<int>> adj(static_cast<size_t>(n));
  auto add = [&](int a, int b) {
    adj[static_cast<size_t>(a)].insert(b);
    adj[static_cast<size_t>(b)].insert(a);
  };
  for (int j = 1; j <= k / 2; ++j)
    for (int u = 0; u < n; ++u) add(u, (u + j) % n);
  for (int j = 1; j <= k / 2; ++j) {
    for (int u = 0; u < n; ++u) {
      const int v = (u + j) % n;
      if (rng.uniform01() >= p) continue;
      auto& nu = adj[static_cast<size_t>(u)];
      if (static_cast<int>(nu.size()) >= n - 1) continue;  // u is joined to every node already
      int w = static_cast<int>(rng.below(static_cast<uint64_t>(n)));
      while (w == u || nu.count(w)) w = static_cast<int>(rng.below(static_cast<uint64_t>(n)));
      nu.erase(v);
      adj[static_cast<size_t>(v)].erase(u);
      add(u, w);
    }
  }
  return adj;
}

std::string separable(ModelBuilder& b, const std::string& x, int64_t out, int64_t stride) {
  const int64_t in = b.channels(x);
  const std::string dw = b.conv(x, in, 3, stride, 1, /*groups=*/in, 1, false, kDepthwiseGain);
  return b.conv(dw, out, 1);
}

std::string stage(ModelBuilder& b, const std::string& name, const std::string& input, int64_t channels, int nodes,
                  uint64_t seed, Rng& weights) {
  auto s = b.scope(name);
  Rng graph_rng(mix_seed(seed, hash_name("randwire/" + name + "/graph")));
  const auto adj = watts_strogatz(nodes, 4, 0.75, graph_rng);
  std::vector<std::string> out(static_cast<size_t>(nodes));
  std::vector<std::string> sinks;
  for (int v = 0; v < nodes; ++v) {
    auto ns = b.scope("node" + std::to_string(v));
    std::vector<int> preds, succs;
    for (int u : adj[static_cast<size_t>(v)]) (u < v ? preds : succs).push_back(u);
    std::string x;
    int64_t stride = 1;
    if (preds.empty()) {
      x = input;
      stride = 2;
    } else {
      for (int u : preds) {
        // sigmoid(w) for a learnt w near 0: drawn directly in (0.4, 0.6).
        const float weight = static_cast<float>(0.5 + static_cast<double>(weights.symmetric(0.1)));
        const std::string term = b.mul(out[static_cast<size_t>(u)], b.scalar(weight));
        x = x.empty() ? term : b.add(x, term);
      }
    }
    const std::string y = separable(b, b.relu(x), channels, stride);
    out[static_cast<size_t>(v)] = b.batch_norm(y);
    if (succs.empty()) sinks.push_back(out[static_cast<size_t>(v)]);
  }
  std::string sum = sinks[0];
  for (size_t i = 1; i < sinks.size(); ++i) sum = b.add(sum, sinks[i]);
  if (sinks.size() > 1) sum = b.mul(sum, b.scalar(1.0f / static_cast<float>(sinks.size())));
  return sum;
}

onnx::ModelProto build(const ZooArgs& args) {
  const int nodes = static_cast<int>(args.get("nodes"));
  const int64_t c = args.get("channels");
  ModelBuilder b("randwire", args.seed());
  Rng weights(mix_seed(args.seed(), hash_name("randwire/aggregation")));
  std::string x = b.input("input", onnx::TensorProto::FLOAT, {1, 3, 224, 224});
  {
    auto s = b.scope("conv1");
    x = b.batch_norm(b.conv(x, c / 2, 3, 2, 1));  // 112x112
  }
  {
    auto s = b.scope("conv2");
    x = b.batch_norm(b.conv(b.relu(x), c, 3, 2, 1));  // 56x56
  }
  x = stage(b, "conv3", x, c, nodes, args.seed(), weights);      // 28x28
  x = stage(b, "conv4", x, 2 * c, nodes, args.seed(), weights);  // 14x14
  x = stage(b, "conv5", x, 4 * c, nodes, args.seed(), weights);  // 7x7
  {
    auto s = b.scope("classifier");
    x = b.relu(b.batch_norm(b.conv(b.relu(x), 1280, 1)));
    x = b.gemm(b.flatten(b.global_avg_pool(x)), 1000);
  }
  b.output(x, "output");
  return b.finish("RandWire-WS small regime (WS k=4 p=0.75, " + std::to_string(nodes) + " nodes/stage, C=" +
                  std::to_string(c) + "), seeded graphs, 224x224");
}

}  // namespace

HETSCHED_ZOO_MODEL({"randwire",
                    "RandWire-WS small regime (Watts-Strogatz k=4 p=0.75, graph drawn from seed), 224x224 -> 1000 logits",
                    {{"nodes", 32, 5, 1000}, {"channels", 78, 2, 2048}},
                    &build});

}  // namespace hetsched::zoo
