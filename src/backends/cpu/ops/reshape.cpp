// Reshape, Flatten, Squeeze, Unsqueeze on the CPU device: the output is a
// view of the input's plain bytes (no step, no copy).
#include "backends/cpu/lowering.h"

namespace hetsched::cpu {
namespace {

bool lower_view(Lowering& l) {
  const Node& node = l.node();
  if (node.outputs.size() != 1 || node.outputs[0] == kNoValue) return false;
  const Value& out = l.graph().values[node.outputs[0]];
  if (out.dtype != l.input_value(0).dtype) return false;
  l.view(node.outputs[0], l.input(0));
  l.emit_nothing();
  return true;
}

}  // namespace

HETSCHED_CPU_LOWERING("Reshape", lower_view, "a view of the input (no step)");
HETSCHED_CPU_LOWERING("Flatten", lower_view, "a view of the input (no step)");
HETSCHED_CPU_LOWERING("Squeeze", lower_view, "a view of the input (no step)");
HETSCHED_CPU_LOWERING("Unsqueeze", lower_view, "a view of the input (no step)");

}  // namespace hetsched::cpu
