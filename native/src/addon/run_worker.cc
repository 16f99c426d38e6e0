#include "run_worker.h"

#include "../gpu/gpu_op_registry.h"
#include "../host/thread_pool.h"
#include "js_attrs.h"
#include "js_errors.h"
#include "js_gpu.h"
#include "js_tensor.h"

namespace hcsp::addon {

GemmMode parseGemmMode(Napi::Env env, const Napi::Value& v) {
  std::string s = v.IsString() ? v.As<Napi::String>().Utf8Value() : "";
  if (s == "exact") return GemmMode::Exact;
  if (s == "blas") return GemmMode::Blas;
  if (s == "vendor") return GemmMode::Vendor;
  throw jsError(env, Error(ErrorKind::Attr, "gemm mode must be 'exact', 'blas' or 'vendor', got '" + s + "'"));
}

namespace {

class RunWorker : public Napi::AsyncWorker {
 public:
  RunWorker(Napi::Env env, std::string op, std::vector<Inputs> inputs, Attrs attrs, GemmMode gemm, bool collective, std::shared_ptr<gpu::GpuRuntime> gpu)
      : Napi::AsyncWorker(env), deferred_(Napi::Promise::Deferred::New(env)), op_(std::move(op)), inputs_(std::move(inputs)),
        attrs_(std::move(attrs)), gemm_(gemm), collective_(collective), gpu_(std::move(gpu)) {}

  Napi::Promise promise() { return deferred_.Promise(); }

  /** the op's name in front, once (most kernels' messages already start with it) */
  std::string named(const std::string& message) const {
    return message.rfind(op_ + ":", 0) == 0 || message.rfind(op_ + " ", 0) == 0 ? message : op_ + ": " + message;
  }

  void Execute() override {
    try {
      if (gpu_) {
        gpu::GpuContext g{*gpu_, gpu_, attrs_, gemm_};
        checkPlacement();
        outputs_ = collective_ ? gpu::findGpuCollectiveOp(op_)(inputs_, g) : std::vector<Outputs>{gpu::findGpuOp(op_)(inputs_[0], g)};
        // kernel errors surface at the stream's sync: before the outputs are handed out
        gpu_->synchronize();
      } else {
        KernelContext ctx{attrs_, gemm_, defaultPool()};
        checkPlacement();
        outputs_ = collective_ ? findCollectiveKernel(op_)(inputs_, ctx) : std::vector<Outputs>{findKernel(op_)(inputs_[0], ctx)};
      }
    } catch (const Error& e) {
      code_ = errorCode(e.kind());
      SetError(named(e.what()));
    } catch (const std::bad_alloc&) {
      code_ = "HCSP_OOM";
      SetError(named("host device out of memory (the system refused an allocation)"));
    } catch (const std::exception& e) {
      code_ = "HCSP_RUNTIME";
      SetError(named(e.what()));
    }
    inputs_.clear();
  }

  /**
   * every input lives on the device the op runs on; a weight released after packing
   * (gemm::packForGemm) is read only where its panel serves: linear's w and fp8LinearPtpc's
   * qW, in the host device's exact GEMM
   */
  void checkPlacement() const {
    const Memory* want = gpu_ ? static_cast<const Memory*>(gpu_.get()) : hostMemory().get();
    for (size_t r = 0; r < inputs_.size(); r++) {
      for (size_t p = 0; p < inputs_[r].size(); p++) {
        const TensorPtr& t = inputs_[r][p];
        if (t && &t->memory() != want) {
          fail(ErrorKind::Runtime, op_ + ": input port " + std::to_string(p) + " is in " + t->memory().name() + " memory, the op runs on " + want->name());
        }
        if (t && t->released()) {
          const bool panelPort = !collective_ && ((op_ == "linear" && p == 1) || (op_ == "fp8LinearPtpc" && p == 2));
          if (!panelPort || gpu_ || gemm_ != GemmMode::Exact) {
            fail(ErrorKind::Runtime, op_ + ": input port " + std::to_string(p) + " (" + dtypeName(t->dtype()) + shapeStr(t->shape()) +
                                         ") is a weight released after packing for the exact GEMM; only linear's w and fp8LinearPtpc's qW read it, with gemm 'exact'" +
                                         (gemm_ != GemmMode::Exact ? std::string(" (this run is '") + (gemm_ == GemmMode::Blas ? "blas" : "vendor") + "')" : std::string()));
          }
        }
      }
    }
  }

  void OnOK() override {
    Napi::Env env = Env();
    auto ports = [&](const Outputs& outs) {
      auto arr = Napi::Array::New(env, outs.size());
      for (size_t p = 0; p < outs.size(); p++) arr.Set(p, outs[p] ? Napi::Value(JsTensor::wrap(env, outs[p])) : env.Null());
      return arr;
    };
    if (collective_) {
      auto ranks = Napi::Array::New(env, outputs_.size());
      for (size_t r = 0; r < outputs_.size(); r++) ranks.Set(r, ports(outputs_[r]));
      deferred_.Resolve(ranks);
    } else {
      deferred_.Resolve(ports(outputs_[0]));
    }
    outputs_.clear();
  }

  void OnError(const Napi::Error& e) override {
    e.Set("code", Napi::String::New(Env(), code_));
    deferred_.Reject(e.Value());
  }

 private:
  Napi::Promise::Deferred deferred_;
  std::string op_;
  std::vector<Inputs> inputs_;
  Attrs attrs_;
  GemmMode gemm_;
  bool collective_;
  std::shared_ptr<gpu::GpuRuntime> gpu_;
  std::vector<Outputs> outputs_;
  std::string code_ = "HCSP_RUNTIME";
};

Inputs readPorts(const Napi::Value& v, const std::string& what) {
  if (!v.IsArray()) throw jsError(v.Env(), Error(ErrorKind::DType, what + " must be an array of native tensors"));
  Napi::Array arr = v.As<Napi::Array>();
  Inputs out;
  for (uint32_t i = 0; i < arr.Length(); i++) {
    Napi::Value e = arr.Get(i);
    out.push_back(e.IsNull() || e.IsUndefined() ? nullptr : JsTensor::unwrap(e, what + " port " + std::to_string(i)));
  }
  return out;
}

}  // namespace

Napi::Value run(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string op = info[0].As<Napi::String>().Utf8Value();
  auto gpu = JsGpu::unwrapOptional(info[4]);
  // an unknown op fails before any work
  if (gpu) gpu::findGpuOp(op);
  else findKernel(op);
  auto* w = new RunWorker(env, op, {readPorts(info[1], op + " inputs")}, readAttrs(op, info[2]), parseGemmMode(env, info[3]), false, gpu);
  auto p = w->promise();
  w->Queue();
  return p;
}

Napi::Value runCollective(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string op = info[0].As<Napi::String>().Utf8Value();
  auto gpu = JsGpu::unwrapOptional(info[4]);
  if (gpu) gpu::findGpuCollectiveOp(op);
  else findCollectiveKernel(op);
  if (!info[1].IsArray()) throw jsError(env, Error(ErrorKind::DType, op + ": inputs must be one array per rank"));
  Napi::Array ranks = info[1].As<Napi::Array>();
  std::vector<Inputs> inputs;
  for (uint32_t r = 0; r < ranks.Length(); r++) inputs.push_back(readPorts(ranks.Get(r), op + " rank " + std::to_string(r)));
  Attrs attrs = readAttrs(op, info[2]).with("tp", static_cast<double>(inputs.size()));
  auto* w = new RunWorker(env, op, std::move(inputs), std::move(attrs), parseGemmMode(env, info[3]), true, gpu);
  auto p = w->promise();
  w->Queue();
  return p;
}

}  // namespace hcsp::addon
