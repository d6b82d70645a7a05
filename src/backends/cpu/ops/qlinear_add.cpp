// QLinearAdd (the residual Add of quantized models, as the load-time fusion
// makes it: graph/quantized_fusion.cpp) on the device's threads, in the
// layout A arrives in when it is dense (no reorder between int8 Convs). oneDNN's
// binary primitive has no zero points for its sources, and would not round
// where the reference kernel does. So: host code with the reference
// kernel's float32 steps, the same bytes (CMakeLists.txt compiles this file
// with -ffp-contract=off, so no step is fused into an FMA), chunks shared by
// the device's OpenMP team, vector code for AVX-512 or AVX2 where the CPU has
// them (host_code.h).
// Supported: A, B and C uint8 or int8 of one shape, one scale and zero point
// each, constant, the scales' magnitudes within 1e-30..1e30.
#include <cmath>
#include <cstdint>
#include <optional>

#include "backends/cpu/host_code.h"
#include "backends/cpu/lowering.h"
#include "kernels/reference/quantize_common.h"

namespace hetsched::cpu {
namespace {

struct Parameters {
  float sa, sb, sc;
  int32_t za, zb, zc;
};

// The reference kernel's steps; quant::saturate_round_float rounds as its
// quant::saturate_round does.
template <typename A, typename B, typename C>
HETSCHED_VECTOR_CLONES void add_values(const A* __restrict a, const B* __restrict b, C* __restrict c, int64_t n,
                                       Parameters p) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    float fa = static_cast<float>(static_cast<int32_t>(a[i]) - p.za) * p.sa;
    float fb = static_cast<float>(static_cast<int32_t>(b[i]) - p.zb) * p.sb;
    c[i] = kernels::quant::saturate_round_float<C>((fa + fb) / p.sc, p.zc);
  }
}

template <typename A, typename B, typename C>
void run(const void* a, const void* b, void* c, int64_t n, const Parameters& p) {
  Chunks(n).for_each([&](int64_t, int64_t begin, int64_t end) {
    add_values(static_cast<const A*>(a) + begin, static_cast<const B*>(b) + begin, static_cast<C*>(c) + begin,
               end - begin, p);
  });
}

using RunFn = void (*)(const void*, const void*, void*, int64_t, const Parameters&);

template <typename A, typename B>
RunFn pick(DType c) {
  return c == DType::kUInt8 ? &run<A, B, uint8_t> : &run<A, B, int8_t>;
}

template <typename A>
RunFn pick(DType b, DType c) {
  return b == DType::kUInt8 ? pick<A, uint8_t>(c) : pick<A, int8_t>(c);
}

bool lower_qlinear_add(Lowering& l) {
  const Graph& g = l.graph();
  const Node& node = l.node();
  if (node.inputs.size() != 8 || node.outputs.size() != 1 || node.outputs[0] == kNoValue) return false;
  for (size_t i : {1, 2, 4, 5, 6, 7})
    if (!l.input_is_constant(i) || l.constant(i).numel() != 1) return false;
  const Value &a = l.input_value(0), &b = l.input_value(3), &c = g.values[node.outputs[0]];
  auto is_8bit = [](DType d) { return d == DType::kUInt8 || d == DType::kInt8; };
  if (!is_8bit(a.dtype) || !is_8bit(b.dtype) || !is_8bit(c.dtype) || a.shape != c.shape || b.shape != c.shape)
    return false;
  if (l.constant(1).dtype() != DType::kFloat32 || l.constant(4).dtype() != DType::kFloat32 ||
      l.constant(6).dtype() != DType::kFloat32 || l.constant(7).dtype() != c.dtype)
    return false;
  Parameters p;
  p.sa = l.constant(1).data<float>()[0];
  p.sb = l.constant(4).data<float>()[0];
  p.sc = l.constant(6).data<float>()[0];
  // Every step finite (no inf - inf, no 0 / 0, which the reference kernel
  // rounds to the zero point and this code would not): scales of real models.
  for (float scale : {p.sa, p.sb, p.sc})
    if (!(std::fabs(scale) >= 1e-30f && std::fabs(scale) <= 1e30f)) return false;
  p.za = static_cast<int32_t>(l.constant(2).to_int64_vector()[0]);
  p.zb = static_cast<int32_t>(l.constant(5).to_int64_vector()[0]);
  p.zc = static_cast<int32_t>(l.constant(7).to_int64_vector()[0]);
  RunFn fn = a.dtype == DType::kUInt8 ? pick<uint8_t>(b.dtype, c.dtype) : pick<int8_t>(b.dtype, c.dtype);

  // Element by element, any dense layout serves: A's, when it has one
  // (the int8 Convs' channels-last), B read and C written in it too.
  const int64_t n = shape_numel(c.shape);
  std::optional<dnnl::memory::dims> strides = dense_strides(l.input_desc(0));
  auto in_layout = [&](DType dtype) -> std::optional<dnnl::memory::desc> {
    if (!strides) return std::nullopt;
    return dnnl::memory::desc(dnnl::memory::dims(c.shape.begin(), c.shape.end()), *dnnl_type(dtype), *strides);
  };

  // Everything is decided: emit.
  BufferId a_buffer = l.input(0, in_layout(a.dtype)), b_buffer = l.input(3, in_layout(b.dtype));
  BufferId c_buffer = l.output(node.outputs[0], in_layout(c.dtype));
  l.emit_host([fn, n, p](const std::vector<void*>& ptr) { fn(ptr[0], ptr[1], ptr[2], n, p); }, {a_buffer, b_buffer},
              {c_buffer});
  return true;
}

}  // namespace

HETSCHED_CPU_LOWERING("QLinearAdd", lower_qlinear_add,
                      "host code on the device's threads (AVX-512 or AVX2), the reference kernel's arithmetic",
                      "scales or zero points computed at run time or of more than one value; a scale of 0 or a "
                      "magnitude outside 1e-30..1e30; A, B and C of different shapes");

}  // namespace hetsched::cpu
