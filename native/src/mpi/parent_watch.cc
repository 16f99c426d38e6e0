#include "parent_watch.h"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

namespace hcsp::mpi {

namespace {
/** how often the watcher looks: the bound on a rank outliving its launcher */
constexpr auto POLL = std::chrono::milliseconds(100);

std::mutex lineMutex;
std::string goneLine;
std::atomic<bool> armed{false};
std::atomic<bool> ending{false};

/** the process group of /proc/<pid>/stat (-1: unreadable, it ended) */
long groupOf(const char* pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%s/stat", pid);
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return -1;
  char buf[1024];
  const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  // the command name, in parentheses, may hold any character: the fields follow the last ')'
  const char* rest = std::strrchr(buf, ')');
  char state = 0;
  long ppid = 0, pgrp = -1;
  if (rest == nullptr || std::sscanf(rest + 1, " %c %ld %ld", &state, &ppid, &pgrp) != 3) return -1;
  return pgrp;
}

/** SIGKILL to every other process of the group this process leads (none when it leads none) */
void killOwnGroup() {
  const pid_t self = getpid();
  if (getpgrp() != self) return;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return;
  while (const dirent* e = readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || pid == self) continue;
    if (groupOf(e->d_name) == self) kill(static_cast<pid_t>(pid), SIGKILL);
  }
  closedir(proc);
}
}  // namespace

void parentEnded() {
  // the watcher and JavaScript may both see the end: one line, one teardown
  if (!ending.exchange(true)) {
    {
      std::lock_guard<std::mutex> lock(lineMutex);
      std::fprintf(stderr, "%s\n", goneLine.c_str());
    }
    std::fflush(nullptr);
    killOwnGroup();
    std::_Exit(1);
  }
  // the other one is ending this process
  for (;;) pause();
}

void endWithParent(long parentPid, std::string line) {
  {
    std::lock_guard<std::mutex> lock(lineMutex);
    goneLine = std::move(line);
  }
  if (armed.exchange(true)) return;
  std::thread([parentPid] {
    while (static_cast<long>(getppid()) == parentPid) std::this_thread::sleep_for(POLL);
    parentEnded();
  }).detach();
}

}  // namespace hcsp::mpi
