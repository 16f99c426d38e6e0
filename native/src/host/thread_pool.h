// A fixed pool of worker threads for row-parallel kernels. Work is split into contiguous
// row ranges; each output is still computed by exactly one thread in its own order, so the
// thread count never changes a result.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace hcsp {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);
  ~ThreadPool();
  int size() const { return static_cast<int>(workers_.size()) + 1; }
  /** fn(begin, end) over [0, n) in at most size() contiguous ranges of at least `grain` rows */
  void parallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

 private:
  void workerLoop(int index);
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  std::vector<std::pair<int64_t, int64_t>> ranges_;
  int64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
  std::mutex runMutex_;
};

/** the process's pool: HCSP_NATIVE_THREADS threads, else one per hardware thread */
ThreadPool& defaultPool();

}  // namespace hcsp
