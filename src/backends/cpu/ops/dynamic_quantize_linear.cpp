// DynamicQuantizeLinear on the device's threads. oneDNN has no primitive for
// it (a reduction to x's range, then a quantization by a scale and zero
// point computed from that range), and its reorder would multiply by 1/scale
// where the spec divides by scale, landing a value at a tie one step apart.
// So: host code with the reference kernel's element arithmetic
// (kernels/reference/dynamic_quantize.h), the same bytes; the range taken in
// chunks by the device's OpenMP team and merged, then the chunks quantized;
// vector code for AVX-512 or AVX2 where the CPU has them (host_code.h). Transformers quantized dynamically run it on
// every MatMul's input: 48 times in BERT-base, where the reference kernel
// (one thread, SSE2, a fresh output tensor copied over) took 40% of the int8
// run on two cores.
// Supported: float32 x. A NaN in x is an error naming the element, as the
// reference kernel's.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "backends/cpu/host_code.h"
#include "backends/cpu/lowering.h"
#include "kernels/reference/dynamic_quantize.h"

namespace hetsched::cpu {
namespace {

namespace dq = kernels::dynamic_quant;

HETSCHED_VECTOR_CLONES dq::Range range_of(const float* in, int64_t n) { return dq::range(in, n); }

HETSCHED_VECTOR_CLONES void quantize_values(const float* in, int64_t n, float scale, uint8_t zero_point, uint8_t* out) {
  dq::quantize(in, n, scale, zero_point, out);
}

// Computes the node's outputs (any of them may be absent: nullptr).
void run(const Node& node, const float* x, int64_t n, uint8_t* y, float* y_scale, uint8_t* y_zero_point) {
  const Chunks chunks(n);
  std::vector<dq::Range> parts(static_cast<size_t>(chunks.count));
  chunks.for_each([&](int64_t k, int64_t begin, int64_t end) { parts[k] = range_of(x + begin, end - begin); });
  dq::Range range;
  for (const dq::Range& part : parts) {
    range.lo = std::min(range.lo, part.lo);
    range.hi = std::max(range.hi, part.hi);
    range.n_nan += part.n_nan;
  }
  if (range.n_nan > 0)
    for (int64_t j = 0; j < n; ++j)
      if (std::isnan(x[j]))
        throw Error(ErrorCode::kRuntime, fmt::format("{}: x holds NaN at element {}", node.label(), j));
  const float scale = dq::scale_of(range);
  const uint8_t zero_point = scale > 0.0f ? dq::zero_point_of(range, scale) : 0;
  if (y_scale) *y_scale = scale;
  if (y_zero_point) *y_zero_point = zero_point;
  if (!y) return;
  if (scale == 0.0f) {
    std::memset(y, 0, static_cast<size_t>(n));
    return;
  }
  chunks.for_each([&](int64_t, int64_t begin, int64_t end) {
    quantize_values(x + begin, end - begin, scale, zero_point, y + begin);
  });
}

bool lower_dynamic_quantize_linear(Lowering& l) {
  const Graph& g = l.graph();
  const Node& node = l.node();
  if (!l.has_input(0) || l.input_value(0).dtype != DType::kFloat32 || node.outputs.size() != 3) return false;
  const DType want[3] = {DType::kUInt8, DType::kFloat32, DType::kUInt8};
  for (size_t o = 0; o < 3; ++o)
    if (node.outputs[o] != kNoValue && g.values[node.outputs[o]].dtype != want[o]) return false;

  // Everything is decided: emit.
  const int64_t n = shape_numel(l.input_value(0).shape);
  std::vector<BufferId> outputs;
  for (ValueId v : node.outputs) outputs.push_back(v == kNoValue ? kNoBuffer : l.output(v));
  l.emit_host(
      [&node, n](const std::vector<void*>& p) {
        run(node, static_cast<const float*>(p[0]), n, static_cast<uint8_t*>(p[1]), static_cast<float*>(p[2]),
            static_cast<uint8_t*>(p[3]));
      },
      {l.input(0)}, outputs);
  return true;
}

}  // namespace

HETSCHED_CPU_LOWERING("DynamicQuantizeLinear", lower_dynamic_quantize_linear,
                      "host code on the device's threads (AVX-512 or AVX2), the reference kernel's arithmetic",
                      "x not float32");

}  // namespace hetsched::cpu
