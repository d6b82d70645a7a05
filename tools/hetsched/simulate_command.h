// `hetsched simulate MODEL (--scheduler NAME | --plan FILE)`: predicts a
// plan's makespan, per-device utilisation and timeline with the simulator
// (sim/simulator.h), without running anything.
#pragma once

namespace CLI {
class App;
}

// Adds the `simulate` subcommand to app. Its callback sets *exit_code (0) on
// success; failures are thrown as hetsched::Error like every other command.
// exit_code must outlive app's parsing.
void add_simulate_command(CLI::App& app, int* exit_code);
