// The nccl communicator (gpu/nccl_communicator.h) as JavaScript: ncclVersion(gpu),
// ncclUniqueId(gpu), ncclOpen(gpu, rank, size, id) -> Promise<NcclComm>, whose collectives
// (allReduce, reduceScatter, allGather) and destroy run off the JavaScript thread (NCCL blocks
// while it waits for peers; the event loop stays free for the launcher's fault handling) and
// whose abort() runs at once, and whose enqueue(kind, label, x, yShape) puts a collective on the
// device queue over the run's device tensors, and whose step(kind, label, x, yShape) is the same
// collective as a recorded program's step (js_program.h; checkAsync() after the run's sync raises
// NCCL's asynchronous error). packages/backend-rocm/src/comm/ncclCommunicator.ts declares it.
//
// Errors carry a code: HCSP_NCCL (a failed call: `call`, `ncclResult` = the enumerator's name,
// `ncclResultCode`), HCSP_NCCL_UNAVAILABLE (no library, or one without the API: `tried`), or the
// addon's usual codes (HCSP_UNSUPPORTED for the emulated device, HCSP_SIZE, HCSP_OOM, ...).
#pragma once
#include <napi.h>

namespace hcsp::addon {

/** adds ncclVersion, ncclUniqueId, ncclOpen and the NcclComm class to the addon's exports */
void registerNccl(Napi::Env env, Napi::Object exports);

}  // namespace hcsp::addon
