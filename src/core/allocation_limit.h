// A bound on the size of each tensor allocated on this thread (internal).
//
// Constant folding runs kernels at load on data the model file supplies; a
// small file can ask them for any output size (a OneHot of depth 2^32, an
// Expand to a shape the file states), and the shapes the file declares may
// not be the ones the kernels compute. Within a ScopedAllocationLimit, a
// Tensor larger than the limit is not allocated: its constructor throws
// AllocationOverLimit instead, which the caller catches.
#pragma once

#include <cstddef>

#include "hetsched/error.h"

namespace hetsched {

class AllocationOverLimit : public Error {
 public:
  using Error::Error;
};

class ScopedAllocationLimit {
 public:
  explicit ScopedAllocationLimit(size_t max_bytes);
  ~ScopedAllocationLimit();
  ScopedAllocationLimit(const ScopedAllocationLimit&) = delete;
  ScopedAllocationLimit& operator=(const ScopedAllocationLimit&) = delete;

 private:
  size_t previous_;
};

}  // namespace hetsched
