// Dropout, inference only: the output is a copy of the input and the optional
// mask is all true (bool from opset 10; before 10 the mask has the input's
// dtype and holds ones). Training mode (the `training_mode` input, opset 12+)
// is refused at load unless it is a constant false, or a constant true with a
// constant ratio of exactly 0 (then dropout is the identity too): random
// dropout has no place in inference, and a training_mode fed at run time
// could silently switch it on.
#include <cstring>

#include <fmt/format.h>

#include "kernels/reference/common.h"

namespace hetsched::kernels {
namespace {

// The value of input i when it is known at load: an initializer, or the
// output of a Constant node (PyTorch exports training_mode so; load-time
// folding comes after this check).
const Tensor* constant_input(const Node& node, const Graph& graph, size_t i) {
  ValueId id = node.input(i);
  if (id == kNoValue) return nullptr;
  const Value& v = graph.values[id];
  if (v.initializer) return &*v.initializer;
  if (v.producer == kNoNode || graph.nodes[v.producer].op_type != "Constant") return nullptr;
  return graph.nodes[v.producer].attr_tensor("value");
}

bool is_true(const Tensor& t) { return t.numel() > 0 && t.to_int64_vector()[0] != 0; }

void check_dropout(const Node& node, const Graph& graph) {
  if (node.input(0) == kNoValue) throw_invalid(node, "input 'data' is missing");
  check_input_dtypes(node, graph, {DType::kFloat32, DType::kFloat64, DType::kFloat16}, {0});
  const Tensor* training = constant_input(node, graph, 2);
  if (node.input(2) != kNoValue && !training)
    throw_unsupported(node, "training_mode given at run time is not supported (inference only)");
  if (training && is_true(*training)) {
    const Tensor* ratio = constant_input(node, graph, 1);
    if (!ratio || ratio->numel() != 1 || ratio->to_double_vector()[0] != 0.0)
      throw_unsupported(node, "training mode (training_mode = true) is not supported");
  }
}

// One element of `dtype` holding 1.
std::vector<std::byte> one_of(const Node& node, DType dtype) {
  std::vector<std::byte> bytes(dtype_size(dtype));
  if (dtype == DType::kFloat16) {
    uint16_t bits = 0x3C00;
    std::memcpy(bytes.data(), &bits, 2);
    return bytes;
  }
  dispatch_all(node, dtype, [&](auto tag) {
    using T = decltype(tag);
    T one = static_cast<T>(1);
    std::memcpy(bytes.data(), &one, sizeof(T));
  });
  return bytes;
}

std::vector<Tensor> compute_dropout(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = required_input(node, inputs, 0);
  const Tensor* training = inputs.size() > 2 ? inputs[2] : nullptr;
  if (training && is_true(*training)) {
    const Tensor* ratio = inputs.size() > 1 ? inputs[1] : nullptr;
    double r = ratio && ratio->numel() > 0 ? ratio->to_double_vector()[0] : 0.5;
    if (r != 0.0) throw_runtime(node, fmt::format("training mode with ratio {} is not supported", r));
  }
  std::vector<Tensor> outs{x.clone()};
  if (node.outputs.size() > 1) {
    if (node.outputs[1] == kNoValue) {
      outs.emplace_back();
    } else {
      DType mask_type = node.opset >= 10 ? DType::kBool : x.dtype();
      Tensor mask(mask_type, x.shape());
      std::vector<std::byte> one = one_of(node, mask_type);
      auto* dst = static_cast<std::byte*>(mask.raw());
      for (int64_t i = 0; i < mask.numel(); ++i) std::memcpy(dst + static_cast<size_t>(i) * one.size(), one.data(), one.size());
      outs.push_back(std::move(mask));
    }
  }
  return outs;
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("Dropout", check_dropout, compute_dropout);

}  // namespace hetsched::kernels
