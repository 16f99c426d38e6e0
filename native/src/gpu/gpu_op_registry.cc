#include "gpu_op_registry.h"

#include <map>

#include "../host/errors.h"

namespace hcsp::gpu {

namespace {
std::map<std::string, GpuOp>& ops() {
  static std::map<std::string, GpuOp> m;
  return m;
}
std::map<std::string, GpuCollectiveOp>& collectives() {
  static std::map<std::string, GpuCollectiveOp> m;
  return m;
}
}  // namespace

void registerGpuOp(const char* op, GpuOp fn) {
  if (!ops().emplace(op, std::move(fn)).second) throw std::logic_error(std::string("two GPU launchers for op ") + op);
}

void registerGpuCollectiveOp(const char* op, GpuCollectiveOp fn) {
  if (!collectives().emplace(op, std::move(fn)).second) throw std::logic_error(std::string("two GPU collective launchers for op ") + op);
}

const GpuOp& findGpuOp(const std::string& op) {
  auto it = ops().find(op);
  if (it == ops().end()) fail(ErrorKind::Unsupported, "the GPU devices have no kernel for op '" + op + "'");
  return it->second;
}

const GpuCollectiveOp& findGpuCollectiveOp(const std::string& op) {
  auto it = collectives().find(op);
  if (it == collectives().end()) fail(ErrorKind::Unsupported, "the GPU devices have no collective kernel for op '" + op + "'");
  return it->second;
}

std::vector<std::string> gpuOpNames() {
  std::vector<std::string> out;
  for (auto& [k, _] : ops()) out.push_back(k);
  return out;
}

std::vector<std::string> gpuCollectiveOpNames() {
  std::vector<std::string> out;
  for (auto& [k, _] : collectives()) out.push_back(k);
  return out;
}

}  // namespace hcsp::gpu
