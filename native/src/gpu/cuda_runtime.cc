#include "cuda_runtime.h"

#include "../host/errors.h"

namespace hcsp::gpu {

using namespace cuda;

void* openCudaLibrary(std::string* name, std::string* tried) { return openVendorLibrary("HCSP_CUDA_LIB", {"libcuda.so.1", "libcuda.so"}, name, tried); }

DeviceIdentity CudaAbi::identify(CudaRuntime& rt) {
  const CudaApi& api = rt.api();
  const CUdevice device = rt.device();
  char devName[256] = {0};
  if (CUresult e = api.cuDeviceGetName(devName, sizeof devName - 1, device)) rt.raise("cuDeviceGetName", e);
  int major = 0, minor = 0, sms = 0, warp = 0;
  if (CUresult e = api.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device))
    rt.raise("cuDeviceGetAttribute(COMPUTE_CAPABILITY_MAJOR)", e);
  if (CUresult e = api.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device))
    rt.raise("cuDeviceGetAttribute(COMPUTE_CAPABILITY_MINOR)", e);
  if (CUresult e = api.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device)) rt.raise("cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)", e);
  if (CUresult e = api.cuDeviceGetAttribute(&warp, CU_DEVICE_ATTRIBUTE_WARP_SIZE, device)) rt.raise("cuDeviceGetAttribute(WARP_SIZE)", e);
  size_t total = 0;
  if (CUresult e = api.cuDeviceTotalMem(&total, device)) rt.raise("cuDeviceTotalMem_v2", e);
  DeviceIdentity id;
  id.arch = "sm_" + std::to_string(major) + std::to_string(minor);
  id.units = sms;
  id.describe = std::string(devName[0] ? devName : "NVIDIA GPU") + " (" + id.arch + ", " + std::to_string(sms) + " SMs, warp " + std::to_string(warp) + ", " +
                gibText(total) + ", " + rt.libraryName() + ")";
  return id;
}

std::shared_ptr<GpuRuntime> openCudaRuntime(const OpenOptions& options) {
  std::string name, tried;
  void* lib = openCudaLibrary(&name, &tried);
  if (!lib) fail(ErrorKind::Unsupported, "no CUDA runtime found: tried " + tried + " (set HCSP_CUDA_LIB to the library's path)");
  VendorSymbols bind{lib, "the CUDA driver " + name, "not the CUDA driver library?"};
  CudaApi api;
  bind("cuInit", api.cuInit);
  bind("cuDeviceGetCount", api.cuDeviceGetCount);
  bind("cuDeviceGet", api.cuDeviceGet);
  bind("cuDeviceGetName", api.cuDeviceGetName);
  bind("cuDeviceGetAttribute", api.cuDeviceGetAttribute);
  bind("cuDeviceTotalMem_v2", api.cuDeviceTotalMem);
  bind("cuDevicePrimaryCtxRetain", api.cuDevicePrimaryCtxRetain);
  bind("cuDevicePrimaryCtxRelease_v2", api.cuDevicePrimaryCtxRelease);
  bind("cuCtxSetCurrent", api.cuCtxSetCurrent);
  bind("cuMemAlloc_v2", api.cuMemAlloc);
  bind("cuMemFree_v2", api.cuMemFree);
  bind("cuMemcpyHtoD_v2", api.cuMemcpyHtoD);
  bind("cuMemcpyDtoH_v2", api.cuMemcpyDtoH);
  bind("cuMemsetD8_v2", api.cuMemsetD8);
  bind("cuMemGetInfo_v2", api.cuMemGetInfo);
  bind("cuStreamCreate", api.cuStreamCreate);
  bind("cuStreamDestroy_v2", api.cuStreamDestroy);
  bind("cuStreamSynchronize", api.cuStreamSynchronize);
  bind("cuModuleLoadData", api.cuModuleLoadData);
  bind("cuModuleUnload", api.cuModuleUnload);
  bind("cuModuleGetFunction", api.cuModuleGetFunction);
  bind("cuLaunchKernel", api.cuLaunchKernel);
  bind("cuGetErrorString", api.cuGetErrorString);
  bind.optional("cuMemHostAlloc", api.cuMemHostAlloc);
  bind.optional("cuMemFreeHost", api.cuMemFreeHost);
  bind.optional("cuMemcpyHtoDAsync_v2", api.cuMemcpyHtoDAsync);
  return std::make_shared<CudaRuntime>(lib, name, api, options);
}

}  // namespace hcsp::gpu
