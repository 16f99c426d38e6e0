import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseIntStrict, parseLayerRange } from '../parseArgs.ts';
import { formatPlan, planFromOptions, planReport } from './plan.ts';
import { runPrefillCommand } from './prefill.ts';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const ENV_VAR = 'ATOM_QWEN4_EXP_SP_MIN_TOKENS';

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `hcsp plan ...args` in a child process; `envVar` sets (string) or unsets (undefined) the SP variable. */
function hcspPlan(args: string[], envVar?: string): Run {
  const env = { ...process.env };
  delete env[ENV_VAR];
  if (envVar !== undefined) env[ENV_VAR] = envVar;
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'packages/cli/src/main.ts', 'plan', ...args], {
    cwd: ROOT,
    env,
    encoding: 'utf8',
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

function planJson(args: string[], envVar?: string): Record<string, unknown> {
  const r = hcspPlan([...args, '--json'], envVar);
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  const lines = r.stdout.trimEnd().split('\n');
  expect(lines).toHaveLength(1);
  return JSON.parse(lines[0]);
}

/** A failure: non-zero exit, nothing on stdout, one `hcsp: ...` line on stderr containing every `needles`. */
function expectFailure(r: Run, ...needles: string[]): void {
  expect(r.status).not.toBe(0);
  expect(r.status).not.toBeNull();
  expect(r.stdout).toBe('');
  expect(r.stderr).toMatch(/^hcsp: [^\n]+\n$/);
  for (const n of needles) expect(r.stderr).toContain(n);
}

const opts = (over: Partial<Parameters<typeof planFromOptions>[0]>) => ({
  tokens: '4096',
  tp: '8',
  capturing: false,
  mtp: false,
  json: true,
  config: 'flash-next',
  ...over,
});

// In-process: the many value cases, fast.
describe('option parsing', () => {
  it('parseIntStrict takes plain decimal digits within bounds only', () => {
    expect(parseIntStrict('16381', '--tokens', { min: 1 })).toBe(16381);
    expect(parseIntStrict('0', '--sp-min-tokens')).toBe(0);
    expect(parseIntStrict('007', '--tp', { min: 1 })).toBe(7);
    for (const bad of ['12abc', '1.5', '-3', '', '+4', ' 4', '4 ', '1e3', '0x10']) {
      expect(() => parseIntStrict(bad, '--tokens', { min: 1 })).toThrow(`--tokens must be an integer >= 1, got ${JSON.stringify(bad)}`);
    }
    expect(() => parseIntStrict('x', '--tp', { min: 1, max: 8 })).toThrow('--tp must be an integer in [1, 8], got "x"');
  });

  it('an integer out of range is too large or too small, not "must be an integer"', () => {
    expect(() => parseIntStrict('0', '--tokens', { min: 1 })).toThrow('--tokens is too small: at least 1, got "0"');
    expect(() => parseIntStrict('9', '--tp', { min: 1, max: 8 })).toThrow('--tp is too large: at most 8, got "9"');
    // past 2^53 - 1 Number() rounds (9007199254740993 -> ...992): compared exactly
    expect(() => parseIntStrict('9007199254740992', '--tokens', { min: 1 })).toThrow('--tokens is too large: at most 9007199254740991, got "9007199254740992"');
    expect(() => parseIntStrict('99999999999999999999', '--tokens', { min: 1 })).toThrow('--tokens is too large: at most 9007199254740991');
    expect(parseIntStrict('9007199254740991', '--tokens', { min: 1 })).toBe(Number.MAX_SAFE_INTEGER);
  });

  it('parseLayerRange takes A:B with A < B', () => {
    expect(parseLayerRange('0:2', '--layers')).toEqual([0, 2]);
    expect(parseLayerRange('10:48', '--layers')).toEqual([10, 48]);
    for (const bad of ['3', '1:', ':4', '1:2:3', '-1:4', '1.0:4', ' 1:4', 'a:b']) {
      expect(() => parseLayerRange(bad, '--layers')).toThrow(`--layers must be A:B (decoder layers [A, B)), got ${JSON.stringify(bad)}`);
    }
    expect(() => parseLayerRange('4:2', '--layers')).toThrow('--layers "4:2" is empty');
    expect(() => parseLayerRange('2:2', '--layers')).toThrow('--layers "2:2" is empty');
  });

  it('the variable is read from the given environment unless --sp-min-tokens is set', () => {
    expect(planFromOptions(opts({}), {}).sp).toBe(true);
    expect(planFromOptions(opts({}), { [ENV_VAR]: '8192' }).reason).toBe(`T 4096 < ${ENV_VAR} 8192`);
    expect(planFromOptions(opts({ spMinTokens: '2048' }), { [ENV_VAR]: '8192' }).sp).toBe(true);
    expect(() => planFromOptions(opts({}), { [ENV_VAR]: '1k' })).toThrow(`${ENV_VAR} must be a non-negative decimal integer (0 disables sharding), got "1k"`);
    expect(() => planFromOptions(opts({ spMinTokens: '-1' }), {})).toThrow('--sp-min-tokens must be an integer >= 0, got "-1"');
    expect(() => planFromOptions(opts({ tp: '2x' }), {})).toThrow('--tp must be an integer >= 1, got "2x"');
    expect(() => planFromOptions(opts({ layers: '0:49' }), {})).toThrow('layers 0:49');
    expect(() => planFromOptions(opts({ tp: '5' }), {})).toThrow('tp 5 does not divide');
    expect(() => planFromOptions(opts({ config: 'huge' }), {})).toThrow("unknown config 'huge'");
  });
});

describe('the reason names what set the token floor (issue: it always blamed the variable)', () => {
  it('--sp-min-tokens, not the variable, when the option set it', () => {
    expect(planFromOptions(opts({ spMinTokens: '0' }), {}).reason).toBe('--sp-min-tokens is 0: sharding disabled');
    expect(planFromOptions(opts({ spMinTokens: '8192' }), { [ENV_VAR]: '16' }).reason).toBe('T 4096 < --sp-min-tokens 8192');
  });

  it('the variable when it is set, the default when it is unset', () => {
    expect(planFromOptions(opts({}), { [ENV_VAR]: '0' }).reason).toBe(`${ENV_VAR} is 0: sharding disabled`);
    expect(planFromOptions(opts({ tokens: '1000' }), {}).reason).toBe(`T 1000 < 1024, the default token floor (${ENV_VAR} is unset)`);
  });

  it('a malformed variable is an error even when --sp-min-tokens overrides it', () => {
    expect(() => planFromOptions(opts({ spMinTokens: '2048' }), { [ENV_VAR]: 'abc' })).toThrow(
      `${ENV_VAR} must be a non-negative decimal integer (0 disables sharding), got "abc"`,
    );
  });
});

// Each case spawns node + tsx (about 0.5 s), so the spawned cases are the few that need the
// real process: output, exit codes, stderr format, the real environment.
describe('hcsp plan (spawned)', () => {
  it('T 16381 at tp 8: sharded from layer 2, C 2048, 3 padding rows on the last rank', () => {
    const p = planJson(['--tokens', '16381', '--tp', '8', '--mtp', '--config', 'flash-next']);
    expect(p).toMatchObject({
      sp: true,
      reason: null,
      tokens: 16381,
      tp: 8,
      chunk: 2048,
      paddedTokens: 16384,
      spStartLayer: 2,
      quant: 'separate',
      gather: 'hc_state',
      layers: [0, 48],
    });
    expect((p.shards as unknown[])[7]).toEqual({ rank: 7, start: 14336, end: 16384, realRows: 2045, padRows: 3 });
    expect(p.shards).toHaveLength(8);
  });

  it('reads the variable from the process environment; --sp-min-tokens overrides it; --layers 0:2 is unsharded', () => {
    expect(planJson(['--tokens', '4096', '--tp', '4'], '8192')).toMatchObject({ sp: false, reason: `T 4096 < ${ENV_VAR} 8192` });
    expect(planJson(['--tokens', '4096', '--tp', '4', '--sp-min-tokens', '2048'], '8192')).toMatchObject({ sp: true, chunk: 1024, gather: 'mixer' });
    expect(planJson(['--tokens', '8192', '--tp', '8', '--layers', '0:2', '--config', 'flash-next'])).toMatchObject({
      sp: false,
      spStartLayer: null,
      layers: [0, 2],
    });
  });

  it('prints a human-readable summary with a shard table without --json', () => {
    const r = hcspPlan(['--tokens', '16381', '--tp', '8', '--config', 'flash-next']);
    expect(r.status).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain('sequence parallel: on');
    expect(r.stdout).toMatch(/^\s*rank\s+start\s+end\s+real\s+pad$/m);
    expect(r.stdout).toMatch(/^\s*7\s+14336\s+16384\s+2045\s+3$/m);
  });

  it('bad values: one stderr line naming the value, exit 1, empty stdout', () => {
    for (const bad of ['12abc', '-3']) {
      const r = hcspPlan(['--tokens', bad, '--tp', '8']);
      expectFailure(r, '--tokens', JSON.stringify(bad));
      expect(r.status).toBe(1);
    }
    expectFailure(hcspPlan(['--tokens', '4096', '--tp', '8'], ''), ENV_VAR, '""');
  });

  it('usage errors from commander: one line, exit 2', () => {
    for (const args of [
      ['--tp', '8'],
      ['--tokens', '10', '--tp', '8', '--bogus'],
    ]) {
      const r = hcspPlan(args);
      expectFailure(r, args.length === 2 ? '--tokens' : '--bogus');
      expect(r.status).toBe(2);
    }
  });
});

describe('the collectives of one forward, and why SP is on (issue 25)', () => {
  it("each collective's count and bytes per rank add up to what a prefill of the same forward sends, per kind", async () => {
    const r = planReport(opts({ config: 'tiny', tokens: '1100', tp: '2', mtp: true }), {});
    expect(r.plan.sp).toBe(true);
    const run = JSON.parse(
      await runPrefillCommand({
        backend: 'cpu',
        config: 'tiny',
        tokens: '1100',
        seed: '0',
        stack: 'model',
        json: true,
        quiet: true,
        tp: '2',
        sp: 'auto',
        reduce: 'ring',
      }),
    );
    const sent = { allReduce: 0, allGather: 0, reduceScatter: 0 };
    for (const c of r.traffic.collectives) sent[c.op] += c.count * c.bytesPerRank;
    expect(sent).toEqual(run.commBytesPerRank[0]);
    expect(r.traffic.totalBytesPerRank).toBe(sent.allReduce + sent.allGather + sent.reduceScatter);
    // the same forward unsharded: every sub-layer all-reduces
    expect(r.spOffTraffic!.collectives.filter((c) => c.op === 'reduceScatter')).toEqual([]);
  }, 120_000);

  it('prints the table in readable bytes, the SP-off total beside it, and says why SP is on', () => {
    const text = formatPlan(planReport(opts({ config: 'small', tokens: '3000', tp: '4' }), {}));
    expect(text).toContain(
      `  why: tp 4 > 1; T 3000 >= 1024, the default token floor (${ENV_VAR} is unset); T 3000 > HC_QUANT_ROWS_MAX 1024 (one quantization path); not capturing a graph; layers 2-7 follow the stage's last PLE layer`,
    );
    expect(text).toMatch(/^\s*collective\s+where\s+layers\s+per rank in -> out\s+algorithm\s+count\s+sent per rank\s+total per rank$/m);
    expect(text).toMatch(/^reduceScatter\s+L\*\.attn\.reduce_scatter\s+2-7\s+bf16\[3000,128\] -> bf16\[750,128\]\s+ring\s+6\s+562\.5 KiB\s+3\.3 MiB$/m);
    expect(text).toMatch(/^one forward: [\d.]+ MiB sent per rank \(without the MTP head.*; with SP off: [\d.]+ MiB$/m);
    const off = formatPlan(planReport(opts({ config: 'small', tokens: '300', tp: '4', spMinTokens: '4096' }), {}));
    expect(off).toContain('sequence parallel: off (T 300 < --sp-min-tokens 4096)');
    expect(off).not.toContain('why:');
    expect(off).toMatch(/^ allReduce\s+L\*\.attn\.all_reduce\s+0-7\s/m);
  });
});
