// Recorded runs on the native devices (native/src/engine/program.h): a program of prepared
// nodes is checked when it is recorded, each replay runs every step on fresh values with the
// run's inputs and the fixed weights, a failing step is raised at the sync naming it, and
// nothing stays allocated once the handles are freed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadNativeAddon, type GpuDevice, type NativeTensor } from './nativeAddon.ts';

const addon = loadNativeAddon();
const bf16 = (values: number[]): Uint16Array => Uint16Array.from(values, (v) => new Uint16Array(new Float32Array([v]).buffer)[1]);
const f32 = (bits: ArrayBuffer): number[] => Array.from(new Uint16Array(bits), (b) => new Float32Array(new Uint32Array([b << 16]).buffer)[0]);

describe.each(['host', 'emulated'] as const)('recorded runs on the %s device', (device) => {
  let gpu: GpuDevice | null = null;
  beforeAll(() => {
    gpu = device === 'emulated' ? addon.openGpu('emulated') : null;
  });
  afterAll(async () => {
    await addon.sync(gpu);
  });
  const memory = () => gpu ?? addon;
  const decl = { dtype: 'bf16', shape: [2, 2] };
  const add = (label: string) => addon.prepareNode(label, 'add', {}, 'exact', gpu, [decl], false);

  it('replays every step on fresh values, the inputs and fixed weights in their slots, and frees what it made', async () => {
    await addon.sync(gpu);
    const before = memory().stats().liveTensors;
    const w = addon.upload('bf16', [2, 2], bf16([10, 20, 30, 40]), gpu);
    // slots: 0 w (fixed), 1 x (input), 2 c = x + x, 3 d = c + w
    const program = addon.recordProgram(
      [
        { node: add('c (add, rank 0)'), in: [[1, 1]], out: [[2]] },
        { node: add('d (add, rank 0)'), in: [[2, 0]], out: [[3]] },
      ],
      4,
      [[0, w]],
      [1],
      [3, 2],
    );
    for (const x of [
      [1, 2, 3, 4],
      [0.5, -1, 8, 0],
    ]) {
      const input = addon.enqueueUpload('bf16', [2, 2], bf16(x), gpu);
      const [d, c] = addon.replay(program, [input]);
      // the run took its input: no handle here keeps it from the pool after its last reader
      expect(() => addon.download(input)).toThrow('was already freed');
      await addon.sync(gpu);
      expect(f32(addon.download(c))).toEqual(x.map((v) => 2 * v));
      expect(f32(addon.download(d))).toEqual(x.map((v, i) => 2 * v + [10, 20, 30, 40][i]));
      addon.free(c);
      addon.free(d);
    }
    const x = addon.upload('bf16', [2, 2], new Uint16Array(4), gpu);
    expect(() => addon.replay(program, [x, x])).toThrow('replay: inputs 0 and 1 are the same tensor');
    addon.releaseProgram(program);
    expect(() => addon.replay(program, [x])).toThrow('replay: the program was released');
    addon.free(x);
    addon.free(w);
    await addon.sync(gpu);
    expect(memory().stats().liveTensors).toBe(before);
  });

  it('a failing step is raised at the sync naming it, and the queue runs again after', async () => {
    const ids = addon.upload('i32', [2], Int32Array.of(1, 7), gpu);
    const table = addon.upload('bf16', [4, 2], new Uint16Array(8), gpu);
    const embed = addon.prepareNode('embed (embed, rank 0)', 'embed', {}, 'exact', gpu, [decl], false);
    const program = addon.recordProgram([{ node: embed, in: [[0, 1]], out: [[2]] }], 3, [[1, table]], [0], [2]);
    const [e] = addon.replay(program, [ids]);
    await expect(addon.sync(gpu)).rejects.toThrow(/^embed \(embed, rank 0\): embed: token id 7 at position 1 is outside the vocabulary \[0, 4\)/);
    const good = addon.upload('i32', [2], Int32Array.of(1, 3), gpu);
    const [e2] = addon.replay(program, [good]);
    await addon.sync(gpu);
    expect(e2.computed).toBe(true);
    addon.releaseProgram(program);
    for (const h of [table, e, e2]) addon.free(h);
  });

  it('refuses a program that reads a value before any step writes it, writes one twice, or names a slot outside it, naming the step', () => {
    const w = addon.upload('bf16', [2, 2], new Uint16Array(4), gpu);
    const record = (steps: { in: number[][]; out: number[][] }[], slots = 3, outputs = [2]) =>
      addon.recordProgram(
        steps.map((s, k) => ({ node: add(`s${k}`), ...s })),
        slots,
        [[0, w] as [number, NativeTensor]],
        [],
        outputs,
      );
    expect(() => record([{ in: [[0, 1]], out: [[2]] }])).toThrow("program: step 's0' reads slot 1 before any step writes it");
    expect(() =>
      record([
        { in: [[0, 0]], out: [[2]] },
        { in: [[0, 0]], out: [[2]] },
      ]),
    ).toThrow("program: step 's1' writes slot 2, which already has a value");
    expect(() => record([{ in: [[0, 0]], out: [[0]] }])).toThrow("program: step 's0' writes slot 0, which already has a value");
    expect(() => record([{ in: [[0, 5]], out: [[2]] }])).toThrow("program: step 's0' names slot 5, outside [0, 3)");
    expect(() => record([{ in: [[0, 0]], out: [[1]] }])).toThrow('program: output slot 2 is never written');
    expect(() => addon.recordProgram([{ in: [[0]], out: [[1]] } as never], 2, [], [0], [1])).toThrow(
      'recordProgram: step 0 has neither a node from prepareNode() nor a collective from NcclComm.step()',
    );
    addon.free(w);
  });
});
