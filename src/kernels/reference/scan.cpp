// Scan — reference kernel (opset 9+).
//
// N state values, then num_scan_inputs (M) scan inputs, each cut along its
// scan_input_axes dim (default 0) into slices taken first to last, or last
// to first where scan_input_directions is 1. The body maps (states...,
// slices...) to (states..., scan output slices...); the outputs are the
// final states, then each scan output's slices stacked along a new dim at
// its scan_output_axes (default 0; negative counts from the end), in
// reverse order where scan_output_directions is 1.
// Refused: Scan before opset 9 (a batch dim and sequence_lens).
#include <algorithm>

#include "kernels/reference/control_flow.h"

namespace hetsched::kernels {
namespace {

void check_scan(const Node& node, const Graph&) {
  if (node.opset < 9) throw_unsupported(node, "Scan before opset 9 (with a batch dim) is not supported");
  const Attribute& body = control_flow::subgraph(node, "body");
  const int64_t m = node.attr_int("num_scan_inputs", 0);
  const auto declared = static_cast<int64_t>(control_flow::n_declared_inputs(node));
  if (m < 1 || m > declared) throw_invalid(node, fmt::format("num_scan_inputs {} for {} inputs", m, declared));
  if (control_flow::n_formal_inputs(body) != static_cast<size_t>(declared))
    throw_invalid(node, fmt::format("the body takes {} inputs, the node has {}", control_flow::n_formal_inputs(body),
                                    declared));
  if (body.graph->outputs.size() != node.outputs.size())
    throw_invalid(node, fmt::format("the body gives {} outputs, the node has {}", body.graph->outputs.size(),
                                    node.outputs.size()));
}

// Slice t of x along `axis`, that dim removed.
Tensor slice(const Tensor& x, int64_t axis, int64_t t) {
  std::vector<int64_t> strides = strides_of(x.shape());
  const int64_t base = t * strides[static_cast<size_t>(axis)];
  strides.erase(strides.begin() + axis);
  Shape shape = x.shape();
  shape.erase(shape.begin() + axis);
  Tensor out(x.dtype(), shape);
  strided_copy(x.raw(), base, strides, shape, out.raw(), dtype_size(x.dtype()));
  return out;
}

std::vector<Tensor> compute_scan(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Attribute& body = control_flow::subgraph(node, "body");
  const auto m = static_cast<size_t>(node.attr_int("num_scan_inputs", 0));
  const size_t n_states = control_flow::n_declared_inputs(node) - m;
  const size_t n_scan_outputs = node.outputs.size() - n_states;
  std::vector<int64_t> in_axes = node.attr_ints("scan_input_axes", std::vector<int64_t>(m, 0));
  std::vector<int64_t> in_dirs = node.attr_ints("scan_input_directions", std::vector<int64_t>(m, 0));
  std::vector<int64_t> out_axes = node.attr_ints("scan_output_axes", std::vector<int64_t>(n_scan_outputs, 0));
  std::vector<int64_t> out_dirs = node.attr_ints("scan_output_directions", std::vector<int64_t>(n_scan_outputs, 0));
  if (in_axes.size() != m || in_dirs.size() != m || out_axes.size() != n_scan_outputs ||
      out_dirs.size() != n_scan_outputs)
    throw_runtime(node, "scan axes and directions: expected one per scan input and output");
  std::vector<Tensor> states;
  for (size_t i = 0; i < n_states; ++i) states.push_back(required_input(node, inputs, i));
  int64_t length = -1;
  for (size_t j = 0; j < m; ++j) {
    const Tensor& x = required_input(node, inputs, n_states + j);
    in_axes[j] = normalize_axis(node, in_axes[j], x.rank());
    if (length >= 0 && x.dim(in_axes[j]) != length)
      throw_runtime(node, fmt::format("scan input {} has {} slices, the first {}", j, x.dim(in_axes[j]), length));
    length = x.dim(in_axes[j]);
  }
  std::vector<std::vector<Tensor>> scans(n_scan_outputs);
  for (int64_t t = 0; t < length; ++t) {
    std::vector<Tensor> formals = states;
    for (size_t j = 0; j < m; ++j)
      formals.push_back(slice(*inputs[n_states + j], in_axes[j], in_dirs[j] ? length - 1 - t : t));
    std::vector<Tensor> out = control_flow::run(node, body, std::move(formals), inputs);
    for (size_t i = 0; i < n_states; ++i) states[i] = out[i];
    for (size_t k = 0; k < n_scan_outputs; ++k) scans[k].push_back(out[n_states + k]);
  }
  std::vector<Tensor> outputs = states;
  for (size_t k = 0; k < n_scan_outputs; ++k) {
    if (out_dirs[k]) std::reverse(scans[k].begin(), scans[k].end());
    const Value& declared = body.graph->values[body.graph->outputs[n_states + k]];
    const int64_t slice_rank = scans[k].empty() ? static_cast<int64_t>(declared.shape.size()) : scans[k][0].rank();
    const int64_t axis = normalize_axis(node, out_axes[k], slice_rank + 1);
    DType dtype = declared.dtype == DType::kUndefined ? DType::kFloat32 : declared.dtype;
    outputs.push_back(control_flow::stack(node, scans[k], axis, dtype, control_flow::leading(0, declared)));
  }
  return outputs;
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("Scan", check_scan, compute_scan);

}  // namespace hetsched::kernels
