#include "stall_guard.h"

#include <cstdio>
#include <cstdlib>

namespace hcsp::mpi {

namespace {
std::mutex limitMutex;
double limitMs = 0;
std::string whoAmI = "this process";
}  // namespace

void setStallLimit(double ms, std::string who) {
  std::lock_guard<std::mutex> lock(limitMutex);
  limitMs = ms > 0 ? ms : 0;
  whoAmI = who.empty() ? "this process" : std::move(who);
}

StallGuard::StallGuard(const char* call) {
  double ms;
  std::string who;
  {
    std::lock_guard<std::mutex> lock(limitMutex);
    ms = limitMs;
    who = whoAmI;
  }
  if (ms <= 0) return;
  thread_ = std::thread([this, ms, who = std::move(who), call = std::string(call)] {
    std::unique_lock<std::mutex> lock(mutex_);
    if (done_.wait_for(lock, std::chrono::duration<double, std::milli>(ms), [this] { return returned_; })) return;
    std::fprintf(stderr, "hcsp: %s: %s made no progress for %g s, the collective timeout (a peer stopped or hung?): ending this process\n", who.c_str(),
                 call.c_str(), ms / 1000);
    std::fflush(nullptr);
    std::_Exit(1);
  });
}

StallGuard::~StallGuard() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    returned_ = true;
  }
  done_.notify_one();
  thread_.join();
}

}  // namespace hcsp::mpi
