// Split on the CPU device: each part a strided copy in host code, in the
// layout the data arrives in when it is dense (the channels-last one of the
// Convs around it: no reorder on either side), else plain, as Slice does.
// The part sizes must be constants; they are read as the reference kernel
// reads them (kernels/reference/split.h).
#include "backends/cpu/lowering.h"
#include "kernels/reference/split.h"

namespace hetsched::cpu {
namespace {

bool lower_split(Lowering& l) {
  const Node& node = l.node();
  if (!l.has_input(0) || node.outputs.empty()) return false;
  const Value& x = l.input_value(0);
  if (x.shape.empty() || !dnnl_type(x.dtype)) return false;
  if (l.has_input(1) && !l.input_is_constant(1)) return false;
  int64_t axis = 0;
  std::vector<int64_t> sizes;
  try {
    sizes = kernels::split_sizes(node, x.shape, l.has_input(1) ? &l.constant(1) : nullptr, &axis);
  } catch (const Error&) {
    return false;  // the reference kernel reports it
  }
  for (size_t i = 0; i < node.outputs.size(); ++i)
    if (node.outputs[i] == kNoValue || sizes[i] == 0 || shape_numel(l.graph().values[node.outputs[i]].shape) == 0)
      return false;

  // The data's layout when dense (else plain); each part dense in the same
  // order of dims, copied from its offset along the axis.
  std::optional<dnnl::memory::dims> dense = dense_strides(l.input_desc(0));
  std::vector<int64_t> in_strides = dense ? *dense : kernels::strides_of(x.shape);
  std::optional<dnnl::memory::desc> in_layout;
  if (dense) in_layout = l.input_desc(0);
  struct Part {
    int64_t base;
    std::vector<int64_t> strides;
    Shape shape;
  };
  std::vector<Part> parts;
  std::vector<BufferId> writes;
  int64_t offset = 0;
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    const Value& y = l.graph().values[node.outputs[i]];
    const auto [order, out_strides] = dense_order(in_strides, y.shape);
    Part part{offset * in_strides[static_cast<size_t>(axis)], {}, {}};
    for (size_t d : order) {
      part.strides.push_back(in_strides[d]);
      part.shape.push_back(y.shape[d]);
    }
    parts.push_back(std::move(part));
    offset += sizes[i];
    writes.push_back(l.output(node.outputs[i], dnnl::memory::desc(dnnl::memory::dims(y.shape.begin(), y.shape.end()),
                                                                  *dnnl_type(y.dtype), out_strides)));
  }

  // Everything is decided: emit.
  const size_t element = dtype_size(x.dtype);
  BufferId src = l.input(0, in_layout);
  l.emit_host(
      [parts, element](const std::vector<void*>& p) {
        for (size_t i = 0; i < parts.size(); ++i)
          kernels::strided_copy(p[0], parts[i].base, parts[i].strides, parts[i].shape, p[1 + i], element);
      },
      {src}, writes);
  return true;
}

}  // namespace

HETSCHED_CPU_LOWERING("Split", lower_split,
                      "strided copies on the device's thread, in the data's layout when it is dense",
                      "split sizes computed at run time; dtypes oneDNN has no layout for (int64, bool, double); an "
                      "empty part");

}  // namespace hetsched::cpu
