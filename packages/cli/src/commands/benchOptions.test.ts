import { FLASH_NEXT, SMALL, TINY } from '@hcsp/core';
import { SUITE_BACKENDS } from '@hcsp/bench';
import { describe, expect, it } from 'vitest';
import { HOST_DEFAULTS, parseBenchOptions, parseHostBenchOptions, parseSuiteOptions, parseTokenList, QUICK } from './benchOptions.ts';

const RAW = { tokens: '1024,4096', reps: '3', cpuReps: '1', seed: '0' };
const HOST_RAW = { tokens: '1024,4096', seed: '0' };

describe('bench option parsing', () => {
  it('reads the token list and counts', () => {
    expect(parseTokenList('1024,4096')).toEqual([1024, 4096]);
    expect(parseTokenList('7')).toEqual([7]);
    expect(parseBenchOptions({ ...RAW, json: true })).toEqual({
      tokens: [1024, 4096],
      reps: 3,
      cpuReps: 1,
      seed: 0,
      json: true,
      quiet: false,
      maxMemory: undefined,
    });
    expect(parseBenchOptions(RAW).json).toBe(false);
    expect(parseBenchOptions({ ...RAW, quiet: true, maxMemory: '8G' })).toMatchObject({ quiet: true, maxMemory: '8G' });
  });

  it('rejects bad values, naming them', () => {
    expect(() => parseTokenList('1024,,4096')).toThrow(/--tokens entry must be an integer .*got ""/);
    expect(() => parseTokenList('0')).toThrow(/--tokens entry .*got "0"/);
    expect(() => parseTokenList('1e3')).toThrow(/got "1e3"/);
    expect(() => parseTokenList('8,8')).toThrow(/--tokens "8,8" lists a token count twice/);
    expect(() => parseBenchOptions({ ...RAW, reps: '0' })).toThrow(/--reps .*got "0"/);
    expect(() => parseBenchOptions({ ...RAW, cpuReps: 'x' })).toThrow(/--cpu-reps .*got "x"/);
    expect(() => parseBenchOptions({ ...RAW, seed: '-1' })).toThrow(/--seed .*got "-1"/);
    expect(() => parseBenchOptions({ ...RAW, maxMemory: 'lots' })).toThrow(/--max-memory must be a positive size .*got "lots"/);
  });
});
describe('host bench options', () => {
  it('defaults, and the --no-* switches', () => {
    expect(parseHostBenchOptions(HOST_RAW)).toEqual({
      tokens: [1024, 4096],
      linearity: [1024, 4096, 16384],
      reps: 3,
      prefillTokens: 64,
      prefillTp: 4,
      prefillReps: 2,
      exactTokens: 256,
      copyBytes: HOST_DEFAULTS.copyBytes,
      seed: 0,
      quiet: false,
      maxMemory: undefined,
    });
    expect(parseHostBenchOptions({ ...HOST_RAW, host: false })).toBeNull();
    expect(parseHostBenchOptions({ ...HOST_RAW, linearity: false, prefill: false })).toMatchObject({ linearity: [], prefillTokens: null });
    expect(() => parseHostBenchOptions({ ...HOST_RAW, hostReps: '0' })).toThrow(/--host-reps .*got "0"/);
    expect(() => parseHostBenchOptions({ ...HOST_RAW, linearity: '8,8' })).toThrow(/--linearity "8,8" lists a token count twice/);
    expect(() => parseHostBenchOptions({ ...HOST_RAW, prefillTokens: 'x' })).toThrow(/--prefill-tokens .*got "x"/);
  });
});
describe('suite options', () => {
  it('defaults (nothing given), --quick, and what was given winning over --quick', () => {
    const none = () => false;
    const d = parseSuiteOptions(RAW, none);
    expect(d).toMatchObject({
      tokens: [1024, 4096, 16384],
      reps: 3,
      cpuReps: 1,
      budgetSeconds: 60,
      layerTokens: 1024,
      prefillTokens: 2048,
      prefillTp: 4,
      backends: null,
      outDir: 'bench-results',
      quick: false,
    });
    expect(d.hcConfig).toBe(FLASH_NEXT);
    expect(d.modelConfig).toBe(SMALL);
    const q = parseSuiteOptions({ ...RAW, quick: true }, none);
    expect(q).toMatchObject({
      tokens: [...QUICK.tokens],
      reps: 1,
      layerTokens: QUICK.layerTokens,
      prefillTokens: QUICK.prefillTokens,
      copyBytes: QUICK.copyBytes,
      quick: true,
    });
    expect(q.hcConfig).toBe(TINY);
    const given = parseSuiteOptions({ ...RAW, tokens: '64,8', quick: true, budget: '5', out: 'x' }, (k) => ['tokens', 'budget', 'out'].includes(k));
    expect(given).toMatchObject({ tokens: [8, 64], budgetSeconds: 5, outDir: 'x' });
    expect(parseSuiteOptions({ ...RAW, out: '' }, (k) => k === 'out').outDir).toBeNull();
  });

  it('--backends, --no-webgpu (webgpu and cpu), --no-host (rocm on the host), --no-prefill', () => {
    const all = SUITE_BACKENDS.map((b) => b.label);
    expect(all).toEqual([
      'cpu',
      'webgpu',
      'rocm:device=host:gemm=exact',
      'rocm:device=host:gemm=blas',
      'rocm:device=emulated',
      'rocm:device=hip',
      'rocm:device=cuda',
    ]);
    expect(parseSuiteOptions({ ...RAW, backends: 'cpu,rocm:device=cuda' }).backends).toEqual(['cpu', 'rocm:device=cuda']);
    expect(parseSuiteOptions({ ...RAW, webgpu: false }).backends).toEqual(all.filter((l) => l !== 'cpu' && l !== 'webgpu'));
    expect(parseSuiteOptions({ ...RAW, host: false }).backends).toEqual(all.filter((l) => !l.startsWith('rocm:device=host')));
    expect(parseSuiteOptions({ ...RAW, prefill: false }).prefillTokens).toBeNull();
    expect(() => parseSuiteOptions({ ...RAW, backends: 'cpu,tpu' })).toThrow(/--backends: unknown backend 'tpu' \(known: cpu, webgpu, /);
    expect(() => parseSuiteOptions({ ...RAW, backends: 'cpu,cpu' })).toThrow(/lists a backend twice/);
    expect(() => parseSuiteOptions({ ...RAW, backends: 'cpu', webgpu: false })).toThrow(/every backend is left out/);
    expect(() => parseSuiteOptions({ ...RAW, budget: '0' })).toThrow(/--budget .*got "0"/);
    expect(() => parseSuiteOptions({ ...RAW, tokens: '8,8' })).toThrow(/lists a token count twice/);
  });
});
