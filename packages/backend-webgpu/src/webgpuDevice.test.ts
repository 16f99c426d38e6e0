/// <reference types="@webgpu/types" />
import { KernelTable, type GraphNode, type OpName, type ValueDecl } from '@hcsp/core';
import type { KernelPlanner } from '@hcsp/kernels-wgsl';
import { describe, expect, it } from 'vitest';
import { WebGpuDevice } from './webgpuDevice.ts';

// A stand-in GPUDevice on which every shader fails to compile: enough to drive the
// executor's error paths without a GPU, counting the buffers it leaves alive.
function failingCompileDevice(): { device: GPUDevice; live: Set<object> } {
  const live = new Set<object>();
  const device = {
    limits: { maxBufferSize: 1 << 30, maxComputeWorkgroupsPerDimension: 65535 },
    lost: new Promise(() => {}),
    addEventListener: () => {},
    pushErrorScope: () => {},
    popErrorScope: async () => null,
    createBuffer: () => {
      const b = { destroy: () => live.delete(b) };
      live.add(b);
      return b;
    },
    createShaderModule: () => ({ getCompilationInfo: async () => ({ messages: [{ type: 'error', lineNum: 1, linePos: 1, message: 'no shaders here' }] }) }),
    createCommandEncoder: () => ({ copyBufferToBuffer: () => {}, beginComputePass: () => ({ end: () => {} }), finish: () => ({}) }),
    queue: { writeBuffer: () => {}, submit: () => {} },
  };
  return { device: device as unknown as GPUDevice, live };
}

const planner: KernelPlanner = () => ({
  scratch: [{ name: 's', words: 4 }],
  dispatches: [{ key: 'k', wgsl: '', bindings: [], uniforms: new Uint32Array(0), workgroups: [1, 1, 1] }],
});
const kernels = new KernelTable<KernelPlanner>('test', [{ hcExpand: planner, allReduce: planner }]);
const decl = (id: string, shape: number[], rank: number | null): ValueDecl => ({ id, shape, dtype: 'bf16', rank, kind: 'intermediate' });
const node = (op: OpName, rank: number | null): GraphNode => ({ id: 0, op, rank, inputs: [], outputs: [], attrs: {}, scope: 's', layer: 0 });

describe('WebGpuDevice error paths', () => {
  it('a node whose kernel fails frees the output buffers it allocated', async () => {
    const { device, live } = failingCompileDevice();
    const gpu = new WebGpuDevice(device, kernels, 'fake');
    const x = decl('x', [2, 2], null);
    const input = await gpu.upload(x, { dtype: 'bf16', shape: [2, 2], data: new Uint16Array(4) });
    await expect(gpu.runNode(node('hcExpand', 0), [input], [x], [decl('y', [2, 4], 0)])).rejects.toThrow("kernel 'k' failed to compile");
    expect([...live]).toEqual([input]);
  });

  it('a collective whose kernel fails frees its stacked, result and per-rank buffers', async () => {
    const { device, live } = failingCompileDevice();
    const gpu = new WebGpuDevice(device, kernels, 'fake');
    const ins = [decl('a0', [2, 2], 0), decl('a1', [2, 2], 1)];
    const bufs = await Promise.all(ins.map((d) => gpu.upload(d, { dtype: 'bf16', shape: [2, 2], data: new Uint16Array(4) })));
    const outs = [[decl('r0', [2, 2], 0)], [decl('r1', [2, 2], 1)]];
    await expect(
      gpu.runCollective(
        node('allReduce', null),
        bufs.map((b) => [b]),
        ins.map((d) => [d]),
        outs,
      ),
    ).rejects.toThrow("kernel 'k' failed to compile");
    expect(live.size).toBe(2);
  });
});
