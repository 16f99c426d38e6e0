#include "emulated_blocks.h"

#include <sys/mman.h>
#include <unistd.h>

#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "../host/errors.h"
#include "../host/thread_pool.h"
#include "emulated_fiber.h"
#include "vendor.h"

namespace hcsp::gpu {

thread_local EmulatedBlockIds emulatedBlockIds;

namespace {

/** a fiber's stack: kernels keep a few registers' worth of locals, so this is ample; its pages are touched only as used */
constexpr size_t kStackBytes = size_t{128} << 10;

/** one GPU thread of a block: its context and its stack, kept for the pool thread's next block */
struct Fiber {
  enum class State { Ready, AtBarrier, Done };
  FiberContext context;
  char* mapping = nullptr;
  size_t mappingBytes = 0;
  State state = State::Ready;
  /** the line of the barrier it waits at */
  int line = 0;

  Fiber() {
    const size_t guard = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    mappingBytes = guard + kStackBytes;
    void* p = mmap(nullptr, mappingBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (p == MAP_FAILED) fail(ErrorKind::OutOfMemory, "emulated device: no memory for a block thread's " + std::to_string(kStackBytes) + "-byte stack");
    mapping = static_cast<char*>(p);
    // the lowest page faults, so a fiber overflowing its stack stops the process instead of writing over another's
    mprotect(mapping, guard, PROT_NONE);
  }
  ~Fiber() { munmap(mapping, mappingBytes); }
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;
  char* stack() const { return mapping + (mappingBytes - kStackBytes); }
};

/** runs blocks on the pool thread that owns it, one at a time */
class BlockRunner {
 public:
  void run(const char* kernel, int64_t block, int64_t blocks, int threads, const std::function<void()>& body);
  /** the running fiber waits at the barrier on `line`: back to run()'s loop */
  void barrier(int line) {
    Fiber& f = *fibers_[current_];
    f.state = Fiber::State::AtBarrier;
    f.line = line;
    fiberSwitch(f.context, scheduler_);
  }

 private:
  [[noreturn]] static void entry();
  [[noreturn]] void failBlock(const char* kernel, int64_t block, const std::string& why);

  /** run()'s own context while a fiber runs */
  FiberContext scheduler_;
  std::vector<std::unique_ptr<Fiber>> fibers_;
  int current_ = 0;
  const std::function<void()>* body_ = nullptr;
  std::exception_ptr error_;
};

/** the runner whose block this OS thread is running now (null outside a block launch) */
thread_local BlockRunner* running = nullptr;

void setIds(int64_t block, int64_t blocks, int thread, int threads) {
  emulatedBlockIds = {block, blocks, thread, threads};
  emulatedThreadId = block * threads + thread;
  emulatedThreadCount = blocks * threads;
}

void clearIds() {
  emulatedBlockIds = {};
  emulatedThreadId = 0;
  emulatedThreadCount = 1;
}

void BlockRunner::entry() {
  BlockRunner* self = running;
  // an exception must not leave the fiber (its stack has no frame to unwind into): kept for run()
  try {
    (*self->body_)();
  } catch (...) {
    if (!self->error_) self->error_ = std::current_exception();
  }
  Fiber& f = *self->fibers_[self->current_];
  f.state = Fiber::State::Done;
  // for good: the next block prepares the stack afresh
  fiberSwitch(f.context, self->scheduler_);
  __builtin_unreachable();
}

void BlockRunner::failBlock(const char* kernel, int64_t block, const std::string& why) {
  running = nullptr;
  clearIds();
  // the fibers still waiting are dropped: the next block prepares their stacks afresh
  fail(ErrorKind::Runtime, std::string("emulated device: kernel ") + kernel + ", block " + std::to_string(block) + ": " + why +
                               " (every thread of a block must reach the same barriers)");
}

void BlockRunner::run(const char* kernel, int64_t block, int64_t blocks, int threads, const std::function<void()>& body) {
  while (static_cast<int>(fibers_.size()) < threads) fibers_.push_back(std::make_unique<Fiber>());
  body_ = &body;
  error_ = nullptr;
  running = this;
  for (int t = 0; t < threads; t++) {
    Fiber& f = *fibers_[t];
    fiberPrepare(f.context, f.stack(), kStackBytes, &BlockRunner::entry);
    f.state = Fiber::State::Ready;
  }
  for (int round = 0;; round++) {
    const bool backwards = (round & 1) != 0;
    for (int k = 0; k < threads; k++) {
      const int t = backwards ? threads - 1 - k : k;
      setIds(block, blocks, t, threads);
      current_ = t;
      fiberSwitch(scheduler_, fibers_[t]->context);
    }
    int done = 0;
    int waiting = -1;
    for (int t = 0; t < threads; t++) {
      const Fiber& f = *fibers_[t];
      if (f.state == Fiber::State::Done) {
        done++;
      } else if (waiting < 0) {
        waiting = t;
      } else if (f.line != fibers_[waiting]->line) {
        failBlock(kernel, block,
                  "thread " + std::to_string(waiting) + " waits at the barrier on line " + std::to_string(fibers_[waiting]->line) + ", thread " +
                      std::to_string(t) + " at the one on line " + std::to_string(f.line));
      }
    }
    if (done == threads) break;
    if (done > 0) {
      failBlock(kernel, block,
                std::to_string(done) + " of its " + std::to_string(threads) + " threads returned while thread " + std::to_string(waiting) +
                    " waits at the barrier on line " + std::to_string(fibers_[waiting]->line));
    }
    for (auto& f : fibers_) f->state = Fiber::State::Ready;
  }
  running = nullptr;
  clearIds();
  if (error_) std::rethrow_exception(error_);
}

}  // namespace

void emulatedBarrier(int line) {
  if (!running)
    fail(ErrorKind::Runtime,
         "emulated device: HCSP_BARRIER (line " + std::to_string(line) + ") outside a block launch: a grid-stride kernel has no block to wait for");
  running->barrier(line);
}

void runBlocksEmulated(const char* kernel, int64_t blocks, int threads, const std::function<void()>& body) {
  defaultPool().parallelFor(blocks, 1, [&](int64_t begin, int64_t end) {
    static thread_local BlockRunner runner;
    for (int64_t b = begin; b < end; b++) runner.run(kernel, b, blocks, threads, body);
  });
}

}  // namespace hcsp::gpu
