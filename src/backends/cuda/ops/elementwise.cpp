// Elementwise ops on the GPU: unary activations and math (one own kernel
// with the op as a parameter) and binary arithmetic with numpy broadcasting.
// float32 only; other dtypes stay on other devices.
#include <cmath>
#include <limits>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "backends/cuda/ops/op_util.h"
#include "kernels/reference/common.h"

namespace hetsched::cuda::ops {
namespace {

// ---------------------------------------------------------------- unary

struct UnaryParams {
  kern::Unary op = kern::Unary::kCopy;
  float alpha = 0, beta = 0;
};

// The kernel op and parameters of `node`, or why not.
std::optional<UnaryParams> unary_params(const Graph& graph, const Node& node, std::string* why) {
  using kern::Unary;
  static const std::map<std::string, Unary> plain = {
      {"Relu", Unary::kRelu},       {"Sigmoid", Unary::kSigmoid},   {"Tanh", Unary::kTanh},
      {"Exp", Unary::kExp},         {"Log", Unary::kLog},           {"Sqrt", Unary::kSqrt},
      {"Abs", Unary::kAbs},         {"Neg", Unary::kNeg},           {"Erf", Unary::kErf},
      {"HardSwish", Unary::kHardSwish}, {"Reciprocal", Unary::kReciprocal}, {"Floor", Unary::kFloor},
      {"Ceil", Unary::kCeil},       {"Softplus", Unary::kSoftplus}, {"Sin", Unary::kSin},
      {"Cos", Unary::kCos}};
  UnaryParams p;
  if (auto it = plain.find(node.op_type); it != plain.end()) {
    p.op = it->second;
  } else if (node.op_type == "LeakyRelu") {
    p.op = Unary::kLeakyRelu;
    p.alpha = node.attr_float("alpha", 0.01f);
  } else if (node.op_type == "Elu") {
    p.op = Unary::kElu;
    p.alpha = node.attr_float("alpha", 1.0f);
  } else if (node.op_type == "HardSigmoid") {
    p.op = Unary::kHardSigmoid;
    p.alpha = node.attr_float("alpha", 0.2f);
    p.beta = node.attr_float("beta", 0.5f);
  } else if (node.op_type == "Gelu") {
    std::string approximate = node.attr_string("approximate", "none");
    if (approximate != "none" && approximate != "tanh") {
      *why = fmt::format("approximate '{}'", approximate);
      return std::nullopt;
    }
    p.op = approximate == "tanh" ? Unary::kGeluTanh : Unary::kGelu;
  } else if (node.op_type == "Clip") {
    p.op = Unary::kClip;
    p.alpha = -std::numeric_limits<float>::infinity();
    p.beta = std::numeric_limits<float>::infinity();
    // The reference kernel's choice of form (clip.cpp): attributes when the
    // node has them or, before opset 11, has no bound inputs; their missing
    // bounds are the largest floats.
    bool attributes = node.has_attr("min") || node.has_attr("max") ||
                      (node.opset < 11 && node.input(1) == kNoValue && node.input(2) == kNoValue);
    if (attributes) {
      p.alpha = node.attr_float("min", -std::numeric_limits<float>::max());
      p.beta = node.attr_float("max", std::numeric_limits<float>::max());
    } else {
      for (size_t i : {size_t{1}, size_t{2}}) {
        if (node.input(i) == kNoValue) continue;
        std::optional<float> bound = constant_scalar(graph, node.input(i));
        if (!bound) {
          *why = "a bound computed at run time";
          return std::nullopt;
        }
        (i == 1 ? p.alpha : p.beta) = *bound;
      }
    }
  } else {
    *why = fmt::format("no CUDA kernel for {}", node.op_type);
    return std::nullopt;
  }
  return p;
}

std::string unary_declines(const Graph& graph, const Node& node) {
  if (std::string why = need_float32(graph, node, {0}); !why.empty()) return why;
  std::string why;
  if (!unary_params(graph, node, &why)) return why;
  return "";
}

class UnaryOp : public GpuOp {
 public:
  UnaryOp(const GpuPrepare& p, UnaryParams params)
      : GpuOp(p, fmt::format("CUDA elementwise {}", p.node().op_type)), params_(params) {
    x_ = bind(p, p.node().inputs[0]);
    n_ = numel_of(p.graph, p.node().outputs[0]);
  }

  void enqueue(const GpuStream& s, const void* const* in, void* const* out) const override {
    kern::unary(params_.op, static_cast<const float*>(data(x_, in)), static_cast<float*>(out[0]), n_,
                params_.alpha, params_.beta, s.stream);
  }

 private:
  UnaryParams params_;
  Operand x_;
  int64_t n_ = 0;
};

std::unique_ptr<GpuOp> prepare_unary(const GpuPrepare& p) {
  std::string why;
  return std::make_unique<UnaryOp>(p, *unary_params(p.graph, p.node(), &why));
}

// ---------------------------------------------------------------- binary

kern::Binary binary_op(const std::string& op) {
  using kern::Binary;
  if (op == "Add") return Binary::kAdd;
  if (op == "Sub") return Binary::kSub;
  if (op == "Mul") return Binary::kMul;
  if (op == "Div") return Binary::kDiv;
  if (op == "Pow") return Binary::kPow;
  if (op == "Max") return Binary::kMax;
  return Binary::kMin;
}

std::string binary_declines(const Graph& graph, const Node& node) {
  if ((node.op_type == "Max" || node.op_type == "Min") && node.inputs.size() != 2) return "other than 2 inputs";
  if (node.inputs.size() != 2 || node.input(0) == kNoValue || node.input(1) == kNoValue) return "other than 2 inputs";
  if (std::string why = need_float32(graph, node); !why.empty()) return why;
  return need_rank_at_most(graph, node);
}

class BinaryOp : public GpuOp {
 public:
  explicit BinaryOp(const GpuPrepare& p) : GpuOp(p, fmt::format("CUDA elementwise {}", p.node().op_type)) {
    const Node& node = p.node();
    op_ = binary_op(node.op_type);
    a_ = bind(p, node.inputs[0]);
    b_ = bind(p, node.inputs[1]);
    const Shape& out = shape_of(p.graph, node.outputs[0]);
    a_layout_ = broadcast_layout(shape_of(p.graph, node.inputs[0]), out);
    b_layout_ = broadcast_layout(shape_of(p.graph, node.inputs[1]), out);
    contiguous_ = shape_of(p.graph, node.inputs[0]) == out && shape_of(p.graph, node.inputs[1]) == out;
    n_ = shape_numel(out);
  }

  void enqueue(const GpuStream& s, const void* const* in, void* const* out) const override {
    kern::binary(op_, static_cast<const float*>(data(a_, in)), a_layout_, static_cast<const float*>(data(b_, in)),
                 b_layout_, static_cast<float*>(out[0]), n_, contiguous_, s.stream);
  }

 private:
  kern::Binary op_ = kern::Binary::kAdd;
  Operand a_, b_;
  kern::Strided a_layout_, b_layout_;
  bool contiguous_ = false;
  int64_t n_ = 0;
};

std::unique_ptr<GpuOp> prepare_binary(const GpuPrepare& p) { return std::make_unique<BinaryOp>(p); }

}  // namespace

#define HETSCHED_CUDA_UNARY(OP) HETSCHED_CUDA_KERNEL(OP, unary_declines, prepare_unary, "own CUDA elementwise kernel")
HETSCHED_CUDA_UNARY("Relu");
HETSCHED_CUDA_UNARY("LeakyRelu");
HETSCHED_CUDA_UNARY("Clip");
HETSCHED_CUDA_UNARY("Sigmoid");
HETSCHED_CUDA_UNARY("Tanh");
HETSCHED_CUDA_UNARY("Exp");
HETSCHED_CUDA_UNARY("Log");
HETSCHED_CUDA_UNARY("Sqrt");
HETSCHED_CUDA_UNARY("Abs");
HETSCHED_CUDA_UNARY("Neg");
HETSCHED_CUDA_UNARY("Erf");
HETSCHED_CUDA_UNARY("Gelu");
HETSCHED_CUDA_UNARY("HardSigmoid");
HETSCHED_CUDA_UNARY("HardSwish");
HETSCHED_CUDA_UNARY("Reciprocal");
HETSCHED_CUDA_UNARY("Floor");
HETSCHED_CUDA_UNARY("Ceil");
HETSCHED_CUDA_UNARY("Elu");
HETSCHED_CUDA_UNARY("Softplus");
HETSCHED_CUDA_UNARY("Sin");
HETSCHED_CUDA_UNARY("Cos");

#define HETSCHED_CUDA_BINARY(OP) \
  HETSCHED_CUDA_KERNEL(OP, binary_declines, prepare_binary, "own CUDA elementwise kernel, numpy broadcasting")
HETSCHED_CUDA_BINARY("Add");
HETSCHED_CUDA_BINARY("Sub");
HETSCHED_CUDA_BINARY("Mul");
HETSCHED_CUDA_BINARY("Div");
HETSCHED_CUDA_BINARY("Pow");
HETSCHED_CUDA_BINARY("Max");
HETSCHED_CUDA_BINARY("Min");

}  // namespace hetsched::cuda::ops
