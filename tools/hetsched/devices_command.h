// `hetsched devices [--json]`: the machine's processors, caches and GPUs, and
// the device specs (--devices) that fit it.
#pragma once

namespace CLI {
class App;
}

// Adds the `devices` subcommand to app. Its callback sets *exit_code (0) on
// success; failures are thrown as hetsched::Error like every other command.
// exit_code must outlive app's parsing.
void add_devices_command(CLI::App& app, int* exit_code);
