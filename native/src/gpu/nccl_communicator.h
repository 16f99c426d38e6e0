// One rank's RCCL/NCCL communicator on an open GPU device (hip or cuda; the emulated device is
// refused): ncclCommInitRank with the device current, then bf16 all-reduce (sum) and
// reduce-scatter (sum) and all-gather (bf16, f32, i32 or bytes), in two forms.
//
// On DEVICE buffers (enqueue*: a run's collective nodes, issue 20): the call is enqueued on the
// device's stream between the run's kernels, reading and writing the run's planned tensors; no
// staging, no copy, no wait. Its completion is the run's one stream sync, after which
// checkAsync() raises NCCL's asynchronous error, if any.
//
// On HOST data (allReduceBf16, ...: the GPU check's one-rank step and direct callers): each call stages
// the input into device buffers of its own (the device's scratch memory: counted against its
// limit), enqueues the NCCL call on the device's stream, synchronizes, checks the
// communicator's asynchronous error and copies the result back. Calls run one at a time
// (blocking: the addon runs them off the JavaScript thread). abort() may be called while a
// collective waits for peers (ncclCommAbort from another thread is what unblocks it, as NCCL
// documents); every later call is refused. The wait is the stream's synchronize: a peer that
// died leaves it waiting until someone aborts (the launcher's fault handling, on the JavaScript
// thread), not until a timeout of this file's own.
//
// Bytes sent are counted per kind with the ring accounting of core's collectives/commBytes.ts
// (nccl-tests' bus-bandwidth factors): all-reduce 2(n-1)/n * S, reduce-scatter (n-1) * output
// bytes, all-gather (n-1) * input bytes, for n ranks and a full buffer of S bytes. NCCL does not
// report what it sent (its ring or tree is its own choice): this is the model's figure, equal to
// commBytesOf for the same node with algorithm 'ring' or 'ordered'.
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gpu_runtime.h"
#include "nccl_library.h"

namespace hcsp::gpu {

class ModuleRuntime;

using NcclId = std::array<uint8_t, nccl::NCCL_UNIQUE_ID_BYTES>;

/** the library of this device's kind (loads it): refuses the emulated device */
const NcclLibrary& ncclLibraryFor(GpuRuntime& rt);

/** ncclGetUniqueId (with the device current): rank 0's id, handed to every rank */
NcclId ncclUniqueIdFor(GpuRuntime& rt);

struct NcclBytesSent {
  double allReduce = 0, reduceScatter = 0, allGather = 0;
};

class NcclCommunicator {
 public:
  /** ncclCommInitRank(size, id, rank) with rt's device current; blocks until every rank has joined */
  NcclCommunicator(std::shared_ptr<GpuRuntime> rt, int rank, int size, const NcclId& id);
  /** ncclCommDestroy unless destroyed or aborted (errors ignored) */
  ~NcclCommunicator();
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  const NcclLibrary& library() const { return lib_; }

  /** n bf16 elements summed over the ranks (ncclAllReduce, ncclBfloat16, ncclSum) */
  std::vector<uint8_t> allReduceBf16(const uint16_t* x, int64_t n);
  /** n bf16 elements (n divisible by size) summed, this rank's n/size block out (ncclReduceScatter) */
  std::vector<uint8_t> reduceScatterBf16(const uint16_t* x, int64_t n);
  /**
   * every rank's `bytes` bytes, in rank order (ncclAllGather); elementBytes picks the datatype:
   * 2 ncclBfloat16, 4 ncclFloat32 (float) or ncclInt32 (!isFloat), 1 ncclUint8
   */
  std::vector<uint8_t> allGather(const void* x, int64_t bytes, int elementBytes, bool isFloat);

  /**
   * The same three collectives on device buffers of this runtime (send and recv never overlap),
   * enqueued on its stream after the work already there: no staging, no synchronize. `what`
   * names the call in errors ("layers.3.attn (allReduce)"). Counted in bytesSent() as the
   * host-data calls are.
   */
  void enqueueAllReduceBf16(const void* send, void* recv, int64_t n, const std::string& what);
  void enqueueReduceScatterBf16(const void* send, void* recv, int64_t n, const std::string& what);
  void enqueueAllGather(const void* send, void* recv, int64_t bytes, int elementBytes, bool isFloat, const std::string& what);
  /**
   * After the stream's sync: NCCL's asynchronous error for the collectives enqueued since the
   * last check, raised (NcclFailure) as the first of them failing; nothing when there is none.
   */
  void checkAsync();

  const std::shared_ptr<GpuRuntime>& runtime() const { return rt_; }
  NcclBytesSent bytesSent() const;
  /** "open", "destroyed" or "aborted" */
  std::string state() const;

  /** ncclCommDestroy after the calls in flight */
  void destroy();
  /** ncclCommAbort now, even while a collective waits for peers */
  void abort();

 private:
  enum State { Open, Destroyed, Aborted };
  std::vector<uint8_t> run(const char* call, int64_t inBytes, int64_t outBytes, const void* x, const std::string& what,
                           const std::function<nccl::ncclResult_t(const void* send, void* recv)>& enqueue);
  /** the call on the stream (no staging, no wait), under the call lock */
  void enqueueOnStream(const char* call, const std::string& what, const std::function<nccl::ncclResult_t()>& enqueue);
  void requireOpen(const char* call) const;
  void refuseIfAborted(const char* call, const std::string& context) const;
  /** ncclCommGetAsyncError, refused once aborted */
  nccl::ncclResult_t asyncError(const char* call, const std::string& context, nccl::ncclResult_t* async);
  std::string where() const;
  void* stream() const;
  void makeCurrent() const;

  std::shared_ptr<GpuRuntime> rt_;
  ModuleRuntime* module_;
  const NcclLibrary& lib_;
  int rank_, size_;
  nccl::ncclComm_t comm_ = nullptr;
  std::atomic<int> state_{Open};
  std::mutex callMutex_;  // one collective (or destroy) at a time
  std::mutex lifeMutex_;  // destroy vs abort
  mutable std::mutex bytesMutex_;
  NcclBytesSent bytes_;
  /** the first collective enqueued since the last checkAsync(): its call and what it was, blamed for an asynchronous error */
  std::string pendingCall_, pendingWhat_;
};

}  // namespace hcsp::gpu
