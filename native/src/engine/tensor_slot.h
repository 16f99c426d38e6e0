// A value of a run as the host side holds it: the tensor a queued job will produce. The slot
// exists from the moment its node is enqueued (its dtype and shape are the graph's declaration);
// the device queue fills it when the node runs. Jobs hold slots, not tensors, so a later job can
// read what an earlier one produces; a slot the host frees lives on until the last queued job
// holding it has run.
#pragma once
#include <atomic>
#include <memory>
#include <string>

#include "../host/errors.h"
#include "../host/tensor.h"

namespace hcsp::engine {

class TensorSlot {
 public:
  /** a slot already holding `t` (an upload) */
  explicit TensorSlot(TensorPtr t) : dtype_(t->dtype()), shape_(t->shape()), tensor_(std::move(t)) { ready_.store(true, std::memory_order_release); }
  /** a slot the queue fills with a dtype[shape] tensor */
  TensorSlot(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {}

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  bool ready() const { return ready_.load(std::memory_order_acquire); }

  /** the queue's worker, once */
  void fill(TensorPtr t) {
    tensor_ = std::move(t);
    ready_.store(true, std::memory_order_release);
  }
  /** the tensor, or an error naming what `what()` says (built only then) when its node has not run (or failed) */
  template <class What>
  const TensorPtr& tensor(What what) const {
    if (!ready()) fail(ErrorKind::Runtime, what() + " is not computed: the node producing it has not run (it failed, or the device was not synchronized)");
    return tensor_;
  }

 private:
  DType dtype_;
  Shape shape_;
  TensorPtr tensor_;
  std::atomic<bool> ready_{false};
};

using SlotPtr = std::shared_ptr<TensorSlot>;

}  // namespace hcsp::engine
