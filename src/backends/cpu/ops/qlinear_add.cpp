// QLinearAdd (the residual Add of quantized models, as the load-time fusion
// makes it: graph/quantized_fusion.cpp) on the device's threads, in the
// layout A arrives in when it is dense (no reorder between int8 Convs). oneDNN's
// binary primitive has no zero points for its sources, and would not round
// where the reference kernel does. So: host code with the reference
// kernel's float32 steps, the same bytes (CMakeLists.txt compiles this file
// with -ffp-contract=off, so no step is fused into an FMA), chunks shared by
// the device's OpenMP team, vector code for AVX-512 or AVX2 where the CPU has
// them (target_clones: the library's baseline is SSE2).
// Supported: A, B and C uint8 or int8 of one shape, one scale and zero point
// each, constant.
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>

#include "backends/cpu/lowering.h"

namespace hetsched::cpu {
namespace {

struct Parameters {
  float sa, sb, sc;
  int32_t za, zb, zc;
};

// The reference kernel's quant::saturate_round for v = sum / C_scale, in
// float32 steps the compiler vectorises: v clamped to +-1024 saturates the
// same as v itself (the zero point is within +-255); adding and subtracting
// 1.5 x 2^23 rounds it to the nearest integer, ties to even, exactly for
// |v| <= 2^22.
template <typename C>
inline C saturate_round(float v, int32_t zero_point) {
  constexpr float kRound = 12582912.0f;  // 1.5 x 2^23
  v = std::min(std::max(v, -1024.0f), 1024.0f);
  int32_t r = static_cast<int32_t>((v + kRound) - kRound) + zero_point;
  return static_cast<C>(std::min<int32_t>(std::max<int32_t>(r, std::numeric_limits<C>::lowest()),
                                          std::numeric_limits<C>::max()));
}

template <typename A, typename B, typename C>
__attribute__((target_clones("avx512f", "avx2", "default"))) void add_values(const A* __restrict a,
                                                                            const B* __restrict b, C* __restrict c,
                                                                            int64_t n, Parameters p) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    float fa = static_cast<float>(static_cast<int32_t>(a[i]) - p.za) * p.sa;
    float fb = static_cast<float>(static_cast<int32_t>(b[i]) - p.zb) * p.sb;
    c[i] = saturate_round<C>((fa + fb) / p.sc, p.zc);
  }
}

template <typename A, typename B, typename C>
void run(const void* a, const void* b, void* c, int64_t n, const Parameters& p) {
  constexpr int64_t kMinChunk = 16384;  // values: below that, a thread's wake-up costs more than it saves
  const int64_t n_chunks = std::max<int64_t>(1, std::min<int64_t>(omp_get_max_threads(), n / kMinChunk));
  const int64_t chunk = (n + n_chunks - 1) / n_chunks;
#pragma omp parallel for schedule(static) if (n_chunks > 1)
  for (int64_t k = 0; k < n_chunks; ++k) {
    int64_t begin = k * chunk, end = std::min(n, begin + chunk);
    if (begin < end)
      add_values(static_cast<const A*>(a) + begin, static_cast<const B*>(b) + begin, static_cast<C*>(c) + begin,
                 end - begin, p);
  }
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
  p.za = static_cast<int32_t>(l.constant(2).to_int64_vector()[0]);
  p.zb = static_cast<int32_t>(l.constant(5).to_int64_vector()[0]);
  p.zc = static_cast<int32_t>(l.constant(7).to_int64_vector()[0]);
  RunFn fn = a.dtype == DType::kUInt8 ? pick<uint8_t>(b.dtype, c.dtype) : pick<int8_t>(b.dtype, c.dtype);

  // Element by element, any dense layout serves: A's, when it has one
  // (the int8 Convs' channels-last), B read and C written in it too.
  const int64_t n = shape_numel(c.shape);
  dnnl::memory::desc a_desc = l.input_desc(0);
  std::optional<dnnl::memory::desc> layout;
  if (a_desc.data.format_kind == dnnl_blocked && a_desc.data.format_desc.blocking.inner_nblks == 0 &&
      static_cast<int64_t>(a_desc.get_size()) == n) {
    const dnnl_dims_t& strides = a_desc.data.format_desc.blocking.strides;
    layout = dnnl::memory::desc(a_desc.dims(), dnnl::memory::data_type::u8,
                                dnnl::memory::dims(strides, strides + a_desc.data.ndims));
  }
  auto in_layout = [&](DType dtype) -> std::optional<dnnl::memory::desc> {
    if (!layout) return std::nullopt;
    dnnl::memory::desc d = *layout;
    d.data.data_type = static_cast<dnnl_data_type_t>(*dnnl_type(dtype));
    return d;
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
                      "scales or zero points computed at run time or of more than one value; A, B and C of different "
                      "shapes");

}  // namespace hetsched::cpu
