#include "hetsched/error.h"

namespace hetsched {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kUsage: return "usage";
    case ErrorCode::kIo: return "io";
    case ErrorCode::kInvalidModel: return "invalid-model";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kInvalidInput: return "invalid-input";
    case ErrorCode::kInvalidFile: return "invalid-file";
    case ErrorCode::kRuntime: return "runtime";
    case ErrorCode::kResource: return "resource";
  }
  return "unknown";
}

}  // namespace hetsched
