// An addon call that runs off the JavaScript thread and settles a promise: the deferred, the
// error code a typed JavaScript error needs (nativeErrors.ts maps it onto a class), and the
// mapping of C++ failures onto both, written once for every such call.
#pragma once
#include <napi.h>

#include <new>
#include <string>

#include "../host/errors.h"

namespace hcsp::addon {

class PromiseWorker : public Napi::AsyncWorker {
 public:
  /** queues the worker (which then owns itself) and returns its promise */
  Napi::Promise start() {
    Napi::Promise p = deferred_.Promise();
    Queue();
    return p;
  }

 protected:
  explicit PromiseWorker(Napi::Env env) : Napi::AsyncWorker(env), deferred_(Napi::Promise::Deferred::New(env)) {}

  /** runs `body` on the worker thread; a failure becomes the promise's error, `call` naming a refused allocation */
  template <class F>
  void guard(const char* call, F&& body) {
    try {
      body();
    } catch (const Error& e) {
      reject(errorCode(e.kind()), e.what());
    } catch (const std::bad_alloc&) {
      reject("HCSP_OOM", std::string(call) + ": host device out of memory (the system refused an allocation)");
    } catch (const std::exception& e) {
      reject("HCSP_RUNTIME", e.what());
    }
  }
  void reject(std::string code, const std::string& message) {
    code_ = std::move(code);
    SetError(message);
  }

  void OnError(const Napi::Error& e) override {
    e.Set("code", Napi::String::New(Env(), code_));
    deferred_.Reject(e.Value());
  }

  Napi::Promise::Deferred deferred_;

 private:
  std::string code_ = "HCSP_RUNTIME";
};

}  // namespace hcsp::addon
