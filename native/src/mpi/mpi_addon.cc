// hcsp_mpi.node: the MPI addon of host-device ranks (issue 13), a target apart from
// hcsp_native.node so that the main addon never depends on MPI (native/CMakeLists.txt builds
// this one only where CMake finds MPI). packages/backend-rocm/src/comm/mpiCommunicator.ts
// declares this surface for TypeScript and is its only caller.
//
// init() and finalize() run on the JavaScript thread (the thread that initializes MPI must
// be the one that finalizes it), bounded by the stall limit (stall_guard.h) where they wait
// for peers; the collectives and the barrier run on Node's worker pool (AsyncWorker), one at
// a time, so the event loop stays responsive while a rank waits for its peers (and the
// collective watchdog's timer can fire). Inputs are copied before the call returns, outputs
// are fresh ArrayBuffers.
#include <cstdio>
#include <cstdlib>
#include <napi.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <memory>
#include <new>

#include "mpi_collectives.h"
#include "parent_watch.h"
#include "stall_guard.h"

namespace hcsp::mpi {

namespace {

/** a collective or barrier in flight: MPI_THREAD_SERIALIZED allows one call at a time */
std::atomic<bool> inFlight{false};

Napi::Error jsError(Napi::Env env, const char* code, const std::string& message, const std::string& call = "", const std::string& errorClass = "") {
  Napi::Error err = Napi::Error::New(env, message);
  err.Set("code", Napi::String::New(env, code));
  if (!call.empty()) err.Set("call", Napi::String::New(env, call));
  if (!errorClass.empty()) err.Set("mpiErrorClass", Napi::String::New(env, errorClass));
  return err;
}

/** runs fn on the JavaScript thread, turning the addon's C++ errors into JavaScript errors */
template <class F>
auto guarded(Napi::Env env, F&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const MpiError& e) {
    throw jsError(env, errorCodeName(e.code()), e.what(), e.call(), e.errorClass());
  } catch (const hcsp::Error& e) {
    throw jsError(env, errorCodeName(ErrorCode::Argument), e.what());
  } catch (const Napi::Error&) {
    throw;
  } catch (const std::exception& e) {
    throw jsError(env, errorCodeName(ErrorCode::Call), e.what());
  }
}

using Task = std::function<std::vector<uint8_t>()>;

class MpiWorker : public Napi::AsyncWorker {
 public:
  MpiWorker(Napi::Env env, Task task, bool returnsBuffer)
      : Napi::AsyncWorker(env), deferred_(Napi::Promise::Deferred::New(env)), task_(std::move(task)), returnsBuffer_(returnsBuffer) {}

  Napi::Promise promise() { return deferred_.Promise(); }

  void Execute() override {
    try {
      result_ = task_();
    } catch (const MpiError& e) {
      code_ = errorCodeName(e.code());
      call_ = e.call();
      errorClass_ = e.errorClass();
      SetError(e.what());
    } catch (const hcsp::Error& e) {
      code_ = errorCodeName(ErrorCode::Argument);
      SetError(e.what());
    } catch (const std::bad_alloc&) {
      code_ = "HCSP_OOM";
      SetError("out of host memory for the collective's buffers (the system refused an allocation)");
    } catch (const std::exception& e) {
      code_ = errorCodeName(ErrorCode::Call);
      SetError(e.what());
    }
    task_ = nullptr;
  }

  void OnOK() override {
    inFlight = false;
    Napi::Env env = Env();
    if (!returnsBuffer_) {
      deferred_.Resolve(env.Undefined());
      return;
    }
    auto* held = new std::vector<uint8_t>(std::move(result_));
    // the result's own memory, handed to JavaScript without a copy
    Napi::ArrayBuffer buf = held->empty()
                                ? Napi::ArrayBuffer::New(env, 0)
                                : Napi::ArrayBuffer::New(env, held->data(), held->size(), [](Napi::Env, void*, std::vector<uint8_t>* v) { delete v; }, held);
    if (held->empty()) delete held;
    deferred_.Resolve(buf);
  }

  void OnError(const Napi::Error& e) override {
    inFlight = false;
    deferred_.Reject(jsError(Env(), code_.c_str(), e.Message(), call_, errorClass_).Value());
  }

 private:
  Napi::Promise::Deferred deferred_;
  Task task_;
  bool returnsBuffer_;
  std::vector<uint8_t> result_;
  std::string code_ = "HCSP_MPI";
  std::string call_;
  std::string errorClass_;
};

/** queues the task on the worker pool; refuses while another collective is in flight */
Napi::Value start(Napi::Env env, const char* what, Task task, bool returnsBuffer = true, bool needsWorld = true) {
  if (needsWorld) World::instance().requireReady(what);
  bool expected = false;
  if (!inFlight.compare_exchange_strong(expected, true)) {
    failMpi(ErrorCode::State,
            std::string(what) + ": another collective of this process is still in flight (run them one at a time, in the same order on every rank)");
  }
  auto* worker = new MpiWorker(env, std::move(task), returnsBuffer);
  Napi::Promise p = worker->promise();
  worker->Queue();
  return p;
}

/** a typed array's bytes, copied (the caller may reuse its buffer while the call runs) */
std::vector<uint8_t> bytesOf(const Napi::Value& v, const char* what, size_t elementBytes) {
  if (!v.IsTypedArray()) failMpi(ErrorCode::Argument, std::string(what) + ": data must be a typed array");
  Napi::TypedArray a = v.As<Napi::TypedArray>();
  if (elementBytes == 2 && a.TypedArrayType() != napi_uint16_array)
    failMpi(ErrorCode::Argument, std::string(what) + ": data must be a Uint16Array of bf16 bit patterns");
  const auto* p = static_cast<const uint8_t*>(a.ArrayBuffer().Data()) + a.ByteOffset();
  return std::vector<uint8_t>(p, p + a.ByteLength());
}

reduce::Algorithm algorithmOf(const Napi::Value& v, const char* what) {
  const std::string name = v.IsString() ? v.As<Napi::String>().Utf8Value() : "";
  reduce::Algorithm a;
  if (!reduce::parseAlgorithm(name, a)) {
    failMpi(ErrorCode::Argument, std::string(what) + ": unknown reduction algorithm '" + name + "'; expected one of ring, oneshot, ordered");
  }
  return a;
}

CollectiveOptions optionsOf(const Napi::Value& v, const char* what) {
  CollectiveOptions o;
  if (v.IsUndefined() || v.IsNull()) return o;
  if (!v.IsObject()) failMpi(ErrorCode::Argument, std::string(what) + ": options must be an object");
  Napi::Object obj = v.As<Napi::Object>();
  auto number = [&](const char* key, double& out) {
    Napi::Value x = obj.Get(key);
    if (x.IsUndefined() || x.IsNull()) return;
    if (!x.IsNumber()) failMpi(ErrorCode::Argument, std::string(what) + ": option " + key + " must be a number");
    out = x.As<Napi::Number>().DoubleValue();
  };
  number("channels", o.channels);
  number("chunkElems", o.chunkElems);
  double tag = -1;
  number("tag", tag);
  o.tag = static_cast<int64_t>(tag);
  Napi::Value check = obj.Get("check");
  if (!check.IsUndefined()) o.check = check.ToBoolean().Value();
  Napi::Value fold = obj.Get("fold");
  if (!fold.IsUndefined()) {
    const std::string f = fold.IsString() ? fold.As<Napi::String>().Utf8Value() : "";
    if (f == "mpiOp")
      o.fold = Fold::MpiOp;
    else if (f == "loop")
      o.fold = Fold::Loop;
    else
      failMpi(ErrorCode::Argument, std::string(what) + ": option fold must be 'mpiOp' or 'loop', got '" + f + "'");
  }
  return o;
}

std::vector<uint8_t> asBytes(std::vector<uint16_t>&& v) {
  std::vector<uint8_t> out(v.size() * sizeof(uint16_t));
  if (!v.empty()) std::memcpy(out.data(), v.data(), out.size());
  return out;
}

/** version() -> { library, standard }: callable before init (the load probe calls it) */
Napi::Value version(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object o = Napi::Object::New(env);
  o.Set("library", libraryVersion());
  o.Set("standard", standardVersion());
  return o;
}

Napi::Object initResult(Napi::Env env, const InitResult& r) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("rank", r.rank);
  o.Set("size", r.size);
  o.Set("threadLevel", r.threadLevel >= MPI_THREAD_MULTIPLE ? "multiple" : "serialized");
  return o;
}

std::string stringArg(const Napi::CallbackInfo& info, const char* what) {
  if (!info[0].IsString()) failMpi(ErrorCode::Argument, std::string(what) + ": expects the port name (a string)");
  return info[0].As<Napi::String>().Utf8Value();
}

/** init() -> { rank, size, threadLevel }: MPI_Init_thread once per process */
Napi::Value init(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&]() -> Napi::Value {
    StallGuard guard("MPI's start (MPI_Init_thread, MPI_Comm_dup of the world)");
    return initResult(env, World::instance().init());
  });
}

/** joinStart(): MPI_Init_thread as a singleton, to join a world of separately started processes (World::joinStart) */
Napi::Value joinStart(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&]() -> Napi::Value {
    World::instance().joinStart();
    return env.Undefined();
  });
}

/** joinOpenPort() -> string (rank 0) */
Napi::Value joinOpenPort(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&]() -> Napi::Value { return Napi::String::New(env, World::instance().joinOpenPort()); });
}

/** a join step over the port argument, as a Promise<void> on the MPI thread */
Napi::Value joinStep(const Napi::CallbackInfo& info, const char* what, void (World::*step)(const std::string&)) {
  Napi::Env env = info.Env();
  return guarded(env, [&]() -> Napi::Value {
    std::string port = stringArg(info, what);
    return start(
        env, what,
        [port, step] {
          (World::instance().*step)(port);
          return std::vector<uint8_t>();
        },
        false, false);
  });
}

/** joinAccept(port) -> Promise<void>: the ranks already joined take in the next one */
Napi::Value joinAccept(const Napi::CallbackInfo& info) { return joinStep(info, "joinAccept", &World::joinAccept); }

/** joinConnect(port) -> Promise<void>: this process joins as the next rank */
Napi::Value joinConnect(const Napi::CallbackInfo& info) { return joinStep(info, "joinConnect", &World::joinConnect); }

/** joinFinish() -> { rank, size, threadLevel }: the joined ranks are the world */
Napi::Value joinFinish(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&]() -> Napi::Value {
    if (inFlight) failMpi(ErrorCode::State, "joinFinish: a join step is still in flight (await it first)");
    StallGuard guard("the end of the MPI join (MPI_Comm_dup of the joined world)");
    return initResult(env, World::instance().joinFinish());
  });
}

/** allReduce(data: Uint16Array, algorithm, options?) -> Promise<ArrayBuffer> (the bf16 sum) */
Napi::Value allReduce(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&]() -> Napi::Value {
    auto data = std::make_shared<std::vector<uint8_t>>(bytesOf(info[0], "allReduce", 2));
    const reduce::Algorithm a = algorithmOf(info[1], "allReduce");
    const CollectiveOptions o = optionsOf(info[2], "allReduce");
    return start(env, "allReduce", [data, a, o] {
      return asBytes(allReduceBf16(World::instance(), reinterpret_cast<const uint16_t*>(data->data()), static_cast<int64_t>(data->size() / 2), a, o));
    });
  });
}

/** reduceScatter(data: Uint16Array, algorithm, options?) -> Promise<ArrayBuffer> (this rank's shard) */
Napi::Value reduceScatter(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&]() -> Napi::Value {
    auto data = std::make_shared<std::vector<uint8_t>>(bytesOf(info[0], "reduceScatter", 2));
    const reduce::Algorithm a = algorithmOf(info[1], "reduceScatter");
    const CollectiveOptions o = optionsOf(info[2], "reduceScatter");
    return start(env, "reduceScatter", [data, a, o] {
      return asBytes(reduceScatterBf16(World::instance(), reinterpret_cast<const uint16_t*>(data->data()), static_cast<int64_t>(data->size() / 2), a, o));
    });
  });
}

/** allGather(data: TypedArray, options?) -> Promise<ArrayBuffer>: every rank's bytes in rank order (any dtype) */
Napi::Value allGather(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&]() -> Napi::Value {
    auto data = std::make_shared<std::vector<uint8_t>>(bytesOf(info[0], "allGather", 1));
    const int64_t elementBytes = info[0].As<Napi::TypedArray>().ElementSize();
    const CollectiveOptions o = optionsOf(info[1], "allGather");
    // { control: true }: the caller's own bookkeeping (run statistics), counted apart from the graph's all-gathers
    const bool control = info[1].IsObject() && info[1].As<Napi::Object>().Get("control").ToBoolean().Value();
    return start(env, "allGather", [data, elementBytes, o, control] {
      return allGatherBytes(World::instance(), data->data(), static_cast<int64_t>(data->size()), elementBytes, o, control ? Kind::Control : Kind::AllGather);
    });
  });
}

/** barrier() -> Promise<void> */
Napi::Value barrier(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&]() -> Napi::Value {
    return start(
        env, "barrier",
        [] {
          World::instance().barrier();
          return std::vector<uint8_t>();
        },
        false);
  });
}

/** bytesSent() -> { allReduce, reduceScatter, allGather, control }: this rank's sent bytes since init */
Napi::Value bytesSent(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const auto b = World::instance().bytesSent();
  Napi::Object o = Napi::Object::New(env);
  for (int k = 0; k < KIND_COUNT; k++) o.Set(kindName(static_cast<Kind>(k)), b[k]);
  return o;
}

/** state() -> { initialized, finalized, inFlight } */
Napi::Value state(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object o = Napi::Object::New(env);
  o.Set("initialized", World::instance().initialized());
  o.Set("finalized", World::instance().finalized());
  o.Set("inFlight", inFlight.load());
  return o;
}

/** finalize(): MPI_Finalize (on this thread, the one that initialized MPI); refused while a call is in flight */
Napi::Value finalize(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&]() -> Napi::Value {
    if (inFlight) failMpi(ErrorCode::State, "finalize: a collective is still in flight (await it first)");
    StallGuard guard("MPI_Finalize");
    World::instance().finalize();
    return env.Undefined();
  });
}

/** setStallLimit(ms, who): the limit of the calls that wait for peers on this thread (0: none); who names this process in the message ("rank 1 of 4") */
Napi::Value setStallLimitJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&]() -> Napi::Value {
    if (!info[0].IsNumber()) failMpi(ErrorCode::Argument, "setStallLimit: expects the limit in ms (a number)");
    const double ms = info[0].As<Napi::Number>().DoubleValue();
    if (!(ms >= 0)) failMpi(ErrorCode::Argument, "setStallLimit: the limit must be >= 0 ms (0: none)");
    setStallLimit(ms, info[1].IsString() ? info[1].As<Napi::String>().Utf8Value() : "");
    return env.Undefined();
  });
}

/** abort(code): MPI_Abort, which ends every rank of the job */
Napi::Value abort(const Napi::CallbackInfo& info) {
  const int code = info[0].IsNumber() ? info[0].As<Napi::Number>().Int32Value() : 1;
  World::instance().abort(code);
}

/**
 * exitNow(code): ends this process at once (std::_Exit), without MPI_Finalize or exit
 * handlers: when a peer is lost, a worker thread blocked in an MPI call on it would keep a
 * normal exit (which joins Node's worker threads) waiting forever.
 */
Napi::Value exitNow(const Napi::CallbackInfo& info) {
  const int code = info[0].IsNumber() ? info[0].As<Napi::Number>().Int32Value() : 1;
  std::fflush(nullptr);
  std::_Exit(code);
}

/** endWithParent(parentPid, line): this process ends (status 1, `line` on stderr, its process group's other processes killed) once its parent is no longer
 * parentPid (parent_watch.h) */
Napi::Value endWithParentJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&]() -> Napi::Value {
    if (!info[0].IsNumber() || !info[1].IsString()) failMpi(ErrorCode::Argument, "endWithParent: expects the parent's pid (a number) and the line to write");
    const int64_t pid = info[0].As<Napi::Number>().Int64Value();
    if (pid <= 0) failMpi(ErrorCode::Argument, "endWithParent: the parent's pid must be positive, got " + std::to_string(pid));
    endWithParent(static_cast<long>(pid), info[1].As<Napi::String>().Utf8Value());
    return env.Undefined();
  });
}

/** parentEnded(): what endWithParent does when the parent ends, now (JavaScript saw it first) */
Napi::Value parentEndedJs(const Napi::CallbackInfo&) { parentEnded(); }

Napi::Object initModule(Napi::Env env, Napi::Object exports) {
  exports.Set("version", Napi::Function::New(env, version));
  exports.Set("init", Napi::Function::New(env, init));
  exports.Set("joinStart", Napi::Function::New(env, joinStart));
  exports.Set("joinOpenPort", Napi::Function::New(env, joinOpenPort));
  exports.Set("joinAccept", Napi::Function::New(env, joinAccept));
  exports.Set("joinConnect", Napi::Function::New(env, joinConnect));
  exports.Set("joinFinish", Napi::Function::New(env, joinFinish));
  exports.Set("allReduce", Napi::Function::New(env, allReduce));
  exports.Set("reduceScatter", Napi::Function::New(env, reduceScatter));
  exports.Set("allGather", Napi::Function::New(env, allGather));
  exports.Set("barrier", Napi::Function::New(env, barrier));
  exports.Set("bytesSent", Napi::Function::New(env, bytesSent));
  exports.Set("state", Napi::Function::New(env, state));
  exports.Set("finalize", Napi::Function::New(env, finalize));
  exports.Set("abort", Napi::Function::New(env, abort));
  exports.Set("exitNow", Napi::Function::New(env, exitNow));
  exports.Set("setStallLimit", Napi::Function::New(env, setStallLimitJs));
  exports.Set("endWithParent", Napi::Function::New(env, endWithParentJs));
  exports.Set("parentEnded", Napi::Function::New(env, parentEndedJs));
  return exports;
}

}  // namespace

}  // namespace hcsp::mpi

static Napi::Object InitHcspMpi(Napi::Env env, Napi::Object exports) { return hcsp::mpi::initModule(env, exports); }

NODE_API_MODULE(hcsp_mpi, InitHcspMpi)
