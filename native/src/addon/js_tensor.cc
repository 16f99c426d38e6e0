#include "js_tensor.h"

#include "../host/errors.h"
#include "instance_data.h"
#include "js_errors.h"
#include "js_gpu.h"

namespace hcsp::addon {

Napi::Function JsTensor::define(Napi::Env env) {
  Napi::Function f =
      DefineClass(env, "NativeTensor",
                  {InstanceAccessor<&JsTensor::dtype>("dtype"), InstanceAccessor<&JsTensor::shape>("shape"), InstanceAccessor<&JsTensor::bytes>("bytes"),
                   InstanceAccessor<&JsTensor::freed>("freed"), InstanceAccessor<&JsTensor::computed>("computed")});
  instanceData(env).tensor = Napi::Persistent(f);
  return f;
}

JsTensor::JsTensor(const Napi::CallbackInfo& info) : Napi::ObjectWrap<JsTensor>(info) {
  if (info.Length() != 1 || !info[0].IsExternal()) {
    throw Napi::TypeError::New(info.Env(), "NativeTensor is made by upload() and kernels, not by new");
  }
  slot_ = *info[0].As<Napi::External<engine::SlotPtr>>().Data();
}

Napi::Object JsTensor::wrap(Napi::Env env, TensorPtr tensor) { return wrapSlot(env, std::make_shared<engine::TensorSlot>(std::move(tensor))); }

Napi::Object JsTensor::wrapSlot(Napi::Env env, engine::SlotPtr slot) {
  engine::SlotPtr copy = std::move(slot);
  auto ext = Napi::External<engine::SlotPtr>::New(env, &copy);
  return instanceData(env).tensor.New({ext});
}

engine::SlotPtr JsTensor::unwrapSlot(const Napi::Value& value, const std::string& what) {
  if (!value.IsObject() || !value.As<Napi::Object>().InstanceOf(instanceData(value.Env()).tensor.Value())) {
    throw jsError(value.Env(), Error(ErrorKind::DType, what + " is not a native tensor"));
  }
  JsTensor* self = Unwrap(value.As<Napi::Object>());
  if (!self->slot_) throw jsError(value.Env(), Error(ErrorKind::Runtime, what + " was already freed"));
  return self->slot_;
}

TensorPtr JsTensor::unwrap(const Napi::Value& value, const std::string& what) {
  engine::SlotPtr slot = unwrapSlot(value, what);
  try {
    return slot->tensor([&] { return what; });
  } catch (const Error& e) {
    throw jsError(value.Env(), e);
  }
}

Napi::Value JsTensor::dtype(const Napi::CallbackInfo& info) { return slot_ ? Napi::String::New(info.Env(), dtypeName(slot_->dtype())) : info.Env().Null(); }

Napi::Value JsTensor::shape(const Napi::CallbackInfo& info) {
  if (!slot_) return info.Env().Null();
  const Shape& s = slot_->shape();
  auto arr = Napi::Array::New(info.Env(), s.size());
  for (size_t i = 0; i < s.size(); i++) arr.Set(i, Napi::Number::New(info.Env(), static_cast<double>(s[i])));
  return arr;
}

Napi::Value JsTensor::bytes(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), slot_ ? static_cast<double>(numel(slot_->shape()) * dtypeBytes(slot_->dtype())) : 0);
}

Napi::Value JsTensor::freed(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), !slot_); }

Napi::Value JsTensor::computed(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), slot_ && slot_->ready()); }

engine::SlotPtr JsTensor::takeSlot(const Napi::Value& value, const std::string& what) {
  engine::SlotPtr slot = unwrapSlot(value, what);
  Unwrap(value.As<Napi::Object>())->slot_.reset();
  return slot;
}

void freeTensor(const Napi::CallbackInfo& info) {
  if (info.Length() < 1 || !info[0].IsObject() || !info[0].As<Napi::Object>().InstanceOf(instanceData(info.Env()).tensor.Value())) {
    throw jsError(info.Env(), Error(ErrorKind::DType, "free: the argument is not a native tensor"));
  }
  JsTensor::Unwrap(info[0].As<Napi::Object>())->slot_.reset();
}

Shape readShape(const Napi::Value& v, const std::string& what) {
  if (!v.IsArray()) fail(ErrorKind::Shape, what + ": the shape must be an array of dimensions");
  Napi::Array arr = v.As<Napi::Array>();
  Shape s;
  for (uint32_t i = 0; i < arr.Length(); i++) {
    Napi::Value d = arr.Get(i);
    const double x = d.IsNumber() ? d.As<Napi::Number>().DoubleValue() : -1;
    if (!(x >= 0 && x < 9223372036854775808.0) || x != static_cast<double>(static_cast<int64_t>(x))) {
      fail(ErrorKind::Shape, what + ": dimension " + std::to_string(i) + " of the shape is not a non-negative integer");
    }
    s.push_back(static_cast<int64_t>(x));
  }
  return s;
}

UploadArgs readUpload(const Napi::CallbackInfo& info, const std::string& what) {
  const DType dtype = parseDType(info[0].IsString() ? info[0].As<Napi::String>().Utf8Value() : "");
  Shape shape = readShape(info[1], what);
  if (!info[2].IsTypedArray()) fail(ErrorKind::Size, what + ": data must be a typed array");
  Napi::TypedArray data = info[2].As<Napi::TypedArray>();
  const size_t want = static_cast<size_t>(numel(shape)) * dtypeBytes(dtype);
  if (data.ByteLength() != want) {
    fail(ErrorKind::Size, what + ": a buffer of " + std::to_string(data.ByteLength()) + " bytes for a " + dtypeName(dtype) + shapeStr(shape) +
                              " tensor, which needs " + std::to_string(want));
  }
  const auto* bytes = static_cast<const uint8_t*>(data.ArrayBuffer().Data()) + data.ByteOffset();
  return UploadArgs{dtype, std::move(shape), bytes, want, JsGpu::unwrapDevice(info[3])};
}

}  // namespace hcsp::addon
