// A recorded run (engine/program.h) as JavaScript: recordProgram() takes a graph's nodes once,
// as steps (a node from prepareNode(), or an NCCL collective from NcclComm.step()) with the slot
// indices they read and write, the session's weights as fixed slots, and which slots are the
// run's inputs and outputs; replay(program, inputs) enqueues a whole run in one call and returns
// its outputs as queued handles; releaseProgram() lets go of it (and of the weights it holds).
#pragma once
#include <napi.h>

namespace hcsp::addon {

/**
 * recordProgram(steps: {node?: PreparedNode, collective?: Step, in: number[][], out: number[][]}[],
 * slots: number, fixed: [slot, NativeTensor][], inputs: number[], outputs: number[]) -> Program
 */
Napi::Value recordProgram(const Napi::CallbackInfo& info);
/**
 * replay(program, inputs: NativeTensor[], dryRunOn?: GpuDevice | null) -> NativeTensor[]: the
 * outputs, queued; the input handles are taken (freed here). With dryRunOn, a dry run on that
 * device (host/memory.h Memory::setDryRun): no kernel, every block taken.
 */
Napi::Value replay(const Napi::CallbackInfo& info);
/** releaseProgram(program) */
Napi::Value releaseProgram(const Napi::CallbackInfo& info);

}  // namespace hcsp::addon
