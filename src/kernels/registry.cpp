#include <algorithm>
#include <map>
#include <mutex>

#include "kernels/kernel.h"

namespace hetsched::kernels {
namespace {
// Function-local static: registration runs from static initialisers of other
// translation units, whose order is unspecified.
std::map<std::string, ReferenceKernel>& registry() {
  static std::map<std::string, ReferenceKernel> kernels;
  return kernels;
}
}  // namespace

void register_reference_kernel(ReferenceKernel kernel) {
  auto& kernels = registry();
  std::string op = kernel.op_type;
  kernels[op] = std::move(kernel);
}

const ReferenceKernel* find_reference_kernel(const std::string& op_type) {
  auto& kernels = registry();
  auto it = kernels.find(op_type);
  return it == kernels.end() ? nullptr : &it->second;
}

std::vector<std::string> reference_op_types() {
  std::vector<std::string> ops;
  for (const auto& [op, kernel] : registry()) ops.push_back(op);
  return ops;
}

}  // namespace hetsched::kernels
