// Large host allocations: tensors, CPU program arenas.
//
// Contract:
//   - allocate_aligned(bytes, what) returns zeroed, 64-byte aligned storage of
//     at least `bytes` (never null, at least one block), freed when the last
//     copy of the pointer goes. When the memory cannot be had it throws
//     Error(ErrorCode::kResource) whose message gives the bytes requested,
//     what they were for, and why: more than the machine's physical memory
//     (refused before trying: with overcommit, such a request can succeed and
//     then kill the process when the pages are touched), or the allocator
//     returned nothing (memory exhausted, or an address-space limit such as
//     RLIMIT_AS).
//   - Within a ScopedAllocationLimit, a request larger than the limit is not
//     tried: AllocationOverLimit (an Error of kResource) is thrown, which the
//     caller catches. Constant folding runs kernels at load on data the model
//     file supplies, and a small file can ask them for any output size (a
//     OneHot of depth 2^32, an Expand to a shape the file states).
//   - fail_next_allocation_for_testing() makes the next allocate_aligned() on
//     the calling thread fail as if memory were exhausted (the executor's
//     fault injection uses it; see executor.h).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "hetsched/error.h"

namespace hetsched {

// `what` is called only to word the error ("a float32 tensor of shape 2x3").
std::shared_ptr<std::byte> allocate_aligned(size_t bytes, const std::function<std::string()>& what);

// "4398046511104 bytes (4.0 TiB)": exact, then readable.
std::string format_bytes(size_t bytes);

// The machine's physical memory in bytes (0 when unknown).
size_t physical_memory_bytes();

class AllocationOverLimit : public Error {
 public:
  using Error::Error;
};

// Bounds every allocate_aligned() on this thread while it lives (nested
// limits: the smaller holds).
class ScopedAllocationLimit {
 public:
  explicit ScopedAllocationLimit(size_t max_bytes);
  ~ScopedAllocationLimit();
  ScopedAllocationLimit(const ScopedAllocationLimit&) = delete;
  ScopedAllocationLimit& operator=(const ScopedAllocationLimit&) = delete;

 private:
  size_t previous_;
};

void fail_next_allocation_for_testing();

}  // namespace hetsched
