// Large host allocations (contract in allocation.h).
#include "core/allocation.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "hetsched/error.h"

namespace hetsched {

namespace {

constexpr size_t kAlignment = 64;

// One flag per thread: a fault injected on one lane's thread must not fail
// an allocation another lane makes at the same time.
thread_local bool fail_next_allocation = false;

thread_local size_t allocation_limit = std::numeric_limits<size_t>::max();

}  // namespace

std::string format_bytes(size_t bytes) {
  static const char* const kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return fmt::format("{} bytes", bytes);
  double value = static_cast<double>(bytes);
  int unit = -1;
  while (value >= 1024 && unit < 5) {
    value /= 1024;
    ++unit;
  }
  return fmt::format("{} bytes ({:.1f} {})", bytes, value, kUnits[unit]);
}

size_t physical_memory_bytes() {
  long pages = ::sysconf(_SC_PHYS_PAGES), page_size = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return 0;
  return static_cast<size_t>(pages) * static_cast<size_t>(page_size);
}

ScopedAllocationLimit::ScopedAllocationLimit(size_t max_bytes) : previous_(allocation_limit) {
  allocation_limit = std::min(max_bytes, previous_);
}

ScopedAllocationLimit::~ScopedAllocationLimit() { allocation_limit = previous_; }

void fail_next_allocation_for_testing() { fail_next_allocation = true; }

std::shared_ptr<std::byte> allocate_aligned(size_t bytes, const std::function<std::string()>& what) {
  auto fail = [&](const std::string& why) {
    return Error(ErrorCode::kResource, fmt::format("cannot allocate {} for {}: {}", format_bytes(bytes), what(), why));
  };
  if (fail_next_allocation) {
    fail_next_allocation = false;
    throw fail("out of memory (injected allocation fault)");
  }
  if (bytes > allocation_limit)
    throw AllocationOverLimit(ErrorCode::kResource,
                              fmt::format("cannot allocate {} for {}: over the limit of {} here", format_bytes(bytes),
                                          what(), format_bytes(allocation_limit)));
  if (bytes > std::numeric_limits<size_t>::max() - kAlignment) throw fail("the size overflows");
  size_t physical = physical_memory_bytes();
  if (physical && bytes > physical)
    throw fail(fmt::format("more than this machine's {} of memory", format_bytes(physical)));
  // Round up to the alignment (aligned_alloc wants a multiple), and allocate
  // at least one block so that the result is never null.
  size_t alloc = std::max(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
  void* p = std::aligned_alloc(kAlignment, alloc);
  if (!p) throw fail("out of memory (or over the process's address-space limit)");
  std::memset(p, 0, alloc);
  return std::shared_ptr<std::byte>(static_cast<std::byte*>(p), [](std::byte* q) { std::free(q); });
}

}  // namespace hetsched
