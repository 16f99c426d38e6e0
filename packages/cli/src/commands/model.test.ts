import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { builtInDevice } from '@hcsp/core/cost-model';
import { formatModel, modelReport, type ModelOptions, resolveDevice } from './model.ts';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

function hcspModel(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'packages/cli/src/main.ts', 'model', ...args], { cwd: ROOT, encoding: 'utf8' });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

const opts = (over: Partial<ModelOptions> = {}): ModelOptions => ({
  device: 'mi308x',
  tp: '4',
  isl: '4096',
  concurrency: '32',
  mtp: true,
  sweep: false,
  json: true,
  config: 'flash-next',
  mtpDrafter: 'gathered',
  qsaSelection: 'replicated',
  ...over,
});

const dir = mkdtempSync(join(tmpdir(), 'hcsp-model-'));
const measured = {
  name: 'lab-mi308x',
  topology: 'mesh',
  figures: {
    matrixBf16Tflops: 250,
    matrixFp8Tflops: 500,
    vectorFp32Tflops: 40,
    hbmTBps: { value: 4.2, source: 'our stream copy, 2026-11' },
    memoryGB: 192,
    computeUnits: 80,
    linkGBps: 300,
    linkPeerGBps: 50,
    collectiveLatencyUs: 20,
    kernelLaunchUs: 6,
  },
};

describe('hcsp model (in process)', () => {
  it('the calibration point: 30% HC share with SP off, a gain from SP on, the gate picks SP', () => {
    const r = modelReport(opts());
    const f = r.forecast!;
    expect(f.off.hcShare).toBeCloseTo(0.3, 6);
    expect(f.off.sp).toBe(false);
    expect(f.on.sp).toBe(true);
    expect(f.auto.sp).toBe(true);
    expect(f.gain).toBeGreaterThan(1);
    expect(f.on.byClass.hc.seconds).toBeLessThan(f.off.byClass.hc.seconds);
    expect(r.efficiency.from).toBe('calibration');
    expect(r.calibration.fact.hcShare).toBe(0.3);
    const text = formatModel(r);
    expect(text).toContain('predicted input-throughput gain');
    expect(text).toContain('calibration:');
    expect(text).toMatch(/matrixBf16Tflops 344\.1 \(not published; range 280-344\.1\)/);
  }, 60_000);

  it('--engine hcsp prices the same graph as this project runs it: never faster than the roofline; each physics term reported', () => {
    const small = { tp: '2', isl: '1024', concurrency: '2' };
    const roof = modelReport(opts(small)).forecast!;
    expect(roof.input.engine).toBe('roofline');
    expect(roof.fit.off.scratchBytes).toBe(0);
    expect(roof.terms.map((t) => t.term)).toEqual(['gemmWaves', 'gemmLibrary', 'memoryRamp']);
    for (const t of roof.terms) expect(t.contribution).toBeCloseTo(roof.gain - t.gainWithout, 12);
    for (const kernels of ['fast', 'exact']) {
      const r = modelReport(opts({ ...small, engine: 'hcsp', kernels }));
      const f = r.forecast!;
      expect(f.input).toMatchObject({ engine: 'hcsp', kernels });
      expect(f.off.seconds).toBeGreaterThan(roof.off.seconds);
      expect(f.on.seconds).toBeGreaterThan(roof.on.seconds);
      // what hcsp's kernels allocate is counted in the fit; the roofline engine has none
      expect(f.fit.off.fits).toBe(f.fit.off.activationBytes + f.fit.off.scratchBytes + f.fit.off.weightBytes <= 192e9);
      if (kernels === 'fast') {
        // the chunked GDN's fp32 G, W, U [24 local value heads, 2048, 1 + 128 + 128] and P [24, 32 chunks, 64, 64]
        expect(f.fit.off.scratchBytes).toBe(24 * 2048 * 257 * 4 + 24 * 32 * 64 * 64 * 4);
      }
      expect(formatModel(r)).toMatch(new RegExp(`^engine hcsp \\(kernels ${kernels}: this project's GPU path`, 'm'));
    }
    expect(() => modelReport(opts({ engine: 'atom' }))).toThrow("--engine must be one of roofline|hcsp, got 'atom'");
    expect(() => modelReport(opts({ engine: 'hcsp', kernels: 'quick' }))).toThrow("--kernels must be one of fast|exact, got 'quick'");
  }, 120_000);

  it('the gain grows with tp (4096 x 32, MTP on)', () => {
    const gains = ['2', '4', '8'].map((tp) => modelReport(opts({ tp })).forecast!.gain);
    expect(gains[0]).toBeLessThan(gains[1]);
    expect(gains[1]).toBeLessThan(gains[2]);
  }, 60_000);

  it('a device file with measured figures, its sources attached', () => {
    const path = join(dir, 'lab.json');
    writeFileSync(path, JSON.stringify(measured));
    const d = resolveDevice(path);
    expect(d.figures.matrixBf16Tflops.source).toBe(`measured: ${path}`);
    expect(d.figures.hbmTBps.source).toBe('our stream copy, 2026-11');
  });

  it('bad --device values are clear errors', () => {
    expect(() => resolveDevice('mi250')).toThrow(/--device: unknown device 'mi250': built-in devices are mi308x, mi300x, h200/);
    expect(() => resolveDevice(join(dir, 'none.json'))).toThrow(/--device .*none\.json: ENOENT/);
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, '{"name": ');
    expect(() => resolveDevice(bad)).toThrow(/device .*bad\.json: not valid JSON/);
    const neg = join(dir, 'neg.json');
    writeFileSync(neg, JSON.stringify({ ...measured, figures: { ...measured.figures, linkGBps: 0 } }));
    expect(() => resolveDevice(neg)).toThrow(/device .*neg\.json: figures\.linkGBps must be a positive finite number, got 0/);
    expect(() => modelReport(opts({ mtpDrafter: 'both' }))).toThrow(/--mtp-drafter must be one of gathered\|sharded/);
  });
});

describe('hcsp model (the command)', () => {
  it('--json answers for each built-in device with every figure sourced', () => {
    for (const device of ['mi308x', 'mi300x', 'h200']) {
      const r = hcspModel(['--device', device, '--tp', '2', '--isl', '1024', '--concurrency', '4', '--json']);
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      const j = JSON.parse(r.stdout);
      expect(j.device.name).toBe(device);
      for (const [name, f] of Object.entries(j.device.figures) as [string, { value: number; source: string }][]) {
        expect(typeof f.value, `${device}.${name}`).toBe('number');
        expect(f.source.length, `${device}.${name}`).toBeGreaterThan(20);
      }
      expect(j.forecast.input.tokens).toBe(4096);
      expect(j.forecast.off.layers.length).toBe(48 + 2);
      expect(j.calibration.shareFitted).toBeCloseTo(0.3, 6);
    }
  }, 120_000);

  it('a bad device file: exit 1, one hcsp: line naming the field, nothing on stdout', () => {
    const path = join(dir, 'typo.json');
    writeFileSync(path, JSON.stringify({ ...measured, figures: { ...measured.figures, hbmTbps: 4 } }));
    const r = hcspModel(['--device', path]);
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^hcsp: device .*typo\.json: figures\.hbmTbps is not a known figure[^\n]*\n$/);
  }, 60_000);
});

describe("hcsp model: the gain's range, the layer kinds, what fits (issue 25)", () => {
  it("the gain's range spans the gains of the device priced at its figures' ends; a device without ranges has none", () => {
    const r = modelReport(opts({ mtp: false }));
    const f = r.forecast!;
    expect(f.gainRange.low).toBeLessThan(f.gain);
    expect(f.gainRange.high).toBeGreaterThan(f.gain);
    expect(f.gainRange.figures).toContain('hbmTBps');
    expect(f.gainRange.figures).not.toContain('memoryGB');
    // the same forward on devices whose figures sit at their ranges' ends: every gain inside the range
    const figures = builtInDevice('mi308x').figures;
    for (const end of [0, 1] as const) {
      const path = join(dir, `ends-${end}.json`);
      const at = Object.fromEntries(
        Object.entries(figures)
          .filter(([, v]) => v)
          .map(([k, v]) => [k, v!.range ? v!.range[end] : v!.value]),
      );
      writeFileSync(path, JSON.stringify({ name: `ends-${end}`, topology: 'mesh', figures: at }));
      const g = modelReport(opts({ mtp: false, device: path })).forecast!;
      expect(g.gain).toBeGreaterThanOrEqual(f.gainRange.low - 1e-12);
      expect(g.gain).toBeLessThanOrEqual(f.gainRange.high + 1e-12);
      // measured figures carry no range
      expect(g.gainRange).toEqual({ low: g.gain, high: g.gain, figures: [] });
      expect(formatModel(modelReport(opts({ mtp: false, device: path, json: false })))).toContain("(the device's figures carry no ranges)");
    }
    expect(formatModel(r)).toMatch(
      /gain \(tokens\/s SP on \/ SP off\): 1\.\d{3}x, 1\.\d{3}x-1\.\d{3}x over the ranges of the device's figures \(matrixBf16Tflops, /,
    );
  }, 120_000);

  it('the per-layer table is grouped by layer kind, sharded apart from unsharded, the sums kept', () => {
    const r = modelReport(opts({ mtp: false }));
    const f = r.forecast!;
    const text = formatModel(r);
    const sharded = f.off.layers.filter((l) => l.kind === 'linear_attention' && l.layer >= f.on.spStartLayer!);
    const sum = sharded.reduce((s, l) => s + l.seconds, 0);
    expect(text).toMatch(
      new RegExp(`^  linear_attention \\(sharded\\)\\s+L2, L4, L5, \\.\\.\\. L46\\s+${sharded.length}\\s+${(sum * 1e3).toFixed(1)}\\s`, 'm'),
    );
    expect(text).toMatch(/^ {2}linear_attention \(unsharded\)\s+L0, L1\s+2\s/m);
    expect(text).toMatch(/^ {2}attention \(sharded\)\s+L3, L7, L11, \.\.\. L47\s+12\s/m);
    // no row per decoder layer any more
    expect(text).not.toMatch(/^ {2}L12\s/m);
  }, 60_000);

  it('flags the sweep cells whose rank-0 activations and weights do not fit the device', () => {
    const path = join(dir, 'small-memory.json');
    // a device of 40 GB: flash-next's weights fit at tp 4 and 8 but not every cell's activations
    writeFileSync(path, JSON.stringify({ ...measured, name: 'small-memory', figures: { ...measured.figures, memoryGB: 40 } }));
    const r = modelReport(opts({ sweep: true, mtp: false, device: path }));
    const text = formatModel(r);
    const rows = r.sweep!;
    expect(rows.some((s) => s.fit.on.fits)).toBe(true);
    expect(rows.some((s) => !s.fit.on.fits)).toBe(true);
    for (const s of rows) {
      for (const side of [s.fit.off, s.fit.on]) expect(side.fits).toBe(side.activationBytes + side.weightBytes <= 40e9);
      const line = text.split('\n').find((l) => new RegExp(`^  ${s.tp}\\s+${s.isl}\\s`).test(l))!;
      expect(line.endsWith('does not fit'), line).toBe(!s.fit.off.fits || !s.fit.on.fits);
    }
    // the activations grow with the tokens of a forward
    const tp4 = rows.filter((s) => s.tp === 4).map((s) => s.fit.on.activationBytes);
    expect(tp4).toEqual([...tp4].sort((a, b) => a - b));
    expect(tp4[0]).toBeLessThan(tp4.at(-1)!);
  }, 120_000);
});
