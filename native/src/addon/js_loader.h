// The native weight loader (native/src/loader/weight_loader.h) from JavaScript: one batch of
// weights read off the JavaScript thread.
#pragma once
#include <napi.h>

namespace hcsp::addon {

/**
 * loadWeights(files: (string | { path, identity? })[], requests: { name, dtype, shape, ranges: Float64Array, parts }[],
 * gpu|null, options?: { chunkBytes?, lanes? }) -> Promise<{ tensors, nonFinite: Float64Array[],
 * bytesRead, seconds, lanes, staging, ranges, chunks }>. `ranges` holds four numbers per range
 * (file index, offset, bytes, part); nonFinite[i] holds NaN and Inf counts per part of request i.
 * A file's identity ("device:inode", as Node's bigint fstat gives them) is checked on opening.
 */
Napi::Value loadWeights(const Napi::CallbackInfo& info);

}  // namespace hcsp::addon
