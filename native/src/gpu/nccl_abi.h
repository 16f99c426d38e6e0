// The project's own declarations of the NCCL / RCCL API subset nccl_library.cc calls through
// dlopen/dlsym (librccl on ROCm, libnccl on CUDA, loaded at run time like the BLAS and GPU
// runtime libraries). No vendor header is included: every value and signature here was read
// from the vendors' own headers, and the one layout (ncclUniqueId) is pinned by static_asserts.
//
// Sources read (repo / path / commit):
//   NVIDIA/nccl  src/nccl.h.in  021e8045ff77a8a9fba909617a0129d3c3d44def (NCCL 2.2x era, 2026 copyright)
//   ROCm/rccl    src/nccl.h.in  8de178325e73d5f4ced580ca64bdcc33a718b40f (RCCL 2.2x era)
//                the same file at 0023b9b0814b6779a84bbb2d477682432c881a41 (an old RCCL, 2.7 era:
//                results 0..5 only, no ncclRemoteError / ncclInProgress)
//
// What the headers agree on (both current ones):
// - NCCL_UNIQUE_ID_BYTES 128; typedef struct { char internal[NCCL_UNIQUE_ID_BYTES]; } ncclUniqueId,
//   passed BY VALUE to ncclCommInitRank.
// - ncclResult_t: ncclSuccess 0, ncclUnhandledCudaError 1, ncclSystemError 2, ncclInternalError 3,
//   ncclInvalidArgument 4, ncclInvalidUsage 5, ncclRemoteError 6, ncclInProgress 7; NCCL's header
//   adds ncclTimeout 8 (ncclNumResults 9), RCCL's stops at ncclNumResults 8.
// - ncclRedOp_t: ncclSum 0 (Prod 1, Max 2, Min 3, Avg 4); an enum, int-sized (ncclMaxRedOp is
//   defined so that sizeof(ncclRedOp_t) never grows).
// - ncclDataType_t: ncclInt8 0, ncclUint8 1, ncclInt32 2, ncclUint32 3, ncclInt64 4, ncclUint64 5,
//   ncclFloat16 6, ncclFloat32 7, ncclFloat64 8, ncclBfloat16 9 (both current headers, and the old
//   RCCL one, which defines RCCL_BFLOAT16), ncclFloat8e4m3 10, ncclFloat8e5m2 11. An NCCL built
//   without bf16 (before 2.10, or against a CUDA without cuda_bf16.h) refuses datatype 9 with
//   ncclInvalidArgument, which the caller's error then names.
// - NCCL_VERSION(X,Y,Z) = X*1000 + Y*100 + Z for X <= 2 && Y <= 8, else X*10000 + Y*100 + Z
//   (the old RCCL header: always X*1000 + Y*100 + Z, which is the same for 2.0 .. 2.8).
// - The signatures below; the stream argument is cudaStream_t / hipStream_t, a pointer to the
//   vendor's opaque stream struct, declared here as void*. ncclComm_t is struct ncclComm*.
#pragma once
#include <cstddef>
#include <cstdint>

namespace hcsp::gpu::nccl {

constexpr size_t NCCL_UNIQUE_ID_BYTES = 128;
struct ncclUniqueId {
  char internal[NCCL_UNIQUE_ID_BYTES];
};
static_assert(sizeof(ncclUniqueId) == 128, "ncclUniqueId is NCCL_UNIQUE_ID_BYTES = 128 bytes");
static_assert(alignof(ncclUniqueId) == 1, "ncclUniqueId is a char array: byte-aligned");

using ncclComm_t = struct ncclComm*;

// ncclResult_t: an enum (int-sized)
using ncclResult_t = int;
constexpr ncclResult_t ncclSuccess = 0;
constexpr ncclResult_t ncclUnhandledCudaError = 1;
constexpr ncclResult_t ncclSystemError = 2;
constexpr ncclResult_t ncclInternalError = 3;
constexpr ncclResult_t ncclInvalidArgument = 4;
constexpr ncclResult_t ncclInvalidUsage = 5;
constexpr ncclResult_t ncclRemoteError = 6;
constexpr ncclResult_t ncclInProgress = 7;
constexpr ncclResult_t ncclTimeout = 8;  // NCCL's header only

/** the enumerator names, by value (0 .. ncclTimeout) */
constexpr const char* kResultNames[] = {"ncclSuccess",      "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError", "ncclInvalidArgument",
                                        "ncclInvalidUsage", "ncclRemoteError",        "ncclInProgress",  "ncclTimeout"};
static_assert(sizeof(kResultNames) / sizeof(kResultNames[0]) == ncclTimeout + 1, "one name per ncclResult_t value");

// ncclDataType_t: an enum (int-sized)
using ncclDataType_t = int;
constexpr ncclDataType_t ncclInt8 = 0;
constexpr ncclDataType_t ncclUint8 = 1;
constexpr ncclDataType_t ncclInt32 = 2;
constexpr ncclDataType_t ncclUint32 = 3;
constexpr ncclDataType_t ncclFloat32 = 7;
constexpr ncclDataType_t ncclBfloat16 = 9;

// ncclRedOp_t: an enum (int-sized)
using ncclRedOp_t = int;
constexpr ncclRedOp_t ncclSum = 0;

using ncclGetVersion_t = ncclResult_t (*)(int* version);
using ncclGetUniqueId_t = ncclResult_t (*)(ncclUniqueId* uniqueId);
using ncclCommInitRank_t = ncclResult_t (*)(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank);
using ncclAllReduce_t = ncclResult_t (*)(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                         void* stream);
using ncclReduceScatter_t = ncclResult_t (*)(const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                             void* stream);
using ncclAllGather_t = ncclResult_t (*)(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype, ncclComm_t comm, void* stream);
using ncclCommDestroy_t = ncclResult_t (*)(ncclComm_t comm);
using ncclCommAbort_t = ncclResult_t (*)(ncclComm_t comm);
using ncclGetErrorString_t = const char* (*)(ncclResult_t result);
using ncclCommGetAsyncError_t = ncclResult_t (*)(ncclComm_t comm, ncclResult_t* asyncError);

/** the bound entry points (nccl_library.cc binds every one or refuses the library) */
struct NcclApi {
  ncclGetVersion_t ncclGetVersion = nullptr;
  ncclGetUniqueId_t ncclGetUniqueId = nullptr;
  ncclCommInitRank_t ncclCommInitRank = nullptr;
  ncclAllReduce_t ncclAllReduce = nullptr;
  ncclReduceScatter_t ncclReduceScatter = nullptr;
  ncclAllGather_t ncclAllGather = nullptr;
  ncclCommDestroy_t ncclCommDestroy = nullptr;
  ncclCommAbort_t ncclCommAbort = nullptr;
  ncclGetErrorString_t ncclGetErrorString = nullptr;
  ncclCommGetAsyncError_t ncclCommGetAsyncError = nullptr;
};

/** NCCL_VERSION's encoding undone: 21903 -> {2, 19, 3}; 2708 -> {2, 7, 8} */
struct Version {
  int major, minor, patch;
};
constexpr Version decodeVersion(int code) {
  return code >= 10000 ? Version{code / 10000, (code % 10000) / 100, code % 100} : Version{code / 1000, (code % 1000) / 100, code % 100};
}
static_assert(decodeVersion(21903).major == 2 && decodeVersion(21903).minor == 19 && decodeVersion(21903).patch == 3, "NCCL_VERSION(2,19,3) = 21903");
static_assert(decodeVersion(2708).major == 2 && decodeVersion(2708).minor == 7 && decodeVersion(2708).patch == 8, "NCCL_VERSION(2,7,8) = 2708");

}  // namespace hcsp::gpu::nccl
