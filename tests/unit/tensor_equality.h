// Bit-for-bit equality of two runs' outputs, for tests that need the same
// bytes (repeated runs of one plan) rather than a tolerance.
#pragma once

#include <cstring>

#include "hetsched/session.h"  // TensorMap

namespace hetsched::testing {

inline bool bitwise_equal(const TensorMap& a, const TensorMap& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [name, t] : a) {
    auto it = b.find(name);
    if (it == b.end() || it->second.dtype() != t.dtype() || it->second.shape() != t.shape() ||
        std::memcmp(it->second.raw(), t.raw(), t.nbytes()) != 0)
      return false;
  }
  return true;
}

}  // namespace hetsched::testing
