import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MODEL_SUB_LAYERS, modelWeightSpecs, SyntheticWeightSource, TINY } from '@hcsp/core';
import { writeSafetensorsFile } from '@hcsp/core/node';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { runPrefillCommand } from './prefill.ts';

const base = { backend: 'cpu', config: 'tiny', tp: '2', tokens: '40', sp: 'on', reduce: 'ring', seed: '3', stack: 'model', json: true, quiet: true };
const ENV_VAR = 'ATOM_QWEN4_EXP_SP_MIN_TOKENS';
const savedEnv = process.env[ENV_VAR];
afterEach(() => {
  if (savedEnv === undefined) delete process.env[ENV_VAR];
  else process.env[ENV_VAR] = savedEnv;
});
const dir = mkdtempSync(join(tmpdir(), 'hcsp-prefill-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function json(opts: Partial<typeof base> & { weights?: string; pleTable?: string }) {
  return JSON.parse(await runPrefillCommand({ ...base, ...opts }));
}

describe('hcsp prefill', () => {
  it('reports the contract fields, and SP on and off agree at tp 2', async () => {
    const on = await json({});
    const off = await json({ sp: 'off' });
    for (const k of ['backend', 'config', 'tp', 'tokens', 'sp', 'reduce', 'seconds', 'tokensPerSecond', 'outputSha256', 'hcRowsPerRank', 'commBytesPerRank'])
      expect(on).toHaveProperty(k);
    expect(on.sp).toBe(true);
    expect(off.sp).toBe(false);
    expect(on.outputSha256).toMatch(/^[0-9a-f]{64}$/);
    expect(on.outputSha256).toBe(off.outputSha256);
    expect(on.commBytesPerRank[0].reduceScatter).toBeGreaterThan(0);
    expect(off.commBytesPerRank[0].reduceScatter).toBe(0);
  });

  it('auto applies the gate: 40 tokens is below T > 1024, so no sharding', async () => {
    const auto = await json({ sp: 'auto' });
    expect(auto.sp).toBe(false);
    expect(auto.reason).toMatch(/1024/);
  });

  it('loads a .safetensors checkpoint with the Hugging Face names and gets the same output', async () => {
    const specs = modelWeightSpecs(TINY, MODEL_SUB_LAYERS);
    const synthetic = new SyntheticWeightSource(specs, 3);
    const file = join(dir, 'tiny.safetensors');
    writeSafetensorsFile(file, new Map(specs.map((s) => [s.name, synthetic.tensor(s.name)])));
    const fromFile = await json({ weights: file });
    expect(fromFile.outputSha256).toBe((await json({})).outputSha256);
    // a checkpoint for another configuration is refused, naming what is wrong
    const small = join(dir, 'partial.safetensors');
    writeSafetensorsFile(small, new Map(specs.slice(0, 3).map((s) => [s.name, synthetic.tensor(s.name)])));
    await expect(json({ weights: small })).rejects.toThrow(/model\.layers\.0\./);
  });

  it('--ple-table: the vocab-parallel table (each rank its slice, the lookups all-reduced) and the gathered one give the same output, from a checkpoint too', async () => {
    const file = join(dir, 'tiny-ple.safetensors');
    const specs = modelWeightSpecs(TINY, MODEL_SUB_LAYERS);
    const synthetic = new SyntheticWeightSource(specs, 3);
    writeSafetensorsFile(file, new Map(specs.map((s) => [s.name, synthetic.tensor(s.name)])));
    const gathered = await json({ pleTable: 'gathered' });
    expect(gathered.pleTable).toBe('gathered');
    for (const opts of [{ tp: '2' }, { tp: '4', sp: 'off' }, { weights: file }]) {
      const vp = await json({ ...opts, pleTable: 'vocab-parallel' });
      expect(vp.pleTable).toBe('vocab-parallel');
      expect(vp.outputSha256, JSON.stringify(opts)).toBe(
        opts.tp === '4' ? (await json({ ...opts, pleTable: 'gathered' })).outputSha256 : gathered.outputSha256,
      );
    }
    // the cpu backend reads rows on demand unless asked
    expect((await json({})).pleTable).toBe('gathered');
    await expect(json({ pleTable: 'sharded' })).rejects.toThrow("--ple-table must be one of vocab-parallel|gathered, got 'sharded'");
  });

  it('bad input exits non-zero with one line naming the bad value', () => {
    const cases: [string[], RegExp][] = [
      [['--config', 'huge'], /unknown config 'huge'/],
      [['--backend', 'tpu'], /unknown backend 'tpu'/],
      [['--tp', '3'], /tp 3 does not divide/],
      [['--tokens', '0'], /--tokens/],
      [['--sp', 'maybe'], /--sp must be one of auto\|on\|off, got 'maybe'/],
    ];
    for (const [args, message] of cases) {
      // the defaults for the flags a case does not set (a value option given twice is refused)
      const defaults = [
        ['--config', 'tiny'],
        ['--tokens', '8'],
      ]
        .filter(([flag]) => !args.includes(flag))
        .flat();
      const r = spawnSync(process.execPath, ['--import', 'tsx', 'packages/cli/src/main.ts', 'prefill', ...defaults, ...args], { encoding: 'utf8' });
      expect(r.status).not.toBe(0);
      expect(r.stdout).toBe('');
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr).toMatch(message);
    }
  });
});

describe('prefill: the SP reason names the real cause (the variable is read from process.env)', () => {
  it('--sp off says --sp off, not that the (unset) variable is 0', async () => {
    delete process.env[ENV_VAR];
    const off = await json({ sp: 'off' });
    expect(off.reason).toBe('--sp off: sharding turned off on the command line');
  });

  it('auto with the variable unset names the default floor; set, names the variable', async () => {
    delete process.env[ENV_VAR];
    expect((await json({ sp: 'auto' })).reason).toBe(`T 40 < 1024, the default token floor (${ENV_VAR} is unset)`);
    process.env[ENV_VAR] = '0';
    expect((await json({ sp: 'auto' })).reason).toBe(`${ENV_VAR} is 0: sharding disabled`);
  });

  it('a malformed variable is an error under --sp on and off too, not silently ignored', async () => {
    process.env[ENV_VAR] = '12abc';
    for (const sp of ['on', 'off', 'auto']) {
      await expect(json({ sp }), sp).rejects.toThrow(`${ENV_VAR} must be a non-negative decimal integer (0 disables sharding), got "12abc"`);
    }
  });
});
