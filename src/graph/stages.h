// Shapes that depend on data, cut into stages (internal; docs/architecture.md,
// "Free dims").
//
// After specialization (specialize.h) a graph's shapes are static except
// where they depend on the data: NonZero, NonMaxSuppression, a TopK with a
// computed k, a Loop's scan outputs, and what follows them. The engine runs
// such a graph in stages: the head (every node whose outputs' shapes are
// static and whose inputs the head or the graph's inputs give) is compiled
// and run on the devices like any static graph; then the barriers (the
// nodes whose inputs are then known and whose outputs' shapes are not) run
// on the reference kernels, making those shapes known; the tail (the rest)
// is a graph whose inputs have free dims, compiled for the shapes each run
// gives (the Session's specialization cache) and cut again where it has
// barriers of its own.
#pragma once

#include <vector>

#include "hetsched/graph.h"

namespace hetsched {

// Whether every value that is not a constant has a static shape.
bool all_shapes_static(const Graph& graph);

// One stage: its nodes (in the graph's order), the values it reads from
// the graph's inputs or earlier stages, and the values it makes that later
// stages or the graph's outputs read.
struct Stage {
  std::vector<NodeId> nodes;
  std::vector<ValueId> inputs, outputs;
};

struct StageCut {
  Stage head, barriers, tail;
};

// The stages of a graph that is not all static: at least one barrier (the
// first node, in order, whose outputs' shapes are unknown has all its
// inputs known).
StageCut cut_at_data_dependent_shapes(const Graph& graph);

// `nodes` of `graph` as a graph of their own, with the given inputs and
// outputs (ids of `graph`); constants come along; costs annotated.
Graph extract_graph(const Graph& graph, const std::vector<NodeId>& nodes, const std::vector<ValueId>& inputs,
                    const std::vector<ValueId>& outputs, const std::string& name);

}  // namespace hetsched
