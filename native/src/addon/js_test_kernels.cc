#include "js_test_kernels.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "../gpu/kernels/reduce.h"
#include "js_errors.h"
#include "js_gpu.h"
#include "js_tensor.h"

namespace hcsp::addon {

namespace {

/** options.<name>: an integer in [lo, hi], else `dflt` when absent (dflt < lo: required) */
int64_t intOption(const Napi::Value& options, const char* name, int64_t lo, int64_t hi, int64_t dflt) {
  Napi::Value v = options.IsObject() ? options.As<Napi::Object>().Get(name) : options.Env().Undefined();
  if (v.IsUndefined() && dflt >= lo) return dflt;
  const double d = v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : -1;
  if (!(d >= static_cast<double>(lo) && d <= static_cast<double>(hi)) || d != static_cast<double>(static_cast<int64_t>(d))) {
    fail(ErrorKind::Attr, std::string("testKernel: ") + name + " must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
                              (v.IsUndefined() ? std::string("nothing") : v.ToString().Utf8Value()));
  }
  return static_cast<int64_t>(d);
}

TensorPtr canonicalSumSq(gpu::GpuRuntime& rt, const std::shared_ptr<gpu::GpuRuntime>& memory, const TensorPtr& x, const Napi::Value& options) {
  if (x->dtype() != DType::BF16 || x->rank() != 2) {
    fail(ErrorKind::Shape, std::string("testKernel canonicalSumSqBf16: x must be bf16 [rows, n], got ") + dtypeName(x->dtype()) + " of rank " + std::to_string(x->rank()));
  }
  const int64_t rows = x->dim(0), n = x->dim(1);
  // the launch checks the block's threads itself (a multiple of 64 up to 256): a bad one is its error
  const int64_t threads = intOption(options, "blockThreads", 1, 1 << 20, 0);
  const int64_t rowsPerBlock = std::max<int64_t>(1, threads / HCSP_CANONICAL_LANES);
  const int64_t blocks = intOption(options, "blocks", 1, INT32_MAX, std::max<int64_t>(1, (rows + rowsPerBlock - 1) / rowsPerBlock));
  TensorPtr out = std::make_shared<Tensor>(DType::F32, Shape{rows}, memory, Init::Uninitialized);
  HCSP_LAUNCH_BLOCKS(rt, hcsp_canonical_sumsq_bf16, rows > 0 ? blocks : 0, static_cast<int>(threads), x->bf16(), out->data<float>(), rows, n);
  rt.synchronize();
  return out;
}

}  // namespace

Napi::Value testKernel(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&]() -> Napi::Value {
    const std::string name = info[0].IsString() ? info[0].As<Napi::String>().Utf8Value() : "";
    std::shared_ptr<gpu::GpuRuntime> rt = JsGpu::unwrapOptional(info[1]);
    if (!rt) fail(ErrorKind::DType, "testKernel: the device argument must be a GPU device from openGpu()");
    TensorPtr x = JsTensor::unwrap(info[2], "testKernel");
    if (&x->memory() != static_cast<Memory*>(rt.get())) fail(ErrorKind::DType, "testKernel: x is not on the given GPU device");
    if (name == "canonicalSumSqBf16") return JsTensor::wrap(env, canonicalSumSq(*rt, rt, x, info[3]));
    fail(ErrorKind::Attr, "testKernel: no test kernel '" + name + "' (there is canonicalSumSqBf16)");
  });
}

}  // namespace hcsp::addon
