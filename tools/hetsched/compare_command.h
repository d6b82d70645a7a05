// `hetsched compare MODEL (--devices SPEC | --platform FILE) [--schedulers
// a,b,...] [--measure] [--json FILE]`: every scheduler's plan predicted by
// the simulator (and measured with --measure) against the best single
// device and the lower bound (hetsched/compare.h).
#pragma once

#include <string>

#include "hetsched/compare.h"

namespace CLI {
class App;
}

namespace hetsched::cli {

// The comparison as `compare` prints it: the lower bound, each device alone,
// then every scheduler (predicted, and measured when `measured_runs`).
void print_comparison(const Comparison& comparison, const Graph& graph, const Platform& platform,
                      const std::string& model, bool measured_runs);

}  // namespace hetsched::cli

// Adds the `compare` subcommand to app; its callback sets *exit_code (0) on
// success; failures are thrown as hetsched::Error. exit_code must outlive
// app's parsing.
void add_compare_command(CLI::App& app, int* exit_code);
