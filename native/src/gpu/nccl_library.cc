#include "nccl_library.h"

#include <dlfcn.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>

namespace hcsp::gpu {

namespace {

using namespace nccl;

constexpr const char* kEnv = "HCSP_NCCL_LIBRARY";

template <class F>
bool bind(void* lib, const char* symbol, F& fn) {
  fn = reinterpret_cast<F>(dlsym(lib, symbol));
  return fn != nullptr;
}

std::unique_ptr<NcclLibrary> load(const std::string& vendor, const std::vector<std::string>& names, bool overridden) {
  std::string attempts;
  for (const auto& n : names) {
    dlerror();
    void* h = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* why = dlerror();
      attempts += (attempts.empty() ? "" : ", ") + n + " (" + (why ? why : "dlopen failed") + ")";
      continue;
    }
    auto lib = std::make_unique<NcclLibrary>();
    lib->vendor = vendor;
    lib->path = n;
    NcclApi& a = lib->api;
    const char* missing = nullptr;
    auto need = [&](const char* symbol, auto& fn) {
      if (!missing && !bind(h, symbol, fn)) missing = symbol;
    };
    need("ncclGetVersion", a.ncclGetVersion);
    need("ncclGetUniqueId", a.ncclGetUniqueId);
    need("ncclCommInitRank", a.ncclCommInitRank);
    need("ncclAllReduce", a.ncclAllReduce);
    need("ncclReduceScatter", a.ncclReduceScatter);
    need("ncclAllGather", a.ncclAllGather);
    need("ncclCommDestroy", a.ncclCommDestroy);
    need("ncclCommAbort", a.ncclCommAbort);
    need("ncclGetErrorString", a.ncclGetErrorString);
    need("ncclCommGetAsyncError", a.ncclCommGetAsyncError);
    if (missing) {
      dlclose(h);
      throw NcclUnavailable("the " + vendor + " library " + n + " has no " + missing + " (not an " + vendor + " library, or one too old?)", {n});
    }
    int code = 0;
    lib->check(a.ncclGetVersion(&code), "ncclGetVersion", " (" + n + ")");
    lib->versionCode = code;
    return lib;
  }
  throw NcclUnavailable("no " + vendor + " library found: tried " + attempts +
                            (overridden ? std::string(" (") + kEnv + " names it)" : std::string(" (set ") + kEnv + " to the library's path)"),
                        names);
}

}  // namespace

std::string ncclResultName(ncclResult_t r) {
  constexpr int known = static_cast<int>(sizeof(kResultNames) / sizeof(kResultNames[0]));
  return r >= 0 && r < known ? kResultNames[r] : "ncclResult " + std::to_string(r);
}

std::string NcclLibrary::version() const {
  const Version v = decodeVersion(versionCode);
  return vendor + " " + std::to_string(v.major) + "." + std::to_string(v.minor) + "." + std::to_string(v.patch);
}

void NcclLibrary::raise(ncclResult_t r, const std::string& call, const std::string& context) const {
  const char* text = api.ncclGetErrorString ? api.ncclGetErrorString(r) : nullptr;
  throw NcclFailure(call + " failed: " + ncclResultName(r) + " (" + std::to_string(r) + "): " + (text && *text ? text : "no error string") + context, call, r);
}

void NcclLibrary::check(ncclResult_t r, const std::string& call, const std::string& context) const {
  if (r != ncclSuccess) raise(r, call, context);
}

const NcclLibrary& ncclLibrary(const std::string& runtimeKind) {
  if (runtimeKind != "hip" && runtimeKind != "cuda") {
    fail(ErrorKind::Unsupported, "the nccl communicator needs a hip or cuda GPU device, not '" + runtimeKind +
                                     "' (the emulated device has no RCCL/NCCL: use the sim or mpi communicator)");
  }
  const bool hip = runtimeKind == "hip";
  const std::string vendor = hip ? "RCCL" : "NCCL";
  const char* env = std::getenv(kEnv);
  const bool overridden = env && *env;
  std::vector<std::string> names = overridden ? std::vector<std::string>{env}
                                   : hip      ? std::vector<std::string>{"librccl.so.1", "librccl.so"}
                                              : std::vector<std::string>{"libnccl.so.2", "libnccl.so"};
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<NcclLibrary>> loaded;
  const std::string key = vendor + "\n" + (overridden ? env : "");
  std::lock_guard<std::mutex> lock(mutex);
  auto it = loaded.find(key);
  if (it != loaded.end()) return *it->second;
  auto lib = load(vendor, names, overridden);
  return *loaded.emplace(key, std::move(lib)).first->second;
}

}  // namespace hcsp::gpu
