// A structure-aware mutator for the ONNX model fuzzer: byte-level mutations
// of a protobuf rarely survive parsing, so most mutations here parse the
// model, change one thing a model file may say (an op type, an attribute, a
// node's inputs, an initializer's dims, dtype or data, an input's shape,
// the opset) and serialise it again. The checker, shape inference, the
// kernels' checks and constant folding then see models that are nearly
// valid, which is where the loaders' bugs hide. A quarter of the mutations
// stay libFuzzer's own byte-level ones, which reach the parser itself.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "kernels/kernel.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace hetsched::fuzz {

class OnnxMutator {
 public:
  explicit OnnxMutator(unsigned seed) : rng_(seed) {}

  // Mutates `model` in place; false when nothing applicable was found.
  bool mutate(onnx::ModelProto& model) {
    onnx::GraphProto& g = *model.mutable_graph();
    switch (pick(10)) {
      case 0: return mutate_op_type(g);
      case 1:
      case 2: return mutate_attribute(g);
      case 3: return add_attribute(g);
      case 4: return mutate_node_inputs(g);
      case 5:
      case 6: return mutate_initializer(g);
      case 7: return mutate_value_info(g);
      case 8: return mutate_nodes(g);
      default: return mutate_opset(model);
    }
  }

 private:
  size_t pick(size_t n) { return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }
  template <typename T>
  const T& one_of(const std::vector<T>& items) { return items[pick(items.size())]; }

  int64_t interesting_int() {
    static const std::vector<int64_t> values = {
        -1, 0, 1, 2, 3, 4, 7, 8, 16, 255, 256, -2, -3, 1 << 16, int64_t{1} << 31, int64_t{1} << 32,
        int64_t{1} << 40, std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(),
        std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min()};
    return pick(4) == 0 ? static_cast<int64_t>(rng_()) % 100 - 50 : one_of(values);
  }
  float interesting_float() {
    static const std::vector<float> values = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, 2.0f, 1e-30f, 1e30f, 3.4e38f,
                                              std::numeric_limits<float>::infinity(),
                                              -std::numeric_limits<float>::infinity(),
                                              std::numeric_limits<float>::quiet_NaN(),
                                              std::numeric_limits<float>::denorm_min()};
    return one_of(values);
  }
  std::string interesting_string() {
    static const std::vector<std::string> values = {
        "", "nearest", "linear", "cubic", "constant", "reflect", "edge", "wrap", "NOTSET", "SAME_UPPER",
        "SAME_LOWER", "VALID", "DCR", "CRD", "add", "mul", "max", "min", "none", "half_pixel", "align_corners",
        "asymmetric", "pytorch_half_pixel", "tf_crop_and_resize", "round_prefer_floor", "floor", "ceil", "tanh"};
    return one_of(values);
  }

  onnx::NodeProto* some_node(onnx::GraphProto& g) {
    return g.node_size() == 0 ? nullptr : g.mutable_node(static_cast<int>(pick(g.node_size())));
  }

  // Every value name a node input may refer to.
  std::vector<std::string> value_names(const onnx::GraphProto& g) {
    std::vector<std::string> names = {""};
    for (const auto& in : g.input()) names.push_back(in.name());
    for (const auto& init : g.initializer()) names.push_back(init.name());
    for (const auto& node : g.node())
      for (const auto& out : node.output()) names.push_back(out);
    return names;
  }

  bool mutate_op_type(onnx::GraphProto& g) {
    onnx::NodeProto* node = some_node(g);
    if (!node) return false;
    static const std::vector<std::string> ops = kernels::reference_op_types();
    node->set_op_type(one_of(ops));
    return true;
  }

  bool mutate_attribute(onnx::GraphProto& g) {
    onnx::NodeProto* node = some_node(g);
    if (!node || node->attribute_size() == 0) return false;
    onnx::AttributeProto& a = *node->mutable_attribute(static_cast<int>(pick(node->attribute_size())));
    switch (a.type()) {
      case onnx::AttributeProto::INT: a.set_i(interesting_int()); return true;
      case onnx::AttributeProto::FLOAT: a.set_f(interesting_float()); return true;
      case onnx::AttributeProto::STRING: a.set_s(interesting_string()); return true;
      case onnx::AttributeProto::INTS:
        if (a.ints_size() > 0 && pick(3) != 0) a.set_ints(static_cast<int>(pick(a.ints_size())), interesting_int());
        else if (a.ints_size() > 0 && pick(2) == 0) a.mutable_ints()->RemoveLast();
        else a.add_ints(interesting_int());
        return true;
      case onnx::AttributeProto::FLOATS:
        if (a.floats_size() > 0) a.set_floats(static_cast<int>(pick(a.floats_size())), interesting_float());
        else a.add_floats(interesting_float());
        return true;
      case onnx::AttributeProto::TENSOR: return mutate_tensor(*a.mutable_t());
      default:  // graphs and the like: dropped
        node->mutable_attribute()->DeleteSubrange(static_cast<int>(pick(node->attribute_size())), 1);
        return true;
    }
  }

  bool add_attribute(onnx::GraphProto& g) {
    onnx::NodeProto* node = some_node(g);
    if (!node) return false;
    static const std::vector<std::string> names = {
        "axis", "axes", "perm", "pads", "strides", "kernel_shape", "dilations", "group", "keepdims", "to",
        "alpha", "beta", "epsilon", "mode", "auto_pad", "ceil_mode", "count_include_pad", "blocksize", "transA",
        "transB", "split", "starts", "ends", "k", "upper", "exclusive", "reverse", "noop_with_empty_axes",
        "select_last_index", "output_padding", "output_shape", "allowzero", "reduction", "scales", "value",
        "value_float", "value_ints", "coordinate_transformation_mode", "batch_dims", "num_outputs", "detect_positive"};
    onnx::AttributeProto* a = node->add_attribute();
    a->set_name(one_of(names));
    switch (pick(4)) {
      case 0: a->set_type(onnx::AttributeProto::INT); a->set_i(interesting_int()); break;
      case 1: a->set_type(onnx::AttributeProto::FLOAT); a->set_f(interesting_float()); break;
      case 2: a->set_type(onnx::AttributeProto::STRING); a->set_s(interesting_string()); break;
      default:
        a->set_type(onnx::AttributeProto::INTS);
        for (size_t i = 0, n = pick(5); i < n; ++i) a->add_ints(interesting_int());
    }
    return true;
  }

  bool mutate_node_inputs(onnx::GraphProto& g) {
    onnx::NodeProto* node = some_node(g);
    if (!node) return false;
    std::vector<std::string> names = value_names(g);
    switch (pick(3)) {
      case 0:
        if (node->input_size() == 0) return false;
        node->set_input(static_cast<int>(pick(node->input_size())), one_of(names));
        return true;
      case 1: node->add_input(one_of(names)); return true;
      default:
        if (node->input_size() == 0) return false;
        node->mutable_input()->RemoveLast();
        return true;
    }
  }

  bool mutate_tensor(onnx::TensorProto& t) {
    switch (pick(5)) {
      case 0:
        if (t.dims_size() > 0 && pick(2) == 0) t.set_dims(static_cast<int>(pick(t.dims_size())), interesting_int());
        else if (t.dims_size() > 0 && pick(2) == 0) t.mutable_dims()->RemoveLast();
        else t.add_dims(pick(2) == 0 ? 1 : interesting_int());
        return true;
      case 1: {
        static const std::vector<int32_t> types = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 16, 0, 99};
        t.set_data_type(one_of(types));
        return true;
      }
      case 2: {
        // One element of the data replaced by an interesting value of the same width.
        std::string* raw = t.mutable_raw_data();
        if (raw->empty()) {
          if (t.int64_data_size() > 0)
            t.set_int64_data(static_cast<int>(pick(t.int64_data_size())), interesting_int());
          else if (t.float_data_size() > 0)
            t.set_float_data(static_cast<int>(pick(t.float_data_size())), interesting_float());
          else if (t.int32_data_size() > 0)
            t.set_int32_data(static_cast<int>(pick(t.int32_data_size())), static_cast<int32_t>(interesting_int()));
          else
            return false;
          return true;
        }
        size_t width = t.data_type() == onnx::TensorProto::INT64 || t.data_type() == onnx::TensorProto::DOUBLE ? 8 : 4;
        if (raw->size() < width) return false;
        size_t at = pick(raw->size() / width) * width;
        if (t.data_type() == onnx::TensorProto::FLOAT) {
          float f = interesting_float();
          std::memcpy(raw->data() + at, &f, sizeof f);
        } else {
          int64_t v = interesting_int();
          std::memcpy(raw->data() + at, &v, width);
        }
        return true;
      }
      case 3: {
        std::string* raw = t.mutable_raw_data();
        if (pick(2) == 0 && !raw->empty()) raw->resize(pick(raw->size()));
        else raw->append(std::string(1 + pick(16), '\0'));
        return true;
      }
      default:
        t.set_data_location(t.data_location() == onnx::TensorProto::EXTERNAL ? onnx::TensorProto::DEFAULT
                                                                              : onnx::TensorProto::EXTERNAL);
        return true;
    }
  }

  bool mutate_initializer(onnx::GraphProto& g) {
    if (g.initializer_size() == 0) return false;
    return mutate_tensor(*g.mutable_initializer(static_cast<int>(pick(g.initializer_size()))));
  }

  bool mutate_value_info(onnx::GraphProto& g) {
    auto* list = pick(2) == 0 ? g.mutable_input() : g.mutable_output();
    if (list->empty()) return false;
    onnx::TypeProto_Tensor* tt = (*list)[static_cast<int>(pick(list->size()))].mutable_type()->mutable_tensor_type();
    switch (pick(4)) {
      case 0: tt->set_elem_type(static_cast<int32_t>(pick(17))); return true;
      case 1: tt->clear_shape(); return true;
      case 2: tt->mutable_shape()->add_dim()->set_dim_value(pick(2) == 0 ? 1 : interesting_int()); return true;
      default: {
        auto* dims = tt->mutable_shape()->mutable_dim();
        if (dims->empty()) return false;
        auto& dim = (*dims)[static_cast<int>(pick(dims->size()))];
        if (pick(3) == 0) dim.set_dim_param("N");
        else dim.set_dim_value(interesting_int());
        return true;
      }
    }
  }

  bool mutate_nodes(onnx::GraphProto& g) {
    if (g.node_size() == 0) return false;
    int i = static_cast<int>(pick(g.node_size()));
    switch (pick(3)) {
      case 0: {  // a copy of a node, its outputs renamed, feeding another node
        onnx::NodeProto copy = g.node(i);
        for (auto& out : *copy.mutable_output()) out += "_dup";
        copy.set_name(copy.name() + "_dup");
        *g.add_node() = copy;
        if (copy.output_size() > 0) {
          onnx::NodeProto* reader = some_node(g);
          if (reader->input_size() > 0) reader->set_input(static_cast<int>(pick(reader->input_size())), copy.output(0));
        }
        return true;
      }
      case 1: g.mutable_node()->DeleteSubrange(i, 1); return true;
      default: g.mutable_node()->SwapElements(i, static_cast<int>(pick(g.node_size()))); return true;
    }
  }

  bool mutate_opset(onnx::ModelProto& model) {
    if (model.opset_import_size() == 0) return false;
    model.mutable_opset_import(0)->set_version(static_cast<int64_t>(6 + pick(14)));
    return true;
  }

  std::mt19937_64 rng_;
};

// libFuzzer's custom-mutator hook, for the ONNX target.
inline size_t mutate_onnx_model(uint8_t* data, size_t size, size_t max_size, unsigned seed) {
  OnnxMutator mutator(seed);
  onnx::ModelProto model;
  if (seed % 4 == 0 || !model.ParseFromArray(data, static_cast<int>(size)) || !model.has_graph())
    return LLVMFuzzerMutate(data, size, max_size);
  int n_mutations = 1 + static_cast<int>(seed % 3);
  bool changed = false;
  for (int i = 0; i < n_mutations; ++i) changed = mutator.mutate(model) || changed;
  std::string bytes;
  if (!changed || !model.SerializeToString(&bytes) || bytes.size() > max_size)
    return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, bytes.data(), bytes.size());
  return bytes.size();
}

}  // namespace hetsched::fuzz
