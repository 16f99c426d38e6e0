// A host-device tensor as a JavaScript object: the handle the backend's DeviceOps pass
// around. free() releases the memory at once (the graph loop frees values at their last
// use); a run in flight keeps its own reference, so freeing never pulls memory from under it.
#pragma once
#include <napi.h>

#include "../host/tensor.h"

namespace hcsp::addon {

class JsTensor : public Napi::ObjectWrap<JsTensor> {
 public:
  static Napi::Function define(Napi::Env env);
  static Napi::Object wrap(Napi::Env env, TensorPtr tensor);
  /** the tensor behind a JS value, or an HCSP_DTYPE error naming `what` */
  static TensorPtr unwrap(const Napi::Value& value, const std::string& what);

  explicit JsTensor(const Napi::CallbackInfo& info);

 private:
  Napi::Value dtype(const Napi::CallbackInfo& info);
  Napi::Value shape(const Napi::CallbackInfo& info);
  Napi::Value bytes(const Napi::CallbackInfo& info);
  Napi::Value freed(const Napi::CallbackInfo& info);
  TensorPtr tensor_;
  friend void freeTensor(const Napi::CallbackInfo& info);
};

void freeTensor(const Napi::CallbackInfo& info);

}  // namespace hcsp::addon
