// A run recorded once and replayed in one call per run: what a CUDA/HIP graph does for a
// stream, at the level of the device queue. The graph loop hands its nodes over once, in its
// order, each as a step: the job body the node-by-node path enqueues (a kernel's launches, an
// NCCL call) and the program's slot indices it reads and writes. A replay makes a fresh slot
// for every value, puts the run's inputs and the session's weights in theirs, and enqueues
// every step in one batch: no JavaScript and no N-API call per node. A value's tensor goes
// back to the pool when the last step holding its slot has run, as on the node-by-node path,
// so a replay takes the same blocks.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "../host/memory.h"
#include "tensor_slot.h"

namespace hcsp::engine {

/** slots per rank and port (one rank but for a collective over every simulated rank); null: an absent port */
using SlotGrid = std::vector<std::vector<SlotPtr>>;
/** a step's work on its slots: reads `in`, fills `out` (runs on the queue's worker) */
using StepRun = std::function<void(const SlotGrid& in, const SlotGrid& out)>;
/** slot indices per rank and port; -1: an absent port */
using IndexGrid = std::vector<std::vector<int32_t>>;

struct Step {
  /** names the node in a latched error */
  std::string label;
  IndexGrid in;
  IndexGrid out;
  /** per output port, its declaration (a slot of that dtype and shape, never filled): a replay makes a fresh one like it */
  SlotGrid declared;
  StepRun run;
};

class Program {
 public:
  /**
   * Checks that every index is in [0, slots), that each written slot is written once, by one
   * step, and read only after (or is an input or fixed), and that each output is produced;
   * errors name the step.
   */
  Program(std::vector<Step> steps, int32_t slots, std::vector<std::pair<int32_t, SlotPtr>> fixed, std::vector<int32_t> inputs, std::vector<int32_t> outputs);

  /**
   * enqueues one run: `inputs` (the run's, in the order given at recording) in their slots;
   * returns the output slots, queued. The program lets go of every value it made before the
   * queue can run a step, so the steps' own references decide when each is freed. With `dry`,
   * a dry run on that device (Memory::setDryRun): every block taken as a run takes it, no
   * kernel launched (a session's warm-up).
   */
  std::vector<SlotPtr> replay(std::vector<SlotPtr> inputs, Memory* dry = nullptr) const;
  /** the steps recorded */
  size_t size() const { return steps_ ? steps_->size() : 0; }
  /** lets go of the steps and the fixed values (the session's weights); replay() then fails. Queued jobs keep what they hold. */
  void release();

 private:
  // shared with the queued jobs of every replay, which may outlive release()
  std::shared_ptr<const std::vector<Step>> steps_;
  int32_t slots_;
  std::vector<std::pair<int32_t, SlotPtr>> fixed_;
  std::vector<int32_t> inputs_;
  std::vector<int32_t> outputs_;
};

}  // namespace hcsp::engine
