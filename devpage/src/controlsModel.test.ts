import { describe, expect, it } from 'vitest';
import { readControls, type RawControls } from './controlsModel.ts';

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
    const c = readControls(raw());
    expect(c.plan).toMatchObject({ tokens: 37, tp: 4, sp: 'auto', reduce: 'ring', minTokensEnv: undefined });
    expect(c.plan.config.name).toBe('small');
    expect(c.run).toEqual({ config: 'small', tokens: 37, tp: 4, seed: 5, subLayers: 'stand-in', a: { sp: 'on', reduce: 'ring' }, b: { sp: 'off', reduce: 'ring' } });
    expect(readControls(raw({ bSp: 'on', bReduce: 'oneshot', minTokens: '0' }))).toMatchObject({ plan: { minTokensEnv: '0' }, run: { b: { sp: 'on', reduce: 'oneshot' } } });
  });

  it('names the bad field and value', () => {
    expect(() => readControls(raw({ tokens: '3.5' }))).toThrow('tokens T must be an integer >= 1, got "3.5"');
    expect(() => readControls(raw({ tp: '0' }))).toThrow('tp must be an integer >= 1, got "0"');
    expect(() => readControls(raw({ sp: 'maybe' }))).toThrow('SP mode must be one of auto, on, off, got "maybe"');
    expect(() => readControls(raw({ bReduce: 'tree' }))).toThrow('run b reduce must be one of ring, oneshot, ordered, got "tree"');
    expect(() => readControls(raw({ config: 'huge' }))).toThrow("unknown config 'huge'");
  });
});
