// `hetsched ops --markdown`: the ONNX ops hetsched runs, per device, as a
// Markdown page (docs/ops.md is its output). Every column comes from a
// registry or a file, never from a hand-kept list: the reference kernels'
// registry (the rows), the CPU backend's lowerings with what they say about
// themselves (backends/cpu/lowering_info.h), and the `ops` lists of the
// platform files in a folder (the emulated device kinds).
#pragma once

#include <string>

namespace hetsched::cli {

// The folder of the shipped platform files: share/hetsched/platforms of the
// installation this executable belongs to, else the source tree's platforms/
// (a build tree). Throws Error(kUsage) when neither exists.
std::string default_platforms_dir();

// The page for the platform files (*.json) in `platforms_dir`. Throws
// Error(kIo) when the folder cannot be read, and what load_platform_file
// throws for a bad file.
std::string ops_markdown(const std::string& platforms_dir);

}  // namespace hetsched::cli
