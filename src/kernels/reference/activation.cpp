// Reference kernels for the elementwise activation functions:
//   Relu, LeakyRelu, Elu, Selu, Celu, ThresholdedRelu, Sigmoid, HardSigmoid,
//   HardSwish, Tanh, Gelu, Softplus, Softsign, Mish.
// (PRelu broadcasts its slope and lives with the other broadcasting ops in
// binary.cpp.) Float32 values are computed in double and rounded once.
#include <cmath>
#include <algorithm>
#include <cstdint>
#include <numbers>
#include <string>
#include <type_traits>

#include <fmt/format.h>

#include "kernels/reference/common.h"

namespace hetsched::kernels {
namespace {

// y[i] = f(double(x[i])) rounded to x's float dtype.
template <typename F>
Tensor map_float(const Node& node, const Tensor& x, F&& f) {
  return dispatch_float(node, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    Tensor out(dtype_of<T>(), x.shape());
    const T* px = x.data<T>();
    T* po = out.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) po[i] = static_cast<T>(f(static_cast<double>(px[i])));
    return out;
  });
}

void check_float(const Node& node, const Graph& graph) { check_input_dtypes(node, graph, kFloatTypes); }

double softplus(double x) {
  // log(1 + e^x) without overflow for large x.
  return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}

// Relu also takes signed integers (opset 14).
std::vector<Tensor> relu_compute(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = required_input(node, inputs, 0);
  if (x.dtype() == DType::kUInt8) throw_unsupported(node, "Relu of uint8 is not supported");
  return {dispatch_numeric(node, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    Tensor out(dtype_of<T>(), x.shape());
    const T* px = x.data<T>();
    T* po = out.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) po[i] = px[i] < T(0) ? T(0) : px[i];  // NaN stays NaN
    return out;
  })};
}

void check_relu(const Node& node, const Graph& graph) {
  check_input_dtypes(node, graph,
                     {DType::kFloat32, DType::kFloat64, DType::kInt8, DType::kInt16, DType::kInt32, DType::kInt64});
}

std::vector<Tensor> leaky_relu_compute(const Node& node, const std::vector<const Tensor*>& inputs) {
  const double alpha = node.attr_float("alpha", 0.01f);
  return {map_float(node, required_input(node, inputs, 0), [&](double x) { return x < 0 ? alpha * x : x; })};
}

std::vector<Tensor> elu_compute(const Node& node, const std::vector<const Tensor*>& inputs) {
  const double alpha = node.attr_float("alpha", 1.0f);
  return {map_float(node, required_input(node, inputs, 0),
                    [&](double x) { return x < 0 ? alpha * std::expm1(x) : x; })};
}

std::vector<Tensor> selu_compute(const Node& node, const std::vector<const Tensor*>& inputs) {
  const double alpha = node.attr_float("alpha", 1.67326319217681884765625f);
  const double gamma = node.attr_float("gamma", 1.05070102214813232421875f);
  return {map_float(node, required_input(node, inputs, 0),
                    [&](double x) { return x > 0 ? gamma * x : gamma * alpha * std::expm1(x); })};
}

std::vector<Tensor> celu_compute(const Node& node, const std::vector<const Tensor*>& inputs) {
  const double alpha = node.attr_float("alpha", 1.0f);
  if (alpha == 0) throw_invalid(node, "alpha must not be 0");
  return {map_float(node, required_input(node, inputs, 0), [&](double x) {
    return std::max(0.0, x) + std::min(0.0, alpha * std::expm1(x / alpha));
  })};
}

void check_celu(const Node& node, const Graph& graph) {
  check_float(node, graph);
  if (node.attr_float("alpha", 1.0f) == 0) throw_invalid(node, "alpha must not be 0");
}

std::vector<Tensor> thresholded_relu_compute(const Node& node, const std::vector<const Tensor*>& inputs) {
  const double alpha = node.attr_float("alpha", 1.0f);
  return {map_float(node, required_input(node, inputs, 0), [&](double x) { return x > alpha ? x : 0.0; })};
}

std::vector<Tensor> sigmoid_compute(const Node& node, const std::vector<const Tensor*>& inputs) {
  return {map_float(node, required_input(node, inputs, 0), [](double x) {
    // Both branches avoid exp overflow.
    if (x >= 0) return 1.0 / (1.0 + std::exp(-x));
    double e = std::exp(x);
    return e / (1.0 + e);
  })};
}

std::vector<Tensor> hard_sigmoid_compute(const Node& node, const std::vector<const Tensor*>& inputs) {
  const double alpha = node.attr_float("alpha", 0.2f);
  const double beta = node.attr_float("beta", 0.5f);
  return {map_float(node, required_input(node, inputs, 0),
                    [&](double x) { return std::max(0.0, std::min(1.0, alpha * x + beta)); })};
}

std::vector<Tensor> hard_swish_compute(const Node& node, const std::vector<const Tensor*>& inputs) {
  return {map_float(node, required_input(node, inputs, 0),
                    [](double x) { return x * std::max(0.0, std::min(1.0, x / 6.0 + 0.5)); })};
}

std::vector<Tensor> tanh_compute(const Node& node, const std::vector<const Tensor*>& inputs) {
  return {map_float(node, required_input(node, inputs, 0), [](double x) { return std::tanh(x); })};
}

// Gelu (opset 20, also produced by fusions): approximate = "none" | "tanh".
std::vector<Tensor> gelu_compute(const Node& node, const std::vector<const Tensor*>& inputs) {
  const std::string approximate = node.attr_string("approximate", "none");
  const Tensor& x = required_input(node, inputs, 0);
  if (approximate == "tanh") {
    const double k = std::sqrt(2.0 / std::numbers::pi);
    return {map_float(node, x, [&](double v) { return 0.5 * v * (1.0 + std::tanh(k * (v + 0.044715 * v * v * v))); })};
  }
  if (approximate != "none") throw_unsupported(node, "approximate='" + approximate + "' is not supported");
  return {map_float(node, x, [](double v) { return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))); })};
}

void check_gelu(const Node& node, const Graph& graph) {
  check_float(node, graph);
  const std::string approximate = node.attr_string("approximate", "none");
  if (approximate != "none" && approximate != "tanh")
    throw_unsupported(node, "approximate='" + approximate + "' is not supported (none, tanh)");
}

std::vector<Tensor> softplus_compute(const Node& node, const std::vector<const Tensor*>& inputs) {
  return {map_float(node, required_input(node, inputs, 0), softplus)};
}

std::vector<Tensor> softsign_compute(const Node& node, const std::vector<const Tensor*>& inputs) {
  return {map_float(node, required_input(node, inputs, 0), [](double x) { return x / (1.0 + std::fabs(x)); })};
}

std::vector<Tensor> mish_compute(const Node& node, const std::vector<const Tensor*>& inputs) {
  return {map_float(node, required_input(node, inputs, 0), [](double x) { return x * std::tanh(softplus(x)); })};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("Relu", check_relu, relu_compute);
HETSCHED_REFERENCE_KERNEL("LeakyRelu", check_float, leaky_relu_compute);
HETSCHED_REFERENCE_KERNEL("Elu", check_float, elu_compute);
HETSCHED_REFERENCE_KERNEL("Selu", check_float, selu_compute);
HETSCHED_REFERENCE_KERNEL("Celu", check_celu, celu_compute);
HETSCHED_REFERENCE_KERNEL("ThresholdedRelu", check_float, thresholded_relu_compute);
HETSCHED_REFERENCE_KERNEL("Sigmoid", check_float, sigmoid_compute);
HETSCHED_REFERENCE_KERNEL("HardSigmoid", check_float, hard_sigmoid_compute);
HETSCHED_REFERENCE_KERNEL("HardSwish", check_float, hard_swish_compute);
HETSCHED_REFERENCE_KERNEL("Tanh", check_float, tanh_compute);
HETSCHED_REFERENCE_KERNEL("Gelu", check_gelu, gelu_compute);
HETSCHED_REFERENCE_KERNEL("Softplus", check_float, softplus_compute);
HETSCHED_REFERENCE_KERNEL("Softsign", check_float, softsign_compute);
HETSCHED_REFERENCE_KERNEL("Mish", check_float, mish_compute);

}  // namespace hetsched::kernels
