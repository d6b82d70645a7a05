// Slice on the CPU device: a strided copy in host code, in the layout the
// data arrives in when it is dense (the channels-last one of the Convs
// around it: no reorder on either side), else plain. Its starts, ends,
// axes and steps must be constants; they are normalised as the reference
// kernel does (kernels/reference/slice.h). ShuffleNet's channel splits (26
// Slices) ran on the reference kernel, with a reorder to the plain layout
// before and after each.
#include "backends/cpu/lowering.h"
#include "kernels/reference/slice.h"

namespace hetsched::cpu {
namespace {

bool lower_slice(Lowering& l) {
  const Node& node = l.node();
  if (!l.has_input(0) || node.outputs.size() != 1 || node.outputs[0] == kNoValue) return false;
  const Value& x = l.input_value(0);
  const Value& y = l.graph().values[node.outputs[0]];
  if (x.shape.empty() || !dnnl_type(x.dtype) || shape_numel(y.shape) == 0) return false;
  std::vector<const Tensor*> parameters(node.inputs.size(), nullptr);
  for (size_t i = 1; i < node.inputs.size(); ++i) {
    if (!l.has_input(i)) continue;
    if (!l.input_is_constant(i)) return false;
    parameters[i] = &l.constant(i);
  }
  kernels::SliceGeometry geometry;
  try {
    geometry = kernels::slice_geometry(node, x.shape, parameters);
  } catch (const Error&) {
    return false;  // the reference kernel reports it
  }
  if (geometry.out_shape != y.shape) return false;

  // The data's layout when dense (else plain), and the output in the same
  // order of dims, dense.
  const size_t rank = x.shape.size();
  std::optional<dnnl::memory::dims> dense = dense_strides(l.input_desc(0));
  std::vector<int64_t> in_strides = dense ? *dense : kernels::strides_of(x.shape);
  std::optional<dnnl::memory::desc> in_layout;
  if (dense) in_layout = l.input_desc(0);
  const auto [order, out_strides] = dense_order(in_strides, y.shape);
  // Copied in the output's memory order: the dims permuted so, with the
  // steps folded into the data's strides.
  int64_t base = 0;
  Shape shape(rank);
  std::vector<int64_t> strides(rank);
  for (size_t k = 0; k < rank; ++k) {
    size_t d = order[k];
    base += geometry.first[d] * in_strides[d];
    strides[k] = geometry.step[d] * in_strides[d];
    shape[k] = y.shape[d];
  }

  // Everything is decided: emit.
  const size_t element = dtype_size(x.dtype);
  BufferId src = l.input(0, in_layout);
  BufferId dst = l.output(node.outputs[0],
                          dnnl::memory::desc(dnnl::memory::dims(y.shape.begin(), y.shape.end()), *dnnl_type(y.dtype),
                                             out_strides));
  l.emit_host([base, strides, shape, element](
                  const std::vector<void*>& p) { kernels::strided_copy(p[0], base, strides, shape, p[1], element); },
              {src}, {dst});
  return true;
}

}  // namespace

HETSCHED_CPU_LOWERING("Slice", lower_slice,
                      "strided copy on the device's thread, in the data's layout when it is dense",
                      "starts, ends, axes or steps computed at run time; dtypes oneDNN has no layout for (int64, "
                      "bool, double); an empty output");

}  // namespace hetsched::cpu
