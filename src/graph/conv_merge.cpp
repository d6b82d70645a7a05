// IOS's operator merge key (see conv_merge.h).
#include "graph/conv_merge.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

namespace hetsched {

namespace {

std::string attribute_text(const Attribute& a) {
  switch (a.kind) {
    case Attribute::Kind::kInt: return fmt::format("{}", a.i);
    case Attribute::Kind::kFloat: return fmt::format("{}", a.f);
    case Attribute::Kind::kString: return a.s;
    case Attribute::Kind::kInts: return fmt::format("[{}]", fmt::join(a.ints, ","));
    case Attribute::Kind::kFloats: return fmt::format("[{}]", fmt::join(a.floats, ","));
    case Attribute::Kind::kStrings: return fmt::format("[{}]", fmt::join(a.strings, ","));
    // Tensor and graph attributes never occur on the ops merged here; two
    // such nodes never compare equal.
    case Attribute::Kind::kTensor:
    case Attribute::Kind::kGraph: return fmt::format("@{}", static_cast<const void*>(&a));
  }
  return "?";
}

std::string attributes_text(const Node& node) {
  std::string text;
  for (const auto& [name, attribute] : node.attributes) text += fmt::format(" {}={}", name, attribute_text(attribute));
  return text;
}

// A small constant's bytes (Clip's bounds), so that equal epilogues written
// with separate constants still compare equal; a large one by identity.
std::string constant_text(const Graph& graph, ValueId v) {
  const Tensor& t = *graph.values[v].initializer;
  if (t.nbytes() > 64) return fmt::format("c{}", v);
  std::string text = fmt::format("{}:", static_cast<int>(t.dtype()));
  const auto* bytes = static_cast<const unsigned char*>(t.raw());
  for (size_t i = 0; i < t.nbytes(); ++i) text += fmt::format("{:02x}", bytes[i]);
  return text;
}

}  // namespace

std::string conv_merge_key(const Graph& graph, const std::vector<NodeId>& unit) {
  const Node& head = graph.nodes[unit[0]];
  if (head.op_type != "Conv" || !head.domain.empty()) return "";
  ValueId x = head.input(0), w = head.input(1), b = head.input(2);
  if (x == kNoValue || graph.values[x].is_constant()) return "";
  if (w == kNoValue || !graph.values[w].is_constant() || !graph.values[w].shape_is_static()) return "";
  if (b != kNoValue && !graph.values[b].is_constant()) return "";
  const Shape& w_shape = graph.values[w].shape;
  std::string key = fmt::format("Conv x={} w=?x{}{}{}", x,
                                fmt::join(std::vector<int64_t>(w_shape.begin() + std::min<size_t>(1, w_shape.size()),
                                                               w_shape.end()),
                                          "x"),
                                b == kNoValue ? "" : " bias", attributes_text(head));
  std::set<ValueId> produced_inside(head.outputs.begin(), head.outputs.end());
  for (size_t k = 1; k < unit.size(); ++k) {
    const Node& node = graph.nodes[unit[k]];
    key += fmt::format(" | {}{}", node.op_type, attributes_text(node));
    for (ValueId v : node.inputs) {
      if (v == kNoValue)
        key += " none";
      else if (graph.values[v].is_constant())
        key += " " + constant_text(graph, v);
      else if (produced_inside.count(v))
        key += " inside";
      else
        return "";  // reads another tensor (a residual): not a per-channel epilogue
    }
    produced_inside.insert(node.outputs.begin(), node.outputs.end());
  }
  return key;
}

}  // namespace hetsched
