import type { Graph, GraphNode, Tensor, ValueDecl, ValueId } from '@hcsp/core';
import { f32ToBf16 } from '@hcsp/core';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChromiumHost } from './chromiumHost.ts';
import { runOn } from '../../../test/support/chromiumHostRun.ts';
import { NO_WEIGHTS } from '../../../test/support/noWeights.ts';

// The Chromium host with the executor's own test kernels (testKernels.ts): real headless
// Chromium, real SwiftShader WebGPU. Kernel numerics are tested in kernels-wgsl and test/.
const TEST_KERNELS = { path: fileURLToPath(new URL('../../../test/support/webgpuTestKernels.ts', import.meta.url)), exportName: 'TEST_KERNELS' };

/** A graph of test nodes; each node's attributes are its op's declared ones, as GraphSession checks every node against its declaration. */
function graphOf(tp: number, values: ValueDecl[], nodes: Omit<GraphNode, 'id' | 'scope' | 'layer'>[], outputs: ValueId[]): Graph {
  return {
    tp,
    values: Object.fromEntries(values.map((v) => [v.id, v])),
    nodes: nodes.map((n, id) => ({ ...n, id, scope: `test.n${id}`, layer: -1 })),
    inputs: values.filter((v) => v.kind === 'input').map((v) => v.id),
    outputs,
    meta: {},
  };
}

const input = (id: string, shape: number[], dtype: ValueDecl['dtype'] = 'f32'): ValueDecl => ({ id, shape, dtype, rank: null, kind: 'input' });
const inter = (id: string, shape: number[], rank: number, dtype: ValueDecl['dtype'] = 'f32'): ValueDecl => ({ id, shape, dtype, rank, kind: 'intermediate' });

describe('ChromiumHost (headless Chromium WebGPU)', () => {
  let host: ChromiumHost;
  beforeAll(async () => {
    host = await ChromiumHost.launch({ kernels: TEST_KERNELS, startTimeoutMs: 60_000, runTimeoutMs: 60_000 });
  }, 90_000);
  afterAll(async () => {
    await host?.close();
  });

  it('gets a WebGPU adapter', () => {
    expect(host.adapter).toMatch(/\S/);
    console.log(`chromium host adapter: ${host.adapter}`);
  });

  it('copies a 4M-element f32 buffer and returns the same bytes (16 MiB each way)', async () => {
    const n = 4 << 20;
    const x = new Float32Array(n);
    for (let i = 0; i < n; i++) x[i] = Math.fround(Math.sin(i) * 1e3);
    const graph = graphOf(1, [input('x', [n]), inter('y', [n], 0)], [{ op: 'pad', rank: 0, inputs: ['x'], outputs: ['y'], attrs: { rows: n } }], ['y']);
    const t0 = performance.now();
    const { values, stats } = await runOn(host, graph, new Map([['x', { dtype: 'f32', shape: [n], data: x }]]));
    console.log(`4M-element copy round trip: ${((performance.now() - t0) / 1000).toFixed(2)} s (executor ${stats.seconds.toFixed(2)} s)`);
    const y = values.get('y')!;
    expect(y.shape).toEqual([n]);
    expect(Buffer.from((y.data as Float32Array).buffer).equals(Buffer.from(x.buffer))).toBe(true);
  });

  it('runs all-gather and reduce-scatter across tp=2 ranks (stacking, scattering, comm bytes)', async () => {
    // Megatron-style inputs: small integers, so every bf16 sum is exact.
    const bf = (vals: number[]): Tensor => ({ dtype: 'bf16', shape: [4, 6], data: Uint16Array.from(vals, (v) => f32ToBf16(v)) });
    const x0 = Array.from({ length: 24 }, (_, i) => i);
    const x1 = Array.from({ length: 24 }, (_, i) => 100 + i);
    const graph = graphOf(
      2,
      [
        input('x0', [4, 6], 'bf16'),
        input('x1', [4, 6], 'bf16'),
        inter('a0', [4, 6], 0, 'bf16'),
        inter('a1', [4, 6], 1, 'bf16'),
        inter('g0', [8, 6], 0, 'bf16'),
        inter('g1', [8, 6], 1, 'bf16'),
        inter('s0', [4, 6], 0, 'bf16'),
        inter('s1', [4, 6], 1, 'bf16'),
      ],
      [
        { op: 'pad', rank: 0, inputs: ['x0'], outputs: ['a0'], attrs: { rows: 4 } },
        { op: 'pad', rank: 1, inputs: ['x1'], outputs: ['a1'], attrs: { rows: 4 } },
        { op: 'allGather', rank: null, inputs: ['a0', 'a1'], outputs: ['g0', 'g1'], attrs: {} },
        { op: 'reduceScatter', rank: null, inputs: ['g0', 'g1'], outputs: ['s0', 's1'], attrs: { algorithm: 'ordered' } },
      ],
      ['g1', 's0', 's1'],
    );
    const { values, stats } = await runOn(
      host,
      graph,
      new Map([
        ['x0', bf(x0)],
        ['x1', bf(x1)],
      ]),
      { keep: ['a1'] },
    );
    const bits = (id: string) => [...(values.get(id)!.data as Uint16Array)];
    expect(bits('a1')).toEqual(bf(x1).data ? [...(bf(x1).data as Uint16Array)] : []);
    expect(bits('g1')).toEqual([...x0, ...x1].map((v) => f32ToBf16(v)));
    expect(bits('s0')).toEqual(x0.map((v) => f32ToBf16(2 * v)));
    expect(bits('s1')).toEqual(x1.map((v) => f32ToBf16(2 * v)));
    // ring accounting: all-gather (tp-1) * 48 B in, reduce-scatter (tp-1) * 48 B out
    expect(stats.commBytesPerRank).toEqual([
      { allReduce: 0, allGather: 48, reduceScatter: 48 },
      { allReduce: 0, allGather: 48, reduceScatter: 48 },
    ]);
    expect(stats.hcRowsPerRank).toEqual([0, 0]);
  });

  it('a WGSL syntax error rejects with the kernel key and the compiler message', async () => {
    const graph = graphOf(
      1,
      [input('x', [4], 'bf16'), inter('y', [4], 0, 'bf16')],
      [{ op: 'add', rank: 0, inputs: ['x', 'x'], outputs: ['y'], attrs: {} }],
      ['y'],
    );
    const run = runOn(host, graph, new Map([['x', { dtype: 'bf16', shape: [4], data: new Uint16Array(4) }]]));
    await expect(run).rejects.toThrow(/kernel 'test\.brokenWgsl' failed to compile:\n1:\d+: missing initializer/);
  });

  it('an op without a kernel rejects naming the op and the backend', async () => {
    const graph = graphOf(1, [input('x', [4]), inter('y', [4], 0)], [{ op: 'trim', rank: 0, inputs: ['x'], outputs: ['y'], attrs: { rows: 4 } }], ['y']);
    const run = runOn(host, graph, new Map([['x', { dtype: 'f32', shape: [4], data: new Float32Array(4) }]]));
    await expect(run).rejects.toThrow(/webgpu \(test kernels\): no kernel for op 'trim'/);
  });

  it('an absurd allocation rejects naming the buffer and its size, without hanging', async () => {
    const huge = [1 << 20, 1 << 20]; // 4 TiB of f32: one row padded to 2^20
    const graph = graphOf(
      1,
      [input('x', [1, 1 << 20]), inter('huge', huge, 0)],
      [{ op: 'pad', rank: 0, inputs: ['x'], outputs: ['huge'], attrs: { rows: 1 << 20 } }],
      ['huge'],
    );
    const run = runOn(host, graph, new Map([['x', { dtype: 'f32', shape: [1, 1 << 20], data: new Float32Array(1 << 20) }]]));
    await expect(run).rejects.toThrow(/buffer 'huge' of 4398046511104 bytes (exceeds|.*out of memory)/);
  });

  it('a missing feed rejects naming the input, and the host still runs afterwards', async () => {
    const graph = graphOf(1, [input('x', [4]), inter('y', [4], 0)], [{ op: 'pad', rank: 0, inputs: ['x'], outputs: ['y'], attrs: { rows: 4 } }], ['y']);
    await expect(runOn(host, graph, new Map())).rejects.toThrow(/graph input 'x' was not fed/);
    const x = Float32Array.from([1, -2, 3.5, Number.NaN]);
    const { values } = await runOn(host, graph, new Map([['x', { dtype: 'f32', shape: [4], data: x }]]));
    expect(Buffer.from((values.get('y')!.data as Float32Array).buffer).equals(Buffer.from(x.buffer))).toBe(true);
  });

  it('dispose() waits for a run already asked for, which still fetches its inputs', async () => {
    const graph = graphOf(1, [input('x', [4]), inter('y', [4], 0)], [{ op: 'pad', rank: 0, inputs: ['x'], outputs: ['y'], attrs: { rows: 4 } }], ['y']);
    const x = Float32Array.from([1, 2, 3, 4]);
    const prepared = await host.prepare(graph, NO_WEIGHTS);
    const run = prepared.run(new Map([['x', { dtype: 'f32', shape: [4], data: x }]]));
    await prepared.dispose();
    const { values } = await run;
    expect([...(values.get('y')!.data as Float32Array)]).toEqual([1, 2, 3, 4]);
  });
});
