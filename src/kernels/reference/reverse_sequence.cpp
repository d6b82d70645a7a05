// ReverseSequence — reference kernel: along time_axis (default 0), the
// first sequence_lens[b] elements of each batch_axis (default 1) row b
// reversed, the rest copied.
// Supported: every dtype the engine has.
// Refused: time_axis and batch_axis other than 0 and 1 (the spec's only forms).
#include <cstring>

#include <fmt/format.h>

#include "kernels/reference/common.h"

namespace hetsched::kernels {
namespace {

void check_reverse_sequence(const Node& node, const Graph&) {
  const int64_t time = node.attr_int("time_axis", 0), batch = node.attr_int("batch_axis", 1);
  if (!((time == 0 && batch == 1) || (time == 1 && batch == 0)))
    throw_invalid(node, fmt::format("time_axis {} and batch_axis {}: expected 0 and 1, or 1 and 0", time, batch));
}

std::vector<Tensor> compute_reverse_sequence(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = required_input(node, inputs, 0);
  const std::vector<int64_t> lens = required_input(node, inputs, 1).to_int64_vector();
  const int64_t time_axis = node.attr_int("time_axis", 0), batch_axis = node.attr_int("batch_axis", 1);
  if (x.rank() < 2) throw_runtime(node, "input must have rank >= 2");
  const int64_t n_time = x.dim(time_axis), n_batch = x.dim(batch_axis);
  if (static_cast<int64_t>(lens.size()) != n_batch)
    throw_runtime(node, fmt::format("{} sequence lengths for a batch of {}", lens.size(), n_batch));
  const std::vector<int64_t> strides = strides_of(x.shape());
  const size_t inner_bytes = static_cast<size_t>(strides[1]) * dtype_size(x.dtype());  // the dims after both axes
  Tensor y(x.dtype(), x.shape());
  const auto* src = static_cast<const std::byte*>(x.raw());
  auto* dst = static_cast<std::byte*>(y.raw());
  for (int64_t b = 0; b < n_batch; ++b) {
    const int64_t len = lens[static_cast<size_t>(b)];
    if (len < 0 || len > n_time) throw_runtime(node, fmt::format("sequence length {}: expected 0..{}", len, n_time));
    for (int64_t t = 0; t < n_time; ++t) {
      const int64_t from = t < len ? len - 1 - t : t;
      auto offset = [&](int64_t time) {
        return static_cast<size_t>(time * strides[time_axis] + b * strides[batch_axis]) * dtype_size(x.dtype());
      };
      std::memcpy(dst + offset(t), src + offset(from), inner_bytes);
    }
  }
  return {y};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("ReverseSequence", check_reverse_sequence, compute_reverse_sequence);

}  // namespace hetsched::kernels
