#include "js_tensor.h"

#include "../host/errors.h"
#include "instance_data.h"
#include "js_errors.h"

namespace hcsp::addon {

Napi::Function JsTensor::define(Napi::Env env) {
  Napi::Function f = DefineClass(env, "NativeTensor",
                                 {InstanceAccessor<&JsTensor::dtype>("dtype"), InstanceAccessor<&JsTensor::shape>("shape"),
                                  InstanceAccessor<&JsTensor::bytes>("bytes"), InstanceAccessor<&JsTensor::freed>("freed")});
  instanceData(env).tensor = Napi::Persistent(f);
  return f;
}

JsTensor::JsTensor(const Napi::CallbackInfo& info) : Napi::ObjectWrap<JsTensor>(info) {
  if (info.Length() != 1 || !info[0].IsExternal()) {
    throw Napi::TypeError::New(info.Env(), "NativeTensor is made by upload() and kernels, not by new");
  }
  tensor_ = *info[0].As<Napi::External<TensorPtr>>().Data();
}

Napi::Object JsTensor::wrap(Napi::Env env, TensorPtr tensor) {
  TensorPtr copy = std::move(tensor);
  auto ext = Napi::External<TensorPtr>::New(env, &copy);
  return instanceData(env).tensor.New({ext});
}

TensorPtr JsTensor::unwrap(const Napi::Value& value, const std::string& what) {
  if (!value.IsObject() || !value.As<Napi::Object>().InstanceOf(instanceData(value.Env()).tensor.Value())) {
    throw jsError(value.Env(), Error(ErrorKind::DType, what + " is not a native tensor"));
  }
  JsTensor* self = Unwrap(value.As<Napi::Object>());
  if (!self->tensor_) throw jsError(value.Env(), Error(ErrorKind::Runtime, what + " was already freed"));
  return self->tensor_;
}

Napi::Value JsTensor::dtype(const Napi::CallbackInfo& info) {
  return tensor_ ? Napi::String::New(info.Env(), dtypeName(tensor_->dtype())) : info.Env().Null();
}

Napi::Value JsTensor::shape(const Napi::CallbackInfo& info) {
  if (!tensor_) return info.Env().Null();
  auto arr = Napi::Array::New(info.Env(), tensor_->rank());
  for (size_t i = 0; i < tensor_->rank(); i++) arr.Set(i, Napi::Number::New(info.Env(), static_cast<double>(tensor_->dim(i))));
  return arr;
}

Napi::Value JsTensor::bytes(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), tensor_ ? static_cast<double>(tensor_->bytes()) : 0);
}

Napi::Value JsTensor::freed(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), !tensor_); }

void freeTensor(const Napi::CallbackInfo& info) {
  if (info.Length() < 1 || !info[0].IsObject() || !info[0].As<Napi::Object>().InstanceOf(instanceData(info.Env()).tensor.Value())) {
    throw jsError(info.Env(), Error(ErrorKind::DType, "free: the argument is not a native tensor"));
  }
  JsTensor::Unwrap(info[0].As<Napi::Object>())->tensor_.reset();
}

}  // namespace hcsp::addon
