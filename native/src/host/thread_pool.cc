#include "thread_pool.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "errors.h"

namespace hcsp {

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < std::max(1, threads); i++) workers_.emplace_back([this, i] { workerLoop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::workerLoop(int index) {
  int64_t seen = 0;
  for (;;) {
    std::unique_lock<std::mutex> lock(mutex_);
    wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    auto range = ranges_[index];
    auto* job = job_;
    lock.unlock();
    std::exception_ptr err;
    if (range.first < range.second) {
      try {
        (*job)(range.first, range.second);
      } catch (...) {
        err = std::current_exception();
      }
    }
    lock.lock();
    if (err && !error_) error_ = err;
    if (--pending_ == 0) done_.notify_one();
  }
}

void ThreadPool::parallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  const int64_t parts = std::max<int64_t>(1, std::min<int64_t>(size(), (n + std::max<int64_t>(grain, 1) - 1) / std::max<int64_t>(grain, 1)));
  if (parts == 1 || workers_.empty()) {
    fn(0, n);
    return;
  }
  std::lock_guard<std::mutex> runLock(runMutex_);
  std::vector<std::pair<int64_t, int64_t>> ranges(size());
  for (int64_t p = 0; p < size(); p++) {
    ranges[p] = p < parts ? std::make_pair(n * p / parts, n * (p + 1) / parts) : std::make_pair(n, n);
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ranges_ = ranges;
    job_ = &fn;
    pending_ = static_cast<int>(workers_.size());
    error_ = nullptr;
    generation_++;
  }
  wake_.notify_all();
  std::exception_ptr mine;
  try {
    fn(ranges[0].first, ranges[0].second);
  } catch (...) {
    mine = std::current_exception();
  }
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return pending_ == 0; });
  if (mine) std::rethrow_exception(mine);
  if (error_) std::rethrow_exception(error_);
}

ThreadPool& defaultPool() {
  static ThreadPool pool([] {
    const char* env = std::getenv("HCSP_NATIVE_THREADS");
    if (env && *env) {
      char* end = nullptr;
      long n = std::strtol(env, &end, 10);
      if (*end != '\0' || n < 1 || n > 1024) {
        throw Error(ErrorKind::Attr, std::string("HCSP_NATIVE_THREADS must be an integer in [1, 1024], got '") + env + "'");
      }
      return static_cast<int>(n);
    }
    return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }());
  return pool;
}

}  // namespace hcsp
