// Constant (value, value_float(s), value_int(s); sparse and string values are
// refused) and ConstantOfShape (1-element `value` tensor, float32 0 by
// default; the output takes its dtype).
#include <cstring>

#include <fmt/format.h>

#include "kernels/reference/common.h"

namespace hetsched::kernels {
namespace {

void check_constant(const Node& node, const Graph& graph) {
  for (const char* key : {"sparse_value", "value_string", "value_strings"})
    if (node.has_attr(key)) throw_unsupported(node, fmt::format("attribute '{}' is not supported", key));
  int given = 0;
  for (const char* key : {"value", "value_float", "value_floats", "value_int", "value_ints"})
    given += node.has_attr(key) ? 1 : 0;
  if (given != 1) throw_invalid(node, "needs exactly one value attribute");
  if (node.has_attr("value")) {
    const Tensor* t = node.attr_tensor("value");
    if (!t || !t->defined()) throw_unsupported(node, "attribute 'value' holds a tensor of an unsupported dtype");
  }
}

std::vector<Tensor> compute_constant(const Node& node, const std::vector<const Tensor*>& inputs) {
  if (node.has_attr("value")) {
    const Tensor* t = node.attr_tensor("value");
    if (!t || !t->defined()) throw_runtime(node, "attribute 'value' holds no tensor");
    return {t->clone()};
  }
  if (node.has_attr("value_float")) return {Tensor::scalar<float>(node.attr_float("value_float", 0.0f))};
  if (node.has_attr("value_int")) return {Tensor::scalar<int64_t>(node.attr_int("value_int", 0))};
  if (node.has_attr("value_floats")) {
    std::vector<float> v = node.attr_floats("value_floats");
    return {Tensor::from_vector<float>({static_cast<int64_t>(v.size())}, v)};
  }
  if (node.has_attr("value_ints")) {
    std::vector<int64_t> v = node.attr_ints("value_ints");
    return {Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v)};
  }
  throw_runtime(node, "has no supported value attribute");
}

void check_constant_of_shape(const Node& node, const Graph& graph) {
  if (node.input(0) == kNoValue) throw_invalid(node, "input 'input' is missing");
  check_input_dtypes(node, graph, {DType::kInt64}, {0});
  if (node.has_attr("value")) {
    const Tensor* t = node.attr_tensor("value");
    if (!t || !t->defined()) throw_unsupported(node, "attribute 'value' holds a tensor of an unsupported dtype");
    if (t->numel() != 1) throw_invalid(node, fmt::format("attribute 'value' has {} elements, not 1", t->numel()));
  }
}

std::vector<Tensor> compute_constant_of_shape(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& shape_t = required_input(node, inputs, 0);
  if (shape_t.rank() > 1) throw_runtime(node, "the shape input must be 1-D");
  Shape shape = shape_t.to_int64_vector();
  for (int64_t d : shape)
    if (d < 0) throw_runtime(node, fmt::format("shape value {} is negative", d));
  const Tensor* value = node.attr_tensor("value");
  if (!value) return {Tensor(DType::kFloat32, shape)};  // zero-initialised
  if (value->numel() != 1) throw_runtime(node, "attribute 'value' must hold one element");
  Tensor out(value->dtype(), shape);
  size_t es = dtype_size(value->dtype());
  auto* dst = static_cast<std::byte*>(out.raw());
  for (int64_t i = 0; i < out.numel(); ++i) std::memcpy(dst + static_cast<size_t>(i) * es, value->raw(), es);
  return {out};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("Constant", check_constant, compute_constant);
HETSCHED_REFERENCE_KERNEL("ConstantOfShape", check_constant_of_shape, compute_constant_of_shape);

}  // namespace hetsched::kernels
