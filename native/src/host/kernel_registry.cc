#include "kernel_registry.h"

#include <map>

#include "errors.h"

namespace hcsp {

namespace {
// function-local statics: registration runs from other files' static initializers
std::map<std::string, Kernel>& kernels() {
  static std::map<std::string, Kernel> m;
  return m;
}
std::map<std::string, CollectiveKernel>& collectives() {
  static std::map<std::string, CollectiveKernel> m;
  return m;
}
}  // namespace

void registerKernel(const char* op, Kernel kernel) {
  if (!kernels().emplace(op, std::move(kernel)).second) throw std::logic_error(std::string("two host kernels for op ") + op);
}

void registerCollectiveKernel(const char* op, CollectiveKernel kernel) {
  if (!collectives().emplace(op, std::move(kernel)).second) throw std::logic_error(std::string("two host collective kernels for op ") + op);
}

const Kernel& findKernel(const std::string& op) {
  auto it = kernels().find(op);
  if (it == kernels().end()) fail(ErrorKind::Unsupported, "the host device has no kernel for op '" + op + "'");
  return it->second;
}

const CollectiveKernel& findCollectiveKernel(const std::string& op) {
  auto it = collectives().find(op);
  if (it == collectives().end()) fail(ErrorKind::Unsupported, "the host device has no collective kernel for op '" + op + "'");
  return it->second;
}

std::vector<std::string> kernelNames() {
  std::vector<std::string> out;
  for (auto& [k, _] : kernels()) out.push_back(k);
  return out;
}

std::vector<std::string> collectiveKernelNames() {
  std::vector<std::string> out;
  for (auto& [k, _] : collectives()) out.push_back(k);
  return out;
}

}  // namespace hcsp
