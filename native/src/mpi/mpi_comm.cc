#include "mpi_comm.h"

#include <dlfcn.h>

#include <algorithm>
#include <climits>
#include <cstdlib>

namespace hcsp::mpi {

const char* errorCodeName(ErrorCode code) {
  // The codes are the contract with packages/backend-rocm/src/comm/mpiCommunicator.ts.
  switch (code) {
    case ErrorCode::Call:
      return "HCSP_MPI";
    case ErrorCode::Mismatch:
      return "HCSP_MPI_MISMATCH";
    case ErrorCode::Argument:
      return "HCSP_MPI_ARGUMENT";
    case ErrorCode::State:
      return "HCSP_MPI_STATE";
  }
  return "HCSP_MPI";
}

void failMpi(ErrorCode code, const std::string& message) { throw MpiError(code, message); }

const char* kindName(Kind kind) {
  switch (kind) {
    case Kind::AllReduce:
      return "allReduce";
    case Kind::ReduceScatter:
      return "reduceScatter";
    case Kind::AllGather:
      return "allGather";
    case Kind::Control:
      return "control";
  }
  return "control";
}

namespace {

/** the MPI-3.1 error classes by name (MPI_Error_class of a failure) */
std::string errorClassName(int cls) {
  static const std::pair<int, const char*> NAMES[] = {
      {MPI_SUCCESS, "MPI_SUCCESS"},
      {MPI_ERR_BUFFER, "MPI_ERR_BUFFER"},
      {MPI_ERR_COUNT, "MPI_ERR_COUNT"},
      {MPI_ERR_TYPE, "MPI_ERR_TYPE"},
      {MPI_ERR_TAG, "MPI_ERR_TAG"},
      {MPI_ERR_COMM, "MPI_ERR_COMM"},
      {MPI_ERR_RANK, "MPI_ERR_RANK"},
      {MPI_ERR_REQUEST, "MPI_ERR_REQUEST"},
      {MPI_ERR_ROOT, "MPI_ERR_ROOT"},
      {MPI_ERR_GROUP, "MPI_ERR_GROUP"},
      {MPI_ERR_OP, "MPI_ERR_OP"},
      {MPI_ERR_TOPOLOGY, "MPI_ERR_TOPOLOGY"},
      {MPI_ERR_DIMS, "MPI_ERR_DIMS"},
      {MPI_ERR_ARG, "MPI_ERR_ARG"},
      {MPI_ERR_UNKNOWN, "MPI_ERR_UNKNOWN"},
      {MPI_ERR_TRUNCATE, "MPI_ERR_TRUNCATE"},
      {MPI_ERR_OTHER, "MPI_ERR_OTHER"},
      {MPI_ERR_INTERN, "MPI_ERR_INTERN"},
      {MPI_ERR_IN_STATUS, "MPI_ERR_IN_STATUS"},
      {MPI_ERR_PENDING, "MPI_ERR_PENDING"},
      {MPI_ERR_NO_MEM, "MPI_ERR_NO_MEM"},
      {MPI_ERR_SPAWN, "MPI_ERR_SPAWN"},
  };
  for (const auto& [c, name] : NAMES) {
    if (c == cls) return name;
  }
  return "MPI error class " + std::to_string(cls);
}

/** the largest piece one MPI call moves: int counts of MPI_BYTE, kept well inside INT_MAX */
constexpr int64_t PIECE_BYTES = int64_t{1} << 30;

}  // namespace

std::string libraryVersion() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  if (MPI_Get_library_version(text, &len) != MPI_SUCCESS) return "unknown MPI library";
  std::string s(text, static_cast<size_t>(std::max(len, 0)));
  while (!s.empty() && (s.back() == '\n' || s.back() == '\0' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string standardVersion() {
  int version = 0, subversion = 0;
  if (MPI_Get_version(&version, &subversion) != MPI_SUCCESS) return "unknown";
  return std::to_string(version) + "." + std::to_string(subversion);
}

World& World::instance() {
  static World world;
  return world;
}

void World::check(int rc, const char* call, const std::string& what) const {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  std::string message = MPI_Error_string(rc, text, &len) == MPI_SUCCESS ? std::string(text, static_cast<size_t>(len)) : "error code " + std::to_string(rc);
  int cls = MPI_ERR_UNKNOWN;
  if (MPI_Error_class(rc, &cls) != MPI_SUCCESS) cls = MPI_ERR_UNKNOWN;
  const std::string name = errorClassName(cls);
  const std::string where = rank_ >= 0 ? "rank " + std::to_string(rank_) + " of " + std::to_string(size_) + ": " : "";
  throw MpiError(ErrorCode::Call, where + call + " failed (" + what + "): " + message + " (" + name + ")", call, name);
}

void World::startMpi() {
  if (finalized_) failMpi(ErrorCode::State, "MPI was finalized in this process; it cannot be initialized again (MPI allows one MPI_Init per process)");
  if (started_) failMpi(ErrorCode::State, "MPI is already started in this process (init() or joinStart() ran)");
  // Node loads an addon with RTLD_LOCAL, so libmpi's symbols are not global; Open MPI's
  // components (dlopen'ed plugins) resolve some of them globally. Promote the library
  // already loaded with the addon to RTLD_GLOBAL before MPI starts (as mpi4py does).
  Dl_info dl{};
  if (dladdr(reinterpret_cast<void*>(&MPI_Init_thread), &dl) != 0 && dl.dli_fname != nullptr) {
    dlopen(dl.dli_fname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
  }
  int already = 0;
  check(MPI_Initialized(&already), "MPI_Initialized", "before MPI_Init_thread");
  if (already) failMpi(ErrorCode::State, "MPI was initialized by someone else in this process; hcsp_mpi must call MPI_Init_thread itself");
  int provided = 0;
  check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread", "MPI_THREAD_SERIALIZED requested");
  started_ = true;
  // From here on, errors of calls on the world return instead of aborting the job.
  check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler", "MPI_COMM_WORLD, MPI_ERRORS_RETURN");
  check(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler", "MPI_COMM_SELF, MPI_ERRORS_RETURN");
  if (provided < MPI_THREAD_SERIALIZED) {
    MPI_Finalize();
    finalized_ = true;
    failMpi(ErrorCode::State, "MPI_Init_thread provided thread level " + std::to_string(provided) +
                                  " below MPI_THREAD_SERIALIZED: the collectives run on Node's worker threads, one at a time, which needs it");
  }
  threadLevel_ = provided;
}

InitResult World::adopt(MPI_Comm base, const char* what) {
  MPI_Comm dup = MPI_COMM_NULL;
  // A private communicator: our point-to-point tags cannot meet anyone else's messages.
  check(MPI_Comm_dup(base, &dup), "MPI_Comm_dup", what);
  check(MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler", "the duplicated world, MPI_ERRORS_RETURN");
  int rank = -1, size = 0;
  check(MPI_Comm_rank(dup, &rank), "MPI_Comm_rank", "the duplicated world");
  check(MPI_Comm_size(dup, &size), "MPI_Comm_size", "the duplicated world");
  MPI_Op op = MPI_OP_NULL;
  // commute = 0: MPI must keep the operands in rank order (see mpi_collectives.cc).
  check(MPI_Op_create(&bf16SumUserFn, 0, &op), "MPI_Op_create", "the bf16 sum, non-commutative");
  comm_ = dup;
  bf16SumOp_ = op;
  rank_ = rank;
  size_ = size;
  return {rank_, size_, threadLevel_};
}

InitResult World::init() {
  if (initialized()) return {rank_, size_, threadLevel_};
  if (joining_ != MPI_COMM_NULL) failMpi(ErrorCode::State, "init(): this process is joining a world (joinStart ran); finish it with joinFinish()");
  startMpi();
  return adopt(MPI_COMM_WORLD, "MPI_COMM_WORLD");
}

void World::joinStart() {
  startMpi();
  joining_ = MPI_COMM_SELF;
}

namespace {
void requireJoining(MPI_Comm joining, const char* what) {
  if (joining == MPI_COMM_NULL) failMpi(ErrorCode::State, std::string(what) + ": not joining a world (call joinStart() first)");
}
}  // namespace

std::string World::joinOpenPort() {
  requireJoining(joining_, "joinOpenPort");
  if (!port_.empty()) failMpi(ErrorCode::State, "joinOpenPort: the port is already open");
  char name[MPI_MAX_PORT_NAME] = {0};
  check(MPI_Open_port(MPI_INFO_NULL, name), "MPI_Open_port", "rank 0's port for the others to join (needs Open MPI's ompi-server, pmix_server_uri)");
  port_ = name;
  return port_;
}

void World::joinAccept(const std::string& port) {
  requireJoining(joining_, "joinAccept");
  int members = 0;
  check(MPI_Comm_size(joining_, &members), "MPI_Comm_size", "the ranks joined so far");
  MPI_Comm inter = MPI_COMM_NULL, merged = MPI_COMM_NULL;
  const std::string what = "rank " + std::to_string(members) + " joining the " + std::to_string(members) + " already joined";
  check(MPI_Comm_accept(port.c_str(), MPI_INFO_NULL, 0, joining_, &inter), "MPI_Comm_accept", what);
  check(MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler", what);
  // high = 0: the ranks already joined keep their ranks; the newcomer comes after them
  check(MPI_Intercomm_merge(inter, 0, &merged), "MPI_Intercomm_merge", what);
  MPI_Comm_free(&inter);
  check(MPI_Comm_set_errhandler(merged, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler", what);
  if (joining_ != MPI_COMM_SELF) MPI_Comm_free(&joining_);
  joining_ = merged;
}

void World::joinConnect(const std::string& port) {
  requireJoining(joining_, "joinConnect");
  if (joining_ != MPI_COMM_SELF) failMpi(ErrorCode::State, "joinConnect: this process has already joined");
  MPI_Comm inter = MPI_COMM_NULL, merged = MPI_COMM_NULL;
  check(MPI_Comm_connect(port.c_str(), MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter), "MPI_Comm_connect", "joining at port " + port);
  check(MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler", "joining");
  // high = 1: the newcomer is the last rank of the merged world
  check(MPI_Intercomm_merge(inter, 1, &merged), "MPI_Intercomm_merge", "joining at port " + port);
  MPI_Comm_free(&inter);
  check(MPI_Comm_set_errhandler(merged, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler", "joining");
  joining_ = merged;
}

InitResult World::joinFinish() {
  requireJoining(joining_, "joinFinish");
  if (!port_.empty()) {
    check(MPI_Close_port(port_.c_str()), "MPI_Close_port", "rank 0's join port");
    port_.clear();
  }
  const InitResult r = adopt(joining_, "the joined world");
  if (joining_ != MPI_COMM_SELF) MPI_Comm_free(&joining_);
  joining_ = MPI_COMM_NULL;
  return r;
}

void World::requireReady(const char* what) const {
  if (finalized_) failMpi(ErrorCode::State, std::string(what) + ": MPI was finalized");
  if (!initialized()) failMpi(ErrorCode::State, std::string(what) + ": MPI is not initialized (call init() first)");
}

void World::finalize() {
  if (finalized_) return;
  if (!started_) {
    // never started: nothing to end (MPI_Finalize without MPI_Init is erroneous)
    finalized_ = true;
    return;
  }
  if (bf16SumOp_ != MPI_OP_NULL) MPI_Op_free(&bf16SumOp_);
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  if (joining_ != MPI_COMM_NULL && joining_ != MPI_COMM_SELF) MPI_Comm_free(&joining_);
  joining_ = MPI_COMM_NULL;
  comm_ = MPI_COMM_NULL;
  finalized_ = true;
  check(MPI_Finalize(), "MPI_Finalize", "finalize()");
}

void World::abort(int code) {
  if (started_ && !finalized_) MPI_Abort(initialized() ? comm_ : MPI_COMM_WORLD, code);
  // MPI_Abort does not return when it works; if it did, end this process at least.
  std::_Exit(code == 0 ? 1 : code);
}

void World::sendrecv(Kind kind, const void* send, int64_t sendBytes, int to, void* recv, int64_t recvBytes, int from, const std::string& what) {
  const auto* s = static_cast<const uint8_t*>(send);
  auto* r = static_cast<uint8_t*>(recv);
  // both sides cut their messages alike (the sender's send pieces are the receiver's receive
  // pieces), so the number of pieces is the larger of the two sides' counts
  const int64_t pieces = std::max<int64_t>(1, std::max((sendBytes + PIECE_BYTES - 1) / PIECE_BYTES, (recvBytes + PIECE_BYTES - 1) / PIECE_BYTES));
  const int tag = static_cast<int>(kind);
  for (int64_t p = 0; p < pieces; p++) {
    const int64_t so = std::min(sendBytes, p * PIECE_BYTES), sn = std::min(sendBytes - so, PIECE_BYTES);
    const int64_t ro = std::min(recvBytes, p * PIECE_BYTES), rn = std::min(recvBytes - ro, PIECE_BYTES);
    MPI_Status status;
    const std::string step =
        what + ", " + std::to_string(sn) + " bytes to rank " + std::to_string(to) + ", " + std::to_string(rn) + " from rank " + std::to_string(from);
    // A longer message from the peer fails inside MPI (MPI_ERR_TRUNCATE); a shorter one is
    // told by the received count.
    check(MPI_Sendrecv(sn ? s + so : s, static_cast<int>(sn), MPI_BYTE, to, tag, rn ? r + ro : r, static_cast<int>(rn), MPI_BYTE, from, tag, comm_, &status),
          "MPI_Sendrecv", step);
    int got = 0;
    check(MPI_Get_count(&status, MPI_BYTE, &got), "MPI_Get_count", step);
    if (got != rn) {
      // mid-pattern: the peers' states are unknown now (not a Mismatch, which the ranks detect together before moving data)
      throw MpiError(ErrorCode::Call,
                     "rank " + std::to_string(rank_) + " of " + std::to_string(size_) + ": MPI_Sendrecv (" + step + ") received " + std::to_string(got) +
                         " bytes from rank " + std::to_string(from) + ", expected " + std::to_string(rn) + ": the ranks disagree on the buffer size",
                     "MPI_Sendrecv");
    }
    bytesSent_[static_cast<int>(kind)] += sn;
  }
}

void World::barrier() { check(MPI_Barrier(comm_), "MPI_Barrier", "barrier()"); }

}  // namespace hcsp::mpi
