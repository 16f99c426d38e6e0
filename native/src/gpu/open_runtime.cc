#include "open_runtime.h"

#include <dlfcn.h>

#include <filesystem>

#include "../host/errors.h"
#include "cuda_runtime.h"
#include "emulated_runtime.h"
#include "hip_runtime.h"

namespace hcsp::gpu {

namespace {

/**
 * native/build/gpu, found from the addon's own file (native/build/Release/hcsp_native.node,
 * as cmake-js builds it): the folder native/scripts/build-gpu-kernels.sh writes.
 */
std::string defaultCodeObjects() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&defaultCodeObjects), &info) == 0 || !info.dli_fname || !*info.dli_fname) {
    fail(ErrorKind::Runtime, "cannot find the addon's own path (dladdr) to locate its GPU code objects: pass codeObjects to openGpu");
  }
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path addon = fs::weakly_canonical(fs::path(info.dli_fname), ec);
  if (ec) addon = fs::path(info.dli_fname);
  return (addon.parent_path().parent_path() / "gpu").string();
}

}  // namespace

std::shared_ptr<GpuRuntime> openRuntime(const std::string& kind, const OpenOptions& options) {
  std::shared_ptr<GpuRuntime> rt;
  if (kind == "emulated") rt = openEmulatedRuntime();
  if (kind == "hip" || kind == "cuda") {
    OpenOptions o = options;
    if (o.codeObjects.empty()) o.codeObjects = defaultCodeObjects();
    rt = kind == "hip" ? openHipRuntime(o) : openCudaRuntime(o);
  }
  if (rt) {
    rt->setKernels(options.kernels);
    return rt;
  }
  fail(ErrorKind::Attr, "unknown GPU kind '" + kind + "' (expected emulated, hip or cuda)");
}

}  // namespace hcsp::gpu
