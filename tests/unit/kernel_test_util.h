// Runs one reference kernel on given tensors, for kernel unit tests.
#pragma once

#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hetsched/session.h"
#include "kernels/kernel.h"

namespace hetsched::testing {

// Largest |a - b| relative to the largest |b| (and at least 1e-30); NaN and
// infinities must sit where b has the same, and sizes must agree, else it is
// infinite (a kernel that leaves its output unwritten, as NaN, fails).
inline double relative_error(const Tensor& a, const Tensor& b) {
  auto x = a.to_double_vector(), y = b.to_double_vector();
  const double kWorst = std::numeric_limits<double>::infinity();
  if (x.size() != y.size()) return kWorst;
  double diff = 0, scale = 1e-30;
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i]) || std::isnan(y[i]) || std::isinf(x[i]) || std::isinf(y[i])) {
      bool same = (std::isnan(x[i]) && std::isnan(y[i])) || x[i] == y[i];
      if (!same) return kWorst;
      continue;
    }
    diff = std::max(diff, std::fabs(x[i] - y[i]));
    scale = std::max(scale, std::fabs(y[i]));
  }
  return diff / scale;
}

inline Attribute attr_int(int64_t v) {
  Attribute a;
  a.kind = Attribute::Kind::kInt;
  a.i = v;
  return a;
}
inline Attribute attr_float(float v) {
  Attribute a;
  a.kind = Attribute::Kind::kFloat;
  a.f = v;
  return a;
}
inline Attribute attr_string(std::string v) {
  Attribute a;
  a.kind = Attribute::Kind::kString;
  a.s = std::move(v);
  return a;
}
inline Attribute attr_ints(std::vector<int64_t> v) {
  Attribute a;
  a.kind = Attribute::Kind::kInts;
  a.ints = std::move(v);
  return a;
}
inline Attribute attr_floats(std::vector<float> v) {
  Attribute a;
  a.kind = Attribute::Kind::kFloats;
  a.floats = std::move(v);
  return a;
}

// Inputs that are undefined Tensors are passed as omitted optional inputs.
inline std::vector<Tensor> run_reference_op(const std::string& op_type, const std::vector<Tensor>& inputs,
                                            std::map<std::string, Attribute> attributes = {},
                                            size_t n_outputs = 1, int64_t opset = 17) {
  const kernels::ReferenceKernel* kernel = kernels::find_reference_kernel(op_type);
  if (!kernel) throw Error(ErrorCode::kUnsupported, "no reference kernel for " + op_type);
  Node node;
  node.name = "test_" + op_type;
  node.op_type = op_type;
  node.opset = opset;
  node.attributes = std::move(attributes);
  std::vector<const Tensor*> ptrs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    node.inputs.push_back(inputs[i].defined() ? static_cast<ValueId>(i) : kNoValue);
    ptrs.push_back(inputs[i].defined() ? &inputs[i] : nullptr);
  }
  for (size_t i = 0; i < n_outputs; ++i) node.outputs.push_back(static_cast<ValueId>(inputs.size() + i));
  return kernel->compute(node, ptrs);
}

// A one-node graph for a kernel's load-time check(): node "n" reads one value
// per input spec (its dtype, kUndefined: unknown; its shape when given) and
// writes `n_outputs` values of unknown type.
struct InputSpec {
  DType dtype = DType::kFloat32;
  std::optional<Shape> shape;
};
struct OneNodeGraph {
  Graph graph;
  Node node;
};
inline OneNodeGraph one_node_graph(const std::string& op_type, const std::vector<InputSpec>& inputs,
                                   std::map<std::string, Attribute> attributes = {}, size_t n_outputs = 1,
                                   int64_t opset = 17) {
  OneNodeGraph g;
  g.node.name = "n";
  g.node.op_type = op_type;
  g.node.opset = opset;
  g.node.attributes = std::move(attributes);
  for (size_t i = 0; i < inputs.size(); ++i) {
    Value v;
    v.name = "in" + std::to_string(i);
    v.dtype = inputs[i].dtype;
    v.has_shape = inputs[i].shape.has_value();
    if (inputs[i].shape) v.shape = *inputs[i].shape;
    g.node.inputs.push_back(g.graph.add_value(v));
  }
  for (size_t i = 0; i < n_outputs; ++i) {
    Value v;
    v.name = "out" + std::to_string(i);
    g.node.outputs.push_back(g.graph.add_value(v));
  }
  return g;
}

inline std::vector<InputSpec> specs_of(const std::vector<DType>& dtypes) {
  std::vector<InputSpec> specs;
  for (DType d : dtypes) specs.push_back({d, std::nullopt});
  return specs;
}

// Tensors from values, for test inputs and expectations.
inline Tensor f32(Shape shape, std::vector<float> v) { return Tensor::from_vector<float>(std::move(shape), v); }
inline Tensor i32(Shape shape, std::vector<int32_t> v) { return Tensor::from_vector<int32_t>(std::move(shape), v); }
inline Tensor i64(Shape shape, std::vector<int64_t> v) { return Tensor::from_vector<int64_t>(std::move(shape), v); }
inline Tensor b8(Shape shape, std::vector<bool> v) { return Tensor::from_vector<bool>(std::move(shape), v); }

// Runs a one-output op and returns its output.
inline Tensor run1(const std::string& op, const std::vector<Tensor>& inputs,
                   std::map<std::string, Attribute> attrs = {}, int64_t opset = 17) {
  std::vector<Tensor> out = run_reference_op(op, inputs, std::move(attrs), 1, opset);
  EXPECT_EQ(out.size(), 1u);
  return out.at(0);
}

template <typename T>
std::vector<T> values_of(const Tensor& t) {
  const T* p = t.data<T>();
  return std::vector<T>(p, p + t.numel());
}

// Every output of `want` in `got`, same shape, within 1e-5 relative error:
// a plan's outputs against the sequential plan's (another device split
// changes oneDNN's layouts, hence the summation order).
inline void expect_same_outputs(const TensorMap& got, const TensorMap& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (const auto& [name, t] : want) {
    ASSERT_TRUE(got.count(name)) << what << ": missing " << name;
    ASSERT_EQ(got.at(name).shape(), t.shape()) << what << ": " << name;
    EXPECT_LE(relative_error(got.at(name), t), 1e-5) << what << ": " << name;
  }
}

}  // namespace hetsched::testing
