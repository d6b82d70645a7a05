// Einsum's reference kernel on the forms ONNX's node tests leave out: the
// implicit output, "..." broadcasting a dim of 1, a diagonal inside one term,
// three operands, integers, and an equation that does not parse.
#include <gtest/gtest.h>

#include "kernel_test_util.h"

namespace hetsched {
namespace {

using testing::attr_string;
using testing::f32;
using testing::i64;
using testing::run_reference_op;

Tensor einsum(const std::string& equation, const std::vector<Tensor>& inputs) {
  return run_reference_op("Einsum", inputs, {{"equation", attr_string(equation)}}, 1, 12)[0];
}

const Tensor kA = f32({2, 3}, {1, 2, 3, 4, 5, 6});
const Tensor kB = f32({3, 2}, {1, 0, 0, 1, 1, 1});

TEST(ReferenceEinsum, ExplicitAndImplicitOutputs) {
  EXPECT_EQ(einsum("ij,jk->ik", {kA, kB}).to_double_vector(), std::vector<double>({4, 5, 10, 11}));
  // Implicit: the letters that appear once, alphabetically: "ij,jk" -> "ik".
  EXPECT_EQ(einsum("ij,jk", {kA, kB}).to_double_vector(), std::vector<double>({4, 5, 10, 11}));
  EXPECT_EQ(einsum("ij->ji", {kA}).to_double_vector(), std::vector<double>({1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(einsum("ij->", {kA}).to_double_vector(), std::vector<double>({21}));
  EXPECT_EQ(einsum("ij,ij,ij->i", {kA, kA, kA}).to_double_vector(), std::vector<double>({36, 405}));
}

TEST(ReferenceEinsum, DiagonalEllipsisAndIntegers) {
  EXPECT_EQ(einsum("ii->i", {f32({2, 2}, {1, 2, 3, 4})}).to_double_vector(), std::vector<double>({1, 4}));
  // [2, 1, 3] x [3] with "...j,j->...": the ellipsis keeps [2, 1].
  Tensor y = einsum("...j,j->...", {f32({2, 1, 3}, {1, 2, 3, 4, 5, 6}), f32({3}, {1, 1, 1})});
  EXPECT_EQ(y.shape(), Shape({2, 1}));
  EXPECT_EQ(y.to_double_vector(), std::vector<double>({6, 15}));
  // A broadcast dim of 1 against 2: [1, 2] and [2, 2] batch-multiplied.
  Tensor z = einsum("...i,...i->...", {f32({1, 2}, {1, 2}), f32({2, 2}, {1, 1, 2, 2})});
  EXPECT_EQ(z.to_double_vector(), std::vector<double>({3, 6}));
  EXPECT_EQ(einsum("i,i->", {i64({3}, {1, 2, 3}), i64({3}, {4, 5, 6})}).to_int64_vector(),
            std::vector<int64_t>({32}));
}

TEST(ReferenceEinsum, AnEquationThatDoesNotParseIsAnError) {
  EXPECT_THROW(einsum("ij,j$->i", {kA, f32({3}, {1, 1, 1})}), Error);
}

}  // namespace
}  // namespace hetsched
