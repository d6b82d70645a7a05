// `hetsched profile MODEL [--devices SPEC] [--platform FILE] [--db FILE]
// [-w N] [-r N] [--force]`: calibrates the real devices, times every launch
// unit of the model on each of them and the hand-over between them, and
// stores the results in the profile database (profile/profile_db.h).
#pragma once

namespace CLI {
class App;
}

// Adds the `profile` subcommand to app. Its callback sets *exit_code (0) on
// success; failures are thrown as hetsched::Error like every other command.
// exit_code must outlive app's parsing.
void add_profile_command(CLI::App& app, int* exit_code);
