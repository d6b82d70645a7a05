// The IR back to ONNX (internal): for re-running ONNX's shape inference on an
// optimised graph, and for writing graphs out.
#pragma once

#include <onnx/onnx_pb.h>

#include "hetsched/graph.h"

namespace hetsched {

// An ONNX model of `graph` as it is now: initializers (folded constants
// included), nodes in topological order, and every known value type. With
// `large_constants_as_inputs`, constants of more than 4096 elements (weights)
// are typed graph inputs instead, without their data: enough for shape
// inference, which reads the data of small ones only.
onnx::ModelProto graph_to_model(const Graph& graph, bool large_constants_as_inputs = false);

// Re-runs ONNX shape inference (with data propagation) on the graph as it is
// now and fills in the shapes of values that had none or had unknown dims:
// after constant folding, shape computations are constants and the values
// they shaped become static.
void refine_shapes(Graph& graph);

}  // namespace hetsched
