// Concat on the GPU: one 2-D device-to-device copy per input
// (cudaMemcpy2DAsync), each input a block of rows in the output. Any dtype:
// it moves bytes.
#include <fmt/format.h>

#include "backends/cuda/check.h"
#include "backends/cuda/ops/op_util.h"
#include "kernels/reference/common.h"

namespace hetsched::cuda::ops {
namespace {

std::string concat_declines(const Graph& graph, const Node& node) {
  if (node.inputs.empty()) return "no inputs";
  DType dtype = graph.values[node.outputs[0]].dtype;
  for (ValueId v : node.inputs)
    if (v == kNoValue || graph.values[v].dtype != dtype) return "inputs of different dtypes";
  if (graph.values[node.outputs[0]].shape.empty()) return "scalar inputs";
  return "";
}

class ConcatOp : public GpuOp {
 public:
  explicit ConcatOp(const GpuPrepare& p) : GpuOp(p, "CUDA 2-D copies (concat)") {
    const Node& node = p.node();
    const Shape& out = shape_of(p.graph, node.outputs[0]);
    int64_t rank = static_cast<int64_t>(out.size());
    int64_t axis = kernels::normalize_axis(node, node.attr_int("axis", 0), rank);
    size_t element = dtype_size(p.value(node.outputs[0]).dtype);
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= out[static_cast<size_t>(d)];
    for (int64_t d = axis + 1; d < rank; ++d) inner *= out[static_cast<size_t>(d)];
    rows_ = static_cast<size_t>(outer);
    out_row_bytes_ = static_cast<size_t>(out[static_cast<size_t>(axis)] * inner) * element;
    size_t offset = 0;
    for (ValueId v : node.inputs) {
      Part part;
      part.operand = bind(p, v);
      part.row_bytes = static_cast<size_t>(shape_of(p.graph, v)[static_cast<size_t>(axis)] * inner) * element;
      part.offset = offset;
      offset += part.row_bytes;
      if (part.row_bytes > 0) parts_.push_back(part);
    }
  }

  void enqueue(const GpuStream& s, const void* const* in, void* const* out) const override {
    if (rows_ == 0) return;
    for (const Part& part : parts_) {
      char* dst = static_cast<char*>(out[0]) + part.offset;
      const void* src = data(part.operand, in);
      if (rows_ == 1 || out_row_bytes_ > kMaxPitch) {
        // One copy per row: cudaMemcpy2DAsync refuses pitches above the
        // device's memPitch (2^31 - 1 bytes); rows that long are few.
        const char* from = static_cast<const char*>(src);
        for (size_t r = 0; r < rows_; ++r)
          HETSCHED_CUDA_CHECK(cudaMemcpyAsync(dst + r * out_row_bytes_, from + r * part.row_bytes, part.row_bytes,
                                              cudaMemcpyDeviceToDevice, s.stream));
      } else {
        HETSCHED_CUDA_CHECK(cudaMemcpy2DAsync(dst, out_row_bytes_, src, part.row_bytes, part.row_bytes, rows_,
                                              cudaMemcpyDeviceToDevice, s.stream));
      }
    }
  }

 private:
  static constexpr size_t kMaxPitch = 2147483647;
  struct Part {
    Operand operand;
    size_t row_bytes = 0;  // the input's bytes per output row (its block)
    size_t offset = 0;     // where its block starts within an output row
  };
  std::vector<Part> parts_;
  size_t rows_ = 0, out_row_bytes_ = 0;
};

std::unique_ptr<GpuOp> prepare_concat(const GpuPrepare& p) { return std::make_unique<ConcatOp>(p); }

}  // namespace

HETSCHED_CUDA_KERNEL("Concat", concat_declines, prepare_concat, "cudaMemcpy2DAsync per input");

}  // namespace hetsched::cuda::ops
