// The native backend's N-API module: tensors on the host device (upload, download, free),
// kernels run off the JavaScript thread, allocator counts, the BLAS library and GPU runtime
// probes. packages/backend-rocm/src/nativeAddon.ts declares this surface for TypeScript.
#include <cstdio>
#include <cstdlib>
#include <napi.h>

#include <cstring>

#include "../gpu/gpu_op_registry.h"
#include "../gpu/runtime_probe.h"
#include "../host/blas/openblas.h"
#include "../host/cpu_features.h"
#include "../host/gemm/linear.h"
#include "../host/kernel_registry.h"
#include "../host/thread_pool.h"
#include "instance_data.h"
#include "js_errors.h"
#include "js_engine.h"
#include "js_gpu.h"
#include "js_loader.h"
#include "js_nccl.h"
#include "js_program.h"
#include "js_tensor.h"
#include "js_test_kernels.h"
#include "promise_worker.h"
#include "run_worker.h"

namespace hcsp::addon {

namespace {

/** upload(dtype, shape, data: TypedArray, gpu?) -> NativeTensor (a copy, on the host device or the GPU) */
Napi::Value upload(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&]() -> Napi::Value {
    const UploadArgs a = readUpload(info, "upload");
    // every byte is copied in below
    TensorPtr t = std::make_shared<Tensor>(a.dtype, a.shape, a.device, Init::Uninitialized);
    if (a.size) t->memory().copyIn(t->raw(), a.bytes, a.size);
    return JsTensor::wrap(env, t);
  });
}

/** download(t) -> ArrayBuffer (a copy of the tensor's bytes) */
Napi::Value download(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&]() -> Napi::Value {
    TensorPtr t = JsTensor::unwrap(info[0], "download");
    auto buf = Napi::ArrayBuffer::New(env, t->bytes());
    // a weight released after packing: rebuilt from its exact-GEMM panel (packForGemm)
    if (t->released())
      gemm::unpackReleased(*t, buf.Data());
    else if (t->bytes())
      t->memory().copyOut(buf.Data(), t->raw(), t->bytes());
    return buf;
  });
}

/** packs a weight for the exact GEMM and frees its own bytes, off the JavaScript thread */
class PackWorker : public PromiseWorker {
 public:
  PackWorker(Napi::Env env, TensorPtr t, gemm::GemmWeightKind kind) : PromiseWorker(env), t_(std::move(t)), kind_(kind) {}

  void Execute() override {
    guard("packForGemm", [&] { result_ = gemm::packForGemm(*t_, kind_, defaultPool()); });
    t_.reset();
  }
  void OnOK() override {
    auto o = Napi::Object::New(Env());
    o.Set("panelBytes", static_cast<double>(result_.panelBytes));
    o.Set("releasedBytes", static_cast<double>(result_.releasedBytes));
    deferred_.Resolve(o);
  }

 private:
  TensorPtr t_;
  gemm::GemmWeightKind kind_;
  gemm::PackResult result_{0, 0};
};

/**
 * packForGemm(t, kind: 'linear'|'fp8') -> Promise<{ panelBytes, releasedBytes }>: packs a
 * host weight read only by exact GEMMs (linear's w / fp8LinearPtpc's qW) into its panels and
 * frees its own bytes (gemm::packForGemm); no run may be reading t meanwhile.
 */
Napi::Value packForGemmCall(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&]() -> Napi::Value {
    TensorPtr t = JsTensor::unwrap(info[0], "packForGemm");
    const std::string kind = info[1].IsString() ? info[1].As<Napi::String>().Utf8Value() : "";
    if (kind != "linear" && kind != "fp8") fail(ErrorKind::Attr, "packForGemm: kind must be 'linear' or 'fp8', got '" + kind + "'");
    return (new PackWorker(env, std::move(t), kind == "linear" ? gemm::GemmWeightKind::Linear : gemm::GemmWeightKind::Fp8))->start();
  });
}

Napi::Value runGuarded(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&] { return run(info); });
}

Napi::Value runCollectiveGuarded(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&] { return runCollective(info); });
}

Napi::Value prepareNodeGuarded(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&] { return prepareNode(info); });
}

Napi::Value enqueueNodeGuarded(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&] { return enqueueNode(info); });
}

Napi::Value enqueueUploadGuarded(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&] { return enqueueUpload(info); });
}

Napi::Value syncGuarded(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&] { return sync(info); });
}

Napi::Value freeGuarded(const Napi::CallbackInfo& info) {
  freeTensor(info);
  return info.Env().Undefined();
}

Napi::Array names(Napi::Env env, const std::vector<std::string>& v) {
  auto arr = Napi::Array::New(env, v.size());
  for (size_t i = 0; i < v.size(); i++) arr.Set(i, Napi::String::New(env, v[i]));
  return arr;
}

/** kernels() -> { perRank, collective, gpuPerRank, gpuCollective }: op names with a host kernel / a GPU launcher */
Napi::Value kernels(const Napi::CallbackInfo& info) {
  auto o = Napi::Object::New(info.Env());
  o.Set("perRank", names(info.Env(), kernelNames()));
  o.Set("collective", names(info.Env(), collectiveKernelNames()));
  o.Set("gpuPerRank", names(info.Env(), gpu::gpuOpNames()));
  o.Set("gpuCollective", names(info.Env(), gpu::gpuCollectiveOpNames()));
  return o;
}

Napi::Value stats(const Napi::CallbackInfo& info) { return statsObject(info.Env(), allocatorStats()); }

Napi::Value setLimit(const Napi::CallbackInfo& info) {
  double bytes = info[0].IsNumber() ? info[0].As<Napi::Number>().DoubleValue() : -1;
  if (!(bytes >= 0)) throw jsError(info.Env(), Error(ErrorKind::Attr, "setMemoryLimit: bytes must be a number >= 0"));
  setMemoryLimit(static_cast<int64_t>(bytes));
  return info.Env().Undefined();
}

/** info() -> { isa, threads, napiVersion } */
Napi::Value describe(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&]() -> Napi::Value {
    auto o = Napi::Object::New(env);
    o.Set("isa", isaName(gemmIsa()));
    o.Set("threads", defaultPool().size());
    o.Set("napiVersion", NAPI_VERSION);
    return o;
  });
}

/** blas() -> { path, coretype }: loads the BLAS library of the 'blas' GEMM mode */
Napi::Value blasLibrary(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&]() -> Napi::Value {
    const auto& lib = blas::openblas();
    auto o = Napi::Object::New(env);
    o.Set("path", lib.path);
    o.Set("coretype", lib.coretype);
    return o;
  });
}

/** gpuRuntime('hip'|'cuda') -> { found, library, devices, detail } */
Napi::Value gpuRuntime(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&]() -> Napi::Value {
    auto p = gpu::probeRuntime(info[0].As<Napi::String>().Utf8Value());
    auto o = Napi::Object::New(env);
    o.Set("found", p.found);
    o.Set("library", p.library);
    o.Set("devices", p.devices);
    o.Set("detail", p.detail);
    return o;
  });
}

}  // namespace

/**
 * exitNow(code): ends this process at once (std::_Exit), without exit handlers: a job whose
 * peer is lost may leave a worker thread blocked in a collective on it, which a normal exit
 * (it joins Node's worker threads) would wait for forever.
 */
Napi::Value exitNow(const Napi::CallbackInfo& info) {
  const int code = info[0].IsNumber() ? info[0].As<Napi::Number>().Int32Value() : 1;
  std::fflush(nullptr);
  std::_Exit(code);
}

Napi::Object init(Napi::Env env, Napi::Object exports) {
  env.SetInstanceData<InstanceData>(new InstanceData());
  exports.Set("NativeTensor", JsTensor::define(env));
  exports.Set("GpuDevice", JsGpu::define(env));
  exports.Set("openGpu", Napi::Function::New(env, openGpu));
  exports.Set("upload", Napi::Function::New(env, upload));
  exports.Set("download", Napi::Function::New(env, download));
  exports.Set("free", Napi::Function::New(env, freeGuarded));
  exports.Set("run", Napi::Function::New(env, runGuarded));
  exports.Set("packForGemm", Napi::Function::New(env, packForGemmCall));
  exports.Set("runCollective", Napi::Function::New(env, runCollectiveGuarded));
  exports.Set("prepareNode", Napi::Function::New(env, prepareNodeGuarded));
  exports.Set("enqueueNode", Napi::Function::New(env, enqueueNodeGuarded));
  exports.Set("enqueueUpload", Napi::Function::New(env, enqueueUploadGuarded));
  exports.Set("setStubKernels", Napi::Function::New(env, setStubKernels));
  exports.Set("recordProgram", Napi::Function::New(env, recordProgram));
  exports.Set("replay", Napi::Function::New(env, replay));
  exports.Set("releaseProgram", Napi::Function::New(env, releaseProgram));
  exports.Set("sync", Napi::Function::New(env, syncGuarded));
  exports.Set("counters", Napi::Function::New(env, counters));
  exports.Set("reservePool", Napi::Function::New(env, reservePool));
  exports.Set("trimPool", Napi::Function::New(env, trimPool));
  exports.Set("kernels", Napi::Function::New(env, kernels));
  exports.Set("stats", Napi::Function::New(env, stats));
  exports.Set("setMemoryLimit", Napi::Function::New(env, setLimit));
  exports.Set("info", Napi::Function::New(env, describe));
  exports.Set("blas", Napi::Function::New(env, blasLibrary));
  exports.Set("gpuRuntime", Napi::Function::New(env, gpuRuntime));
  exports.Set("exitNow", Napi::Function::New(env, exitNow));
  exports.Set("loadWeights", Napi::Function::New(env, loadWeights));
  exports.Set("testKernel", Napi::Function::New(env, testKernel));
  registerNccl(env, exports);
  return exports;
}

}  // namespace hcsp::addon

static Napi::Object initModule(Napi::Env env, Napi::Object exports) { return hcsp::addon::init(env, exports); }

NODE_API_MODULE(hcsp_native, initModule)
