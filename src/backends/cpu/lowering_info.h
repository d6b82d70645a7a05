// What the CPU backend runs with its own kernels, op by op, as each lowering
// states it where it registers (HETSCHED_CPU_LOWERING, lowering.h). This is
// the source of the CPU column of `hetsched ops --markdown` (docs/ops.md),
// so that the documentation follows the registry instead of a hand-kept
// list. Free of oneDNN headers: the CLI includes it.
#pragma once

#include <string>
#include <vector>

namespace hetsched::cpu {

struct LoweringInfo {
  std::string op_type;
  // What runs the op when the lowering accepts it ("oneDNN convolution",
  // "a view of the input (no copy)").
  std::string kernel;
  // When the lowering declines and the node runs its reference kernel
  // instead; empty when the registration does not say.
  std::string reference_when;
};

// Every registered CPU lowering, sorted by op type. An op with none always
// runs its reference kernel on a CPU device.
std::vector<LoweringInfo> cpu_lowerings();

}  // namespace hetsched::cpu
