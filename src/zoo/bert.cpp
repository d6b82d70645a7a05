// BERT encoder (Devlin et al. 2019; base configuration by default): token
// embedding (Gather) + position embedding (Gather of constant positions),
// LayerNormalization, then `layers` x [Q/K/V MatMul+Add, Reshape/Transpose
// to heads, MatMul, scale (Div by sqrt(head dim)), Softmax, MatMul, output
// projection, residual Add, LayerNormalization, FFN MatMul+Add, GELU written
// with Erf (x * 0.5 * (1 + erf(x / sqrt 2))), MatMul+Add, residual Add,
// LayerNormalization], as ONNX exports of BERT spell it. No token-type
// embedding and no attention mask (one unpadded sequence). Input "input_ids"
// int64 [1, seq]; output "output" float32 [1, seq, hidden] (last hidden state).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "hetsched/error.h"
#include "zoo/model_builder.h"

namespace hetsched::zoo {
namespace {

std::string gelu(ModelBuilder& b, const std::string& x) {
  const std::string scaled = b.div(x, b.scalar(1.41421353816986083984375f));  // float(sqrt(2))
  const std::string e = b.erf(scaled);
  const std::string one_plus = b.add(e, b.scalar(1.0f));
  const std::string prod = b.mul(x, one_plus);
  return b.mul(prod, b.scalar(0.5f));
}

std::string encoder_layer(ModelBuilder& b, const std::string& x, int64_t seq, int64_t hidden, int64_t heads) {
  const int64_t d = hidden / heads;
  const std::string q = b.linear(x, hidden);
  const std::string k = b.linear(x, hidden);
  const std::string v = b.linear(x, hidden);
  const std::string qh = b.transpose(b.reshape(q, {1, seq, heads, d}), {0, 2, 1, 3});  // [1, h, s, d]
  const std::string kt = b.transpose(b.reshape(k, {1, seq, heads, d}), {0, 2, 3, 1});  // [1, h, d, s]
  const std::string vh = b.transpose(b.reshape(v, {1, seq, heads, d}), {0, 2, 1, 3});  // [1, h, s, d]
  const std::string scores = b.matmul(qh, kt);
  const std::string scaled = b.div(scores, b.scalar(static_cast<float>(std::sqrt(static_cast<double>(d)))));
  const std::string probs = b.softmax(scaled, -1);
  const std::string ctx = b.reshape(b.transpose(b.matmul(probs, vh), {0, 2, 1, 3}), {1, seq, hidden});
  const std::string attn = b.linear(ctx, hidden);
  const std::string h1 = b.layer_norm(b.add(attn, x), 1e-12f);
  const std::string ff = gelu(b, b.linear(h1, 4 * hidden));
  const std::string ff2 = b.linear(ff, hidden);
  return b.layer_norm(b.add(ff2, h1), 1e-12f);
}

onnx::ModelProto build(const ZooArgs& args) {
  const int64_t layers = args.get("layers");
  const int64_t seq = args.get("seq");
  const int64_t hidden = args.get("hidden");
  const int64_t heads = args.get("heads");
  const int64_t vocab = args.get("vocab");
  if (hidden % heads != 0)
    throw Error(ErrorCode::kUsage, "zoo:bert: parameter 'hidden' (" + std::to_string(hidden) +
                                       ") must be a multiple of 'heads' (" + std::to_string(heads) + ")");
  ModelBuilder b("bert", args.seed());
  const std::string ids = b.input("input_ids", onnx::TensorProto::INT64, {1, seq});
  std::string x;
  {
    auto s = b.scope("embeddings");
    const int64_t max_positions = std::max<int64_t>(512, seq);
    const std::string words = b.init_uniform("word_embeddings.weight", {vocab, hidden}, 0.1);
    const std::string positions = b.init_uniform("position_embeddings.weight", {max_positions, hidden}, 0.1);
    std::vector<int64_t> position_ids(static_cast<size_t>(seq));
    for (int64_t i = 0; i < seq; ++i) position_ids[static_cast<size_t>(i)] = i;
    const std::string pos_ids = b.init_int64s("position_ids", {1, seq}, position_ids);
    const std::string we = b.gather(words, ids);
    const std::string pe = b.gather(positions, pos_ids);
    x = b.layer_norm(b.add(we, pe), 1e-12f);
  }
  for (int64_t l = 0; l < layers; ++l) {
    auto s = b.scope("layer." + std::to_string(l));
    x = encoder_layer(b, x, seq, hidden, heads);
  }
  b.output(x, "output");
  return b.finish("BERT encoder: " + std::to_string(layers) + " layers, seq " + std::to_string(seq) + ", hidden " +
                  std::to_string(hidden) + ", " + std::to_string(heads) + " heads, vocab " + std::to_string(vocab) +
                  " (BERT-base has 30522; the default 1000 keeps the model small)");
}

}  // namespace

HETSCHED_ZOO_MODEL({"bert",
                    "BERT encoder (base sizes; vocab 1000 by default, not 30522), input_ids [1, seq] -> [1, seq, hidden]",
                    {{"layers", 12, 1, 48},
                     {"seq", 128, 1, 4096},
                     {"hidden", 768, 1, 4096},
                     {"heads", 12, 1, 256},
                     {"vocab", 1000, 10, 250000}},
                    &build});

}  // namespace hetsched::zoo
