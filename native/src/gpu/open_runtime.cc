#include "open_runtime.h"

#include "../host/errors.h"
#include "emulated_runtime.h"

namespace hcsp::gpu {

std::shared_ptr<GpuRuntime> openRuntime(const std::string& kind, const OpenOptions& options) {
  if (kind == "emulated") return openEmulatedRuntime();
  if (kind == "hip" || kind == "cuda") fail(ErrorKind::Unsupported, "this build of the native addon has no " + kind + " runtime");
  fail(ErrorKind::Attr, "unknown GPU kind '" + kind + "' (expected emulated, hip or cuda)");
}

}  // namespace hcsp::gpu
