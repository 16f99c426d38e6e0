#include "run_worker.h"

#include "../device/device.h"
#include "../engine/exec_queue.h"
#include "../engine/program.h"
#include "js_attrs.h"
#include "js_errors.h"
#include "js_gpu.h"
#include "js_tensor.h"
#include "promise_worker.h"

namespace hcsp::addon {

GemmMode parseGemmMode(Napi::Env env, const Napi::Value& v) {
  std::string s = v.IsString() ? v.As<Napi::String>().Utf8Value() : "";
  if (s == "exact") return GemmMode::Exact;
  if (s == "blas") return GemmMode::Blas;
  if (s == "vendor") return GemmMode::Vendor;
  if (s == "vendor-invariant") return GemmMode::VendorInvariant;
  throw jsError(env, Error(ErrorKind::Attr, "gemm mode must be 'exact', 'blas', 'vendor' or 'vendor-invariant', got '" + s + "'"));
}

namespace {

/** One node (or one collective over every simulated rank) on its device, as the queue's worker runs it. */
struct OpCall {
  std::string op;
  Attrs attrs;
  GemmMode gemm;
  bool collective;
  std::shared_ptr<Device> device;

  /** the op's name in front, once (most kernels' messages already start with it) */
  std::string named(const std::string& message) const {
    return message.rfind(op + ":", 0) == 0 || message.rfind(op + " ", 0) == 0 ? message : op + ": " + message;
  }

  /** runs the kernels (on a GPU: launches them onto its stream); errors name the op */
  std::vector<Outputs> execute(const std::vector<Inputs>& inputs) const {
    try {
      checkPlacement(inputs);
      return collective ? device->runCollective(op, inputs, attrs, gemm) : std::vector<Outputs>{device->runOp(op, inputs[0], attrs, gemm)};
    } catch (const Error& e) {
      throw Error(e.kind(), named(e.what()));
    } catch (const std::bad_alloc&) {
      throw Error(ErrorKind::OutOfMemory, named("host device out of memory (the system refused an allocation)"));
    } catch (const std::exception& e) {
      throw Error(ErrorKind::Runtime, named(e.what()));
    }
  }

  /**
   * every input lives on the device the op runs on; a weight released after packing
   * (gemm::packForGemm) is read only where the device reads its panel instead
   * (Device::readsPackedPanel: linear's w and fp8LinearPtpc's qW, in the host device's exact GEMM)
   */
  void checkPlacement(const std::vector<Inputs>& inputs) const {
    const Memory* want = device.get();
    for (size_t r = 0; r < inputs.size(); r++) {
      for (size_t p = 0; p < inputs[r].size(); p++) {
        const TensorPtr& t = inputs[r][p];
        if (t && &t->memory() != want) {
          fail(ErrorKind::Runtime, "input port " + std::to_string(p) + " is in " + t->memory().name() + " memory, the op runs on " + want->name());
        }
        if (t && t->released()) {
          if (collective || !device->readsPackedPanel(op, p, gemm)) {
            fail(ErrorKind::Runtime,
                 "input port " + std::to_string(p) + " (" + dtypeName(t->dtype()) + shapeStr(t->shape()) +
                     ") is a weight released after packing for the exact GEMM; only linear's w and fp8LinearPtpc's qW read it, with gemm 'exact'" +
                     (gemm != GemmMode::Exact ? std::string(" (this run is '") + gemmModeName(gemm) + "')" : std::string()));
          }
        }
      }
    }
  }
};

/** the output handles of one call: its ports, or one array of ports per rank for a collective */
template <class T, class Wrap>
Napi::Value portsArray(Napi::Env env, const std::vector<std::vector<T>>& outputs, bool collective, Wrap wrap) {
  auto ports = [&](const std::vector<T>& outs) {
    auto arr = Napi::Array::New(env, outs.size());
    for (size_t p = 0; p < outs.size(); p++) arr.Set(p, outs[p] ? wrap(outs[p]) : env.Null());
    return arr;
  };
  if (!collective) return ports(outputs[0]);
  auto ranks = Napi::Array::New(env, outputs.size());
  for (size_t r = 0; r < outputs.size(); r++) ranks.Set(r, ports(outputs[r]));
  return ranks;
}

/** run(): the node after everything queued, waited for off the JavaScript thread, its outputs handed back */
class RunWorker : public PromiseWorker {
 public:
  RunWorker(Napi::Env env, OpCall call, std::vector<Inputs> inputs) : PromiseWorker(env), call_(std::move(call)), inputs_(std::move(inputs)) {}

  void Execute() override {
    guard(call_.op.c_str(), [&] {
      engine::ExecQueue::instance().runAndWait([&] {
        outputs_ = call_.execute(inputs_);
        // kernel errors and the device checks' surface at the stream's sync: before the outputs are handed out
        try {
          call_.device->completeRun();
        } catch (const Error& e) {
          throw Error(e.kind(), call_.named(e.what()));
        }
      });
    });
    inputs_.clear();
  }

  void OnOK() override {
    Napi::Env env = Env();
    deferred_.Resolve(portsArray(env, outputs_, call_.collective, [&](const TensorPtr& t) -> Napi::Value { return JsTensor::wrap(env, t); }));
    outputs_.clear();
  }

 private:
  OpCall call_;
  std::vector<Inputs> inputs_;
  std::vector<Outputs> outputs_;
};

template <class T, class F>
std::vector<T> readPorts(const Napi::Value& v, const std::string& what, F unwrapOne) {
  if (!v.IsArray()) throw jsError(v.Env(), Error(ErrorKind::DType, what + " must be an array of native tensors"));
  Napi::Array arr = v.As<Napi::Array>();
  std::vector<T> out;
  for (uint32_t i = 0; i < arr.Length(); i++) {
    Napi::Value e = arr.Get(i);
    out.push_back(e.IsNull() || e.IsUndefined() ? nullptr : unwrapOne(e, what + " port " + std::to_string(i)));
  }
  return out;
}

/** the call's inputs, one array of ports per rank (one rank for a per-rank op) */
template <class T, class F>
std::vector<std::vector<T>> readInputs(const Napi::Value& v, const std::string& op, bool collective, F unwrapOne) {
  if (!collective) return {readPorts<T>(v, op + " inputs", unwrapOne)};
  if (!v.IsArray()) throw jsError(v.Env(), Error(ErrorKind::DType, op + ": inputs must be one array per rank"));
  Napi::Array ranks = v.As<Napi::Array>();
  std::vector<std::vector<T>> inputs;
  for (uint32_t r = 0; r < ranks.Length(); r++) inputs.push_back(readPorts<T>(ranks.Get(r), op + " rank " + std::to_string(r), unwrapOne));
  return inputs;
}

OpCall readCall(Napi::Env env, const Napi::Value& opName, const Napi::Value& jsAttrs, const Napi::Value& gemm, const Napi::Value& device, bool collective,
                size_t ranks) {
  const std::string op = opName.As<Napi::String>().Utf8Value();
  std::shared_ptr<Device> on = JsGpu::unwrapDevice(device);
  // an unknown op fails before any work
  on->checkOp(op, collective);
  Attrs attrs = readAttrs(op, jsAttrs);
  return OpCall{op, collective ? attrs.with("tp", static_cast<double>(ranks)) : attrs, parseGemmMode(env, gemm), collective, std::move(on)};
}

Napi::Value runCall(const Napi::CallbackInfo& info, bool collective) {
  const std::string op = info[0].As<Napi::String>().Utf8Value();
  auto inputs = readInputs<TensorPtr>(info[1], op, collective, [](const Napi::Value& v, const std::string& what) { return JsTensor::unwrap(v, what); });
  return (new RunWorker(info.Env(), readCall(info.Env(), info[0], info[2], info[3], info[4], collective, inputs.size()), std::move(inputs)))->start();
}

/** a declared output port: {dtype, shape}, or null for an absent one */
engine::SlotPtr readDecl(const Napi::Value& v, const std::string& what) {
  if (v.IsNull() || v.IsUndefined()) return nullptr;
  if (!v.IsObject()) throw jsError(v.Env(), Error(ErrorKind::DType, what + " must be {dtype, shape} or null"));
  Napi::Object o = v.As<Napi::Object>();
  const DType dtype = parseDType(o.Get("dtype").IsString() ? o.Get("dtype").As<Napi::String>().Utf8Value() : "");
  return std::make_shared<engine::TensorSlot>(dtype, readShape(o.Get("shape"), what));
}

}  // namespace

Napi::Value run(const Napi::CallbackInfo& info) { return runCall(info, false); }

Napi::Value runCollective(const Napi::CallbackInfo& info) { return runCall(info, true); }

namespace {

/** a node recorded once (its op, attributes and output declarations parsed), enqueued each run with that run's inputs */
struct PreparedNode {
  std::string label;
  OpCall call;
  /** the declared outputs, per rank (null: an absent port); each enqueue makes fresh slots of these */
  std::vector<std::vector<engine::SlotPtr>> outputs;
};
using PreparedNodePtr = std::shared_ptr<PreparedNode>;

PreparedNodePtr readPreparedNode(const Napi::CallbackInfo& info) {
  const std::string label = info[0].IsString() ? info[0].As<Napi::String>().Utf8Value() : "";
  const std::string op = info[1].As<Napi::String>().Utf8Value();
  const bool collective = info[6].ToBoolean();
  auto outputs =
      readInputs<engine::SlotPtr>(info[5], op + " outputs", collective, [](const Napi::Value& v, const std::string& what) { return readDecl(v, what); });
  OpCall call = readCall(info.Env(), info[1], info[2], info[3], info[4], collective, outputs.size());
  return std::make_shared<PreparedNode>(PreparedNode{label, std::move(call), std::move(outputs)});
}

/** the job of one node: its kernels, its outputs checked against their declarations and put in their slots */
void runPrepared(const PreparedNode& node, const std::vector<std::vector<engine::SlotPtr>>& inputs, const std::vector<std::vector<engine::SlotPtr>>& outputs) {
  const OpCall& call = node.call;
  if (engine::ExecQueue::instance().stubKernels()) {
    for (const auto& ports : outputs) {
      for (const engine::SlotPtr& slot : ports) {
        if (slot) slot->fill(std::make_shared<Tensor>(slot->dtype(), Shape{0}));
      }
    }
    return;
  }
  std::vector<Inputs> in(inputs.size());
  for (size_t r = 0; r < inputs.size(); r++) {
    for (size_t p = 0; p < inputs[r].size(); p++) {
      in[r].push_back(inputs[r][p] ? inputs[r][p]->tensor([&] { return call.op + ": input port " + std::to_string(p); }) : nullptr);
    }
  }
  std::vector<Outputs> out = call.execute(in);
  in.clear();
  for (size_t r = 0; r < outputs.size(); r++) {
    for (size_t p = 0; p < outputs[r].size(); p++) {
      const engine::SlotPtr& slot = outputs[r][p];
      TensorPtr t = r < out.size() && p < out[r].size() ? out[r][p] : nullptr;
      if (!slot) continue;
      if (!t) fail(ErrorKind::Runtime, call.named("did not produce output port " + std::to_string(p)));
      if (t->dtype() != slot->dtype() || t->shape() != slot->shape()) {
        fail(ErrorKind::Shape, call.named("produced " + std::string(dtypeName(t->dtype())) + shapeStr(t->shape()) + " for output port " + std::to_string(p) +
                                          ", declared " + dtypeName(slot->dtype()) + shapeStr(slot->shape())));
      }
      slot->fill(std::move(t));
    }
  }
}

/** enqueues `node` on `inputs` (JS: ports, or one array of ports per rank) and returns its output handles */
Napi::Value enqueuePrepared(Napi::Env env, const PreparedNodePtr& node, const Napi::Value& jsInputs) {
  const bool collective = node->call.collective;
  auto inputs = readInputs<engine::SlotPtr>(jsInputs, node->call.op, collective,
                                            [](const Napi::Value& v, const std::string& what) { return JsTensor::unwrapSlot(v, what); });
  if (node->outputs.size() != inputs.size()) {
    fail(ErrorKind::Shape,
         node->call.op + ": " + std::to_string(node->outputs.size()) + " ranks of outputs for " + std::to_string(inputs.size()) + " of inputs");
  }
  std::vector<std::vector<engine::SlotPtr>> outputs(node->outputs.size());
  for (size_t r = 0; r < outputs.size(); r++) {
    for (const engine::SlotPtr& d : node->outputs[r]) outputs[r].push_back(d ? std::make_shared<engine::TensorSlot>(d->dtype(), d->shape()) : nullptr);
  }
  engine::ExecQueue::instance().enqueue(node->label, [node, inputs = std::move(inputs), outputs] { runPrepared(*node, inputs, outputs); });
  return portsArray(env, outputs, collective, [&](const engine::SlotPtr& slot) -> Napi::Value { return JsTensor::wrapSlot(env, slot); });
}

}  // namespace

engine::Step preparedStep(const Napi::Value& prepared) {
  if (!prepared.IsExternal()) fail(ErrorKind::DType, "recordProgram: a step's node is not a node from prepareNode()");
  PreparedNodePtr node = *prepared.As<Napi::External<PreparedNodePtr>>().Data();
  engine::Step step;
  step.label = node->label;
  step.declared = node->outputs;
  step.run = [node](const engine::SlotGrid& in, const engine::SlotGrid& out) { runPrepared(*node, in, out); };
  return step;
}

Napi::Value prepareNode(const Napi::CallbackInfo& info) {
  return Napi::External<PreparedNodePtr>::New(info.Env(), new PreparedNodePtr(readPreparedNode(info)), [](Napi::Env, PreparedNodePtr* p) { delete p; });
}

Napi::Value enqueueNode(const Napi::CallbackInfo& info) {
  if (!info[0].IsExternal()) fail(ErrorKind::DType, "enqueueNode: the first argument is not a node from prepareNode()");
  return enqueuePrepared(info.Env(), *info[0].As<Napi::External<PreparedNodePtr>>().Data(), info[1]);
}

Napi::Value setStubKernels(const Napi::CallbackInfo& info) {
  engine::ExecQueue::instance().setStubKernels(info[0].ToBoolean());
  return info.Env().Undefined();
}

Napi::Value enqueueUpload(const Napi::CallbackInfo& info) {
  UploadArgs a = readUpload(info, "upload");
  auto slot = std::make_shared<engine::TensorSlot>(a.dtype, std::move(a.shape));
  // the bytes are copied now: the job runs later, and the JavaScript buffer may change or go
  auto bytes = std::make_shared<std::vector<uint8_t>>(a.bytes, a.bytes + a.size);
  engine::ExecQueue::instance().enqueue("upload", [slot, bytes, device = std::move(a.device)] {
    TensorPtr t = std::make_shared<Tensor>(slot->dtype(), slot->shape(), device, Init::Uninitialized);
    if (!bytes->empty()) device->copyIn(t->raw(), bytes->data(), bytes->size());
    slot->fill(std::move(t));
  });
  return JsTensor::wrapSlot(info.Env(), slot);
}

namespace {

/** sync(): waits off the JavaScript thread for the queue and the device (a GPU's stream) and raises the first error */
class SyncWorker : public Napi::AsyncWorker {
 public:
  SyncWorker(Napi::Env env, std::shared_ptr<Device> device)
      : Napi::AsyncWorker(env), deferred_(Napi::Promise::Deferred::New(env)), device_(std::move(device)) {}
  Napi::Promise promise() { return deferred_.Promise(); }

  void Execute() override {
    engine::JobError err;
    engine::ExecQueue& queue = engine::ExecQueue::instance();
    const bool ran = queue.drain(&err);
    try {
      // on the queue's worker, so that no node is launching a check while they are read; a
      // failed check comes first: the nodes after a latched error were skipped, so every
      // check that ran belongs to a node at or before it
      queue.runAndWait([&] { device_->synchronizeChecked(); });
    } catch (const Error& e) {
      code_ = errorCode(e.kind());
      SetError(e.what());
      return;
    } catch (const std::exception& e) {
      SetError(e.what());
      return;
    }
    if (!ran) {
      code_ = err.code;
      SetError(err.message);
    }
  }
  void OnOK() override { deferred_.Resolve(Env().Undefined()); }
  void OnError(const Napi::Error& e) override {
    e.Set("code", Napi::String::New(Env(), code_));
    deferred_.Reject(e.Value());
  }

 private:
  Napi::Promise::Deferred deferred_;
  std::shared_ptr<Device> device_;
  std::string code_ = "HCSP_RUNTIME";
};

}  // namespace

Napi::Value sync(const Napi::CallbackInfo& info) {
  auto* w = new SyncWorker(info.Env(), JsGpu::unwrapDevice(info[0]));
  auto p = w->promise();
  w->Queue();
  return p;
}

}  // namespace hcsp::addon
