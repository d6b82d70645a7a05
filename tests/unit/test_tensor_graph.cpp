#include <gtest/gtest.h>

#include "hetsched/graph.h"
#include "hetsched/tensor_io.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>

namespace hetsched {
namespace {

TEST(Tensor, AllocatesZeroedAndShares) {
  Tensor t(DType::kFloat32, {2, 3});
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(t.nbytes(), 24u);
  EXPECT_EQ(t.data<float>()[5], 0.0f);
  Tensor alias = t;
  alias.data<float>()[0] = 7.0f;
  EXPECT_EQ(t.data<float>()[0], 7.0f);
  Tensor copy = t.clone();
  copy.data<float>()[0] = 1.0f;
  EXPECT_EQ(t.data<float>()[0], 7.0f);
  EXPECT_THROW(t.data<int64_t>(), Error);
}

TEST(Tensor, ReshapeKeepsCount) {
  Tensor t = Tensor::from_vector<int64_t>({2, 2}, {1, 2, 3, 4});
  EXPECT_EQ(t.reshaped({4}).shape(), Shape({4}));
  EXPECT_THROW(t.reshaped({3}), Error);
  EXPECT_EQ(t.to_double_vector()[3], 4.0);
}

// a -> n0 -> b -> n1 -> c, with nodes given out of order.
Graph make_chain(bool cyclic) {
  Graph g;
  ValueId a = g.add_value({.name = "a"});
  ValueId b = g.add_value({.name = "b"});
  ValueId c = g.add_value({.name = "c"});
  g.inputs = {a};
  g.outputs = {c};
  Node n1;
  n1.name = "n1";
  n1.op_type = "Relu";
  n1.inputs = {b};
  n1.outputs = {c};
  Node n0;
  n0.name = "n0";
  n0.op_type = cyclic ? "Add" : "Relu";
  n0.inputs = cyclic ? std::vector<ValueId>{a, c} : std::vector<ValueId>{a};
  n0.outputs = {b};
  g.add_node(n1);
  g.add_node(n0);
  return g;
}

TEST(Tensor, UnsignedIntegersRoundTripThroughNpy) {
  auto path = std::filesystem::temp_directory_path() / ("hetsched-u64-" + std::to_string(::getpid()) + ".npy");
  Tensor u64 = Tensor::from_vector<uint64_t>({2}, {std::numeric_limits<uint64_t>::max(), 3});
  write_npy(path.string(), u64);
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(bytes.find("'<u8'"), std::string::npos);  // what numpy names uint64
  Tensor back = read_npy(path.string());
  EXPECT_EQ(back.dtype(), DType::kUInt64);
  EXPECT_EQ(back.data<uint64_t>()[0], std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(back.to_int64_vector()[1], 3);
  for (DType d : {DType::kUInt16, DType::kUInt32}) {
    write_npy(path.string(), Tensor(d, {4}));
    EXPECT_EQ(read_npy(path.string()).dtype(), d) << dtype_name(d);
  }
  std::filesystem::remove(path);
}

TEST(Graph, FinalizeSortsTopologically) {
  Graph g = make_chain(false);
  g.finalize();
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].name, "n0");
  EXPECT_EQ(g.values[g.find_value("b")].producer, 0);
  EXPECT_EQ(g.values[g.find_value("b")].consumers, std::vector<NodeId>({1}));
}

TEST(Graph, FinalizeRejectsCycle) {
  Graph g = make_chain(true);
  try {
    g.finalize();
    FAIL() << "cycle not detected";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
    EXPECT_NE(std::string(e.what()).find("cycle"), std::string::npos);
  }
}

TEST(Graph, SubgraphViewBoundary) {
  Graph g = make_chain(false);
  g.finalize();
  SubgraphView first = SubgraphView::of(g, {0});
  EXPECT_EQ(first.inputs, std::vector<ValueId>({g.find_value("a")}));
  EXPECT_EQ(first.outputs, std::vector<ValueId>({g.find_value("b")}));
  SubgraphView both = SubgraphView::of(g, {1, 0});
  EXPECT_EQ(both.outputs, std::vector<ValueId>({g.find_value("c")}));
}

}  // namespace
}  // namespace hetsched
