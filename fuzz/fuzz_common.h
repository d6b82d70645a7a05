// Shared by the libFuzzer targets (see fuzz/README.md).
//
// The contract under test (include/hetsched/error.h): whatever bytes a user
// feeds a loader, it either succeeds or throws hetsched::Error. Any other
// exception escaping is a bug, reported here and turned into an abort so
// that libFuzzer keeps the input; crashes, sanitizer reports, hangs and
// allocations over -malloc_limit_mb are caught by libFuzzer itself.
#pragma once

#include <cxxabi.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <typeinfo>

#include "hetsched/error.h"

namespace hetsched::fuzz {

inline std::string exception_type_name(const std::exception& e) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> name(abi::__cxa_demangle(typeid(e).name(), nullptr, nullptr, &status),
                                              std::free);
  return status == 0 && name ? name.get() : typeid(e).name();
}

// HETSCHED_FUZZ_VERBOSE=1 in the environment: each input's outcome on
// stderr (to see which seeds load and why the others are refused).
inline bool verbose() {
  static const bool on = std::getenv("HETSCHED_FUZZ_VERBOSE") != nullptr;
  return on;
}

// Runs `load`; hetsched::Error is a correct refusal, anything else aborts.
template <typename F>
void expect_error_or_success(const char* what, F&& load) {
  try {
    load();
    if (verbose()) std::fprintf(stderr, "%s: loaded\n", what);
  } catch (const hetsched::Error& e) {
    // The loader refused the input, as it should.
    if (verbose()) std::fprintf(stderr, "%s: refused: %s\n", what, e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "\n%s: %s escaped (expected hetsched::Error or success): %s\n", what,
                 exception_type_name(e).c_str(), e.what());
    std::abort();
  } catch (...) {
    std::fprintf(stderr, "\n%s: a non-std exception escaped (expected hetsched::Error or success)\n", what);
    std::abort();
  }
}

// A file of a fixed name in a folder of this process's own, rewritten for
// each input. Loaders that take paths are fed through it: opening and
// reading the file, and resolving paths relative to its folder (ONNX and
// TensorProto external data), are part of what is fuzzed. The folder holds
// nothing else, so external data can only name the file itself.
class ScratchFile {
 public:
  explicit ScratchFile(const std::string& file_name) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/hetsched-fuzz-XXXXXX";
    if (!mkdtemp(pattern.data())) {
      std::perror("hetsched fuzz: mkdtemp");
      std::abort();
    }
    dir_ = pattern;
    path_ = (dir_ / file_name).string();
  }
  ~ScratchFile() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;

  const std::string& write(const uint8_t* data, size_t size) {
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    out.close();
    if (!out) {
      std::fprintf(stderr, "hetsched fuzz: cannot write %s\n", path_.c_str());
      std::abort();
    }
    return path_;
  }
  const std::string& path() const { return path_; }
  std::filesystem::path dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
  std::string path_;
};

}  // namespace hetsched::fuzz
