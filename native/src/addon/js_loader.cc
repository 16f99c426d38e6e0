#include "js_loader.h"

#include <cmath>

#include "../host/thread_pool.h"
#include "../loader/weight_loader.h"
#include "js_errors.h"
#include "js_gpu.h"
#include "js_tensor.h"
#include "promise_worker.h"

namespace hcsp::addon {

namespace {

/** a non-negative integer a double holds exactly */
uint64_t wholeNumber(double x, const std::string& what) {
  if (!(x >= 0 && x <= 9007199254740992.0) || x != std::floor(x)) fail(ErrorKind::Attr, "loadWeights: " + what + " must be a non-negative integer");
  return static_cast<uint64_t>(x);
}

class LoadWorker : public PromiseWorker {
 public:
  LoadWorker(Napi::Env env, std::vector<loader::SourceFile> files, std::vector<loader::LoadRequest> requests, std::shared_ptr<Memory> memory,
             loader::LoadOptions options)
      : PromiseWorker(env), files_(std::move(files)), requests_(std::move(requests)), memory_(std::move(memory)), options_(options) {}

  void Execute() override {
    guard("loadWeights", [&] { result_ = loader::loadWeights(files_, std::move(requests_), memory_, defaultPool(), options_); });
  }

  void OnOK() override {
    Napi::Env env = Env();
    auto o = Napi::Object::New(env);
    auto tensors = Napi::Array::New(env, result_.tensors.size());
    auto nonFinite = Napi::Array::New(env, result_.nonFinite.size());
    for (size_t i = 0; i < result_.tensors.size(); i++) {
      tensors.Set(i, JsTensor::wrap(env, result_.tensors[i]));
      const auto& parts = result_.nonFinite[i];
      auto counts = Napi::Float64Array::New(env, parts.size() * 2);
      for (size_t p = 0; p < parts.size(); p++) {
        counts[2 * p] = static_cast<double>(parts[p].nan);
        counts[2 * p + 1] = static_cast<double>(parts[p].inf);
      }
      nonFinite.Set(i, counts);
    }
    result_.tensors.clear();
    o.Set("tensors", tensors);
    o.Set("nonFinite", nonFinite);
    o.Set("bytesRead", static_cast<double>(result_.bytesRead));
    o.Set("seconds", result_.seconds);
    o.Set("lanes", result_.lanes);
    o.Set("staging", result_.staging);
    o.Set("ranges", static_cast<double>(result_.ranges));
    o.Set("chunks", static_cast<double>(result_.chunks));
    deferred_.Resolve(o);
  }

 private:
  std::vector<loader::SourceFile> files_;
  std::vector<loader::LoadRequest> requests_;
  std::shared_ptr<Memory> memory_;
  loader::LoadOptions options_;
  loader::LoadResult result_;
};

}  // namespace

Napi::Value loadWeights(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&]() -> Napi::Value {
    if (!info[0].IsArray() || !info[1].IsArray()) fail(ErrorKind::Attr, "loadWeights: files and requests must be arrays");
    std::vector<loader::SourceFile> files;
    Napi::Array f = info[0].As<Napi::Array>();
    for (uint32_t i = 0; i < f.Length(); i++) {
      Napi::Value v = f.Get(i);
      Napi::Value path = v.IsObject() ? v.As<Napi::Object>().Get("path") : v;
      Napi::Value identity = v.IsObject() ? v.As<Napi::Object>().Get("identity") : v.Env().Undefined();
      if (!path.IsString()) fail(ErrorKind::Attr, "loadWeights: file " + std::to_string(i) + " has no path");
      files.push_back({path.As<Napi::String>().Utf8Value(), identity.IsString() ? identity.As<Napi::String>().Utf8Value() : ""});
    }
    std::vector<loader::LoadRequest> requests;
    Napi::Array rs = info[1].As<Napi::Array>();
    for (uint32_t i = 0; i < rs.Length(); i++) {
      Napi::Value v = rs.Get(i);
      if (!v.IsObject()) fail(ErrorKind::Attr, "loadWeights: request " + std::to_string(i) + " is not an object");
      Napi::Object o = v.As<Napi::Object>();
      loader::LoadRequest r;
      r.name = o.Get("name").IsString() ? o.Get("name").As<Napi::String>().Utf8Value() : "#" + std::to_string(i);
      if (!o.Get("dtype").IsString()) fail(ErrorKind::DType, "loadWeights: tensor '" + r.name + "' has no dtype");
      r.dtype = parseDType(o.Get("dtype").As<Napi::String>().Utf8Value());
      r.shape = readShape(o.Get("shape"), "loadWeights: tensor '" + r.name + "'");
      Napi::Value parts = o.Get("parts");
      r.parts = static_cast<uint32_t>(wholeNumber(parts.IsNumber() ? parts.As<Napi::Number>().DoubleValue() : -1, "tensor '" + r.name + "' parts"));
      Napi::Value ranges = o.Get("ranges");
      if (!ranges.IsTypedArray() || ranges.As<Napi::TypedArray>().TypedArrayType() != napi_float64_array) {
        fail(ErrorKind::Attr, "loadWeights: tensor '" + r.name + "' ranges must be a Float64Array");
      }
      Napi::Float64Array a = ranges.As<Napi::Float64Array>();
      if (a.ElementLength() % 4 != 0) fail(ErrorKind::Attr, "loadWeights: tensor '" + r.name + "' ranges must hold 4 numbers per range");
      for (size_t k = 0; k < a.ElementLength(); k += 4) {
        const std::string what = "tensor '" + r.name + "' range " + std::to_string(k / 4);
        r.ranges.push_back(loader::FileRange{static_cast<uint32_t>(wholeNumber(a[k], what + " file")), wholeNumber(a[k + 1], what + " offset"),
                                             wholeNumber(a[k + 2], what + " bytes"), static_cast<uint32_t>(wholeNumber(a[k + 3], what + " part"))});
      }
      requests.push_back(std::move(r));
    }
    std::shared_ptr<Memory> memory = JsGpu::unwrapDevice(info[2]);
    loader::LoadOptions options;
    if (info[3].IsObject()) {
      Napi::Object o = info[3].As<Napi::Object>();
      if (o.Get("chunkBytes").IsNumber()) options.chunkBytes = wholeNumber(o.Get("chunkBytes").As<Napi::Number>().DoubleValue(), "chunkBytes");
      if (o.Get("lanes").IsNumber()) options.lanes = static_cast<int>(wholeNumber(o.Get("lanes").As<Napi::Number>().DoubleValue(), "lanes"));
    }
    return (new LoadWorker(env, std::move(files), std::move(requests), std::move(memory), options))->start();
  });
}

}  // namespace hcsp::addon
