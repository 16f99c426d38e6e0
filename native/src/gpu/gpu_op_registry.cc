#include "gpu_op_registry.h"

#include <cstdlib>
#include <map>

#include "../host/errors.h"
#include "kernels/reduce.h"

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

int GpuContext::blockRows(int64_t rows) const {
  const char* forced = std::getenv("HCSP_GPU_BLOCK_ROWS");
  if (forced == nullptr || forced[0] == '\0') return hcspRowsPerBlock(rows);
  const std::string v(forced);
  if (v.size() != 1 || v[0] < '1' || v[0] > '0' + HCSP_CANONICAL_MAX_ROWS) {
    fail(ErrorKind::Attr, "HCSP_GPU_BLOCK_ROWS must be 1, 2, 3 or 4 (rows of 64 threads per block), got '" + v + "'");
  }
  return v[0] - '0';
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
