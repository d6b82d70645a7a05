// Reshape (shape as an input from opset 5, as an attribute before; 0 copies
// the input dim unless allowzero=1, one -1 is inferred) and Flatten (axis,
// negative from opset 11). Both copy the data (outputs never alias inputs).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kernels/reference/common.h"

namespace hetsched::kernels {
namespace {

void check_reshape(const Node& node, const Graph& graph) {
  if (node.input(1) == kNoValue && !node.has_attr("shape"))
    throw_invalid(node, "needs a 'shape' input");
  check_input_dtypes(node, graph, {DType::kInt64}, {1});
}

std::vector<Tensor> compute_reshape(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = required_input(node, inputs, 0);
  std::vector<int64_t> spec =
      inputs.size() > 1 && inputs[1] ? inputs[1]->to_int64_vector() : node.attr_ints("shape");
  bool allow_zero = node.attr_int("allowzero", 0) != 0;
  Shape shape(spec.size());
  int64_t infer_at = -1, known = 1;
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t d = spec[i];
    if (d == -1) {
      if (infer_at >= 0) throw_runtime(node, "shape has more than one -1");
      infer_at = static_cast<int64_t>(i);
      continue;
    }
    if (d == 0 && !allow_zero) {
      if (static_cast<int64_t>(i) >= x.rank())
        throw_runtime(node, fmt::format("shape value 0 at index {} copies a dim the input {} lacks", i,
                                        shape_to_string(x.shape())));
      d = x.dim(static_cast<int64_t>(i));
    }
    if (d < 0) throw_runtime(node, fmt::format("shape value {} is invalid", d));
    shape[i] = d;
    if (__builtin_mul_overflow(known, d, &known))  // the spec is data: any int64
      throw_runtime(node, fmt::format("shape [{}] is too large", fmt::join(spec, ",")));
  }
  if (infer_at >= 0 && known == 0 && !allow_zero && x.numel() == 0) {
    // An empty tensor and a 0 beside the -1 (a detector's boxes when it
    // found none: [0, 364] to [0, -1]): the -1 is the input's non-zero dims
    // over the shape's, as ONNX Runtime infers it.
    int64_t in_nonzero = 1, out_nonzero = 1;
    for (int64_t d : x.shape()) in_nonzero *= d == 0 ? 1 : d;
    for (size_t i = 0; i < shape.size(); ++i)
      if (static_cast<int64_t>(i) != infer_at && shape[i] != 0) out_nonzero *= shape[i];
    if (in_nonzero % out_nonzero == 0) {
      shape[static_cast<size_t>(infer_at)] = in_nonzero / out_nonzero;
      infer_at = -1;
    }
  }
  if (infer_at >= 0) {
    if (allow_zero && known == 0) throw_runtime(node, "shape has both -1 and 0 with allowzero=1");
    if (known == 0 || x.numel() % known != 0)
      throw_runtime(node, fmt::format("cannot infer the -1 dim reshaping {} to [{}]", shape_to_string(x.shape()),
                                      fmt::join(spec, ",")));
    shape[static_cast<size_t>(infer_at)] = x.numel() / known;
  }
  if (shape_numel(shape) != x.numel())
    throw_runtime(node, fmt::format("cannot reshape {} to [{}]", shape_to_string(x.shape()), fmt::join(spec, ",")));
  return {x.clone().reshaped(shape)};
}

std::vector<Tensor> compute_flatten(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = required_input(node, inputs, 0);
  int64_t rank = x.rank();
  int64_t axis = node.attr_int("axis", 1);
  if (axis < -rank || axis > rank)
    throw_runtime(node, fmt::format("axis {} is out of range for rank {}", axis, rank));
  if (axis < 0) axis += rank;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
  for (int64_t d = axis; d < rank; ++d) inner *= x.dim(d);
  return {x.clone().reshaped({outer, inner})};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("Reshape", check_reshape, compute_reshape);
HETSCHED_REFERENCE_KERNEL("Flatten", nullptr, compute_flatten);

}  // namespace hetsched::kernels
