// A device tensor as a JavaScript object: the handle the backend's DeviceOps pass around. It
// holds a slot (engine/tensor_slot.h): an upload's tensor, or the output of a node still queued.
// free() drops the handle's reference; queued jobs keep their own, so freeing never pulls
// memory from under a node that has yet to run.
#pragma once
#include <napi.h>

#include "../engine/tensor_slot.h"
#include "../device/device.h"
#include "../host/tensor.h"

namespace hcsp::addon {

class JsTensor : public Napi::ObjectWrap<JsTensor> {
 public:
  static Napi::Function define(Napi::Env env);
  static Napi::Object wrap(Napi::Env env, TensorPtr tensor);
  static Napi::Object wrapSlot(Napi::Env env, engine::SlotPtr slot);
  /** the computed tensor behind a JS value, or an error naming `what` (not a tensor, freed, not computed yet) */
  static TensorPtr unwrap(const Napi::Value& value, const std::string& what);
  /** the slot behind a JS value (computed or queued), or an error naming `what` */
  static engine::SlotPtr unwrapSlot(const Napi::Value& value, const std::string& what);
  /** unwrapSlot(), the JS handle then freed: the caller owns the value (a replay's inputs) */
  static engine::SlotPtr takeSlot(const Napi::Value& value, const std::string& what);

  explicit JsTensor(const Napi::CallbackInfo& info);

 private:
  Napi::Value dtype(const Napi::CallbackInfo& info);
  Napi::Value shape(const Napi::CallbackInfo& info);
  Napi::Value bytes(const Napi::CallbackInfo& info);
  Napi::Value freed(const Napi::CallbackInfo& info);
  /** whether its node has run (a download needs no wait) */
  Napi::Value computed(const Napi::CallbackInfo& info);
  engine::SlotPtr slot_;
  friend void freeTensor(const Napi::CallbackInfo& info);
};

void freeTensor(const Napi::CallbackInfo& info);

/** a shape from JavaScript: an array of non-negative integers; errors start with `what` */
Shape readShape(const Napi::Value& v, const std::string& what);

/** upload's arguments (dtype, shape, data: TypedArray, gpu?), checked: the bytes where JavaScript holds them, and the device they go to */
struct UploadArgs {
  DType dtype;
  Shape shape;
  const uint8_t* bytes;
  size_t size;
  std::shared_ptr<Device> device;
};
UploadArgs readUpload(const Napi::CallbackInfo& info, const std::string& what);

}  // namespace hcsp::addon
