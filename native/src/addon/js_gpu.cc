#include "js_gpu.h"

#include "../gpu/blaslt.h"
#include "../gpu/open_runtime.h"
#include "../host/host_device.h"
#include "instance_data.h"
#include "js_errors.h"

namespace hcsp::addon {

Napi::Object statsObject(Napi::Env env, const AllocatorStats& s) {
  auto o = Napi::Object::New(env);
  o.Set("liveTensors", static_cast<double>(s.liveTensors));
  o.Set("liveBytes", static_cast<double>(s.liveBytes));
  o.Set("peakBytes", static_cast<double>(s.peakBytes));
  o.Set("allocations", static_cast<double>(s.allocations));
  o.Set("limitBytes", static_cast<double>(s.limitBytes));
  o.Set("pooledBytes", static_cast<double>(s.pooledBytes));
  return o;
}

Napi::Function JsGpu::define(Napi::Env env) {
  Napi::Function f = DefineClass(
      env, "GpuDevice",
      {InstanceAccessor<&JsGpu::kind>("kind"), InstanceAccessor<&JsGpu::arch>("arch"), InstanceAccessor<&JsGpu::kernels>("kernels"),
       InstanceMethod<&JsGpu::describe>("describe"), InstanceMethod<&JsGpu::stats>("stats"), InstanceMethod<&JsGpu::setMemoryLimit>("setMemoryLimit"),
       InstanceMethod<&JsGpu::synchronize>("synchronize"), InstanceMethod<&JsGpu::memoryInfo>("memoryInfo"), InstanceMethod<&JsGpu::vendorGemm>("vendorGemm"),
       InstanceMethod<&JsGpu::kernelFallbacks>("kernelFallbacks")});
  instanceData(env).gpu = Napi::Persistent(f);
  return f;
}

JsGpu::JsGpu(const Napi::CallbackInfo& info) : Napi::ObjectWrap<JsGpu>(info) {
  if (info.Length() != 1 || !info[0].IsExternal()) throw Napi::TypeError::New(info.Env(), "GpuDevice is made by openGpu(), not by new");
  runtime_ = *info[0].As<Napi::External<std::shared_ptr<gpu::GpuRuntime>>>().Data();
}

std::shared_ptr<gpu::GpuRuntime> JsGpu::unwrapOptional(const Napi::Value& value) {
  if (value.IsUndefined() || value.IsNull()) return nullptr;
  if (!value.IsObject() || !value.As<Napi::Object>().InstanceOf(instanceData(value.Env()).gpu.Value())) {
    throw jsError(value.Env(), Error(ErrorKind::DType, "the device argument is not a GPU device from openGpu()"));
  }
  return Unwrap(value.As<Napi::Object>())->runtime_;
}

std::shared_ptr<Device> JsGpu::unwrapDevice(const Napi::Value& value) {
  std::shared_ptr<gpu::GpuRuntime> runtime = unwrapOptional(value);
  return runtime ? std::shared_ptr<Device>(std::move(runtime)) : hostDevice();
}

// Every method runs guarded: a C++ exception (the emulated device's describe() reads the pool,
// whose HCSP_NATIVE_THREADS check throws) must reach JavaScript as an error, not abort the process.
Napi::Value JsGpu::kind(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value { return Napi::String::New(info.Env(), runtime_->kind()); });
}
Napi::Value JsGpu::arch(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value { return Napi::String::New(info.Env(), runtime_->arch()); });
}
Napi::Value JsGpu::kernels(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), runtime_->kernels() == gpu::KernelMode::Fast ? "fast" : "exact");
}
Napi::Value JsGpu::describe(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value { return Napi::String::New(info.Env(), runtime_->describe()); });
}
Napi::Value JsGpu::stats(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value { return statsObject(info.Env(), runtime_->stats()); });
}

Napi::Value JsGpu::setMemoryLimit(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    double bytes = info[0].IsNumber() ? info[0].As<Napi::Number>().DoubleValue() : -1;
    if (!(bytes >= 0)) throw jsError(info.Env(), Error(ErrorKind::Attr, "setMemoryLimit: bytes must be a number >= 0"));
    runtime_->setLimit(static_cast<int64_t>(bytes));
    return info.Env().Undefined();
  });
}

Napi::Value JsGpu::synchronize(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    runtime_->synchronize();
    return info.Env().Undefined();
  });
}

Napi::Value JsGpu::memoryInfo(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    const gpu::DeviceMemoryInfo m = runtime_->memoryInfo();
    auto o = Napi::Object::New(info.Env());
    o.Set("freeBytes", static_cast<double>(m.freeBytes));
    o.Set("totalBytes", static_cast<double>(m.totalBytes));
    return o;
  });
}

Napi::Value JsGpu::vendorGemm(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    Napi::Env env = info.Env();
    const gpu::VendorGemmStats s = gpu::vendorGemmStats(*runtime_);
    auto o = Napi::Object::New(env);
    o.Set("plans", static_cast<double>(s.plans));
    o.Set("heuristicQueries", static_cast<double>(s.heuristicQueries));
    auto list = Napi::Array::New(env, s.fallbacks.size());
    for (size_t i = 0; i < s.fallbacks.size(); i++) {
      const auto& f = s.fallbacks[i];
      auto e = Napi::Object::New(env);
      e.Set("op", f.op);
      e.Set("m", static_cast<double>(f.m));
      e.Set("n", static_cast<double>(f.n));
      e.Set("k", static_cast<double>(f.k));
      e.Set("dtype", f.dtype);
      list.Set(static_cast<uint32_t>(i), e);
    }
    o.Set("fallbacks", list);
    o.Set("invariantPlans", static_cast<double>(s.invariantPlans));
    o.Set("invariantRowCounts", static_cast<double>(s.invariantRowCounts));
    o.Set("refusedCandidates", static_cast<double>(s.refusedCandidates));
    return o;
  });
}

Napi::Value JsGpu::kernelFallbacks(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    const auto& fallbacks = runtime_->kernelFallbacks();
    auto list = Napi::Array::New(info.Env(), fallbacks.size());
    for (size_t i = 0; i < fallbacks.size(); i++) {
      auto e = Napi::Object::New(info.Env());
      e.Set("op", fallbacks[i].op);
      e.Set("reason", fallbacks[i].reason);
      list.Set(static_cast<uint32_t>(i), e);
    }
    return list;
  });
}

Napi::Value openGpu(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&]() -> Napi::Value {
    std::string kind = info[0].IsString() ? info[0].As<Napi::String>().Utf8Value() : "";
    gpu::OpenOptions options;
    if (info.Length() > 1 && info[1].IsObject()) {
      Napi::Object o = info[1].As<Napi::Object>();
      if (o.Has("device") && o.Get("device").IsNumber()) options.device = o.Get("device").As<Napi::Number>().Int32Value();
      if (o.Has("codeObjects") && o.Get("codeObjects").IsString()) options.codeObjects = o.Get("codeObjects").As<Napi::String>().Utf8Value();
      if (o.Has("kernels") && !o.Get("kernels").IsUndefined()) {
        const std::string k = o.Get("kernels").IsString() ? o.Get("kernels").As<Napi::String>().Utf8Value() : "(not a string)";
        if (k != "exact" && k != "fast") fail(ErrorKind::Attr, "openGpu: kernels must be 'exact' or 'fast', got '" + k + "'");
        options.kernels = k == "fast" ? gpu::KernelMode::Fast : gpu::KernelMode::Exact;
      }
    }
    auto runtime = gpu::openRuntime(kind, options);
    auto ext = Napi::External<std::shared_ptr<gpu::GpuRuntime>>::New(env, &runtime);
    return instanceData(env).gpu.New({ext});
  });
}

}  // namespace hcsp::addon
