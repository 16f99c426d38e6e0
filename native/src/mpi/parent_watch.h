// A rank started by `hcsp launch` ends when its launcher does, whatever its JavaScript thread is
// doing: during the MPI join that thread blocks in MPI (MPI_Init_thread of a singleton,
// MPI_Open_port, MPI_Comm_dup), where no JavaScript event (the IPC channel's close) or timer
// runs, and a normal exit would wait for a worker blocked in MPI_Comm_accept/connect. A thread
// of its own polls getppid() (the launcher gone, the rank is re-parented): robust where
// PR_SET_PDEATHSIG is not (that signal would be handled on the blocked JavaScript thread, and
// it follows the parent's thread, not its process).
#pragma once
#include <string>

namespace hcsp::mpi {

/**
 * From now on, when this process's parent is no longer `parentPid`: writes `line` to stderr,
 * kills the other processes of the process group this process leads (what it started:
 * rank 0's ompi-server), and ends this process at once with status 1. Once per process.
 */
void endWithParent(long parentPid, std::string line);

/** the same, now (the launcher's end seen first by JavaScript: its IPC channel closed); needs endWithParent first */
[[noreturn]] void parentEnded();

}  // namespace hcsp::mpi
