// One process's end of the MPI world, for host-device ranks (issue 13): MPI started with
// MPI_Init_thread, a private duplicate of MPI_COMM_WORLD whose errors return
// (MPI_ERRORS_RETURN) instead of aborting, and checked point-to-point calls that count the
// bytes this rank sends per collective kind. Every failure is an MpiError naming the MPI
// call, what it was doing, and MPI's own error string and class.
#pragma once
#include <mpi.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace hcsp::mpi {

/** What went wrong, as the JavaScript side's error classes tell them apart (mpiCommunicator.ts). */
enum class ErrorCode {
  /** an MPI call returned an error (MpiError.call names it) */
  Call,
  /**
   * the ranks disagree: different collectives, sizes, dtypes or algorithms at the same step,
   * found by every rank together before any data moved (the world stays usable)
   */
  Mismatch,
  /** a bad argument from the caller (algorithm, buffer size, rows not divisible by the world size) */
  Argument,
  /** not initialized, already finalized, or a collective still in flight */
  State,
};

const char* errorCodeName(ErrorCode code);

class MpiError : public std::runtime_error {
 public:
  MpiError(ErrorCode code, const std::string& message, std::string call = "", std::string errorClass = "")
      : std::runtime_error(message), code_(code), call_(std::move(call)), errorClass_(std::move(errorClass)) {}
  ErrorCode code() const { return code_; }
  /** the MPI function that failed ("" when the failure is not an MPI call's) */
  const std::string& call() const { return call_; }
  /** MPI's error class of the failure, e.g. "MPI_ERR_TRUNCATE" ("" when not an MPI call's) */
  const std::string& errorClass() const { return errorClass_; }

 private:
  ErrorCode code_;
  std::string call_;
  std::string errorClass_;
};

[[noreturn]] void failMpi(ErrorCode code, const std::string& message);

/** The collective kinds whose sent bytes are counted apart; Control is the ranks' agreement checks. */
enum class Kind : int { AllReduce = 0, ReduceScatter = 1, AllGather = 2, Control = 3 };
constexpr int KIND_COUNT = 4;
const char* kindName(Kind kind);

struct InitResult {
  int rank;
  int size;
  /** the thread level MPI provided (MPI_THREAD_SERIALIZED or higher) */
  int threadLevel;
};

/** MPI_Get_library_version's text (callable before MPI_Init) */
std::string libraryVersion();
/** "3.1": MPI_Get_version (callable before MPI_Init) */
std::string standardVersion();

/**
 * The process's MPI state. MPI is initialized once per process and finalized once; the
 * collectives of one World never overlap (the caller runs one at a time: the addon refuses
 * a second one while another is in flight), so MPI_THREAD_SERIALIZED suffices for calls
 * made from the worker threads of Node's pool.
 */
class World {
 public:
  static World& instance();

  /** MPI_Init_thread (once; later calls return the same ranks): the world is MPI_COMM_WORLD (mpirun's ranks) */
  InitResult init();
  bool initialized() const { return comm_ != MPI_COMM_NULL; }

  /**
   * A world joined from separately started processes (hcsp launch, no mpirun): MPI starts as
   * a singleton, then the ranks join one at a time through MPI's dynamic process calls,
   * rank 0 accepting on a port the others learn from the rendezvous store. Open MPI needs its
   * ompi-server for these calls between singletons (the caller sets pmix_server_uri).
   * Join k: ranks 0..k-1 call joinAccept (collective over those already joined), rank k calls
   * joinConnect; MPI_Intercomm_merge puts the newcomer last, so the world's ranks are the
   * join order. joinFinish makes the joined communicator the world.
   */
  void joinStart();
  /** rank 0, after joinStart: MPI_Open_port's name */
  std::string joinOpenPort();
  /** every rank already joined: accept the next one (the port matters at rank 0 only) */
  void joinAccept(const std::string& port);
  /** the newcomer: connect to the port and merge in as the last rank */
  void joinConnect(const std::string& port);
  /** ends the join (rank 0 closes its port): the joined communicator becomes the world */
  InitResult joinFinish();
  bool finalized() const { return finalized_; }
  /** frees the communicator and the op, then MPI_Finalize */
  void finalize();
  /** MPI_Abort on the world: every rank of the job ends (the launcher kills them) */
  [[noreturn]] void abort(int code);

  int rank() const { return rank_; }
  int size() const { return size_; }
  MPI_Comm comm() const { return comm_; }
  /** the bf16 sum as a user-defined, non-commutative MPI op (mpi_collectives.cc) */
  MPI_Op bf16SumOp() const { return bf16SumOp_; }

  /** throws State unless MPI is initialized and not finalized */
  void requireReady(const char* what) const;

  /**
   * One step of a pattern: send `sendBytes` to `to` while receiving exactly `recvBytes`
   * from `from` (MPI_Sendrecv; large buffers in pieces of at most 1 GiB, both sides cut
   * alike), counted as `kind`. A peer that sends a different number of bytes fails the call
   * (MPI_ERR_TRUNCATE when it sends more, our count check when it sends fewer).
   */
  void sendrecv(Kind kind, const void* send, int64_t sendBytes, int to, void* recv, int64_t recvBytes, int from, const std::string& what);
  /** MPI_Barrier on the world */
  void barrier();

  /** bytes this rank has sent, per kind, since init (read on the JS thread while a worker may count) */
  std::array<double, KIND_COUNT> bytesSent() const {
    std::array<double, KIND_COUNT> out{};
    for (int k = 0; k < KIND_COUNT; k++) out[k] = static_cast<double>(bytesSent_[k].load());
    return out;
  }

  /** throws MpiError(Call) naming `call`, the rank and `what` unless rc is MPI_SUCCESS */
  void check(int rc, const char* call, const std::string& what) const;

 private:
  World() = default;
  /** MPI_Init_thread at MPI_THREAD_SERIALIZED with errors returned on MPI_COMM_WORLD */
  void startMpi();
  /** the world is a private duplicate of `base` (with the bf16 op) */
  InitResult adopt(MPI_Comm base, const char* what);

  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Op bf16SumOp_ = MPI_OP_NULL;
  int rank_ = -1;
  int size_ = 0;
  int threadLevel_ = 0;
  bool finalized_ = false;
  /** MPI_Init_thread has run in this process */
  bool started_ = false;
  /** while joining: the ranks joined so far (MPI_COMM_SELF at first) and rank 0's open port */
  MPI_Comm joining_ = MPI_COMM_NULL;
  std::string port_;
  std::array<std::atomic<int64_t>, KIND_COUNT> bytesSent_{};
};

/** the non-commutative bf16 sum (mpi_collectives.cc), registered by World::init */
void bf16SumUserFn(void* in, void* inout, int* len, MPI_Datatype* datatype);

}  // namespace hcsp::mpi
