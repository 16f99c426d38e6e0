#include "hip_runtime.h"

#include <dlfcn.h>

#include <cstring>

#include "../host/errors.h"

namespace hcsp::gpu {

using namespace hip;

void* openHipLibrary(std::string* name, std::string* tried) {
  return openVendorLibrary("HCSP_HIP_LIB", {"libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so"}, name, tried);
}

DeviceIdentity HipAbi::identify(HipRuntime& rt) {
  const HipApi& api = rt.api();
  const int device = rt.device();
  char devName[256] = {0};
  if (hipError_t e = api.hipDeviceGetName(devName, sizeof devName - 1, device)) rt.raise("hipDeviceGetName", e);
  PropsBuffer props;
  std::memset(&props, 0, sizeof props);
  const char* propsCall = api.propsR0600 ? "hipGetDevicePropertiesR0600" : "hipGetDeviceProperties";
  if (hipError_t e = api.hipGetDeviceProperties(&props, device)) rt.raise(propsCall, e);
  char archName[257] = {0};
  std::memcpy(archName, api.propsR0600 ? props.r0600.gcnArchName : props.r0000.gcnArchName, 256);
  // "gfx942:sramecc+:xnack-": the code-object folder is the processor, the features follow ':'
  std::string full(archName);
  DeviceIdentity id;
  id.arch = full.substr(0, full.find(':'));
  if (id.arch.rfind("gfx", 0) != 0 || id.arch.size() < 4) {
    fail(ErrorKind::Runtime, std::string(propsCall) + " (" + rt.libraryName() + ") gave the architecture name '" + full + "', not a gfx target");
  }
  int cus = 0, warp = 0;
  if (hipError_t e = api.hipDeviceGetAttribute(&cus, hipDeviceAttributeMultiprocessorCount, device)) rt.raise("hipDeviceGetAttribute(MultiprocessorCount)", e);
  if (hipError_t e = api.hipDeviceGetAttribute(&warp, hipDeviceAttributeWarpSize, device)) rt.raise("hipDeviceGetAttribute(WarpSize)", e);
  size_t freeBytes = 0, totalBytes = 0;
  if (hipError_t e = api.hipMemGetInfo(&freeBytes, &totalBytes)) rt.raise("hipMemGetInfo", e);
  id.units = cus;
  id.describe = std::string(devName[0] ? devName : "AMD GPU") + " (" + full + ", " + std::to_string(cus) + " CUs, wavefront " + std::to_string(warp) + ", " +
                gibText(totalBytes) + ", " + rt.libraryName() + ")";
  return id;
}

std::shared_ptr<GpuRuntime> openHipRuntime(const OpenOptions& options) {
  std::string name, tried;
  void* lib = openHipLibrary(&name, &tried);
  if (!lib) fail(ErrorKind::Unsupported, "no HIP runtime found: tried " + tried + " (set HCSP_HIP_LIB to the library's path)");
  VendorSymbols bind{lib, "the HIP runtime " + name, "not a HIP runtime library?"};
  HipApi api;
  bind("hipGetDeviceCount", api.hipGetDeviceCount);
  bind("hipSetDevice", api.hipSetDevice);
  bind("hipDeviceGetAttribute", api.hipDeviceGetAttribute);
  bind("hipDeviceGetName", api.hipDeviceGetName);
  // ROCm 6+: the versioned entry point of the R0600 layout; ROCm 5: the only one, R0000 layout
  api.propsR0600 = bind.optional("hipGetDevicePropertiesR0600", api.hipGetDeviceProperties);
  if (!api.propsR0600) bind("hipGetDeviceProperties", api.hipGetDeviceProperties);
  bind("hipMalloc", api.hipMalloc);
  bind("hipFree", api.hipFree);
  bind("hipMemcpy", api.hipMemcpy);
  bind("hipMemset", api.hipMemset);
  bind("hipMemGetInfo", api.hipMemGetInfo);
  bind("hipStreamCreate", api.hipStreamCreate);
  bind("hipStreamDestroy", api.hipStreamDestroy);
  bind("hipStreamSynchronize", api.hipStreamSynchronize);
  bind("hipModuleLoadData", api.hipModuleLoadData);
  bind("hipModuleUnload", api.hipModuleUnload);
  bind("hipModuleGetFunction", api.hipModuleGetFunction);
  bind("hipModuleLaunchKernel", api.hipModuleLaunchKernel);
  bind("hipGetErrorString", api.hipGetErrorString);
  bind.optional("hipHostMalloc", api.hipHostMalloc);
  bind.optional("hipHostFree", api.hipHostFree);
  bind.optional("hipMemcpyAsync", api.hipMemcpyAsync);
  return std::make_shared<HipRuntime>(lib, name, api, options);
}

}  // namespace hcsp::gpu
