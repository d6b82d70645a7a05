// `hetsched demo [MODEL]` — what `make demo` runs, the main job end to end:
// detect this machine's devices, profile the model on them, plan it with
// every scheduler, measure every plan against each device alone, run the
// fastest and check its outputs against a sequential run, print the
// comparison and write the HTML report (--report, default hetsched-report/).
#pragma once

namespace CLI {
class App;
}

// Adds the `demo` subcommand to app; its callback sets *exit_code (0 on
// success, 1 when the best plan's outputs differ from sequential);
// failures are thrown as hetsched::Error. exit_code must outlive app's parsing.
void add_demo_command(CLI::App& app, int* exit_code);
