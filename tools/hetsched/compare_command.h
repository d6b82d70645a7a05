// `hetsched compare MODEL (--devices SPEC | --platform FILE) [--schedulers
// a,b,...] [--measure] [--json FILE]`: every scheduler's plan predicted by
// the simulator (and measured with --measure) against the best single
// device and the lower bound (hetsched/compare.h).
#pragma once

namespace CLI {
class App;
}

// Adds the `compare` subcommand to app; its callback sets *exit_code (0) on
// success; failures are thrown as hetsched::Error. exit_code must outlive
// app's parsing.
void add_compare_command(CLI::App& app, int* exit_code);
