#include "js_program.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../engine/program.h"
#include "js_errors.h"
#include "js_gpu.h"
#include "js_tensor.h"
#include "run_worker.h"

namespace hcsp::addon {

namespace {

using ProgramPtr = std::shared_ptr<engine::Program>;

int32_t slotIndex(const Napi::Value& v, const std::string& what) {
  const double d = v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : -2;
  if (!(d >= -1) || d != static_cast<double>(static_cast<int32_t>(d))) fail(ErrorKind::Size, what + " is not a slot index (-1 for an absent port)");
  return static_cast<int32_t>(d);
}

std::vector<int32_t> indexList(const Napi::Value& v, const std::string& what) {
  if (!v.IsArray()) fail(ErrorKind::Size, what + " must be an array of slot indices");
  Napi::Array a = v.As<Napi::Array>();
  std::vector<int32_t> out(a.Length());
  for (uint32_t i = 0; i < a.Length(); i++) out[i] = slotIndex(a.Get(i), what + "[" + std::to_string(i) + "]");
  return out;
}

engine::IndexGrid indexGrid(const Napi::Value& v, const std::string& what) {
  if (!v.IsArray()) fail(ErrorKind::Size, what + " must be an array (one per rank) of arrays of slot indices");
  Napi::Array a = v.As<Napi::Array>();
  engine::IndexGrid g(a.Length());
  for (uint32_t r = 0; r < a.Length(); r++) g[r] = indexList(a.Get(r), what + "[" + std::to_string(r) + "]");
  return g;
}

engine::Step readStep(const Napi::Value& v, uint32_t k) {
  const std::string what = "recordProgram: step " + std::to_string(k);
  if (!v.IsObject()) fail(ErrorKind::Size, what + " is not an object");
  Napi::Object o = v.As<Napi::Object>();
  engine::Step step;
  if (o.Has("node")) {
    step = preparedStep(o.Get("node"));
  } else if (o.Has("collective") && o.Get("collective").IsExternal()) {
    step = **o.Get("collective").As<Napi::External<std::shared_ptr<engine::Step>>>().Data();
  } else {
    fail(ErrorKind::Size, what + " has neither a node from prepareNode() nor a collective from NcclComm.step()");
  }
  step.in = indexGrid(o.Get("in"), what + " (" + step.label + ") in");
  step.out = indexGrid(o.Get("out"), what + " (" + step.label + ") out");
  return step;
}

const ProgramPtr& programArg(const Napi::Value& v, const char* call) {
  if (!v.IsExternal()) fail(ErrorKind::Size, std::string(call) + ": the first argument is not a program from recordProgram()");
  return *v.As<Napi::External<ProgramPtr>>().Data();
}

}  // namespace

Napi::Value recordProgram(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    if (!info[0].IsArray()) fail(ErrorKind::Size, "recordProgram: steps must be an array");
    Napi::Array jsSteps = info[0].As<Napi::Array>();
    std::vector<engine::Step> steps;
    steps.reserve(jsSteps.Length());
    for (uint32_t k = 0; k < jsSteps.Length(); k++) steps.push_back(readStep(jsSteps.Get(k), k));
    const int32_t slots = slotIndex(info[1], "recordProgram: slots");
    if (!info[2].IsArray()) fail(ErrorKind::Size, "recordProgram: fixed must be an array of [slot, tensor]");
    Napi::Array jsFixed = info[2].As<Napi::Array>();
    std::vector<std::pair<int32_t, engine::SlotPtr>> fixed;
    for (uint32_t i = 0; i < jsFixed.Length(); i++) {
      const std::string what = "recordProgram: fixed[" + std::to_string(i) + "]";
      Napi::Value e = jsFixed.Get(i);
      if (!e.IsArray() || e.As<Napi::Array>().Length() != 2) fail(ErrorKind::Size, what + " must be [slot, tensor]");
      fixed.emplace_back(slotIndex(e.As<Napi::Array>().Get(0u), what), JsTensor::unwrapSlot(e.As<Napi::Array>().Get(1u), what));
    }
    auto program = std::make_shared<engine::Program>(std::move(steps), slots, std::move(fixed), indexList(info[3], "recordProgram: inputs"),
                                                     indexList(info[4], "recordProgram: outputs"));
    return Napi::External<ProgramPtr>::New(info.Env(), new ProgramPtr(std::move(program)), [](Napi::Env, ProgramPtr* p) { delete p; });
  });
}

Napi::Value replay(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    const ProgramPtr& program = programArg(info[0], "replay");
    if (!info[1].IsArray()) fail(ErrorKind::Size, "replay: inputs must be an array of tensors");
    Napi::Array jsIn = info[1].As<Napi::Array>();
    std::vector<engine::SlotPtr> inputs(jsIn.Length());
    for (uint32_t i = 0; i < jsIn.Length(); i++) {
      inputs[i] = JsTensor::unwrapSlot(jsIn.Get(i), "replay: input " + std::to_string(i));
      for (uint32_t k = 0; k < i; k++) {
        if (inputs[k] == inputs[i]) fail(ErrorKind::Size, "replay: inputs " + std::to_string(k) + " and " + std::to_string(i) + " are the same tensor");
      }
    }
    // the run takes its inputs: no handle of this thread's keeps one alive while the queue runs,
    // so each goes back to the pool after its last reader, as on the node-by-node path
    for (uint32_t i = 0; i < jsIn.Length(); i++) JsTensor::takeSlot(jsIn.Get(i), "replay: input " + std::to_string(i));
    // replay(program, inputs, dryRunOn): a dry run on that device (a GPU, or null for the host device)
    std::shared_ptr<Device> dry;
    if (info.Length() > 2 && !info[2].IsUndefined()) dry = JsGpu::unwrapDevice(info[2]);
    std::vector<engine::SlotPtr> outs = program->replay(std::move(inputs), dry.get());
    Napi::Array result = Napi::Array::New(info.Env(), outs.size());
    for (uint32_t i = 0; i < outs.size(); i++) result.Set(i, JsTensor::wrapSlot(info.Env(), outs[i]));
    return result;
  });
}

Napi::Value releaseProgram(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    programArg(info[0], "releaseProgram")->release();
    return info.Env().Undefined();
  });
}

}  // namespace hcsp::addon
