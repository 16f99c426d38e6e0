#include "js_nccl.h"

#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "../engine/exec_queue.h"
#include "../engine/program.h"
#include "../gpu/nccl_communicator.h"
#include "js_errors.h"
#include "js_gpu.h"
#include "js_tensor.h"

namespace hcsp::addon {

namespace {

using gpu::NcclCommunicator;

/** what a C++ exception says, kept until the JavaScript thread can build the error */
struct Failure {
  std::string code = "HCSP_RUNTIME";
  std::string message;
  std::string call;
  int result = -1;
  std::vector<std::string> tried;
  bool unavailable = false;
};

Failure capture(std::exception_ptr ep) {
  Failure f;
  try {
    std::rethrow_exception(ep);
  } catch (const gpu::NcclFailure& e) {
    f.code = "HCSP_NCCL";
    f.message = e.what();
    f.call = e.call();
    f.result = e.result();
  } catch (const gpu::NcclUnavailable& e) {
    f.code = "HCSP_NCCL_UNAVAILABLE";
    f.message = e.what();
    f.tried = e.tried();
    f.unavailable = true;
  } catch (const Error& e) {
    f.code = errorCode(e.kind());
    f.message = e.what();
  } catch (const std::bad_alloc&) {
    f.code = "HCSP_OOM";
    f.message = "host device out of memory (the system refused an allocation)";
  } catch (const std::exception& e) {
    f.message = e.what();
  } catch (...) {
    f.message = "unknown error";
  }
  return f;
}

Napi::Error toJs(Napi::Env env, const Failure& f) {
  Napi::Error err = jsError(env, f.code.c_str(), f.message);
  if (!f.call.empty()) {
    err.Set("call", Napi::String::New(env, f.call));
    err.Set("ncclResult", Napi::String::New(env, gpu::ncclResultName(f.result)));
    err.Set("ncclResultCode", Napi::Number::New(env, f.result));
  }
  if (f.unavailable) {
    auto tried = Napi::Array::New(env, f.tried.size());
    for (size_t i = 0; i < f.tried.size(); i++) tried.Set(i, Napi::String::New(env, f.tried[i]));
    err.Set("tried", tried);
  }
  return err;
}

/** runs fn on the JavaScript thread, C++ exceptions becoming the typed JavaScript errors */
template <class F>
auto ncclGuarded(Napi::Env env, F&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const Napi::Error&) {
    throw;
  } catch (...) {
    throw toJs(env, capture(std::current_exception()));
  }
}

/** a blocking body on a worker thread, then done() on the JavaScript thread resolves the promise */
class NcclWorker : public Napi::AsyncWorker {
 public:
  NcclWorker(Napi::Env env, std::function<void()> body, std::function<Napi::Value(Napi::Env)> done)
      : Napi::AsyncWorker(env), deferred_(Napi::Promise::Deferred::New(env)), body_(std::move(body)), done_(std::move(done)) {}
  Napi::Promise promise() { return deferred_.Promise(); }

  void Execute() override {
    try {
      body_();
    } catch (...) {
      failure_ = capture(std::current_exception());
      SetError(failure_.message);
    }
    body_ = nullptr;
  }
  void OnOK() override {
    try {
      deferred_.Resolve(done_(Env()));
    } catch (const Napi::Error& e) {
      deferred_.Reject(e.Value());
    }
  }
  void OnError(const Napi::Error&) override { deferred_.Reject(toJs(Env(), failure_).Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  std::function<void()> body_;
  std::function<Napi::Value(Napi::Env)> done_;
  Failure failure_;
};

Napi::Promise queue(Napi::Env env, std::function<void()> body, std::function<Napi::Value(Napi::Env)> done) {
  auto* w = new NcclWorker(env, std::move(body), std::move(done));
  auto p = w->promise();
  w->Queue();
  return p;
}

std::shared_ptr<gpu::GpuRuntime> gpuArg(const Napi::Value& v, const char* what) {
  auto rt = JsGpu::unwrapOptional(v);
  if (!rt) fail(ErrorKind::Attr, std::string(what) + ": the first argument must be a GPU device from openGpu() (hip or cuda)");
  return rt;
}

/** a typed array's bytes, copied (the caller may reuse its buffer while the call runs) */
std::vector<uint8_t> copyOf(const Napi::TypedArray& a) {
  std::vector<uint8_t> v(a.ByteLength());
  if (!v.empty()) std::memcpy(v.data(), static_cast<const uint8_t*>(a.ArrayBuffer().Data()) + a.ByteOffset(), v.size());
  return v;
}

Napi::Value arrayBuffer(Napi::Env env, const std::vector<uint8_t>& bytes) {
  auto buf = Napi::ArrayBuffer::New(env, bytes.size());
  if (!bytes.empty()) std::memcpy(buf.Data(), bytes.data(), bytes.size());
  return buf;
}

std::string kindArg(const Napi::Value& v) {
  const std::string kind = v.IsString() ? v.As<Napi::String>().Utf8Value() : "";
  if (kind != "allReduce" && kind != "reduceScatter" && kind != "allGather") {
    fail(ErrorKind::Attr, "enqueue: the collective must be 'allReduce', 'reduceScatter' or 'allGather', got '" + kind + "'");
  }
  return kind;
}

Shape outputShape(const Napi::Value& v, const std::string& label) {
  if (!v.IsArray()) fail(ErrorKind::Shape, label + ": the output shape must be an array");
  Napi::Array a = v.As<Napi::Array>();
  Shape shape;
  for (uint32_t i = 0; i < a.Length(); i++) {
    const double d = a.Get(i).IsNumber() ? a.Get(i).As<Napi::Number>().DoubleValue() : -1;
    if (!(d >= 0) || d != static_cast<double>(static_cast<int64_t>(d)))
      fail(ErrorKind::Shape, label + ": dimension " + std::to_string(i) + " of the output shape is not a non-negative integer");
    shape.push_back(static_cast<int64_t>(d));
  }
  return shape;
}

/**
 * The collective `kind` of x (dtype[xShape]) into y (dtype[yShape]) on `comm`, checked before
 * any work, as a step: in[0][0] is x's slot, out[0][0] y's. Its job reads x's device buffer and
 * writes y, allocated from the device's pool when the job runs, and enqueues the NCCL call on
 * the device's stream (no staging, no wait).
 */
engine::Step collectiveStep(const std::shared_ptr<NcclCommunicator>& comm, const std::string& kind, const std::string& label, DType dtype, const Shape& xShape,
                            Shape yShape) {
  if (kind != "allGather" && dtype != DType::BF16) fail(ErrorKind::DType, label + ": " + kind + " takes bf16, got " + dtypeName(dtype));
  if (kind == "allGather" && dtype != DType::BF16 && dtype != DType::F32 && dtype != DType::I32) {
    fail(ErrorKind::DType, label + ": allGather takes bf16, f32 or i32, got " + dtypeName(dtype));
  }
  const int64_t n = numel(xShape), m = numel(yShape), size = comm->size();
  const int64_t want = kind == "allReduce" ? n : kind == "reduceScatter" ? (n % size == 0 ? n / size : -1) : n * size;
  if (m != want) {
    fail(ErrorKind::Shape, label + ": " + kind + " of " + dtypeName(dtype) + shapeStr(xShape) + " over " + std::to_string(size) + " ranks cannot give " +
                               dtypeName(dtype) + shapeStr(yShape));
  }
  engine::Step step;
  step.label = label;
  step.declared = {{std::make_shared<engine::TensorSlot>(dtype, std::move(yShape))}};
  step.run = [comm, kind, label](const engine::SlotGrid& in, const engine::SlotGrid& out) {
    const engine::SlotPtr& y = out[0][0];
    if (engine::ExecQueue::instance().stubKernels()) {
      y->fill(std::make_shared<Tensor>(y->dtype(), Shape{0}));
      return;
    }
    const TensorPtr& x = in[0][0]->tensor([] { return std::string("input x"); });
    const auto& rt = comm->runtime();
    if (&x->memory() != rt.get()) fail(ErrorKind::Runtime, "input x is in " + x->memory().name() + " memory; the communicator's device is " + rt->name());
    // the run's planned block: from the device's pool, ordered after the kernels of its last holder by the one stream
    auto t = std::make_shared<Tensor>(y->dtype(), y->shape(), rt, Init::Uninitialized);
    if (rt->dryRun()) {
      // a session's warm-up: the block taken, no call (every rank warms up alone)
      y->fill(std::move(t));
      return;
    }
    if (kind == "allReduce")
      comm->enqueueAllReduceBf16(x->raw(), t->raw(), x->numel(), label);
    else if (kind == "reduceScatter")
      comm->enqueueReduceScatterBf16(x->raw(), t->raw(), x->numel(), label);
    else
      comm->enqueueAllGather(x->raw(), t->raw(), static_cast<int64_t>(x->bytes()), static_cast<int>(dtypeBytes(x->dtype())), x->dtype() == DType::F32, label);
    y->fill(std::move(t));
  };
  return step;
}

class JsNcclComm : public Napi::ObjectWrap<JsNcclComm> {
 public:
  static Napi::Function define(Napi::Env env) {
    return DefineClass(
        env, "NcclComm",
        {InstanceAccessor<&JsNcclComm::rank>("rank"), InstanceAccessor<&JsNcclComm::size>("size"), InstanceMethod<&JsNcclComm::library>("library"),
         InstanceMethod<&JsNcclComm::state>("state"), InstanceMethod<&JsNcclComm::allReduce>("allReduce"),
         InstanceMethod<&JsNcclComm::reduceScatter>("reduceScatter"), InstanceMethod<&JsNcclComm::allGather>("allGather"),
         InstanceMethod<&JsNcclComm::enqueue>("enqueue"), InstanceMethod<&JsNcclComm::step>("step"), InstanceMethod<&JsNcclComm::checkAsync>("checkAsync"),
         InstanceMethod<&JsNcclComm::bytesSent>("bytesSent"), InstanceMethod<&JsNcclComm::destroy>("destroy"), InstanceMethod<&JsNcclComm::abort>("abort")});
  }

  explicit JsNcclComm(const Napi::CallbackInfo& info) : Napi::ObjectWrap<JsNcclComm>(info) {
    if (info.Length() != 1 || !info[0].IsExternal()) throw Napi::TypeError::New(info.Env(), "NcclComm is made by ncclOpen(), not by new");
    comm_ = *info[0].As<Napi::External<std::shared_ptr<NcclCommunicator>>>().Data();
  }

 private:
  Napi::Value rank(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), comm_->rank()); }
  Napi::Value size(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), comm_->size()); }
  Napi::Value library(const Napi::CallbackInfo& info) { return Napi::String::New(info.Env(), comm_->library().version()); }
  Napi::Value state(const Napi::CallbackInfo& info) { return Napi::String::New(info.Env(), comm_->state()); }

  Napi::TypedArray typedArg(const Napi::CallbackInfo& info, const char* call, bool bf16) {
    if (info.Length() < 1 || !info[0].IsTypedArray()) {
      fail(ErrorKind::DType, std::string(call) + ": data must be " + (bf16 ? "a Uint16Array of bf16 bit patterns" : "a typed array"));
    }
    auto a = info[0].As<Napi::TypedArray>();
    if (bf16 && a.TypedArrayType() != napi_uint16_array) fail(ErrorKind::DType, std::string(call) + ": data must be a Uint16Array of bf16 bit patterns");
    return a;
  }

  Napi::Value allReduce(const Napi::CallbackInfo& info) {
    return ncclGuarded(info.Env(), [&]() -> Napi::Value {
      auto data = std::make_shared<std::vector<uint8_t>>(copyOf(typedArg(info, "allReduce", true)));
      auto out = std::make_shared<std::vector<uint8_t>>();
      auto comm = comm_;
      return queue(
          info.Env(),
          [comm, data, out] { *out = comm->allReduceBf16(reinterpret_cast<const uint16_t*>(data->data()), static_cast<int64_t>(data->size() / 2)); },
          [out](Napi::Env env) { return arrayBuffer(env, *out); });
    });
  }

  Napi::Value reduceScatter(const Napi::CallbackInfo& info) {
    return ncclGuarded(info.Env(), [&]() -> Napi::Value {
      auto data = std::make_shared<std::vector<uint8_t>>(copyOf(typedArg(info, "reduceScatter", true)));
      auto out = std::make_shared<std::vector<uint8_t>>();
      auto comm = comm_;
      return queue(
          info.Env(),
          [comm, data, out] { *out = comm->reduceScatterBf16(reinterpret_cast<const uint16_t*>(data->data()), static_cast<int64_t>(data->size() / 2)); },
          [out](Napi::Env env) { return arrayBuffer(env, *out); });
    });
  }

  Napi::Value allGather(const Napi::CallbackInfo& info) {
    return ncclGuarded(info.Env(), [&]() -> Napi::Value {
      auto a = typedArg(info, "allGather", false);
      const int elementBytes = static_cast<int>(a.ElementSize());
      const bool isFloat = a.TypedArrayType() == napi_float32_array;
      auto data = std::make_shared<std::vector<uint8_t>>(copyOf(a));
      auto out = std::make_shared<std::vector<uint8_t>>();
      auto comm = comm_;
      return queue(
          info.Env(),
          [comm, data, out, elementBytes, isFloat] { *out = comm->allGather(data->data(), static_cast<int64_t>(data->size()), elementBytes, isFloat); },
          [out](Napi::Env env) { return arrayBuffer(env, *out); });
    });
  }

  /**
   * enqueue(kind, label, x: NativeTensor, yShape) -> NativeTensor: the collective as a job of the
   * device queue, after the nodes already enqueued: it reads x's device buffer and writes y's,
   * allocated from the device's pool when the job runs, and enqueues the NCCL call on the
   * device's stream (no staging, no wait). Shapes and dtypes are checked here, before any work.
   */
  Napi::Value enqueue(const Napi::CallbackInfo& info) {
    return ncclGuarded(info.Env(), [&]() -> Napi::Value {
      const std::string kind = kindArg(info[0]);
      const std::string label = info[1].IsString() ? info[1].As<Napi::String>().Utf8Value() : kind;
      engine::SlotPtr in = JsTensor::unwrapSlot(info[2], label + ": input x");
      engine::Step step = collectiveStep(comm_, kind, label, in->dtype(), in->shape(), outputShape(info[3], label));
      engine::SlotPtr out = std::make_shared<engine::TensorSlot>(step.declared[0][0]->dtype(), step.declared[0][0]->shape());
      engine::ExecQueue::instance().enqueue(label, [run = std::move(step.run), in, out] { run({{in}}, {{out}}); });
      return JsTensor::wrapSlot(info.Env(), out);
    });
  }

  /**
   * step(kind, label, x: {dtype, shape}, yShape) -> a program step (recordProgram): the same
   * collective as enqueue(), checked now against x's declaration, run on each replay's slots
   */
  Napi::Value step(const Napi::CallbackInfo& info) {
    return ncclGuarded(info.Env(), [&]() -> Napi::Value {
      const std::string kind = kindArg(info[0]);
      const std::string label = info[1].IsString() ? info[1].As<Napi::String>().Utf8Value() : kind;
      if (!info[2].IsObject()) fail(ErrorKind::DType, label + ": x must be {dtype, shape}");
      Napi::Object x = info[2].As<Napi::Object>();
      const DType dtype = parseDType(x.Get("dtype").IsString() ? x.Get("dtype").As<Napi::String>().Utf8Value() : "");
      auto step =
          std::make_shared<engine::Step>(collectiveStep(comm_, kind, label, dtype, readShape(x.Get("shape"), label + ": x"), outputShape(info[3], label)));
      return Napi::External<std::shared_ptr<engine::Step>>::New(info.Env(), new std::shared_ptr<engine::Step>(std::move(step)),
                                                                [](Napi::Env, std::shared_ptr<engine::Step>* p) { delete p; });
    });
  }

  /** checkAsync(): after the run's sync, NCCL's asynchronous error for the collectives enqueued since the last check (thrown) */
  Napi::Value checkAsync(const Napi::CallbackInfo& info) {
    return ncclGuarded(info.Env(), [&]() -> Napi::Value {
      comm_->checkAsync();
      return info.Env().Undefined();
    });
  }

  Napi::Value bytesSent(const Napi::CallbackInfo& info) {
    const auto b = comm_->bytesSent();
    auto o = Napi::Object::New(info.Env());
    o.Set("allReduce", b.allReduce);
    o.Set("reduceScatter", b.reduceScatter);
    o.Set("allGather", b.allGather);
    return o;
  }

  Napi::Value destroy(const Napi::CallbackInfo& info) {
    return ncclGuarded(info.Env(), [&]() -> Napi::Value {
      auto comm = comm_;
      return queue(info.Env(), [comm] { comm->destroy(); }, [](Napi::Env env) { return env.Undefined(); });
    });
  }

  Napi::Value abort(const Napi::CallbackInfo& info) {
    return ncclGuarded(info.Env(), [&]() -> Napi::Value {
      comm_->abort();
      return info.Env().Undefined();
    });
  }

  std::shared_ptr<NcclCommunicator> comm_;
};

/** ncclVersion(gpu) -> { library: "RCCL 2.18.3", vendor, code, path }: loads the device's library */
Napi::Value ncclVersion(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return ncclGuarded(env, [&]() -> Napi::Value {
    const auto& lib = gpu::ncclLibraryFor(*gpuArg(info[0], "ncclVersion"));
    auto o = Napi::Object::New(env);
    o.Set("library", lib.version());
    o.Set("vendor", lib.vendor);
    o.Set("code", lib.versionCode);
    o.Set("path", lib.path);
    return o;
  });
}

/** ncclUniqueId(gpu) -> Uint8Array(128) (ncclGetUniqueId, the device current) */
Napi::Value ncclUniqueId(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return ncclGuarded(env, [&]() -> Napi::Value {
    const gpu::NcclId id = gpu::ncclUniqueIdFor(*gpuArg(info[0], "ncclUniqueId"));
    auto a = Napi::Uint8Array::New(env, id.size());
    std::memcpy(a.Data(), id.data(), id.size());
    return a;
  });
}

int intArg(const Napi::Value& v, const char* call, const char* name) {
  const double d = v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : -1;
  if (!(d >= 0) || d != static_cast<double>(static_cast<int>(d))) fail(ErrorKind::Attr, std::string(call) + ": " + name + " must be a non-negative integer");
  return static_cast<int>(d);
}

/** ncclOpen(gpu, rank, size, id: Uint8Array(128)) -> Promise<NcclComm> (ncclCommInitRank off the JavaScript thread) */
Napi::Value ncclOpen(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return ncclGuarded(env, [&]() -> Napi::Value {
    auto rt = gpuArg(info[0], "ncclOpen");
    const int rank = intArg(info[1], "ncclOpen", "rank");
    const int size = intArg(info[2], "ncclOpen", "size");
    if (!info[3].IsTypedArray() || info[3].As<Napi::TypedArray>().ByteLength() != gpu::nccl::NCCL_UNIQUE_ID_BYTES) {
      fail(ErrorKind::Size, "ncclOpen: the unique id must be the 128 bytes of ncclUniqueId(), as a Uint8Array");
    }
    const auto bytes = copyOf(info[3].As<Napi::TypedArray>());
    gpu::NcclId id;
    std::memcpy(id.data(), bytes.data(), id.size());
    gpu::ncclLibraryFor(*rt);  // a missing library or the emulated device fails here, before the worker
    auto* ctor = static_cast<Napi::FunctionReference*>(info.Data());
    auto made = std::make_shared<std::shared_ptr<NcclCommunicator>>();
    return queue(
        env, [rt, rank, size, id, made] { *made = std::make_shared<NcclCommunicator>(rt, rank, size, id); },
        [ctor, made](Napi::Env e) -> Napi::Value {
          auto ext = Napi::External<std::shared_ptr<NcclCommunicator>>::New(e, made.get());
          return ctor->New({ext});
        });
  });
}

}  // namespace

void registerNccl(Napi::Env env, Napi::Object exports) {
  auto* ctor = new Napi::FunctionReference(Napi::Persistent(JsNcclComm::define(env)));
  env.AddCleanupHook([ctor] { delete ctor; });
  exports.Set("NcclComm", ctor->Value());
  exports.Set("ncclVersion", Napi::Function::New(env, ncclVersion, "ncclVersion"));
  exports.Set("ncclUniqueId", Napi::Function::New(env, ncclUniqueId, "ncclUniqueId"));
  exports.Set("ncclOpen", Napi::Function::New(env, ncclOpen, "ncclOpen", ctor));
}

}  // namespace hcsp::addon
