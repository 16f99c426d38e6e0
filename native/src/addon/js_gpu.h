// An open GPU device (HIP, CUDA or the emulated one) as a JavaScript object: the handle
// upload() and run() take to place tensors and kernels there (none: the host device).
#pragma once
#include <napi.h>

#include "../gpu/gpu_runtime.h"

namespace hcsp::addon {

class JsGpu : public Napi::ObjectWrap<JsGpu> {
 public:
  static Napi::Function define(Napi::Env env);
  /** the runtime behind a JS value; null/undefined -> nullptr (where only a GPU will do: NCCL, testKernel) */
  static std::shared_ptr<gpu::GpuRuntime> unwrapOptional(const Napi::Value& value);
  /** the device a JS value names: its GPU's runtime, or the host device for null/undefined */
  static std::shared_ptr<Device> unwrapDevice(const Napi::Value& value);

  explicit JsGpu(const Napi::CallbackInfo& info);

 private:
  Napi::Value kind(const Napi::CallbackInfo& info);
  Napi::Value arch(const Napi::CallbackInfo& info);
  Napi::Value kernels(const Napi::CallbackInfo& info);
  Napi::Value describe(const Napi::CallbackInfo& info);
  Napi::Value stats(const Napi::CallbackInfo& info);
  Napi::Value setMemoryLimit(const Napi::CallbackInfo& info);
  Napi::Value synchronize(const Napi::CallbackInfo& info);
  Napi::Value vendorGemm(const Napi::CallbackInfo& info);
  Napi::Value kernelFallbacks(const Napi::CallbackInfo& info);
  Napi::Value memoryInfo(const Napi::CallbackInfo& info);
  std::shared_ptr<gpu::GpuRuntime> runtime_;
};

/** openGpu(kind, { device?, codeObjects?, kernels?: 'exact' | 'fast' }) -> GpuDevice */
Napi::Value openGpu(const Napi::CallbackInfo& info);

Napi::Object statsObject(Napi::Env env, const AllocatorStats& s);

}  // namespace hcsp::addon
