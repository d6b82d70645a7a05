// float16 and bfloat16 models computed in float32 (internal; load time).
//
// No device here has 16-bit float kernels: oneDNN 2.6 has none for float16 on
// the CPU, and bfloat16 pays only where the CPU has it natively (a choice of
// precision, not a model's type). So, as ONNX Runtime's CPU provider wraps
// the ops it lacks float16 kernels for in casts, a graph holding 16-bit float
// values computes them in float32, and every kernel and device sees float32:
//   - a 16-bit initializer, Constant or ConstantOfShape value becomes float32
//     (exactly: every 16-bit float is a float32);
//   - a graph input keeps its type; its consumers read a Cast of it to float32;
//   - a graph output keeps its type: a Cast to it of the float32 value its
//     producer now makes;
//   - a Cast (or a CastLike) to a 16-bit type keeps its rounding: a Cast back
//     to float32 follows it; EyeLike's `dtype` names float32;
//   - every other 16-bit value is float32.
// Results are therefore those of a float32 computation of the same graph,
// rounded where the model rounds explicitly and at its outputs: they differ
// from a computation rounding every intermediate to 16 bits by that rounding
// (they are the more accurate).
#pragma once

#include "hetsched/graph.h"

namespace hetsched {

// Applies the rewrite above to a finalized graph, and finalizes it. Returns
// how many 16-bit values it made float32 (0: the graph had none, unchanged).
// A 16-bit value inside a subgraph (If, Loop, Scan) is refused
// (ErrorCode::kUnsupported naming the node).
int compute_half_as_float(Graph& graph);

// Whether `dtype` is float16 or bfloat16.
bool is_half_float(DType dtype);

}  // namespace hetsched
