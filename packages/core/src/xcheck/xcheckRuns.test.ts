import { describe, expect, it } from 'vitest';
import type { Backend } from '../backend/backend.ts';
import { TINY } from '../config/presets.ts';
import { MODEL_SUB_LAYERS } from '../layers/modelSubLayers.ts';
import { preparePrefill, type SpMode } from '../model/prefill.ts';
import { CpuBackend } from '../reference/cpuBackend.ts';
import { runNamed, runXcheckPlan, type XcheckSide } from './xcheckRuns.ts';

// xcheck's orchestration as the CLI and the dev page call it: sides opened, run and disposed
// in order, the float64 attribution of the first side, every other side and a golden dump
// compared against the first, the gate.
const T = 21;

/** a side on the CPU reference, counting its backend's opens and disposes */
function side(sp: SpMode, events: string[]): XcheckSide {
  const prepared = preparePrefill({ config: TINY, tokens: T, tp: 4, sp, reduce: 'ring', seed: 5, subLayers: MODEL_SUB_LAYERS, dump: true });
  const spec = `cpu:sp=${sp}`;
  return {
    spec,
    backend: 'cpu',
    options: { sp, reduce: 'ring' },
    reduce: 'ring',
    prepared,
    open: async (): Promise<Backend> => {
      events.push(`open ${spec}`);
      const cpu = new CpuBackend();
      return Object.assign(cpu, {
        dispose: async () => {
          events.push(`dispose ${spec}`);
        },
      });
    },
  };
}

const plan = (sides: XcheckSide[], extra: { exact?: boolean; maxUlp?: number | null; golden?: boolean } = {}) => ({
  config: TINY,
  tokens: T,
  tp: 4,
  seed: 5,
  layers: [0, TINY.numLayers] as [number, number],
  weights: 'synthetic',
  sides,
  exact: extra.exact ?? false,
  golden: null,
  maxUlp: extra.maxUlp ?? null,
});

describe('runXcheckPlan', () => {
  it('runs each side on its own backend in turn, attributes with float64, and reports each pair against the first', async () => {
    const events: string[] = [];
    const turns = { n: 0 };
    const report = await runXcheckPlan(plan([side('off', events), side('on', events)], { exact: true }), {
      turn: () => {
        turns.n++;
        return undefined;
      },
      progress: (label) => {
        events.push(label);
        return { onNode: () => {}, stop: () => events.push(`stop ${label}`) };
      },
    });
    expect(events).toEqual([
      'open cpu:sp=off',
      'xcheck cpu:sp=off',
      'stop xcheck cpu:sp=off',
      'dispose cpu:sp=off',
      'xcheck float64 evaluation',
      'stop xcheck float64 evaluation',
      'open cpu:sp=on',
      'xcheck cpu:sp=on',
      'stop xcheck cpu:sp=on',
      'dispose cpu:sp=on',
    ]);
    expect(turns.n).toBeGreaterThan(0);
    expect(report.runs.map((r) => [r.spec, r.sp])).toEqual([
      ['cpu:sp=off', false],
      ['cpu:sp=on', true],
    ]);
    expect(report.pairs.map((p) => [p.a, p.b])).toEqual([['cpu:sp=on', 'cpu:sp=off']]);
    const pair = report.pairs[0];
    // SP moves the ring's reductions at tp 4: some tensors differ, and float64 says which side is farther
    expect(pair.differing).toBeGreaterThan(0);
    expect(pair.tensors.some((t) => t.exact?.attributed)).toBe(true);
    expect(pair.verdict?.line).toBeTruthy();
    expect(report.ok).toBe(true);
  });

  it('compares a golden dump against the first side, and fails the gate where a tensor exceeds it', async () => {
    const events: string[] = [];
    const a = side('off', events);
    expect((await runXcheckPlan(plan([a, side('on', events)], { maxUlp: 0 }))).ok).toBe(false);
    // the first side's own embedding as the golden dump, and a name the run has not
    const embed = (await runNamed(new CpuBackend(), a.prepared)).named.get('embed')!;
    const golden = {
      file: 'g.safetensors',
      tensors: new Map([
        ['embed', embed],
        ['nope', embed],
      ]),
      notCompared: ['x'],
    };
    const r = await runXcheckPlan({ ...plan([a]), golden });
    expect(r.pairs.map((p) => [p.a, p.b, p.tensors.map((t) => t.name), p.differing])).toEqual([['golden:g.safetensors', 'cpu:sp=off', ['embed'], 0]]);
    expect(r.golden).toEqual({ file: 'g.safetensors', unused: ['nope'], notCompared: ['x'] });
  });
});
