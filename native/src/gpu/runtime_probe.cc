#include "runtime_probe.h"

#include <dlfcn.h>

#include "../host/errors.h"
#include "cuda_runtime.h"
#include "hip_runtime.h"

namespace hcsp::gpu {

namespace {

// hip_abi.h / cuda_abi.h: hipGetDeviceCount(int*), cuInit(unsigned), cuDeviceGetCount(int*),
// hipGetErrorString(err) and cuGetErrorString(err, const char**); 0 = success
using CountFn = int (*)(int*);
using InitFn = int (*)(unsigned int);
using HipErrorStringFn = const char* (*)(int);
using CuErrorStringFn = int (*)(int, const char**);

std::string hipCallError(void* lib, const char* call, int rc) {
  auto str = reinterpret_cast<HipErrorStringFn>(dlsym(lib, "hipGetErrorString"));
  const char* s = str ? str(rc) : nullptr;
  return std::string(call) + " returned error " + std::to_string(rc) + (s && *s ? std::string(" (") + s + ")" : "");
}

std::string cuCallError(void* lib, const char* call, int rc) {
  auto str = reinterpret_cast<CuErrorStringFn>(dlsym(lib, "cuGetErrorString"));
  const char* s = nullptr;
  if (!str || str(rc, &s) != 0) s = nullptr;
  return std::string(call) + " returned error " + std::to_string(rc) + (s && *s ? std::string(" (") + s + ")" : "");
}

RuntimeProbe probeHip() {
  std::string name, tried;
  void* lib = openHipLibrary(&name, &tried);
  if (!lib) return RuntimeProbe{false, "", 0, "tried " + tried};
  auto count = reinterpret_cast<CountFn>(dlsym(lib, "hipGetDeviceCount"));
  // the handle stays open: a runtime is not unloaded once initialised
  if (!count) return RuntimeProbe{false, "", 0, "tried " + name + " (no hipGetDeviceCount)"};
  int devices = 0;
  int rc = count(&devices);
  if (rc != 0) return RuntimeProbe{true, name, 0, hipCallError(lib, "hipGetDeviceCount", rc)};
  return RuntimeProbe{true, name, devices, ""};
}

RuntimeProbe probeCuda() {
  std::string name, tried;
  void* lib = openCudaLibrary(&name, &tried);
  if (!lib) return RuntimeProbe{false, "", 0, "tried " + tried};
  auto init = reinterpret_cast<InitFn>(dlsym(lib, "cuInit"));
  auto count = reinterpret_cast<CountFn>(dlsym(lib, "cuDeviceGetCount"));
  if (!init || !count) return RuntimeProbe{false, "", 0, "tried " + name + " (no " + (init ? "cuDeviceGetCount" : "cuInit") + ")"};
  // a driver without a usable GPU answers cuInit with CUDA_ERROR_NO_DEVICE (100)
  int rc = init(0);
  if (rc != 0) return RuntimeProbe{true, name, 0, cuCallError(lib, "cuInit", rc)};
  int devices = 0;
  rc = count(&devices);
  if (rc != 0) return RuntimeProbe{true, name, 0, cuCallError(lib, "cuDeviceGetCount", rc)};
  return RuntimeProbe{true, name, devices, ""};
}

}  // namespace

RuntimeProbe probeRuntime(const std::string& kind) {
  if (kind == "hip") return probeHip();
  if (kind == "cuda") return probeCuda();
  fail(ErrorKind::Attr, "unknown GPU runtime '" + kind + "' (expected hip or cuda)");
}

}  // namespace hcsp::gpu
