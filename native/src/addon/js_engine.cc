#include "js_engine.h"

#include "js_errors.h"
#include "js_gpu.h"

namespace hcsp::addon {

Napi::Value counters(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    const DeviceCounters c = JsGpu::unwrapDevice(info[0])->counters();
    auto o = Napi::Object::New(info.Env());
    o.Set("kernelLaunches", static_cast<double>(c.kernelLaunches));
    o.Set("hostSyncs", static_cast<double>(c.hostSyncs));
    o.Set("deviceAllocations", static_cast<double>(c.deviceAllocations));
    o.Set("deviceFrees", static_cast<double>(c.deviceFrees));
    o.Set("memsets", static_cast<double>(c.memsets));
    o.Set("copiesToDevice", static_cast<double>(c.copiesToDevice));
    o.Set("bytesToDevice", static_cast<double>(c.bytesToDevice));
    o.Set("copiesFromDevice", static_cast<double>(c.copiesFromDevice));
    o.Set("bytesFromDevice", static_cast<double>(c.bytesFromDevice));
    return o;
  });
}

Napi::Value reservePool(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    if (!info[0].IsArray()) fail(ErrorKind::Size, "reservePool: blockBytes must be an array of byte counts");
    Napi::Array a = info[0].As<Napi::Array>();
    std::vector<size_t> blocks;
    for (uint32_t i = 0; i < a.Length(); i++) {
      const double b = a.Get(i).IsNumber() ? a.Get(i).As<Napi::Number>().DoubleValue() : -1;
      if (!(b >= 0) || b != static_cast<double>(static_cast<int64_t>(b)))
        fail(ErrorKind::Size, "reservePool: block " + std::to_string(i) + " is not a byte count");
      blocks.push_back(static_cast<size_t>(b));
    }
    JsGpu::unwrapDevice(info[1])->reservePool(blocks);
    return info.Env().Undefined();
  });
}

Napi::Value trimPool(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), [&]() -> Napi::Value {
    JsGpu::unwrapDevice(info[0])->trimPool();
    return info.Env().Undefined();
  });
}

}  // namespace hcsp::addon
