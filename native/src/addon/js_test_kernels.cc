#include "js_test_kernels.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "../gpu/kernels/gemm.h"
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
    fail(ErrorKind::Shape,
         std::string("testKernel canonicalSumSqBf16: x must be bf16 [rows, n], got ") + dtypeName(x->dtype()) + " of rank " + std::to_string(x->rank()));
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

/** options.<name>: a tensor on x's device of the given dtype and rank */
TensorPtr tensorOption(const Napi::Value& options, const char* name, const TensorPtr& x, DType dtype, size_t rank) {
  Napi::Value v = options.IsObject() ? options.As<Napi::Object>().Get(name) : options.Env().Undefined();
  TensorPtr t = JsTensor::unwrap(v, std::string("testKernel ") + name);
  if (&t->memory() != &x->memory()) fail(ErrorKind::DType, std::string("testKernel: ") + name + " is not on the given GPU device");
  if (t->dtype() != dtype || t->rank() != rank) {
    fail(ErrorKind::Shape, std::string("testKernel: ") + name + " must be " + dtypeName(dtype) + " of rank " + std::to_string(rank) + ", got " +
                               dtypeName(t->dtype()) + " of rank " + std::to_string(t->rank()));
  }
  return t;
}

/** x bf16 [rows, inF] and options.w bf16 [outF (times groups), inF] */
TensorPtr gemmWeight(const TensorPtr& x, const Napi::Value& options, const char* kernel) {
  if (x->dtype() != DType::BF16 || x->rank() != 2) {
    fail(ErrorKind::Shape,
         std::string("testKernel ") + kernel + ": x must be bf16 [rows, inF], got " + dtypeName(x->dtype()) + " of rank " + std::to_string(x->rank()));
  }
  TensorPtr w = tensorOption(options, "w", x, DType::BF16, 2);
  if (w->dim(1) != x->dim(1))
    fail(ErrorKind::Shape, std::string("testKernel ") + kernel + ": w's inF " + std::to_string(w->dim(1)) + " is not x's " + std::to_string(x->dim(1)));
  return w;
}

TensorPtr gemmLinear(gpu::GpuRuntime& rt, const std::shared_ptr<gpu::GpuRuntime>& memory, const TensorPtr& x, const Napi::Value& options) {
  TensorPtr w = gemmWeight(x, options, "gemmLinearBf16");
  const int64_t rows = x->dim(0), inF = x->dim(1), outF = w->dim(0);
  const int threads = static_cast<int>(intOption(options, "blockThreads", 0, 1 << 20, 0));
  const int64_t blocks = intOption(options, "blocks", 0, INT32_MAX, 0);
  Napi::Value kernel = options.IsObject() ? options.As<Napi::Object>().Get("kernel") : options.Env().Undefined();
  const std::string which = kernel.IsUndefined() ? "tiled" : kernel.ToString().Utf8Value();
  if (which != "tiled" && which != "oneThread") fail(ErrorKind::Attr, "testKernel gemmLinearBf16: kernel must be 'tiled' or 'oneThread', got '" + which + "'");
  TensorPtr y = std::make_shared<Tensor>(DType::BF16, Shape{rows, outF}, memory, Init::Uninitialized);
  if (which == "tiled") {
    gpu::gemmLinearBf16Exact(rt, x->bf16(), rows, inF, w->bf16(), outF, y->bf16(), threads, blocks);
  } else {
    gpu::gemmLinearBf16OneThread(rt, x->bf16(), rows, inF, w->bf16(), outF, y->bf16());
  }
  rt.synchronize();
  return y;
}

TensorPtr gemmGrouped(gpu::GpuRuntime& rt, const std::shared_ptr<gpu::GpuRuntime>& memory, const TensorPtr& x, const Napi::Value& options) {
  TensorPtr w = gemmWeight(x, options, "gemmGroupedBf16");
  const int64_t maxRows = x->dim(0), inF = x->dim(1);
  const int64_t outF = intOption(options, "outF", 1, w->dim(0), -1);
  if (w->dim(0) % outF != 0)
    fail(ErrorKind::Shape, "testKernel gemmGroupedBf16: w's " + std::to_string(w->dim(0)) + " rows are not groups of outF " + std::to_string(outF));
  TensorPtr rowGroup = tensorOption(options, "rowGroup", x, DType::I32, 1);
  TensorPtr rows = tensorOption(options, "rows", x, DType::I32, 1);
  if (rowGroup->dim(0) != maxRows || rows->dim(0) != 1) fail(ErrorKind::Shape, "testKernel gemmGroupedBf16: rowGroup must be i32 [x's rows], rows i32 [1]");
  const int threads = static_cast<int>(intOption(options, "blockThreads", 0, 1 << 20, 0));
  const int64_t blocks = intOption(options, "blocks", 0, INT32_MAX, 0);
  // zeroed: the rows past the device's count stay zero
  TensorPtr y = std::make_shared<Tensor>(DType::BF16, Shape{maxRows, outF}, memory);
  gpu::gemmGroupedLinearBf16Exact(rt, x->bf16(), maxRows, inF, w->bf16(), outF, rowGroup->data<int32_t>(), rows->data<int32_t>(), y->bf16(), threads, blocks);
  rt.synchronize();
  return y;
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
    if (name == "gemmLinearBf16") return JsTensor::wrap(env, gemmLinear(*rt, rt, x, info[3]));
    if (name == "gemmGroupedBf16") return JsTensor::wrap(env, gemmGrouped(*rt, rt, x, info[3]));
    fail(ErrorKind::Attr, "testKernel: no test kernel '" + name + "' (there are canonicalSumSqBf16, gemmLinearBf16, gemmGroupedBf16)");
  });
}

}  // namespace hcsp::addon
