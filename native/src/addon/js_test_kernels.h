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
 *
 * testKernel('gemmLinearBf16', gpu, x, { w, blockThreads?, blocks?, kernel? }) -> bf16 [rows, outF]:
 * `linear` of x (bf16 [rows, inF]) and w (bf16 [outF, inF]) by the tiled exact kernel
 * (kernels/gemm.cu) in blocks of blockThreads threads and `blocks` blocks (default, or 0: the
 * launcher's), or with kernel 'oneThread' by the one-thread-per-output baseline.
 *
 * testKernel('gemmGroupedBf16', gpu, x, { w, outF, rowGroup, rows, blockThreads?, blocks? }) ->
 * bf16 [maxRows, outF]: the grouped GEMM (w [groups * outF, inF], rowGroup i32 [maxRows], rows
 * i32 [1] the device's row count); rows past it stay zero.
 */
Napi::Value testKernel(const Napi::CallbackInfo& info);

}  // namespace hcsp::addon
