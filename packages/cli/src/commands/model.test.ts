import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
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
  figures: { matrixBf16Tflops: 250, matrixFp8Tflops: 500, vectorFp32Tflops: 40, hbmTBps: { value: 4.2, source: 'our stream copy, 2026-11' }, memoryGB: 192, computeUnits: 80, linkGBps: 300, linkPeerGBps: 50, collectiveLatencyUs: 20, kernelLaunchUs: 6 },
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
