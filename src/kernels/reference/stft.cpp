// STFT — reference kernel (opset 17): the short-time Fourier transform of a
// [batch, length, 1 or 2] signal: frames of `frame_length` samples (the
// window's length when no frame_length is given) every `frame_step`
// samples, each multiplied by the window (ones when none is given) and
// transformed (signal_common.h); `onesided` (the default) keeps the first
// frame_length / 2 + 1 bins. Output [batch, frames, bins, 2] with frames =
// (length - frame_length) / frame_step + 1.
// Supported: float32, float64. Refused: other dtypes.
#include <fmt/format.h>

#include "kernels/reference/common.h"
#include "kernels/reference/signal_common.h"

namespace hetsched::kernels {
namespace {

void check_stft(const Node& node, const Graph& graph) {
  check_input_dtypes(node, graph, kFloatTypes, {0, 2});
  check_input_dtypes(node, graph, {DType::kInt32, DType::kInt64}, {1, 3});
}

std::vector<Tensor> compute_stft(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& signal = required_input(node, inputs, 0);
  if (signal.rank() != 3 || (signal.dim(2) != 1 && signal.dim(2) != 2))
    throw_runtime(node, fmt::format("signal must be [batch, length, 1 or 2], got {}", shape_to_string(signal.shape())));
  int64_t step = required_input(node, inputs, 1).to_int64_vector().at(0);
  auto present = [&](size_t i) { return i < inputs.size() && inputs[i] && inputs[i]->numel() > 0; };
  std::vector<double> window;
  if (present(2)) window = inputs[2]->to_double_vector();
  int64_t frame_length = present(3) ? inputs[3]->to_int64_vector().at(0) : static_cast<int64_t>(window.size());
  if (!present(2) && !present(3)) throw_runtime(node, "needs a window or a frame_length");
  if (present(2) && static_cast<int64_t>(window.size()) != frame_length)
    throw_runtime(node, fmt::format("window of {} for a frame_length of {}", window.size(), frame_length));
  if (window.empty()) window.assign(static_cast<size_t>(std::max<int64_t>(frame_length, 0)), 1.0);
  int64_t batch = signal.dim(0), length = signal.dim(1), components = signal.dim(2);
  if (step < 1 || frame_length < 1 || frame_length > length)
    throw_runtime(node, fmt::format("frame_step {} and frame_length {} do not fit a signal of {}", step, frame_length,
                                    length));
  bool onesided = node.attr_int("onesided", 1) != 0;
  int64_t frames = (length - frame_length) / step + 1;
  int64_t bins = onesided ? frame_length / 2 + 1 : frame_length;

  std::vector<double> in = signal.to_double_vector();
  std::vector<double> out(static_cast<size_t>(batch * frames * bins * 2));
  std::vector<double> re(static_cast<size_t>(frame_length)), im(static_cast<size_t>(frame_length));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t f = 0; f < frames; ++f) {
      for (int64_t t = 0; t < frame_length; ++t) {
        const double* x = in.data() + ((b * length) + f * step + t) * components;
        re[static_cast<size_t>(t)] = x[0] * window[static_cast<size_t>(t)];
        im[static_cast<size_t>(t)] = components == 2 ? x[1] * window[static_cast<size_t>(t)] : 0.0;
      }
      dft(re.data(), im.data(), 1, frame_length, frame_length, false, bins,
          out.data() + (b * frames + f) * bins * 2, 2);
    }
  return {float_tensor_of(node, signal.dtype(), {batch, frames, bins, 2}, out)};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("STFT", check_stft, compute_stft);

}  // namespace hetsched::kernels
