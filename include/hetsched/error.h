// Errors that hetsched reports to its users.
//
// Contract: every failure a user can cause (a bad model file, an unsupported op,
// an input of the wrong shape, a bad flag) is thrown as hetsched::Error with a
// one-line message that names the file, node or field and says what was
// expected. Asserts are only for the engine's own invariants. The CLI maps
// ErrorCode::kUsage to exit code 2 and every other code to exit code 1.
#pragma once

#include <stdexcept>
#include <string>

namespace hetsched {

enum class ErrorCode {
  kUsage,         // bad command-line flag or API argument
  kIo,            // a file is missing, unreadable or not writable
  kInvalidModel,  // the model violates the ONNX spec (parse, checker, shapes, cycle...)
  kUnsupported,   // valid ONNX, but an op, attribute or dtype the engine does not run
  kInvalidInput,  // an input tensor of the wrong name, shape or dtype
  kInvalidFile,   // a plan, platform or profile file that is malformed or made for something else
  kRuntime,       // a kernel failed while running
  kResource,      // memory the model needs cannot be had (a tensor, arena or weights larger than
                  // memory or an address-space limit); the message gives the bytes and their use
};

const char* error_code_name(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace hetsched
