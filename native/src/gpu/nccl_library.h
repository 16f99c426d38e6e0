// The collective library of a GPU device, loaded at run time: RCCL (librccl) for the hip
// device, NCCL (libnccl) for the cuda device, declared by nccl_abi.h. HCSP_NCCL_LIBRARY (a
// path) replaces the default names. A library that loads is kept for the process (never
// closed); a failure is retried next time (the variable may have changed).
//
// Errors are typed for the JavaScript side (js_nccl.cc): NcclUnavailable (no library, or one
// without the API: the message lists every name tried with dlerror's reason, or names the
// missing symbol and the file) and NcclFailure (a call that returned an error: it names the
// call, the ncclResult_t enumerator and ncclGetErrorString's text).
#pragma once
#include <string>
#include <vector>

#include "../host/errors.h"
#include "nccl_abi.h"

namespace hcsp::gpu {

/** no usable RCCL/NCCL library: `tried` lists the file names (or the one path) tried, in order */
class NcclUnavailable : public Error {
 public:
  NcclUnavailable(const std::string& message, std::vector<std::string> tried) : Error(ErrorKind::Unsupported, message), tried_(std::move(tried)) {}
  const std::vector<std::string>& tried() const { return tried_; }

 private:
  std::vector<std::string> tried_;
};

/** an RCCL/NCCL call returned an error */
class NcclFailure : public Error {
 public:
  NcclFailure(const std::string& message, std::string call, nccl::ncclResult_t result)
      : Error(ErrorKind::Runtime, message), call_(std::move(call)), result_(result) {}
  const std::string& call() const { return call_; }
  nccl::ncclResult_t result() const { return result_; }

 private:
  std::string call_;
  nccl::ncclResult_t result_;
};

/** "ncclInvalidArgument" for 4; "ncclResult 42" for a value the headers do not name */
std::string ncclResultName(nccl::ncclResult_t r);

struct NcclLibrary {
  /** "RCCL" or "NCCL" */
  std::string vendor;
  /** the name or path dlopen loaded */
  std::string path;
  nccl::NcclApi api;
  /** ncclGetVersion's NCCL_VERSION_CODE */
  int versionCode = 0;

  /** "RCCL 2.18.3" */
  std::string version() const;
  /** raises NcclFailure unless r is ncclSuccess: "<call> failed: <name> (<r>): <ncclGetErrorString><context>" */
  void check(nccl::ncclResult_t r, const std::string& call, const std::string& context = "") const;
  [[noreturn]] void raise(nccl::ncclResult_t r, const std::string& call, const std::string& context = "") const;
};

/**
 * The library for a runtime kind: "hip" -> RCCL (librccl.so.1, librccl.so), "cuda" -> NCCL
 * (libnccl.so.2, libnccl.so); HCSP_NCCL_LIBRARY instead when set. Other kinds are refused
 * (ErrorKind::Unsupported). Thread-safe.
 */
const NcclLibrary& ncclLibrary(const std::string& runtimeKind);

}  // namespace hcsp::gpu
