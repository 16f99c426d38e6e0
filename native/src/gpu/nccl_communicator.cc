#include "nccl_communicator.h"

#include <cstring>

#include "module_runtime.h"

namespace hcsp::gpu {

using namespace nccl;

namespace {

/** a device buffer of the device's scratch memory, released on every path */
struct Staging {
  ModuleRuntime& rt;
  void* p = nullptr;
  size_t bytes = 0;
  Staging(ModuleRuntime& r, size_t n, const std::string& what) : rt(r), bytes(n) {
    if (n) p = rt.allocateScratch(n, what);
  }
  ~Staging() {
    if (p) rt.releaseScratch(p, bytes);
  }
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;
};

ModuleRuntime& moduleOf(GpuRuntime& rt) {
  auto* m = dynamic_cast<ModuleRuntime*>(&rt);
  // the vendor runtimes (vendor_runtime.h) are the module runtimes
  if (!m) {
    fail(ErrorKind::Unsupported, "the nccl communicator needs a hip or cuda GPU device, not '" + rt.kind() +
                                     "' (the emulated device has no RCCL/NCCL: use the sim or mpi communicator)");
  }
  return *m;
}

void makeCurrentOn(GpuRuntime& rt) {
  if (auto* m = dynamic_cast<ModuleRuntime*>(&rt)) m->makeCurrent();
}

/** all-gather's NCCL datatype for elements of `elementBytes` (float: f32, else i32 for 4 bytes) */
ncclDataType_t gatherType(int elementBytes, bool isFloat, const char** name) {
  switch (elementBytes) {
    case 1:
      *name = "uint8";
      return ncclUint8;
    case 2:
      *name = "bf16";
      return ncclBfloat16;
    case 4:
      *name = isFloat ? "f32" : "i32";
      return isFloat ? ncclFloat32 : ncclInt32;
    default:
      fail(ErrorKind::DType, "ncclAllGather: elements of " + std::to_string(elementBytes) + " bytes; expected 1 (uint8), 2 (bf16) or 4 (f32, i32)");
  }
}

void checkGatherBytes(int64_t bytes, int elementBytes) {
  if (bytes < 0 || bytes % elementBytes != 0) {
    fail(ErrorKind::Size, "ncclAllGather: " + std::to_string(bytes) + " bytes are not whole " + std::to_string(elementBytes) + "-byte elements");
  }
}

void checkReduceScatterCount(int64_t n, int size) {
  if (n < 0) fail(ErrorKind::Size, "ncclReduceScatter: element count must be non-negative, got " + std::to_string(n));
  if (n % size != 0) {
    fail(ErrorKind::Size, "ncclReduceScatter: " + std::to_string(n) + " bf16 elements are not divisible by the world size " + std::to_string(size));
  }
}

}  // namespace

const NcclLibrary& ncclLibraryFor(GpuRuntime& rt) {
  moduleOf(rt);
  return ncclLibrary(rt.kind());
}

NcclId ncclUniqueIdFor(GpuRuntime& rt) {
  const NcclLibrary& lib = ncclLibraryFor(rt);
  makeCurrentOn(rt);
  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  lib.check(lib.api.ncclGetUniqueId(&id), "ncclGetUniqueId", " (" + lib.version() + ", " + rt.name() + ")");
  NcclId out;
  std::memcpy(out.data(), id.internal, out.size());
  return out;
}

NcclCommunicator::NcclCommunicator(std::shared_ptr<GpuRuntime> rt, int rank, int size, const NcclId& id)
    : rt_(std::move(rt)), module_(&moduleOf(*rt_)), lib_(ncclLibrary(rt_->kind())), rank_(rank), size_(size) {
  if (size < 1) fail(ErrorKind::Attr, "ncclCommInitRank: the world size must be at least 1, got " + std::to_string(size));
  if (rank < 0 || rank >= size) fail(ErrorKind::Attr, "ncclCommInitRank: rank " + std::to_string(rank) + " is not in [0, " + std::to_string(size) + ")");
  makeCurrent();
  ncclUniqueId uid;
  std::memcpy(uid.internal, id.data(), sizeof uid.internal);
  ncclComm_t comm = nullptr;
  lib_.check(lib_.api.ncclCommInitRank(&comm, size, uid, rank), "ncclCommInitRank", " (" + where() + ")");
  comm_ = comm;
}

NcclCommunicator::~NcclCommunicator() {
  if (state_.load() == Open && comm_) {
    try {
      makeCurrent();
    } catch (...) {
    }
    lib_.api.ncclCommDestroy(comm_);
  }
}

std::string NcclCommunicator::where() const { return lib_.version() + ", " + rt_->name() + ", rank " + std::to_string(rank_) + " of " + std::to_string(size_); }

void* NcclCommunicator::stream() const {
  auto* m = dynamic_cast<ModuleRuntime*>(rt_.get());
  return m ? m->streamHandle() : nullptr;
}

void NcclCommunicator::makeCurrent() const { makeCurrentOn(*rt_); }

std::string NcclCommunicator::state() const {
  switch (state_.load()) {
    case Open:
      return "open";
    case Destroyed:
      return "destroyed";
    default:
      return "aborted";
  }
}

void NcclCommunicator::requireOpen(const char* call) const {
  const int s = state_.load();
  if (s != Open) fail(ErrorKind::Runtime, std::string(call) + ": the communicator (" + where() + ") was " + (s == Destroyed ? "destroyed" : "aborted"));
}

void NcclCommunicator::refuseIfAborted(const char* call, const std::string& context) const {
  if (state_.load() == Aborted) fail(ErrorKind::Runtime, std::string(call) + ": the communicator was aborted while the call ran" + context);
}

ncclResult_t NcclCommunicator::asyncError(const char* call, const std::string& context, ncclResult_t* async) {
  // under abort()'s lock: an aborted communicator's handle is never read again
  std::lock_guard<std::mutex> life(lifeMutex_);
  refuseIfAborted(call, context);
  return lib_.api.ncclCommGetAsyncError(comm_, async);
}

std::vector<uint8_t> NcclCommunicator::run(const char* call, int64_t inBytes, int64_t outBytes, const void* x, const std::string& what,
                                           const std::function<ncclResult_t(const void*, void*)>& enqueue) {
  std::lock_guard<std::mutex> lock(callMutex_);
  requireOpen(call);
  std::vector<uint8_t> out(static_cast<size_t>(outBytes));
  if (inBytes == 0 && outBytes == 0) return out;  // every rank has nothing: no call (NCCL would move nothing)
  const std::string detail = what + "; " + where();
  const std::string context = " (" + detail + ")";
  makeCurrent();
  Staging send(*module_, static_cast<size_t>(inBytes), std::string("the ") + call + " send buffer");
  Staging recv(*module_, static_cast<size_t>(outBytes), std::string("the ") + call + " receive buffer");
  if (inBytes) rt_->copyIn(send.p, x, static_cast<size_t>(inBytes));
  const ncclResult_t r = enqueue(send.p, recv.p);
  refuseIfAborted(call, context);
  lib_.check(r, call, context);
  try {
    rt_->synchronize();
  } catch (const Error& e) {
    // a collective that failed on the device: NCCL's own reason, when it has one
    ncclResult_t async = ncclSuccess;
    if (asyncError(call, context, &async) == ncclSuccess && async != ncclSuccess) {
      lib_.raise(async, call, " (asynchronous error; " + detail + "; the stream: " + e.what() + ")");
    }
    throw;
  }
  ncclResult_t async = ncclSuccess;
  lib_.check(asyncError(call, context, &async), "ncclCommGetAsyncError", context);
  if (async != ncclSuccess) lib_.raise(async, call, " (asynchronous error; " + detail + ")");
  if (outBytes) rt_->copyOut(out.data(), recv.p, static_cast<size_t>(outBytes));
  return out;
}

std::vector<uint8_t> NcclCommunicator::allReduceBf16(const uint16_t* x, int64_t n) {
  if (n < 0) fail(ErrorKind::Size, "ncclAllReduce: element count must be non-negative, got " + std::to_string(n));
  const int64_t bytes = n * 2;
  auto out = run("ncclAllReduce", bytes, bytes, x, std::to_string(n) + " bf16 elements, sum",
                 [&](const void* s, void* r) { return lib_.api.ncclAllReduce(s, r, static_cast<size_t>(n), ncclBfloat16, ncclSum, comm_, stream()); });
  std::lock_guard<std::mutex> lock(bytesMutex_);
  bytes_.allReduce += 2.0 * (size_ - 1) * static_cast<double>(bytes) / size_;
  return out;
}

std::vector<uint8_t> NcclCommunicator::reduceScatterBf16(const uint16_t* x, int64_t n) {
  checkReduceScatterCount(n, size_);
  const int64_t recvCount = n / size_;
  auto out = run("ncclReduceScatter", n * 2, recvCount * 2, x, std::to_string(recvCount) + " bf16 elements per rank, sum", [&](const void* s, void* r) {
    return lib_.api.ncclReduceScatter(s, r, static_cast<size_t>(recvCount), ncclBfloat16, ncclSum, comm_, stream());
  });
  std::lock_guard<std::mutex> lock(bytesMutex_);
  bytes_.reduceScatter += static_cast<double>(size_ - 1) * static_cast<double>(recvCount * 2);
  return out;
}

std::vector<uint8_t> NcclCommunicator::allGather(const void* x, int64_t bytes, int elementBytes, bool isFloat) {
  const char* name = nullptr;
  const ncclDataType_t type = gatherType(elementBytes, isFloat, &name);
  checkGatherBytes(bytes, elementBytes);
  const int64_t count = bytes / elementBytes;
  auto out = run("ncclAllGather", bytes, bytes * size_, x, std::to_string(count) + " " + name + " elements per rank",
                 [&](const void* s, void* r) { return lib_.api.ncclAllGather(s, r, static_cast<size_t>(count), type, comm_, stream()); });
  std::lock_guard<std::mutex> lock(bytesMutex_);
  bytes_.allGather += static_cast<double>(size_ - 1) * static_cast<double>(bytes);
  return out;
}

void NcclCommunicator::enqueueOnStream(const char* call, const std::string& what, const std::function<ncclResult_t()>& enqueue) {
  std::lock_guard<std::mutex> lock(callMutex_);
  requireOpen(call);
  const std::string context = " (" + what + "; " + where() + ")";
  makeCurrent();
  const ncclResult_t r = enqueue();
  refuseIfAborted(call, context);
  lib_.check(r, call, context);
  if (pendingCall_.empty()) pendingCall_ = call, pendingWhat_ = what;
}

void NcclCommunicator::enqueueAllReduceBf16(const void* send, void* recv, int64_t n, const std::string& what) {
  if (n < 0) fail(ErrorKind::Size, "ncclAllReduce: element count must be non-negative, got " + std::to_string(n));
  if (n == 0) return;
  enqueueOnStream("ncclAllReduce", what + ": " + std::to_string(n) + " bf16 elements, sum",
                  [&] { return lib_.api.ncclAllReduce(send, recv, static_cast<size_t>(n), ncclBfloat16, ncclSum, comm_, stream()); });
  std::lock_guard<std::mutex> lock(bytesMutex_);
  bytes_.allReduce += 2.0 * (size_ - 1) * static_cast<double>(n * 2) / size_;
}

void NcclCommunicator::enqueueReduceScatterBf16(const void* send, void* recv, int64_t n, const std::string& what) {
  checkReduceScatterCount(n, size_);
  const int64_t recvCount = n / size_;
  if (n == 0) return;
  enqueueOnStream("ncclReduceScatter", what + ": " + std::to_string(recvCount) + " bf16 elements per rank, sum",
                  [&] { return lib_.api.ncclReduceScatter(send, recv, static_cast<size_t>(recvCount), ncclBfloat16, ncclSum, comm_, stream()); });
  std::lock_guard<std::mutex> lock(bytesMutex_);
  bytes_.reduceScatter += static_cast<double>(size_ - 1) * static_cast<double>(recvCount * 2);
}

void NcclCommunicator::enqueueAllGather(const void* send, void* recv, int64_t bytes, int elementBytes, bool isFloat, const std::string& what) {
  const char* name = nullptr;
  const ncclDataType_t type = gatherType(elementBytes, isFloat, &name);
  checkGatherBytes(bytes, elementBytes);
  const int64_t count = bytes / elementBytes;
  if (count == 0) return;
  enqueueOnStream("ncclAllGather", what + ": " + std::to_string(count) + " " + name + " elements per rank",
                  [&] { return lib_.api.ncclAllGather(send, recv, static_cast<size_t>(count), type, comm_, stream()); });
  std::lock_guard<std::mutex> lock(bytesMutex_);
  bytes_.allGather += static_cast<double>(size_ - 1) * static_cast<double>(bytes);
}

void NcclCommunicator::checkAsync() {
  std::lock_guard<std::mutex> lock(callMutex_);
  if (pendingCall_.empty()) return;
  const std::string call = pendingCall_, what = pendingWhat_;
  pendingCall_.clear();
  pendingWhat_.clear();
  const std::string context = " (" + what + "; " + where() + ")";
  ncclResult_t async = ncclSuccess;
  lib_.check(asyncError(call.c_str(), context, &async), "ncclCommGetAsyncError", context);
  if (async != ncclSuccess) lib_.raise(async, call, " (asynchronous error at the run's sync; " + what + "; " + where() + ")");
}

NcclBytesSent NcclCommunicator::bytesSent() const {
  std::lock_guard<std::mutex> lock(bytesMutex_);
  return bytes_;
}

void NcclCommunicator::destroy() {
  std::lock_guard<std::mutex> calls(callMutex_);
  std::lock_guard<std::mutex> life(lifeMutex_);
  requireOpen("ncclCommDestroy");
  makeCurrent();
  const ncclResult_t r = lib_.api.ncclCommDestroy(comm_);
  state_.store(Destroyed);
  lib_.check(r, "ncclCommDestroy", " (" + where() + ")");
}

void NcclCommunicator::abort() {
  std::lock_guard<std::mutex> life(lifeMutex_);
  requireOpen("ncclCommAbort");
  state_.store(Aborted);
  makeCurrent();
  lib_.check(lib_.api.ncclCommAbort(comm_), "ncclCommAbort", " (" + where() + ")");
}

}  // namespace hcsp::gpu
