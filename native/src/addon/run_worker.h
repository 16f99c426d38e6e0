// Nodes on a native device, through the process's device queue (engine/exec_queue.h). run()
// and runCollective() are one-shot: the node runs after everything queued, off the JavaScript
// thread, and its outputs come back computed. enqueueNode() records a node (prepared once by prepareNode()) and returns at once
// with its outputs as queued slots (a run's nodes, one after another, with no wait between
// them); sync() is where the host waits, and where a queued node's error is raised, naming it.
#pragma once
#include <napi.h>

#include "../engine/program.h"
#include "../host/kernel_registry.h"

namespace hcsp::addon {

/** run(op, inputs: (NativeTensor|null)[], attrs, gemm: 'exact'|'blas'|'vendor', gpu?) -> Promise<(NativeTensor|null)[]> */
Napi::Value run(const Napi::CallbackInfo& info);
/** runCollective(op, inputs: NativeTensor[][], attrs, gemm, gpu?) -> Promise<NativeTensor[][]> */
Napi::Value runCollective(const Napi::CallbackInfo& info);
/**
 * prepareNode(label, op, attrs, gemm, gpu|null, outputs: ({dtype, shape}|null)[] (per rank for
 * a collective), collective: boolean) -> a node handle: parsed once, enqueued every run
 */
Napi::Value prepareNode(const Napi::CallbackInfo& info);
/** a node from prepareNode() as a program step (engine/program.h) without its slot indices: its label, declared outputs and job */
engine::Step preparedStep(const Napi::Value& prepared);
/** enqueueNode(node, inputs (per rank for a collective)) -> the output handles, queued */
Napi::Value enqueueNode(const Napi::CallbackInfo& info);
/**
 * enqueueUpload(dtype, shape, data, gpu|null) -> NativeTensor: the bytes copied now, onto the
 * device when the queue reaches them (a run's inputs: allocated in queue order, so a repeated
 * run takes the same blocks from the pool)
 */
Napi::Value enqueueUpload(const Napi::CallbackInfo& info);
/** setStubKernels(on): queued nodes fill their outputs with empty placeholders instead of running (benchmarks of the host side) */
Napi::Value setStubKernels(const Napi::CallbackInfo& info);
/** sync(gpu|null) -> Promise<void>: everything queued has run (and the GPU's stream is idle) */
Napi::Value sync(const Napi::CallbackInfo& info);

GemmMode parseGemmMode(Napi::Env env, const Napi::Value& v);

}  // namespace hcsp::addon
