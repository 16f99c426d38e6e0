// testKernel(): runs a GPU kernel that no graph op launches yet, so that its tests can hold it
// to the reference on the emulated device (and on a GPU) before an op uses it. It adds nothing
// to the graph's op vocabulary: kernels are named here, not registered as ops.
#pragma once
#include <napi.h>

namespace hcsp::addon {

/**
 * testKernel('canonicalSumSqBf16', gpu, x, { blockThreads, blocks? }) -> NativeTensor: f32
 * [rows] on gpu, row r's canonical sum of squares of x (bf16 [rows, n] on gpu), by
 * kernels/reduce.cu's block kernel in blocks of blockThreads threads (64, 128, 192 or 256),
 * `blocks` of them (default: one per row group). Synchronous: the device must have nothing queued.
 */
Napi::Value testKernel(const Napi::CallbackInfo& info);

}  // namespace hcsp::addon
