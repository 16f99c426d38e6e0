// The addon's per-environment state (each worker thread that loads it has its own): the
// constructors of its JavaScript classes.
#pragma once
#include <napi.h>

namespace hcsp::addon {

struct InstanceData {
  Napi::FunctionReference tensor;
  Napi::FunctionReference gpu;
};

inline InstanceData& instanceData(Napi::Env env) { return *env.GetInstanceData<InstanceData>(); }

}  // namespace hcsp::addon
