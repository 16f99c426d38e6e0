#include "runtime_probe.h"

#include <dlfcn.h>

#include <cstdlib>
#include <vector>

#include "../host/errors.h"

namespace hcsp::gpu {

namespace {
// hipGetDeviceCount and cudaGetDeviceCount share this C signature (int*) -> error code, 0 = success
using DeviceCountFn = int (*)(int*);
}  // namespace

RuntimeProbe probeRuntime(const std::string& kind) {
  std::vector<std::string> names;
  const char* override = nullptr;
  const char* countSymbol = nullptr;
  if (kind == "hip") {
    override = std::getenv("HCSP_HIP_LIB");
    names = {"libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so"};
    countSymbol = "hipGetDeviceCount";
  } else if (kind == "cuda") {
    override = std::getenv("HCSP_CUDA_LIB");
    names = {"libcudart.so.13", "libcudart.so.12", "libcudart.so"};
    countSymbol = "cudaGetDeviceCount";
  } else {
    fail(ErrorKind::Attr, "unknown GPU runtime '" + kind + "' (expected hip or cuda)");
  }
  if (override && *override) names = {override};
  std::string tried;
  for (const auto& name : names) {
    void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      tried += (tried.empty() ? "" : ", ") + name;
      continue;
    }
    auto count = reinterpret_cast<DeviceCountFn>(dlsym(handle, countSymbol));
    if (!count) {
      dlclose(handle);
      tried += (tried.empty() ? "" : ", ") + name + " (no " + countSymbol + ")";
      continue;
    }
    int devices = 0;
    int rc = count(&devices);
    // the handle stays open: a runtime is not unloaded once initialised
    if (rc != 0) return RuntimeProbe{true, name, 0, std::string(countSymbol) + " returned error " + std::to_string(rc)};
    return RuntimeProbe{true, name, devices, ""};
  }
  return RuntimeProbe{false, "", 0, "tried " + tried};
}

}  // namespace hcsp::gpu
