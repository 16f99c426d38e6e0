#include "program.h"

#include "../host/errors.h"
#include "exec_queue.h"

namespace hcsp::engine {

namespace {

enum class Written : uint8_t { No, Given, ByStep };

}  // namespace

Program::Program(std::vector<Step> steps, int32_t slots, std::vector<std::pair<int32_t, SlotPtr>> fixed, std::vector<int32_t> inputs,
                 std::vector<int32_t> outputs)
    : steps_(std::make_shared<const std::vector<Step>>(std::move(steps))),
      slots_(slots),
      fixed_(std::move(fixed)),
      inputs_(std::move(inputs)),
      outputs_(std::move(outputs)) {
  if (slots_ < 0) fail(ErrorKind::Size, "program: " + std::to_string(slots_) + " slots");
  std::vector<Written> written(static_cast<size_t>(slots_), Written::No);
  auto checked = [&](int32_t i, const std::string& what) -> size_t {
    if (i < 0 || i >= slots_) fail(ErrorKind::Size, what + " names slot " + std::to_string(i) + ", outside [0, " + std::to_string(slots_) + ")");
    return static_cast<size_t>(i);
  };
  auto give = [&](int32_t i, const std::string& what) {
    Written& w = written[checked(i, what)];
    if (w != Written::No) fail(ErrorKind::Size, what + " gives slot " + std::to_string(i) + " a second value");
    w = Written::Given;
  };
  for (const auto& [i, slot] : fixed_) {
    give(i, "program: a fixed value");
    if (!slot) fail(ErrorKind::Size, "program: fixed slot " + std::to_string(i) + " holds nothing");
  }
  for (int32_t i : inputs_) give(i, "program: an input");
  for (const Step& s : *steps_) {
    const std::string what = "program: step '" + s.label + "'";
    for (const auto& ports : s.in) {
      for (int32_t i : ports) {
        if (i >= 0 && written[checked(i, what)] == Written::No) fail(ErrorKind::Size, what + " reads slot " + std::to_string(i) + " before any step writes it");
      }
    }
    if (s.declared.size() != s.out.size())
      fail(ErrorKind::Size, what + " declares " + std::to_string(s.declared.size()) + " ranks of outputs for " + std::to_string(s.out.size()));
    for (size_t r = 0; r < s.out.size(); r++) {
      if (s.declared[r].size() != s.out[r].size())
        fail(ErrorKind::Size, what + " declares " + std::to_string(s.declared[r].size()) + " output ports for " + std::to_string(s.out[r].size()));
      for (size_t p = 0; p < s.out[r].size(); p++) {
        if (s.out[r][p] < 0) continue;
        if (!s.declared[r][p]) fail(ErrorKind::Size, what + " writes slot " + std::to_string(s.out[r][p]) + " from an undeclared port");
        Written& w = written[checked(s.out[r][p], what)];
        if (w != Written::No) fail(ErrorKind::Size, what + " writes slot " + std::to_string(s.out[r][p]) + ", which already has a value");
        w = Written::ByStep;
      }
    }
  }
  for (int32_t i : outputs_) {
    if (written[checked(i, "program: an output")] == Written::No) fail(ErrorKind::Size, "program: output slot " + std::to_string(i) + " is never written");
  }
}

std::vector<SlotPtr> Program::replay(std::vector<SlotPtr> inputs, Memory* dry) const {
  if (!steps_) fail(ErrorKind::Runtime, "replay: the program was released");
  if (inputs.size() != inputs_.size())
    fail(ErrorKind::Size, "replay: " + std::to_string(inputs.size()) + " inputs given, the program has " + std::to_string(inputs_.size()));
  std::vector<SlotPtr> slots(static_cast<size_t>(slots_));
  for (const auto& [i, slot] : fixed_) slots[static_cast<size_t>(i)] = slot;
  for (size_t k = 0; k < inputs.size(); k++) {
    if (!inputs[k]) fail(ErrorKind::Size, "replay: input " + std::to_string(k) + " is missing");
    slots[static_cast<size_t>(inputs_[k])] = inputs[k];
  }
  auto grid = [&](const IndexGrid& idx) {
    SlotGrid g(idx.size());
    for (size_t r = 0; r < idx.size(); r++) {
      g[r].reserve(idx[r].size());
      for (int32_t i : idx[r]) g[r].push_back(i < 0 ? nullptr : slots[static_cast<size_t>(i)]);
    }
    return g;
  };
  std::vector<ExecQueue::BatchJob> jobs;
  jobs.reserve(steps_->size() + 2);
  if (dry) jobs.push_back({"dry run", [dry] { dry->setDryRun(true); }, true});
  for (size_t k = 0; k < steps_->size(); k++) {
    const Step& s = (*steps_)[k];
    for (size_t r = 0; r < s.out.size(); r++) {
      for (size_t p = 0; p < s.out[r].size(); p++) {
        const int32_t i = s.out[r][p];
        if (i >= 0) slots[static_cast<size_t>(i)] = std::make_shared<TensorSlot>(s.declared[r][p]->dtype(), s.declared[r][p]->shape());
      }
    }
    // the step's own references: the program's table lets go of a value at the end of this call
    jobs.push_back({s.label, [steps = steps_, k, in = grid(s.in), out = grid(s.out)] { (*steps)[k].run(in, out); }});
  }
  if (dry) jobs.push_back({"dry run", [dry] { dry->setDryRun(false); }, true});
  std::vector<SlotPtr> outs;
  outs.reserve(outputs_.size());
  for (int32_t i : outputs_) outs.push_back(slots[static_cast<size_t>(i)]);
  slots.clear();
  inputs.clear();
  ExecQueue::instance().enqueueBatch(std::move(jobs));
  return outs;
}

void Program::release() {
  steps_.reset();
  fixed_.clear();
}

}  // namespace hcsp::engine
