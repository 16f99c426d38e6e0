// The project's own declarations of the HIP runtime API subset hip_runtime.cc calls through
// dlopen/dlsym (libamdhip64 is loaded at run time: architecture.md, "Native backend"). No HIP
// header is included: every type, value and layout here was read from AMD's own headers and is
// pinned by static_asserts where it has a size or an offset.
//
// Sources read (repo / path / commit):
//   ROCm/HIP          include/hip/hip_runtime_api.h  c5e11fcac8249ce4f7e70157588ff9661a870b59 (develop, ROCm 6.3 era)
//                     the same file at rocm-6.0.0 f7c33a4cbb660011cf9429b8b65d631066cd51d2,
//                     rocm-5.7.1 80681169ae20de8f8025b4fad799204c3ae7de50, rocm-5.2.3 206b6de40698e20b2310c6dd22241ac9cad574ae
//   ROCm/HIP          include/hip/hip_deprecated.h   c5e11fcac8249ce4f7e70157588ff9661a870b59 (hipDeviceProp_tR0000)
//   ROCm/HIP          include/hip/driver_types.h     c5e11fcac8249ce4f7e70157588ff9661a870b59 (hipMemcpyKind)
//   ROCm/rocm-systems projects/hip/include/hip/hip_runtime_api.h 003a5d106dc36c137c76d6c8bb51f7fa5564bdfc (ROCm 7 era):
//                     hipError_t values, hipDeviceProp_t (= hipDeviceProp_tR0600) and hipDeviceAttribute_t unchanged
//
// hipDeviceProp_t is versioned: ROCm 6 and 7 headers `#define hipGetDeviceProperties
// hipGetDevicePropertiesR0600` and lay the struct out as hipDeviceProp_tR0600 (1472 bytes,
// gcnArchName at 1160); ROCm 5 exports only hipGetDeviceProperties with the older layout (the
// one ROCm 6 keeps as hipDeviceProp_tR0000: 792 bytes, gcnArchName at 396; identical at 5.2.3
// and 5.7.1). A dlsym("hipGetDeviceProperties") on ROCm 6+ would bind the R0000 entry point, so
// hip_runtime.cc asks for hipGetDevicePropertiesR0600 first and uses the R0000 layout only when
// that symbol is absent. Both calls write into a buffer larger than the struct (kPropsBuffer).
// The sizes and offsets asserted below were computed by compiling each header's own struct text.
#pragma once
#include <cstddef>
#include <cstdint>

namespace hcsp::gpu::hip {

// hipError_t (hip_runtime_api.h): an enum with a 32-bit base
using hipError_t = int;
constexpr hipError_t hipSuccess = 0;
constexpr hipError_t hipErrorOutOfMemory = 2;  // = hipErrorMemoryAllocation
constexpr hipError_t hipErrorNoDevice = 100;
constexpr hipError_t hipErrorNotFound = 500;

using hipDevice_t = int;
using hipStream_t = struct ihipStream_t*;
using hipModule_t = struct ihipModule_t*;
using hipFunction_t = struct ihipModuleSymbol_t*;

// hipMemcpyKind (driver_types.h)
using hipMemcpyKind = int;
constexpr hipMemcpyKind hipMemcpyHostToDevice = 1;
constexpr hipMemcpyKind hipMemcpyDeviceToHost = 2;

// hipDeviceAttribute_t (hip_runtime_api.h): implicit values counted from
// hipDeviceAttributeCudaCompatibleBegin = 0; the same at 5.2.3, 5.7.1, 6.0.0, develop and in
// rocm-systems (checked by compiling each header's enum)
using hipDeviceAttribute_t = int;
constexpr hipDeviceAttribute_t hipDeviceAttributeMultiprocessorCount = 63;
constexpr hipDeviceAttribute_t hipDeviceAttributeWarpSize = 87;

struct hipUUID {
  char bytes[16];
};
static_assert(sizeof(hipUUID) == 16, "hipUUID");

/** hipDeviceProp_tR0600: ROCm 6.0 through 7 (hip_runtime_api.h, "typedef struct hipDeviceProp_t") */
struct hipDeviceProp_tR0600 {
  char name[256];
  hipUUID uuid;
  char luid[8];
  unsigned int luidDeviceNodeMask;
  size_t totalGlobalMem;
  size_t sharedMemPerBlock;
  int regsPerBlock;
  int warpSize;
  size_t memPitch;
  int maxThreadsPerBlock;
  int maxThreadsDim[3];
  int maxGridSize[3];
  int clockRate;
  size_t totalConstMem;
  int major;
  int minor;
  size_t textureAlignment;
  size_t texturePitchAlignment;
  int deviceOverlap;
  int multiProcessorCount;
  int kernelExecTimeoutEnabled;
  int integrated;
  int canMapHostMemory;
  int computeMode;
  int maxTexture1D;
  int maxTexture1DMipmap;
  int maxTexture1DLinear;
  int maxTexture2D[2];
  int maxTexture2DMipmap[2];
  int maxTexture2DLinear[3];
  int maxTexture2DGather[2];
  int maxTexture3D[3];
  int maxTexture3DAlt[3];
  int maxTextureCubemap;
  int maxTexture1DLayered[2];
  int maxTexture2DLayered[3];
  int maxTextureCubemapLayered[2];
  int maxSurface1D;
  int maxSurface2D[2];
  int maxSurface3D[3];
  int maxSurface1DLayered[2];
  int maxSurface2DLayered[3];
  int maxSurfaceCubemap;
  int maxSurfaceCubemapLayered[2];
  size_t surfaceAlignment;
  int concurrentKernels;
  int ECCEnabled;
  int pciBusID;
  int pciDeviceID;
  int pciDomainID;
  int tccDriver;
  int asyncEngineCount;
  int unifiedAddressing;
  int memoryClockRate;
  int memoryBusWidth;
  int l2CacheSize;
  int persistingL2CacheMaxSize;
  int maxThreadsPerMultiProcessor;
  int streamPrioritiesSupported;
  int globalL1CacheSupported;
  int localL1CacheSupported;
  size_t sharedMemPerMultiprocessor;
  int regsPerMultiprocessor;
  int managedMemory;
  int isMultiGpuBoard;
  int multiGpuBoardGroupID;
  int hostNativeAtomicSupported;
  int singleToDoublePrecisionPerfRatio;
  int pageableMemoryAccess;
  int concurrentManagedAccess;
  int computePreemptionSupported;
  int canUseHostPointerForRegisteredMem;
  int cooperativeLaunch;
  int cooperativeMultiDeviceLaunch;
  size_t sharedMemPerBlockOptin;
  int pageableMemoryAccessUsesHostPageTables;
  int directManagedMemAccessFromHost;
  int maxBlocksPerMultiProcessor;
  int accessPolicyMaxWindowSize;
  size_t reservedSharedMemPerBlock;
  int hostRegisterSupported;
  int sparseHipArraySupported;
  int hostRegisterReadOnlySupported;
  int timelineSemaphoreInteropSupported;
  int memoryPoolsSupported;
  int gpuDirectRDMASupported;
  unsigned int gpuDirectRDMAFlushWritesOptions;
  int gpuDirectRDMAWritesOrdering;
  unsigned int memoryPoolSupportedHandleTypes;
  int deferredMappingHipArraySupported;
  int ipcEventSupported;
  int clusterLaunch;
  int unifiedFunctionPointers;
  int reserved[63];
  int hipReserved[32];
  char gcnArchName[256];
  size_t maxSharedMemoryPerMultiProcessor;
  int clockInstructionRate;
  uint32_t arch;  // hipDeviceArch_t: 4 bytes of bit fields
  unsigned int* hdpMemFlushCntl;
  unsigned int* hdpRegFlushCntl;
  int cooperativeMultiDeviceUnmatchedFunc;
  int cooperativeMultiDeviceUnmatchedGridDim;
  int cooperativeMultiDeviceUnmatchedBlockDim;
  int cooperativeMultiDeviceUnmatchedSharedMem;
  int isLargeBar;
  int asicRevision;
};
static_assert(sizeof(hipDeviceProp_tR0600) == 1472, "hipDeviceProp_tR0600 size (hip_runtime_api.h, ROCm 6/7)");
static_assert(offsetof(hipDeviceProp_tR0600, totalGlobalMem) == 288, "hipDeviceProp_tR0600::totalGlobalMem");
static_assert(offsetof(hipDeviceProp_tR0600, warpSize) == 308, "hipDeviceProp_tR0600::warpSize");
static_assert(offsetof(hipDeviceProp_tR0600, multiProcessorCount) == 388, "hipDeviceProp_tR0600::multiProcessorCount");
static_assert(offsetof(hipDeviceProp_tR0600, gcnArchName) == 1160, "hipDeviceProp_tR0600::gcnArchName");

/** hipDeviceProp_tR0000: ROCm 5's hipDeviceProp_t (hip_deprecated.h keeps it for ROCm 6+) */
struct hipDeviceProp_tR0000 {
  char name[256];
  size_t totalGlobalMem;
  size_t sharedMemPerBlock;
  int regsPerBlock;
  int warpSize;
  int maxThreadsPerBlock;
  int maxThreadsDim[3];
  int maxGridSize[3];
  int clockRate;
  int memoryClockRate;
  int memoryBusWidth;
  size_t totalConstMem;
  int major;
  int minor;
  int multiProcessorCount;
  int l2CacheSize;
  int maxThreadsPerMultiProcessor;
  int computeMode;
  int clockInstructionRate;
  uint32_t arch;  // hipDeviceArch_t
  int concurrentKernels;
  int pciDomainID;
  int pciBusID;
  int pciDeviceID;
  size_t maxSharedMemoryPerMultiProcessor;
  int isMultiGpuBoard;
  int canMapHostMemory;
  int gcnArch;
  char gcnArchName[256];
  int integrated;
  int cooperativeLaunch;
  int cooperativeMultiDeviceLaunch;
  int maxTexture1DLinear;
  int maxTexture1D;
  int maxTexture2D[2];
  int maxTexture3D[3];
  unsigned int* hdpMemFlushCntl;
  unsigned int* hdpRegFlushCntl;
  size_t memPitch;
  size_t textureAlignment;
  size_t texturePitchAlignment;
  int kernelExecTimeoutEnabled;
  int ECCEnabled;
  int tccDriver;
  int cooperativeMultiDeviceUnmatchedFunc;
  int cooperativeMultiDeviceUnmatchedGridDim;
  int cooperativeMultiDeviceUnmatchedBlockDim;
  int cooperativeMultiDeviceUnmatchedSharedMem;
  int isLargeBar;
  int asicRevision;
  int managedMemory;
  int directManagedMemAccessFromHost;
  int concurrentManagedAccess;
  int pageableMemoryAccess;
  int pageableMemoryAccessUsesHostPageTables;
};
static_assert(sizeof(hipDeviceProp_tR0000) == 792, "hipDeviceProp_tR0000 size (ROCm 5 hip_runtime_api.h)");
static_assert(offsetof(hipDeviceProp_tR0000, totalGlobalMem) == 256, "hipDeviceProp_tR0000::totalGlobalMem");
static_assert(offsetof(hipDeviceProp_tR0000, warpSize) == 276, "hipDeviceProp_tR0000::warpSize");
static_assert(offsetof(hipDeviceProp_tR0000, multiProcessorCount) == 336, "hipDeviceProp_tR0000::multiProcessorCount");
static_assert(offsetof(hipDeviceProp_tR0000, gcnArchName) == 396, "hipDeviceProp_tR0000::gcnArchName");

/** what hipGetDeviceProperties* write into: larger than either layout, should a runtime append fields */
union PropsBuffer {
  hipDeviceProp_tR0600 r0600;
  hipDeviceProp_tR0000 r0000;
  unsigned char bytes[8192];
};
static_assert(sizeof(PropsBuffer) == 8192, "PropsBuffer");

// The entry points (hip_runtime_api.h prototypes; hipGetDevicePropertiesR0600 is what the
// hipGetDeviceProperties macro names on ROCm 6+)
using hipGetDeviceCount_t = hipError_t (*)(int* count);
using hipSetDevice_t = hipError_t (*)(int deviceId);
using hipDeviceGetAttribute_t = hipError_t (*)(int* pi, hipDeviceAttribute_t attr, int deviceId);
using hipDeviceGetName_t = hipError_t (*)(char* name, int len, hipDevice_t device);
using hipGetDeviceProperties_t = hipError_t (*)(void* prop, int deviceId);
using hipMalloc_t = hipError_t (*)(void** ptr, size_t size);
using hipFree_t = hipError_t (*)(void* ptr);
using hipMemcpy_t = hipError_t (*)(void* dst, const void* src, size_t sizeBytes, hipMemcpyKind kind);
using hipMemset_t = hipError_t (*)(void* dst, int value, size_t sizeBytes);
using hipMemGetInfo_t = hipError_t (*)(size_t* free, size_t* total);
using hipStreamCreate_t = hipError_t (*)(hipStream_t* stream);
using hipStreamDestroy_t = hipError_t (*)(hipStream_t stream);
using hipStreamSynchronize_t = hipError_t (*)(hipStream_t stream);
using hipModuleLoadData_t = hipError_t (*)(hipModule_t* module, const void* image);
using hipModuleUnload_t = hipError_t (*)(hipModule_t module);
using hipModuleGetFunction_t = hipError_t (*)(hipFunction_t* function, hipModule_t module, const char* kname);
using hipModuleLaunchKernel_t = hipError_t (*)(hipFunction_t f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX,
                                               unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, hipStream_t stream,
                                               void** kernelParams, void** extra);
using hipGetErrorString_t = const char* (*)(hipError_t error);
// the weight loader's pinned staging (native/src/loader/staging.cc); bound when present, as the
// declarations in Debian's libamdhip64-dev hip_runtime_api.h give them
using hipHostMalloc_t = hipError_t (*)(void** ptr, size_t size, unsigned int flags);
using hipHostFree_t = hipError_t (*)(void* ptr);
using hipMemcpyAsync_t = hipError_t (*)(void* dst, const void* src, size_t sizeBytes, hipMemcpyKind kind, hipStream_t stream);
constexpr unsigned int hipHostMallocDefault = 0x0;

/** the loaded entry points (hip_runtime.cc fills every one, or fails naming the missing symbol) */
struct HipApi {
  hipGetDeviceCount_t hipGetDeviceCount = nullptr;
  hipSetDevice_t hipSetDevice = nullptr;
  hipDeviceGetAttribute_t hipDeviceGetAttribute = nullptr;
  hipDeviceGetName_t hipDeviceGetName = nullptr;
  /** hipGetDevicePropertiesR0600 where the runtime has it (ROCm 6+), else ROCm 5's hipGetDeviceProperties */
  hipGetDeviceProperties_t hipGetDeviceProperties = nullptr;
  bool propsR0600 = false;
  hipMalloc_t hipMalloc = nullptr;
  hipFree_t hipFree = nullptr;
  hipMemcpy_t hipMemcpy = nullptr;
  hipMemset_t hipMemset = nullptr;
  hipMemGetInfo_t hipMemGetInfo = nullptr;
  hipStreamCreate_t hipStreamCreate = nullptr;
  hipStreamDestroy_t hipStreamDestroy = nullptr;
  hipStreamSynchronize_t hipStreamSynchronize = nullptr;
  hipModuleLoadData_t hipModuleLoadData = nullptr;
  hipModuleUnload_t hipModuleUnload = nullptr;
  hipModuleGetFunction_t hipModuleGetFunction = nullptr;
  hipModuleLaunchKernel_t hipModuleLaunchKernel = nullptr;
  hipGetErrorString_t hipGetErrorString = nullptr;
  /** optional (null when the runtime lacks them): the loader then stages in pageable memory with hipMemcpy */
  hipHostMalloc_t hipHostMalloc = nullptr;
  hipHostFree_t hipHostFree = nullptr;
  hipMemcpyAsync_t hipMemcpyAsync = nullptr;
};

}  // namespace hcsp::gpu::hip
