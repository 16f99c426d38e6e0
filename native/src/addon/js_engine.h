// The engine's view of a device from JavaScript: its counters (a run reports their
// difference), and its memory pool (filled at prepare from the graph's memory plan, trimmed
// when a session ends).
#pragma once
#include <napi.h>

namespace hcsp::addon {

/** counters(gpu|null) -> { kernelLaunches, hostSyncs, deviceAllocations, deviceFrees, memsets, copiesToDevice, bytesToDevice, copiesFromDevice, bytesFromDevice
 * } */
Napi::Value counters(const Napi::CallbackInfo& info);
/** reservePool(blockBytes: number[], gpu|null): one device allocation carved into those blocks, pooled */
Napi::Value reservePool(const Napi::CallbackInfo& info);
/** trimPool(gpu|null): the pool's unused blocks back to the device */
Napi::Value trimPool(const Napi::CallbackInfo& info);

}  // namespace hcsp::addon
