// `hcsp bench`'s options, parsed into what each benchmark of @hcsp/bench takes: the HC mix
// bench on WebGPU, the host device's bench, the suite.
import { FLASH_NEXT, SMALL, TINY } from '@hcsp/core';
import { SUITE_BACKENDS, type BenchOptions, type HostBenchOptions, type SuiteOptions } from '@hcsp/bench';
import { memoryLimit } from '../guards/memoryGuard.ts';
import { parseIntStrict } from '../parseArgs.ts';

/** Parses '1024,4096' into distinct token counts, each >= 1, naming the option on error. */
export function parseTokenList(value: string, name = '--tokens'): number[] {
  const parts = value.split(',');
  const out = parts.map((p) => parseIntStrict(p, `${name} entry`, { min: 1, max: 1 << 20 }));
  if (new Set(out).size !== out.length) throw new Error(`${name} ${JSON.stringify(value)} lists a token count twice`);
  return out;
}

export interface BenchCliOptions {
  tokens: string;
  reps: string;
  cpuReps: string;
  seed: string;
  json?: boolean;
  quiet?: boolean;
  maxMemory?: string;
}

export function parseBenchOptions(raw: BenchCliOptions): BenchOptions {
  memoryLimit(raw.maxMemory); // a bad --max-memory fails before the browser starts
  return {
    tokens: parseTokenList(raw.tokens),
    reps: parseIntStrict(raw.reps, '--reps', { min: 1, max: 1000 }),
    cpuReps: parseIntStrict(raw.cpuReps, '--cpu-reps', { min: 1, max: 1000 }),
    seed: parseIntStrict(raw.seed, '--seed'),
    json: raw.json === true,
    quiet: raw.quiet === true,
    maxMemory: raw.maxMemory,
  };
}

export interface HostBenchCliOptions {
  tokens: string;
  seed: string;
  quiet?: boolean;
  maxMemory?: string;
  /** false with --no-host */
  host?: boolean;
  hostReps?: string;
  /** a list, or false with --no-linearity */
  linearity?: string | false;
  prefillTokens?: string;
  /** false with --no-prefill */
  prefill?: boolean;
  prefillReps?: string;
  exactTokens?: string;
}

export const HOST_DEFAULTS = {
  reps: '3',
  linearity: '1024,4096,16384',
  // full depth (48 layers x 2 HC steps, 4 ranks, SP off below 1024 tokens): about 15 s a run here
  prefillTokens: '64',
  prefillReps: '2',
  exactTokens: '256',
  copyBytes: 512 * 2 ** 20,
} as const;

/** The host part's options, or null when --no-host leaves it out. */
export function parseHostBenchOptions(raw: HostBenchCliOptions): HostBenchOptions | null {
  if (raw.host === false) return null;
  return {
    tokens: parseTokenList(raw.tokens),
    linearity: raw.linearity === false ? [] : parseTokenList(raw.linearity ?? HOST_DEFAULTS.linearity, '--linearity'),
    reps: parseIntStrict(raw.hostReps ?? HOST_DEFAULTS.reps, '--host-reps', { min: 1, max: 1000 }),
    prefillTokens:
      raw.prefill === false ? null : parseIntStrict(raw.prefillTokens ?? HOST_DEFAULTS.prefillTokens, '--prefill-tokens', { min: 1, max: 1 << 20 }),
    prefillTp: 4,
    prefillReps: parseIntStrict(raw.prefillReps ?? HOST_DEFAULTS.prefillReps, '--prefill-reps', { min: 1, max: 1000 }),
    exactTokens: parseIntStrict(raw.exactTokens ?? HOST_DEFAULTS.exactTokens, '--exact-tokens', { min: 1, max: 1 << 20 }),
    copyBytes: HOST_DEFAULTS.copyBytes,
    seed: parseIntStrict(raw.seed, '--seed'),
    quiet: raw.quiet === true,
    maxMemory: raw.maxMemory,
  };
}

export interface SuiteCliOptions extends BenchCliOptions {
  quick?: boolean;
  budget?: string;
  backends?: string;
  out?: string;
  layerTokens?: string;
  prefillTokens?: string;
  /** false with --no-prefill */
  prefill?: boolean;
  /** false with --no-webgpu: the webgpu backend and the cpu reference left out */
  webgpu?: boolean;
  /** false with --no-host: rocm on the host device (exact and blas) left out */
  host?: boolean;
}

export const SUITE_DEFAULTS = {
  tokens: '1024,4096,16384',
  reps: '3',
  cpuReps: '1',
  budget: '60',
  layerTokens: '1024',
  // above HC_QUANT_ROWS_MAX (1024), so that the production gate shards the streams at tp 4
  prefillTokens: '2048',
  out: 'bench-results',
} as const;

export const QUICK = { tokens: [16, 32, 64], layerTokens: 32, prefillTokens: 64, reps: 1, budget: 30, copyBytes: 16 * 2 ** 20, ceilingGemm: 256 } as const;

/**
 * The suite's options. `given(key)`: whether the user set the option (not its default), so
 * --quick can change the defaults without overriding what was asked for.
 */
export function parseSuiteOptions(raw: SuiteCliOptions, given: (key: keyof SuiteCliOptions) => boolean = () => true): SuiteOptions {
  memoryLimit(raw.maxMemory);
  const quick = raw.quick === true;
  const pick = (key: keyof SuiteCliOptions, dflt: string, quickValue: string | number): string =>
    given(key) && raw[key] !== undefined ? String(raw[key]) : quick ? String(quickValue) : dflt;
  const tokens = parseTokenList(pick('tokens', SUITE_DEFAULTS.tokens, QUICK.tokens.join(',')));
  const backends = raw.backends === undefined ? null : raw.backends.split(',').map((s) => s.trim());
  if (backends) {
    const known = SUITE_BACKENDS.map((b) => b.label);
    for (const b of backends) if (!known.includes(b)) throw new Error(`--backends: unknown backend '${b}' (known: ${known.join(', ')})`);
    if (new Set(backends).size !== backends.length) throw new Error(`--backends ${JSON.stringify(raw.backends)} lists a backend twice`);
  }
  const leftOut = new Set<string>();
  if (raw.webgpu === false) for (const l of ['webgpu', 'cpu']) leftOut.add(l);
  if (raw.host === false) for (const b of SUITE_BACKENDS.filter((x) => x.options.device === 'host')) leftOut.add(b.label);
  const chosen = (backends ?? SUITE_BACKENDS.map((b) => b.label)).filter((l) => !leftOut.has(l));
  if (chosen.length === 0) throw new Error('bench --suite: every backend is left out (--backends, --no-webgpu, --no-host)');
  return {
    tokens: [...tokens].sort((a, b) => a - b),
    reps: parseIntStrict(pick('reps', SUITE_DEFAULTS.reps, QUICK.reps), '--reps', { min: 1, max: 1000 }),
    cpuReps: parseIntStrict(pick('cpuReps', SUITE_DEFAULTS.cpuReps, QUICK.reps), '--cpu-reps', { min: 1, max: 1000 }),
    budgetSeconds: parseIntStrict(pick('budget', SUITE_DEFAULTS.budget, QUICK.budget), '--budget', { min: 1, max: 86_400 }),
    hcConfig: quick ? TINY : FLASH_NEXT,
    modelConfig: quick ? TINY : SMALL,
    layerTokens: parseIntStrict(pick('layerTokens', SUITE_DEFAULTS.layerTokens, QUICK.layerTokens), '--layer-tokens', { min: 1, max: 1 << 20 }),
    prefillTokens:
      raw.prefill === false
        ? null
        : parseIntStrict(pick('prefillTokens', SUITE_DEFAULTS.prefillTokens, QUICK.prefillTokens), '--prefill-tokens', { min: 1, max: 1 << 20 }),
    prefillTp: 4,
    backends: backends || leftOut.size ? chosen : null,
    copyBytes: quick ? QUICK.copyBytes : 512 * 2 ** 20,
    ceilingGemm: quick ? QUICK.ceilingGemm : 2048,
    seed: parseIntStrict(raw.seed, '--seed'),
    quiet: raw.quiet === true,
    json: raw.json === true,
    outDir: raw.out === '' ? null : given('out') && raw.out !== undefined ? raw.out : SUITE_DEFAULTS.out,
    maxMemory: raw.maxMemory,
    quick,
  };
}
