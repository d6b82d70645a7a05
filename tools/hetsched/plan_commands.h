// `hetsched plan` (run a scheduler, write its plan) and `hetsched explain`
// (what a plan does, for a human). See docs/plans.md.
#pragma once

namespace CLI {
class App;
}

// Adds the `plan` and `explain` subcommands to app. Their callbacks set
// *exit_code (0) on success; failures are thrown as hetsched::Error like
// every other command's. exit_code must outlive app's parsing.
void add_plan_commands(CLI::App& app, int* exit_code);
