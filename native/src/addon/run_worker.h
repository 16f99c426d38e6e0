// One node (or one collective over every rank) run off the JavaScript thread: the kernels
// may take seconds, and the event loop must keep serving progress bars and signals. The
// worker holds its own references to the inputs, so a free() meanwhile is safe.
#pragma once
#include <napi.h>

#include "../host/kernel_registry.h"

namespace hcsp::addon {

/** run(op, inputs: (NativeTensor|null)[], attrs, gemm: 'exact'|'blas'|'vendor', gpu?) -> Promise<(NativeTensor|null)[]> */
Napi::Value run(const Napi::CallbackInfo& info);
/** runCollective(op, inputs: NativeTensor[][], attrs, gemm, gpu?) -> Promise<NativeTensor[][]> */
Napi::Value runCollective(const Napi::CallbackInfo& info);

GemmMode parseGemmMode(Napi::Env env, const Napi::Value& v);

}  // namespace hcsp::addon
