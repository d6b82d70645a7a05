// Running the hetsched CLI from tests.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace hetsched::testing {

struct CliResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs a shell command line and collects its standard output.
inline CliResult run_shell(const std::string& cmd) {
  CliResult r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf;
  while (fgets(buf.data(), static_cast<int>(buf.size()), pipe)) r.output += buf.data();
  int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// Runs `hetsched ARGS` (the build's binary) and collects its output.
inline CliResult run_cli(const std::string& args) { return run_shell(std::string(HETSCHED_CLI) + " " + args + " 2>&1"); }

}  // namespace hetsched::testing
