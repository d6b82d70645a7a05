// Einsum that is a (batched) matrix product becomes MatMul, with a Transpose
// of the last two dims where an operand is given transposed: MaxViT's
// attention ("BGHID,BGHJD->BGHIJ" is Q K^T, "BGHIJ,BGHJD->BGHID" is A V)
// then runs on the CPU backend's MatMul instead of the reference Einsum.
#include <algorithm>
#include <string>

#include "graph/optimize.h"

namespace hetsched {

namespace {

// The equation's terms, when it has two inputs, an explicit output and
// letters only (no "...", no letter twice in a term).
bool parse_terms(const std::string& equation, std::string& a, std::string& b, std::string& out) {
  std::string e;
  for (char ch : equation)
    if (ch != ' ') e += ch;
  size_t comma = e.find(','), arrow = e.find("->");
  if (comma == std::string::npos || arrow == std::string::npos || comma > arrow) return false;
  a = e.substr(0, comma);
  b = e.substr(comma + 1, arrow - comma - 1);
  out = e.substr(arrow + 2);
  for (const std::string* t : {&a, &b, &out}) {
    for (size_t i = 0; i < t->size(); ++i) {
      char ch = (*t)[i];
      if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'))) return false;
      if (t->find(ch, i + 1) != std::string::npos) return false;
    }
  }
  return true;
}

// A Transpose of `value`'s last two dims, added to the graph; its output.
ValueId transposed(Graph& graph, ValueId value, const Node& einsum, const std::string& suffix) {
  Value t;
  t.name = einsum.name + suffix;
  t.dtype = graph.values[value].dtype;
  t.has_shape = graph.values[value].has_shape;
  t.shape = graph.values[value].shape;
  t.dim_params = graph.values[value].dim_params;
  size_t rank = t.shape.size();
  if (t.has_shape && rank >= 2) std::swap(t.shape[rank - 2], t.shape[rank - 1]);
  if (t.dim_params.size() == rank && rank >= 2) std::swap(t.dim_params[rank - 2], t.dim_params[rank - 1]);
  std::vector<int64_t> perm(rank);
  for (size_t d = 0; d < rank; ++d) perm[d] = static_cast<int64_t>(d);
  std::swap(perm[rank - 2], perm[rank - 1]);
  ValueId out = graph.add_value(std::move(t));
  Node node;
  node.name = einsum.name + suffix;
  node.op_type = "Transpose";
  node.opset = einsum.opset;
  node.inputs = {value};
  node.outputs = {out};
  Attribute a;
  a.kind = Attribute::Kind::kInts;
  a.ints = perm;
  node.attributes["perm"] = a;
  graph.add_node(std::move(node));
  return out;
}

}  // namespace

int einsum_as_matmul(Graph& graph) {
  int n_rewritten = 0;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    if (graph.nodes[n].op_type != "Einsum" || graph.nodes[n].inputs.size() != 2) continue;
    std::string a, b, out;
    if (!parse_terms(graph.nodes[n].attr_string("equation", ""), a, b, out)) continue;
    const size_t rank = out.size();
    if (rank < 2 || a.size() != rank || b.size() != rank) continue;
    const std::string batch = out.substr(0, rank - 2);
    if (a.compare(0, rank - 2, batch) != 0 || b.compare(0, rank - 2, batch) != 0) continue;
    const char i = out[rank - 2], j = out[rank - 1];
    // The contracted label: A's last two are {i, k}, B's {k, j}, in either order.
    const char k = a[rank - 2] == i ? a[rank - 1] : a[rank - 2];
    if (k == i || k == j || out.find(k) != std::string::npos) continue;
    const bool a_plain = a[rank - 2] == i && a[rank - 1] == k, a_swapped = a[rank - 2] == k && a[rank - 1] == i;
    const bool b_plain = b[rank - 2] == k && b[rank - 1] == j, b_swapped = b[rank - 2] == j && b[rank - 1] == k;
    if (!(a_plain || a_swapped) || !(b_plain || b_swapped)) continue;
    ValueId lhs = graph.nodes[n].inputs[0], rhs = graph.nodes[n].inputs[1];
    const Node einsum = graph.nodes[n];  // add_node may move the nodes
    if (a_swapped) lhs = transposed(graph, lhs, einsum, "/transpose_a");
    if (b_swapped) rhs = transposed(graph, rhs, einsum, "/transpose_b");
    Node& node = graph.nodes[n];
    node.op_type = "MatMul";
    node.attributes.clear();
    node.inputs = {lhs, rhs};
    ++n_rewritten;
  }
  if (n_rewritten) graph.finalize();
  return n_rewritten;
}

}  // namespace hetsched
