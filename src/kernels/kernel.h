// Reference kernels: plain C++ implementations of ONNX operators, the ground
// truth every faster backend is checked against.
//
// Each op lives in its own file under src/kernels/reference/ and registers
// itself with HETSCHED_REFERENCE_KERNEL; nothing central lists them.
//
// Contract of a kernel:
//   check(node, graph)  — called once at load. Throws Error(kUnsupported) for
//                         an attribute value, input form or dtype that compute()
//                         does not implement, and Error(kInvalidModel) for a
//                         node that violates the spec in a way ONNX's checker
//                         missed. The message names the node (node.label()).
//                         Values' dtypes and shapes come from shape inference
//                         and may be unknown (DType::kUndefined, has_shape false).
//   compute(node, inputs) — inputs[i] is the tensor for node.inputs[i], or
//                         nullptr for an omitted optional input. Returns one
//                         Tensor per node output (an undefined Tensor for an
//                         omitted optional output). Output shapes are computed
//                         from the actual inputs, never from the graph. Must
//                         not modify its inputs. Throws Error(kRuntime) or
//                         Error(kInvalidInput) when the actual inputs are invalid.
#pragma once

#include <string>
#include <vector>

#include "hetsched/graph.h"

namespace hetsched::kernels {

using CheckFn = void (*)(const Node& node, const Graph& graph);
using ComputeFn = std::vector<Tensor> (*)(const Node& node, const std::vector<const Tensor*>& inputs);

struct ReferenceKernel {
  std::string op_type;
  CheckFn check = nullptr;  // optional: nullptr accepts every node
  ComputeFn compute = nullptr;
};

void register_reference_kernel(ReferenceKernel kernel);
// nullptr when the op has no reference kernel (default ONNX domain only).
const ReferenceKernel* find_reference_kernel(const std::string& op_type);
// Sorted list of every registered op type.
std::vector<std::string> reference_op_types();

// Runs `graph` once with the reference kernels, node by node in its order:
// `inputs` in graph.inputs order; returns graph.outputs' tensors in order.
// What Session's reference kernels run (run_reference, session.h) and the
// control-flow kernels run for a branch or an iteration (If, Loop, Scan).
std::vector<Tensor> run_graph(const Graph& graph, const std::vector<Tensor>& inputs);

struct KernelRegistrar {
  explicit KernelRegistrar(ReferenceKernel kernel) { register_reference_kernel(std::move(kernel)); }
};

}  // namespace hetsched::kernels

#define HETSCHED_CONCAT_INNER(a, b) a##b
#define HETSCHED_CONCAT(a, b) HETSCHED_CONCAT_INNER(a, b)
// HETSCHED_REFERENCE_KERNEL("Relu", check_fn_or_nullptr, compute_fn);
#define HETSCHED_REFERENCE_KERNEL(OP_TYPE, CHECK, COMPUTE)                                   \
  static ::hetsched::kernels::KernelRegistrar HETSCHED_CONCAT(hetsched_kernel_, __LINE__)( \
      ::hetsched::kernels::ReferenceKernel{OP_TYPE, CHECK, COMPUTE})
