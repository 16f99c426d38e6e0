// A bound on the MPI calls that wait for peers on the JavaScript thread (MPI_Init_thread's
// exchange under mpirun, MPI_Comm_dup of a world, MPI_Finalize): there no JavaScript timer can
// fire, so the collective watchdog of packages/backend-rocm/src/comm/collectiveWatchdog.ts
// cannot end a process stuck in one (a peer SIGSTOPped at that moment). The collectives
// proper run on Node's worker pool and are bounded by that watchdog instead.
#pragma once
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace hcsp::mpi {

/** the limit (ms; 0: none) and who this process is ("rank 1 of 4"), for the message */
void setStallLimit(double ms, std::string who);

/**
 * While alive, a thread watches the call it guards: past the limit it says which call made no
 * progress, naming this process, and ends the process (std::_Exit(1): a normal exit would wait
 * for the blocked call). A call that returns in time costs one thread start.
 */
class StallGuard {
 public:
  explicit StallGuard(const char* call);
  ~StallGuard();
  StallGuard(const StallGuard&) = delete;
  StallGuard& operator=(const StallGuard&) = delete;

 private:
  std::mutex mutex_;
  std::condition_variable done_;
  bool returned_ = false;
  std::thread thread_;
};

}  // namespace hcsp::mpi
