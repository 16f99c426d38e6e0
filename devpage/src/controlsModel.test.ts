import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG, DEFAULT_TP } from '../../packages/cli/src/defaults.ts';
import { spOnVsOff } from '../../test/support/spOnVsOff.ts';
import { DEFAULT_CONTROLS, readControls, type RawControls } from './controlsModel.ts';
import { planView } from './plan/planView.ts';

const raw = (over: Partial<RawControls> = {}): RawControls => ({
  config: 'small',
  tokens: '37',
  tp: '4',
  sp: 'auto',
  reduce: 'ring',
  seed: '5',
  minTokens: '',
  subLayers: 'stand-in',
  bSp: 'off',
  bReduce: 'same',
  ...over,
});

describe('readControls', () => {
  it('gives the plan inputs and a run of SP on against run b', () => {
    const c = readControls(raw({ sp: 'on' }));
    expect(c.plan).toMatchObject({ tokens: 37, tp: 4, sp: 'on', reduce: 'ring', minTokensEnv: undefined });
    expect(c.plan.config.name).toBe('small');
    expect(c.run).toEqual(spOnVsOff({ config: 'small', tokens: 37, tp: 4, seed: 5, subLayers: 'stand-in' }));
    expect(readControls(raw({ bSp: 'on', bReduce: 'oneshot', minTokens: '0' }))).toMatchObject({
      plan: { minTokensEnv: '0' },
      run: { b: { sp: 'on', reduce: 'oneshot' } },
    });
  });

  it("first load: the CLI's defaults (small, tp 4, seed 0) at T 300 with SP on, so the plan shows four shards and the run shards", () => {
    expect(DEFAULT_CONTROLS).toMatchObject({ config: DEFAULT_CONFIG, tp: DEFAULT_TP, seed: '0', tokens: '300', sp: 'on' });
    const c = readControls(DEFAULT_CONTROLS);
    const v = planView(c.plan);
    expect(v.plan.sp).toBe(true);
    expect(v.bands.map((b) => [b.start, b.end])).toEqual([
      [0, 75],
      [75, 150],
      [150, 225],
      [225, 300],
    ]);
    expect(c.run).toMatchObject({ config: 'small', tokens: 300, tp: 4, seed: 0, a: { sp: 'on' }, b: { sp: 'off' } });
  });

  it('the SP selector drives run a, resolved as the plan resolves it', () => {
    expect(readControls(raw({ sp: 'off' })).run.a.sp).toBe('off');
    expect(readControls(raw({ sp: 'on' })).run.a.sp).toBe('on');
    // auto reads the gate: T 37 is under the 1024-token floor, T 2048 is over it
    expect(readControls(raw({ sp: 'auto', tokens: '37' })).run.a.sp).toBe('off');
    expect(readControls(raw({ sp: 'auto', tokens: '2048' })).run.a.sp).toBe('on');
    expect(readControls(raw({ sp: 'auto', tokens: '2048', minTokens: '0' })).run.a.sp).toBe('off');
  });

  it('names the bad field and value', () => {
    expect(() => readControls(raw({ tokens: '3.5' }))).toThrow('tokens T must be an integer >= 1, got "3.5"');
    expect(() => readControls(raw({ tp: '0' }))).toThrow('tp must be an integer >= 1, got "0"');
    expect(() => readControls(raw({ sp: 'maybe' }))).toThrow('SP mode must be one of auto, on, off, got "maybe"');
    expect(() => readControls(raw({ bReduce: 'tree' }))).toThrow('run b reduce must be one of ring, oneshot, ordered, got "tree"');
    expect(() => readControls(raw({ config: 'huge' }))).toThrow("unknown config 'huge'");
  });
});
