#include "exec_queue.h"

#include <exception>
#include <new>

#include "../host/errors.h"

namespace hcsp::engine {

ExecQueue& ExecQueue::instance() {
  // never destroyed: its worker may be running a job while static destructors run at exit
  static ExecQueue* queue = new ExecQueue();
  return *queue;
}

ExecQueue::ExecQueue() : worker_([this] { loop(); }) { worker_.detach(); }

void ExecQueue::enqueue(std::string label, Job job) {
  std::lock_guard<std::mutex> lock(mutex_);
  jobs_.push_back(Entry{std::move(label), std::move(job), ++enqueued_, false});
  // a worker still busy takes this job in its next batch: no wake-up (a system call) per node
  if (idle_) wake_.notify_one();
}

void ExecQueue::enqueueBatch(std::vector<BatchJob> jobs) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (BatchJob& j : jobs) jobs_.push_back(Entry{std::move(j.label), std::move(j.job), ++enqueued_, j.always});
  if (idle_ && !jobs.empty()) wake_.notify_one();
}

namespace {

/** the message with `label: ` in front, once (a kernel's message may already start with the op) */
JobError describe(const std::string& label, const std::string& code, const std::string& message) {
  return JobError{code, label.empty() ? message : label + ": " + message};
}

const std::string noLabel;
/** the job the queue's worker is running (only the worker runs jobs) */
thread_local const std::string* runningJobLabel = &noLabel;

/** names the running job for the duration of its call, thrown or not */
struct Running {
  explicit Running(const std::string& label) { runningJobLabel = &label; }
  ~Running() { runningJobLabel = &noLabel; }
};

}  // namespace

const std::string& ExecQueue::runningLabel() { return *runningJobLabel; }

void ExecQueue::loop() {
  std::deque<Entry> batch;
  for (;;) {
    if (batch.empty()) {
      std::unique_lock<std::mutex> lock(mutex_);
      idle_ = true;
      wake_.wait(lock, [&] { return !jobs_.empty(); });
      idle_ = false;
      batch.swap(jobs_);
    }
    Entry e = std::move(batch.front());
    batch.pop_front();
    bool skip;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      skip = failed_ && !e.always;
    }
    JobError err;
    bool threw = false;
    if (!skip) {
      try {
        Running running(e.label);
        e.job();
      } catch (const Error& x) {
        threw = true;
        err = describe(e.label, errorCode(x.kind()), x.what());
      } catch (const std::bad_alloc&) {
        threw = true;
        err = describe(e.label, "HCSP_OOM", "host device out of memory (the system refused an allocation)");
      } catch (const std::exception& x) {
        threw = true;
        err = describe(e.label, "HCSP_RUNTIME", x.what());
      }
    }
    // the job (and the tensors it holds) goes before the waiters hear it finished
    e.job = nullptr;
    std::lock_guard<std::mutex> lock(mutex_);
    if (threw && !failed_) {
      failed_ = true;
      error_ = std::move(err);
    }
    finished_ = e.seq;
    done_.notify_all();
  }
}

bool ExecQueue::drain(JobError* error) {
  std::unique_lock<std::mutex> lock(mutex_);
  const uint64_t target = enqueued_;
  done_.wait(lock, [&] { return finished_ >= target; });
  if (!failed_) return true;
  if (error) *error = error_;
  failed_ = false;
  error_ = JobError{};
  return false;
}

void ExecQueue::runAndWait(const Job& job) {
  std::exception_ptr thrown;
  std::unique_lock<std::mutex> lock(mutex_);
  const uint64_t seq = ++enqueued_;
  // not skipped by a latched error: a one-shot run reports its own failure, and leaves the latch to the run that set it
  jobs_.push_back(Entry{"",
                        [&] {
                          try {
                            job();
                          } catch (...) {
                            thrown = std::current_exception();
                          }
                        },
                        seq, true});
  if (idle_) wake_.notify_one();
  done_.wait(lock, [&] { return finished_ >= seq; });
  lock.unlock();
  if (thrown) std::rethrow_exception(thrown);
}

}  // namespace hcsp::engine
