// Post-training quantization: what `hetsched quantize` runs.
//
// Static (the default), to the QDQ format:
// The model's float32 Convs (constant weights) are quantized: their weights
// to int8, symmetric (zero point 0), one scale per tensor or, with
// per_channel, per output channel; their biases to int32 at scale
// x_scale * w_scale; their input activations, and their outputs (after a
// Relu or Clip that alone reads the Conv's output), to uint8, asymmetric, with the
// range (including 0) each value takes over the calibration inputs (min-max
// calibration; with method "percentile", the range without the (100 - P) / 2
// percent of its values at either end, which a rare outlier no longer
// stretches: two passes over the inputs, the second filling a histogram of
// 2048 bins per value over its min-max range; with "entropy", see
// QuantizeOptions::method). The float32 MatMuls with a constant 2-D B, and
// the Gemms (A not transposed, alpha 1, constant C), are quantized too, as
// ONNX Runtime's QDQ quantizer does: B to int8 like the Convs' weights
// (per_channel: one scale per column of the product), the input activation
// to uint8, the output left float32. Each activation gets one QuantizeLinear -> DequantizeLinear
// pair read by all its consumers; weights and biases are stored quantized
// behind a DequantizeLinear. The file written is a standard ONNX model of
// the graph as hetsched optimised it at load (BatchNormalization folded into
// the Convs, constants folded), opset unchanged, so ONNX Runtime and
// TensorRT read it too; hetsched runs each quantized Conv as one int8
// QLinearConv and each MatMul as one int8 matmul (docs/user-guide.md).
//
// Dynamic (`dynamic`), for transformers, in ONNX Runtime's format
// (quantize_dynamic): each float32 MatMul with a constant 2-D B becomes
// DynamicQuantizeLinear of its input (uint8, the range taken from each run's
// data) -> MatMulInteger with B in int8 (symmetric, zero point 0; one scale,
// or with per_channel one per column) -> Cast to float32 -> Mul by
// x_scale * w_scale. No calibration. An activation read by several MatMuls
// is quantized once. hetsched runs each MatMulInteger and its Cast as one
// oneDNN int8 matmul.
#pragma once

#include <string>
#include <vector>

#include "hetsched/session.h"

namespace hetsched {

struct QuantizeOptions {
  // Inputs to calibrate on, one map per run. Empty: `n_random` random
  // inputs (Session::random_inputs), which QuantizeReport says.
  std::vector<TensorMap> calibration;
  int n_random = 8;
  // Static calibration: "minmax", "percentile" (keeping `percentile` % of
  // each activation's values, 50 < P <= 100; ONNX Runtime's default 99.999)
  // or "entropy" (each range clipped where the KL divergence between the
  // values and their quantized form is least, as TensorRT calibrates).
  std::string method = "minmax";
  double percentile = 99.999;
  bool per_channel = false;
  bool dynamic = false;  // MatMuls, no calibration (see above)
  // Where the calibration runs (hetsched devices syntax).
  std::string devices = "cpu";
};

struct QuantizeReport {
  int n_quantized_convs = 0;
  int n_quantized_matmuls = 0;
  int n_activations = 0;        // values given a QuantizeLinear -> DequantizeLinear pair
  int n_calibration_runs = 0;
  bool random_calibration = false;
  std::vector<std::string> skipped;  // "<node label>: why", Convs (MatMuls) left in float32
};

// Quantizes `model` (a path) as above and writes `out_path`. Throws
// Error(kUnsupported) for a model already quantized, without a Conv or
// MatMul (a MatMul, dynamic) to quantize, or of an opset before 10 (13 with
// per_channel, which needs DequantizeLinear's axis; 11 dynamic, for
// DynamicQuantizeLinear), Error(kUsage) for an unknown method, a percentile
// outside (50, 100] or a method given with dynamic, and Error(kInvalidInput)
// for calibration inputs the model does not take (naming the run).
QuantizeReport quantize_model(const std::string& model, const std::string& out_path,
                              const QuantizeOptions& options = {});

}  // namespace hetsched
