import { describe, expect, it } from 'vitest';
import { HC_QUANT_ROWS_MAX, SP_MIN_TOKENS_ENV, readSpFloor, readSpMinTokens, spGate } from './gate.ts';
import type { SpGateInput } from './gate.ts';

const env = (v: string | undefined) => ({ [SP_MIN_TOKENS_ENV]: v });

describe('readSpMinTokens', () => {
  it('defaults to 1024 when unset', () => {
    expect(readSpMinTokens({})).toBe(1024);
    expect(readSpMinTokens(env(undefined))).toBe(1024);
  });

  it('reads decimal integers, 0 included', () => {
    expect(readSpMinTokens(env('0'))).toBe(0);
    expect(readSpMinTokens(env('2048'))).toBe(2048);
    expect(readSpMinTokens(env('0010'))).toBe(10);
  });

  it("accepts surrounding whitespace and a leading '+' like Python's int()", () => {
    expect(readSpMinTokens(env(' 512\n'))).toBe(512);
    expect(readSpMinTokens(env('+7'))).toBe(7);
  });

  for (const bad of ['', ' ', 'abc', '12abc', '1.5', '1e3', '-3', '-0', '0x10', '1_024', '++1', '+', '9007199254740993', '１２']) {
    it(`rejects ${JSON.stringify(bad)} naming the variable and the value`, () => {
      expect(() => readSpMinTokens(env(bad))).toThrow(SP_MIN_TOKENS_ENV);
      expect(() => readSpMinTokens(env(bad))).toThrow(JSON.stringify(bad));
    });
  }
});

describe('readSpFloor', () => {
  it('says whether the floor is the default (variable unset) or the variable', () => {
    expect(readSpFloor({})).toEqual({ minTokens: 1024, source: { kind: 'default' } });
    expect(readSpFloor(env('0'))).toEqual({ minTokens: 0, source: { kind: 'env' } });
    expect(readSpFloor(env('4096'))).toEqual({ minTokens: 4096, source: { kind: 'env' } });
    expect(() => readSpFloor(env('12abc'))).toThrow(`${SP_MIN_TOKENS_ENV} must be a non-negative decimal integer (0 disables sharding), got "12abc"`);
  });
});

describe('spGate', () => {
  const base: SpGateInput = { tp: 8, tokens: 4096, minTokens: 1024, capturing: false, spStartLayer: 2, endLayer: 48 };
  const gate = (over: Partial<SpGateInput>) => spGate({ ...base, ...over });

  it('shards a large eager forward at tp > 1', () => {
    expect(gate({})).toEqual({ sp: true, reason: null });
  });

  it('tp 1 never shards', () => {
    const r = gate({ tp: 1 });
    expect(r.sp).toBe(false);
    expect(r.reason).toMatch(/^tp 1/);
  });

  it("the variable at '0' disables", () => {
    const r = gate({ minTokens: 0 });
    expect(r.sp).toBe(false);
    expect(r.reason).toContain(`${SP_MIN_TOKENS_ENV} is 0`);
  });

  it('T below / at / above the variable', () => {
    expect(gate({ minTokens: 2000, tokens: 1999 })).toEqual({ sp: false, reason: `T 1999 < ${SP_MIN_TOKENS_ENV} 2000` });
    expect(gate({ minTokens: 2000, tokens: 2000 })).toEqual({ sp: true, reason: null });
    expect(gate({ minTokens: 2000, tokens: 2001 })).toEqual({ sp: true, reason: null });
  });

  it('the reason names what set the floor: the variable, an option, or the default', () => {
    expect(gate({ minTokens: 0 }).reason).toBe(`${SP_MIN_TOKENS_ENV} is 0: sharding disabled`);
    expect(gate({ minTokens: 0, floorSource: { kind: 'env' } }).reason).toBe(`${SP_MIN_TOKENS_ENV} is 0: sharding disabled`);
    expect(gate({ minTokens: 0, floorSource: { kind: 'option', name: '--sp-min-tokens' } }).reason).toBe('--sp-min-tokens is 0: sharding disabled');
    expect(gate({ minTokens: 8192, floorSource: { kind: 'option', name: '--sp-min-tokens' } }).reason).toBe('T 4096 < --sp-min-tokens 8192');
    const unset = gate({ tokens: 1000, minTokens: 1024, floorSource: { kind: 'default' } }).reason!;
    expect(unset).toBe(`T 1000 < 1024, the default token floor (${SP_MIN_TOKENS_ENV} is unset)`);
    // the source changes only the words: the decision and the order of the conditions stay
    expect(gate({ tp: 1, minTokens: 0, floorSource: { kind: 'option', name: '--x' } }).reason).toMatch(/^tp 1/);
    expect(gate({ minTokens: 2000, floorSource: { kind: 'default' } })).toEqual({ sp: true, reason: null });
  });

  it('T = 1024 vs 1025 at the default floor', () => {
    expect(HC_QUANT_ROWS_MAX).toBe(1024);
    const at = gate({ tokens: 1024 });
    expect(at.sp).toBe(false);
    expect(at.reason).toContain('T 1024 <= HC_QUANT_ROWS_MAX 1024');
    expect(gate({ tokens: 1025 })).toEqual({ sp: true, reason: null });
  });

  it('a small variable does not lower the T > 1024 floor', () => {
    for (const tokens of [1, 16, 1024]) {
      const r = gate({ minTokens: 1, tokens });
      expect(r.sp).toBe(false);
      expect(r.reason).toContain('HC_QUANT_ROWS_MAX');
    }
    expect(gate({ minTokens: 1, tokens: 1025 }).sp).toBe(true);
  });

  it('capturing never shards', () => {
    const r = gate({ capturing: true });
    expect(r.sp).toBe(false);
    expect(r.reason).toContain('capturing');
  });

  it('no layer after the PLE layer in the stage', () => {
    const r = gate({ spStartLayer: 2, endLayer: 2 });
    expect(r.sp).toBe(false);
    expect(r.reason).toContain('sp_start_layer 2 >= end_layer 2');
    expect(gate({ spStartLayer: 2, endLayer: 3 }).sp).toBe(true);
  });

  it('the reason names the first failing condition in spec order', () => {
    const all = { tp: 1, minTokens: 0, tokens: 5, capturing: true, endLayer: 1 };
    expect(gate(all).reason).toMatch(/^tp 1/);
    expect(gate({ ...all, tp: 2 }).reason).toContain('is 0');
    expect(gate({ ...all, tp: 2, minTokens: 6 }).reason).toContain('T 5 < ');
    expect(gate({ ...all, tp: 2, minTokens: 5 }).reason).toContain('HC_QUANT_ROWS_MAX');
    expect(gate({ ...all, tp: 2, minTokens: 5, tokens: 2000 }).reason).toContain('capturing');
    expect(gate({ ...all, tp: 2, minTokens: 5, tokens: 2000, capturing: false }).reason).toContain('sp_start_layer');
  });

  it('force skips only the token thresholds', () => {
    expect(gate({ force: true, tokens: 3, minTokens: 0 })).toEqual({ sp: true, reason: null });
    expect(gate({ force: true, tokens: 3, tp: 1 }).sp).toBe(false);
    expect(gate({ force: true, tokens: 3, capturing: true }).sp).toBe(false);
    expect(gate({ force: true, tokens: 3, endLayer: 2 }).sp).toBe(false);
  });

  it('rejects malformed inputs naming the value', () => {
    expect(() => gate({ tp: 0 })).toThrow('tp must be an integer >= 1, got 0');
    expect(() => gate({ tokens: 1.5 })).toThrow('tokens must be an integer >= 1, got 1.5');
    expect(() => gate({ minTokens: -1 })).toThrow('minTokens must be an integer >= 0, got -1');
    expect(() => gate({ tokens: NaN })).toThrow('got NaN');
  });
});
