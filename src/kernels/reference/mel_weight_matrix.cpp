// MelWeightMatrix — reference kernel (opset 17): [dft_length / 2 + 1,
// num_mel_bins] triangular filters that map a onesided spectrum's bins to
// mel bands between lower_edge_hertz and upper_edge_hertz, as the ONNX
// reference computes them: num_mel_bins + 2 points evenly spaced on the mel
// scale (mel = 2595 log10(1 + hz / 700); the step is the span divided by
// num_mel_bins + 2), each mapped to the spectrum bin floor((dft_length + 1)
// hz / sample_rate); filter i rises from point i to point i + 1 and falls to
// point i + 2.
// Supported: output_datatype float (the default) and double. Refused: others.
#include <cmath>

#include <fmt/format.h>

#include "kernels/reference/common.h"
#include "kernels/reference/signal_common.h"

namespace hetsched::kernels {
namespace {

void check_mel(const Node& node, const Graph& graph) {
  check_input_dtypes(node, graph, {DType::kInt32, DType::kInt64}, {0, 1, 2});
  check_input_dtypes(node, graph, kFloatTypes, {3, 4});
  output_datatype(node);  // refuses another dtype at load
}

std::vector<Tensor> compute_mel(const Node& node, const std::vector<const Tensor*>& inputs) {
  int64_t n_mel = required_input(node, inputs, 0).to_int64_vector().at(0);
  int64_t dft_length = required_input(node, inputs, 1).to_int64_vector().at(0);
  int64_t sample_rate = required_input(node, inputs, 2).to_int64_vector().at(0);
  double lower_hz = required_input(node, inputs, 3).to_double_vector().at(0);
  double upper_hz = required_input(node, inputs, 4).to_double_vector().at(0);
  if (n_mel < 1 || dft_length < 1 || sample_rate < 1)
    throw_runtime(node, fmt::format("num_mel_bins {}, dft_length {} and sample_rate {} must be positive", n_mel,
                                    dft_length, sample_rate));
  if (!(lower_hz >= 0 && lower_hz < upper_hz))
    throw_runtime(node, fmt::format("need 0 <= lower_edge_hertz < upper_edge_hertz, got {} and {}", lower_hz, upper_hz));
  int64_t n_bins = dft_length / 2 + 1;
  auto mel = [](double hz) { return 2595 * std::log10(1 + hz / 700); };
  double low = mel(lower_hz), step = (mel(upper_hz) - low) / static_cast<double>(n_mel + 2);
  std::vector<int64_t> point(static_cast<size_t>(n_mel + 2));
  for (int64_t i = 0; i < n_mel + 2; ++i) {
    double hz = 700 * (std::pow(10, (static_cast<double>(i) * step + low) / 2595) - 1);
    point[static_cast<size_t>(i)] =
        static_cast<int64_t>(std::floor(static_cast<double>(dft_length + 1) * hz / static_cast<double>(sample_rate)));
  }
  if (point.back() >= n_bins)
    throw_runtime(node, fmt::format("upper_edge_hertz {} lies past the spectrum's last bin ({} Hz)", upper_hz,
                                    sample_rate / 2));
  std::vector<double> w(static_cast<size_t>(n_bins * n_mel), 0.0);
  auto at = [&](int64_t bin, int64_t i) -> double& { return w[static_cast<size_t>(bin * n_mel + i)]; };
  for (int64_t i = 0; i < n_mel; ++i) {
    int64_t left = point[static_cast<size_t>(i)], center = point[static_cast<size_t>(i + 1)],
            right = point[static_cast<size_t>(i + 2)];
    if (center == left) {
      at(center, i) = 1;
    } else {
      for (int64_t j = left; j <= center; ++j)
        at(j, i) = static_cast<double>(j - left) / static_cast<double>(center - left);
    }
    for (int64_t j = center; j < right; ++j)
      at(j, i) = static_cast<double>(right - j) / static_cast<double>(right - center);
  }
  return {float_tensor_of(node, output_datatype(node), {n_bins, n_mel}, w)};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("MelWeightMatrix", check_mel, compute_mel);

}  // namespace hetsched::kernels
