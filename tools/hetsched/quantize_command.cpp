// `hetsched quantize` (see quantize_command.h).
#include "quantize_command.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "hetsched/quantize.h"
#include "hetsched/tensor_io.h"

namespace {

using namespace hetsched;

struct QuantizeCommand {
  std::string model, out;
  std::vector<std::string> calibration;
  bool per_channel = false;
  bool dynamic = false;
  int n_random = 8;
  std::string method = "minmax";
  double percentile = 99.999;
  std::string devices = "cpu";
  int* exit_code = nullptr;

  // The k-th file given for each input makes calibration run k.
  std::vector<TensorMap> calibration_runs() const {
    std::map<std::string, std::vector<std::string>> files;
    for (const auto& spec : calibration) {
      auto eq = spec.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
        throw Error(ErrorCode::kUsage, fmt::format("--calibration '{}': expected NAME=FILE", spec));
      files[spec.substr(0, eq)].push_back(spec.substr(eq + 1));
    }
    std::vector<TensorMap> runs;
    for (const auto& [name, list] : files) {
      if (!runs.empty() && list.size() != runs.size())
        throw Error(ErrorCode::kUsage,
                    fmt::format("--calibration: {} files for '{}', {} for another input: give each input as many",
                                list.size(), name, runs.size()));
      runs.resize(list.size());
      for (size_t k = 0; k < list.size(); ++k) {
        try {
          runs[k][name] = read_tensor_file(list[k]);
        } catch (const Error& e) {
          throw Error(e.code() == ErrorCode::kUsage ? ErrorCode::kUsage : ErrorCode::kInvalidInput,
                      fmt::format("--calibration {}: {}", name, e.what()));
        }
      }
    }
    return runs;
  }

  void execute() {
    if (dynamic && !calibration.empty())
      throw Error(ErrorCode::kUsage, "--calibration: dynamic quantization takes each run's range from its own data");
    if (dynamic && method != "minmax")
      throw Error(ErrorCode::kUsage, "--method: dynamic quantization takes each run's range from its own data");
    QuantizeOptions options;
    options.calibration = calibration_runs();
    options.per_channel = per_channel;
    options.dynamic = dynamic;
    options.n_random = n_random;
    options.method = method;
    options.percentile = percentile;
    options.devices = devices;
    QuantizeReport report = quantize_model(model, out, options);
    if (dynamic) {
      fmt::print("{}: {} MatMuls quantized dynamically ({} weights, int8; activations uint8, their ranges taken at "
                 "run time)\n",
                 out, report.n_quantized_matmuls, per_channel ? "per-column" : "per-tensor");
      for (const auto& s : report.skipped) fmt::print("  left in float32: {}\n", s);
      *exit_code = 0;
      return;
    }
    if (report.random_calibration)
      fmt::print(stderr,
                 "hetsched: warning: calibrated on {} random inputs (--calibration NAME=FILE to give real ones): "
                 "the activation ranges are those of random data\n",
                 report.n_calibration_runs);
    fmt::print("{}: {} Convs and {} MatMuls or Gemms quantized ({} weights, int8; activations uint8), {} activations "
               "calibrated over {} runs ({})\n",
               out, report.n_quantized_convs, report.n_quantized_matmuls, per_channel ? "per-channel" : "per-tensor",
               report.n_activations, report.n_calibration_runs,
               method == "percentile" ? fmt::format("the central {}% of each one's values", percentile)
               : method == "entropy"  ? "clipped where least information is lost"
                                      : "min-max");
    for (const auto& s : report.skipped) fmt::print("  left in float32: {}\n", s);
    *exit_code = 0;
  }
};

}  // namespace

void add_quantize_command(CLI::App& app, int* exit_code) {
  auto cmd = std::make_shared<QuantizeCommand>();
  cmd->exit_code = exit_code;
  auto* sub = app.add_subcommand(
      "quantize",
      "quantize a float32 model to int8 and write it as ONNX: its Convs, MatMuls and Gemms (static, QDQ format), or "
      "with --dynamic its MatMuls (ONNX Runtime's dynamic format, for transformers)");
  sub->add_option("model", cmd->model, "the float32 .onnx model")->required();
  sub->add_option("-o,--output", cmd->out, "the quantized .onnx file to write")->required();
  sub->add_option("--calibration", cmd->calibration,
                  "a calibration input NAME=FILE (.npy or .pb); repeat a name for more runs (default: random inputs)");
  sub->add_option("--random", cmd->n_random, "random calibration runs when no --calibration is given")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_flag("--per-channel", cmd->per_channel,
                "one weight scale per output channel of a Conv (needs opset 13) or per column of a MatMul");
  sub->add_flag("--dynamic", cmd->dynamic,
                "quantize the MatMuls with constant weights, activations at run time (no calibration; opset 11)");
  sub->add_option("--method", cmd->method,
                  "calibration: minmax (each activation's whole range), percentile (its range without the "
                  "outermost values, see --percentile) or entropy (its range clipped where the KL divergence "
                  "between its values and their quantized form is least)")
      ->capture_default_str()
      ->check(CLI::IsMember({"minmax", "percentile", "entropy"}));
  sub->add_option("--percentile", cmd->percentile, "with --method percentile: the % of each activation's values kept")
      ->capture_default_str()
      ->check(CLI::Range(50.0, 100.0));
  sub->add_option("--devices", cmd->devices, "where the calibration runs (see `hetsched devices`)")
      ->capture_default_str();
  sub->callback([cmd] { cmd->execute(); });
}
