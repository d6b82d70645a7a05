// The Reduce* ops on the GPU (float32): ReduceSum, ReduceMean, ReduceMax,
// ReduceMin, ReduceSumSquare, ReduceL1 and ReduceL2 over any set of axes, by
// the own reduction kernel (a block per output for long reductions, a
// thread per output for short ones). Axes as the reference kernel reads
// them: the `axes` attribute or a constant int64 input; none reduces all.
#include <fmt/format.h>

#include "backends/cuda/ops/op_util.h"

namespace hetsched::cuda::ops {
namespace {

kern::Reduction reduction_of(const std::string& op) {
  if (op == "ReduceSum") return kern::Reduction::kSum;
  if (op == "ReduceMean") return kern::Reduction::kMean;
  if (op == "ReduceMax") return kern::Reduction::kMax;
  if (op == "ReduceMin") return kern::Reduction::kMin;
  if (op == "ReduceSumSquare") return kern::Reduction::kSumSquare;
  if (op == "ReduceL1") return kern::Reduction::kL1;
  return kern::Reduction::kL2;
}

// Which dims of `x` the node reduces; "" or why the GPU does not run it.
std::string reduced_dims(const Graph& graph, const Node& node, std::vector<bool>* reduced) {
  const int64_t rank = static_cast<int64_t>(graph.values[node.input(0)].shape.size());
  std::vector<int64_t> axes;
  if (node.has_attr("axes")) {
    axes = node.attr_ints("axes");
  } else if (node.input(1) != kNoValue) {
    std::optional<std::vector<int64_t>> given = constant_ints(graph, node.input(1));
    if (!given) return "axes computed at run time";
    axes = *given;
  }
  if (axes.empty() && node.attr_int("noop_with_empty_axes", 0) != 0) return "noop_with_empty_axes";
  reduced->assign(static_cast<size_t>(rank), axes.empty());
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) return "an axis out of range";
    size_t d = static_cast<size_t>(a < 0 ? a + rank : a);
    if ((*reduced)[d]) return "an axis given twice";
    (*reduced)[d] = true;
  }
  return "";
}

std::string reduce_declines(const Graph& graph, const Node& node) {
  if (node.input(0) == kNoValue) return "no data input";
  if (std::string why = need_float32(graph, node, {0}); !why.empty()) return why;
  if (std::string why = need_rank_at_most(graph, node); !why.empty()) return why;
  std::vector<bool> reduced;
  return reduced_dims(graph, node, &reduced);
}

class ReduceOp : public GpuOp {
 public:
  explicit ReduceOp(const GpuPrepare& p) : GpuOp(p, "") {
    const Node& node = p.node();
    x_ = bind(p, node.inputs[0]);
    op_ = reduction_of(node.op_type);
    std::vector<bool> reduced;
    reduced_dims(p.graph, node, &reduced);
    kern::Strided in = dense_layout(shape_of(p.graph, node.inputs[0]));
    for (int d = 0; d < in.rank; ++d) {
      kern::Strided& part = reduced[static_cast<size_t>(d)] ? reduced_ : kept_;
      part.dims[part.rank] = in.dims[d];
      part.strides[part.rank] = in.strides[d];
      ++part.rank;
    }
    set_what(fmt::format("CUDA reduction over {} of {} dims", reduced_.rank, in.rank));
  }

  void enqueue(const GpuStream& s, const void* const* in, void* const* out) const override {
    kern::reduce(op_, static_cast<const float*>(data(x_, in)), kept_, reduced_, static_cast<float*>(out[0]), s.stream);
  }

 private:
  Operand x_;
  kern::Reduction op_ = kern::Reduction::kSum;
  kern::Strided kept_, reduced_;  // the input's kept and reduced dims, with its strides
};

std::unique_ptr<GpuOp> prepare_reduce(const GpuPrepare& p) { return std::make_unique<ReduceOp>(p); }

}  // namespace

#define HETSCHED_CUDA_REDUCE(OP) HETSCHED_CUDA_KERNEL(OP, reduce_declines, prepare_reduce, "own CUDA reduction kernel")
HETSCHED_CUDA_REDUCE("ReduceSum");
HETSCHED_CUDA_REDUCE("ReduceMean");
HETSCHED_CUDA_REDUCE("ReduceMax");
HETSCHED_CUDA_REDUCE("ReduceMin");
HETSCHED_CUDA_REDUCE("ReduceSumSquare");
HETSCHED_CUDA_REDUCE("ReduceL1");
HETSCHED_CUDA_REDUCE("ReduceL2");

}  // namespace hetsched::cuda::ops
