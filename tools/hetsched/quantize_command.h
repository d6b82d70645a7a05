// `hetsched quantize MODEL -o OUT.onnx [--calibration NAME=FILE ...]
// [--per-channel]`: static post-training quantization to the QDQ format
// (hetsched/quantize.h).
#pragma once

namespace CLI {
class App;
}

// Adds the `quantize` subcommand to app; its callback sets *exit_code (0)
// on success, errors are thrown as hetsched::Error. exit_code must outlive
// app's parsing.
void add_quantize_command(CLI::App& app, int* exit_code);
