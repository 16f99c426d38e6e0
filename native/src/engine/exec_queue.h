// The process's device queue: every node a native device runs goes through it, in the order it
// was enqueued, on one worker thread. Enqueueing returns at once (the host side of a run only
// records work, as a GPU stream does); the host waits only at drain(), where a value must reach
// it. The first job that fails latches its error: later jobs are skipped (their inputs may be
// missing), and the next drain() raises it, naming the node. One queue per process: hcsp runs
// one process per GPU, and on a GPU the jobs only launch kernels onto the device's stream.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace hcsp::engine {

/** a job's failure: the error kind's code (errors.h) and the message, node named */
struct JobError {
  std::string code;
  std::string message;
};

class ExecQueue {
 public:
  using Job = std::function<void()>;

  /** the process's queue (its worker starts on first use and lives as long as the process) */
  static ExecQueue& instance();

  /**
   * appends `job`; `label` names it in a latched error ("layers.3.attn (linear, rank 1)").
   * A job that throws latches the first error; while one is latched, jobs are skipped.
   */
  void enqueue(std::string label, Job job);
  /** a job of a batch; `always`: it runs even while an error is latched (a batch's own clean-up) */
  struct BatchJob {
    std::string label;
    Job job;
    bool always = false;
  };
  /** enqueue() of each job in order, under one lock and at most one wake-up (a recorded run's replay) */
  void enqueueBatch(std::vector<BatchJob> jobs);
  /** waits until every job enqueued so far has run; returns the latched error (cleared) if any */
  bool drain(JobError* error);
  /** runs `job` after everything enqueued so far and waits for it; its own exception propagates */
  void runAndWait(const Job& job);
  /**
   * the label of the job this thread is running ("" outside a job, and for runAndWait's): a GPU
   * op's device checks name their node with it when the run's sync raises them (gpu/device_checks.h)
   */
  static const std::string& runningLabel();

  /**
   * Stubbed kernels: nodes fill their outputs with empty placeholders instead of running, so a
   * benchmark times the host side of a run alone (scripts/engineEnqueueBench.ts). Never set
   * in a run whose values anyone reads.
   */
  void setStubKernels(bool on) { stubKernels_.store(on); }
  bool stubKernels() const { return stubKernels_.load(); }

 private:
  ExecQueue();
  void loop();

  struct Entry {
    std::string label;
    Job job;
    uint64_t seq;
    /** runs even while an error is latched (runAndWait's one-shot runs) */
    bool always;
  };
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  std::deque<Entry> jobs_;
  uint64_t enqueued_ = 0;
  uint64_t finished_ = 0;
  bool failed_ = false;
  /** the worker waits for jobs (else it is running a batch and will look again) */
  bool idle_ = false;
  JobError error_;
  std::thread worker_;
  std::atomic<bool> stubKernels_{false};
};

}  // namespace hcsp::engine
