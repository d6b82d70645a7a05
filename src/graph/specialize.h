// Free dims made static (internal; docs/architecture.md, "Free dims").
//
// A model exported with free dims (a dynamic batch, a sequence length, an
// image size) loads with -1 in its inputs' shapes and in every shape that
// follows from them. Kernels, schedulers, the profile database and the
// executor work on static shapes; this is the one place where a graph with
// free dims becomes static, for one set of input shapes. The Session keeps
// the results per set of input shapes (session.h, SessionOptions::max_shapes).
#pragma once

#include <string>
#include <vector>

#include "hetsched/graph.h"

namespace hetsched {

// The input shapes of one run, in graph.inputs order: what a specialization
// is made for and cached under.
using ShapeSignature = std::vector<Shape>;

// Whether some graph input has a free dim or an unknown rank.
bool has_free_input_dims(const Graph& graph);

// "x=4x3x160x160, mask=4x128", in graph.inputs order.
std::string signature_text(const Graph& graph, const ShapeSignature& shapes);

// Checks `shapes` against the graph's inputs: the rank and every fixed dim,
// and that dims the model names alike ("batch" in two inputs) are given
// alike. Throws ErrorCode::kInvalidInput naming the input and dim.
void check_input_dims(const Graph& graph, const ShapeSignature& shapes);

// Shapes propagated by ONNX shape inference and the load-time optimisations
// (optimize.h) applied, in turns until neither changes anything: folding
// Shape, Size and the arithmetic on them makes constants (a Reshape's
// target) from which inference makes more shapes static. Values whose shape
// depends on data (NonZero, a TopK with a computed k) stay unknown.
void propagate_and_fold(Graph& graph);

// `graph` with its inputs fixed to `shapes` (checked as above), then
// propagate_and_fold; costs annotated. The same graph as a load with those
// shapes (LoadOptions::input_shapes).
Graph specialize_graph(const Graph& graph, const ShapeSignature& shapes);

}  // namespace hetsched
