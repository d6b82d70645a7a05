// Einsum — reference kernel.
//
// Any equation of ONNX's Einsum: terms of letters (a letter repeated in one
// term takes that term's diagonal), "..." for broadcast dims (right-aligned,
// a dim of 1 broadcast), "->" with the output's labels or, without it, the
// implicit output: the broadcast dims, then the letters that appear once,
// in alphabetical order. Every output element sums, over all values of the
// labels not in the output, the product of the inputs' elements. Floats
// accumulate in double, integers in int64.
// Supported: float32, float64 and the integer dtypes.
// Refused: other dtypes; an equation that does not parse is an invalid
// model naming it.
#include <algorithm>
#include <map>
#include <string>
#include <type_traits>

#include <fmt/format.h>

#include "kernels/reference/common.h"

namespace hetsched::kernels {
namespace {

constexpr int kEllipsis = -1;

// One term: its labels, kEllipsis where "..." stands.
std::vector<int> parse_term(const Node& node, const std::string& term, const std::string& equation) {
  std::vector<int> labels;
  for (size_t i = 0; i < term.size(); ++i) {
    char ch = term[i];
    if (term.compare(i, 3, "...") == 0) {
      labels.push_back(kEllipsis);
      i += 2;
    } else if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')) {
      labels.push_back(ch);
    } else {
      throw_invalid(node, fmt::format("equation '{}': unexpected '{}'", equation, ch));
    }
  }
  if (std::count(labels.begin(), labels.end(), kEllipsis) > 1)
    throw_invalid(node, fmt::format("equation '{}': '...' twice in one term", equation));
  return labels;
}

struct Equation {
  std::vector<std::vector<int>> inputs;
  std::vector<int> output;
  bool explicit_output = false;
};

Equation parse(const Node& node) {
  std::string equation;
  for (char ch : node.attr_string("equation", "")) if (ch != ' ') equation += ch;
  Equation e;
  size_t arrow = equation.find("->");
  std::string lhs = equation.substr(0, arrow);
  size_t start = 0;
  for (;;) {
    size_t comma = lhs.find(',', start);
    e.inputs.push_back(parse_term(node, lhs.substr(start, comma - start), equation));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (arrow != std::string::npos) {
    e.explicit_output = true;
    e.output = parse_term(node, equation.substr(arrow + 2), equation);
  }
  return e;
}

void check_einsum(const Node& node, const Graph& graph) {
  check_input_dtypes(node, graph, kNumericTypes);
  Equation e = parse(node);
  if (e.inputs.size() != node.inputs.size())
    throw_invalid(node, fmt::format("equation '{}' has {} terms for {} inputs", node.attr_string("equation", ""),
                                    e.inputs.size(), node.inputs.size()));
}

std::vector<Tensor> compute_einsum(const Node& node, const std::vector<const Tensor*>& inputs) {
  Equation e = parse(node);
  if (e.inputs.size() != inputs.size()) throw_runtime(node, "equation and inputs disagree");
  // Pass 1: "..." becomes labels 256 + k for the k-th of the broadcast dims
  // (right-aligned over the inputs), each label gets its size.
  int64_t n_broadcast = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::vector<int>& t = e.inputs[i];
    const int64_t named = static_cast<int64_t>(t.size()) - (std::count(t.begin(), t.end(), kEllipsis) ? 1 : 0);
    const Tensor& x = required_input(node, inputs, i);
    if (x.rank() < named || (x.rank() != named && !std::count(t.begin(), t.end(), kEllipsis)))
      throw_runtime(node, fmt::format("input {} of shape {} does not fit its term", i, shape_to_string(x.shape())));
    n_broadcast = std::max(n_broadcast, x.rank() - named);
  }
  std::map<int, int64_t> size;
  std::vector<std::vector<int>> dim_labels(inputs.size());  // per input, per dim
  std::map<int, int> count;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& x = *inputs[i];
    const int64_t named = static_cast<int64_t>(e.inputs[i].size()) -
                          (std::count(e.inputs[i].begin(), e.inputs[i].end(), kEllipsis) ? 1 : 0);
    const int64_t own_broadcast = x.rank() - named;
    for (int label : e.inputs[i]) {
      if (label == kEllipsis) {
        for (int64_t k = n_broadcast - own_broadcast; k < n_broadcast; ++k) dim_labels[i].push_back(256 + static_cast<int>(k));
      } else {
        dim_labels[i].push_back(label);
      }
    }
    for (size_t d = 0; d < dim_labels[i].size(); ++d) {
      const int label = dim_labels[i][d];
      const int64_t n = x.dim(static_cast<int64_t>(d));
      auto [it, first] = size.emplace(label, n);
      if (!first && it->second != n) {
        if (label >= 256 && (n == 1 || it->second == 1)) it->second = std::max(it->second, n);
        else throw_runtime(node, fmt::format("label '{}' has sizes {} and {}", static_cast<char>(label), it->second, n));
      }
      if (label < 256) ++count[label];
    }
  }
  std::vector<int> out_labels;
  if (e.explicit_output) {
    for (int label : e.output) {
      if (label == kEllipsis) {
        for (int64_t k = 0; k < n_broadcast; ++k) out_labels.push_back(256 + static_cast<int>(k));
      } else if (!size.count(label)) {
        throw_runtime(node, fmt::format("output label '{}' is in no input", static_cast<char>(label)));
      } else {
        out_labels.push_back(label);
      }
    }
  } else {
    for (int64_t k = 0; k < n_broadcast; ++k) out_labels.push_back(256 + static_cast<int>(k));
    for (const auto& [label, n] : count)
      if (n == 1) out_labels.push_back(label);
  }
  // Pass 2: every label's place in one counter (the output's first), and
  // each input's stride per counter position (0 where it lacks the label or
  // broadcasts it; summed where a term repeats it).
  std::vector<int> labels = out_labels;
  for (const auto& [label, n] : size)
    if (std::find(labels.begin(), labels.end(), label) == labels.end()) labels.push_back(label);
  const size_t n_out = out_labels.size();
  std::vector<std::vector<int64_t>> strides(inputs.size(), std::vector<int64_t>(labels.size(), 0));
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::vector<int64_t> own = strides_of(inputs[i]->shape());
    for (size_t d = 0; d < dim_labels[i].size(); ++d) {
      if (inputs[i]->dim(static_cast<int64_t>(d)) == 1) continue;
      size_t at = static_cast<size_t>(std::find(labels.begin(), labels.end(), dim_labels[i][d]) - labels.begin());
      strides[i][at] += own[d];
    }
  }
  Shape out_shape;
  for (int label : out_labels) out_shape.push_back(size[label]);
  std::vector<int64_t> extent;
  for (int label : labels) extent.push_back(size[label]);
  Tensor out(inputs[0]->dtype(), out_shape);
  dispatch_numeric(node, inputs[0]->dtype(), [&](auto tag) {
    using T = decltype(tag);
    using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
    std::vector<const T*> data;
    for (const Tensor* x : inputs) {
      if (x->dtype() != inputs[0]->dtype()) throw_runtime(node, "inputs of different dtypes");
      data.push_back(x->data<T>());
    }
    T* y = out.data<T>();
    const int64_t n_elements = out.numel();
    int64_t inner = 1;
    for (size_t k = n_out; k < labels.size(); ++k) inner *= extent[k];
    std::vector<int64_t> index(labels.size(), 0);
    for (int64_t o = 0; o < n_elements; ++o) {
      // The output index of element o (row-major), the summed labels at 0.
      int64_t rem = o;
      for (size_t k = n_out; k-- > 0;) {
        index[k] = rem % extent[k];
        rem /= extent[k];
      }
      for (size_t k = n_out; k < labels.size(); ++k) index[k] = 0;
      Acc sum = 0;
      for (int64_t s = 0; s < inner; ++s) {
        Acc product = 1;
        for (size_t i = 0; i < data.size(); ++i) {
          int64_t offset = 0;
          for (size_t k = 0; k < labels.size(); ++k) offset += index[k] * strides[i][k];
          product *= static_cast<Acc>(data[i][offset]);
        }
        sum += product;
        for (size_t k = labels.size(); k-- > n_out;) {
          if (++index[k] < extent[k]) break;
          index[k] = 0;
        }
      }
      y[o] = static_cast<T>(sum);
    }
  });
  return {out};
}

}  // namespace

HETSCHED_REFERENCE_KERNEL("Einsum", check_einsum, compute_einsum);

}  // namespace hetsched::kernels
