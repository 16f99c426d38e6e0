import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FLASH_NEXT, SMALL, TINY } from '@hcsp/core';
import type { RocmBackend } from '@hcsp/backend-rocm';
import { createBackend } from '@hcsp/backends';
import { afterAll, describe, expect, it } from 'vitest';
import { hcMixBenchGraph, hcMixFlops } from './bench.ts';
import {
  formatSuiteReport,
  gpuCeilings,
  hcCombineBenchGraph,
  matrixFlops,
  minimumBytes,
  parseSuiteOptions,
  QUICK,
  scaleRows,
  SUITE_BACKENDS,
  suiteCases,
  suiteCommand,
  tiledNormal,
  whyNotRun,
  type Measurement,
  type SuiteReport,
} from './benchSuite.ts';

const RAW = { tokens: '1024,4096', reps: '3', cpuReps: '1', seed: '0' };
const dir = mkdtempSync(join(tmpdir(), 'hcsp-bench-suite-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('suite options', () => {
  it('defaults (nothing given), --quick, and what was given winning over --quick', () => {
    const none = () => false;
    const d = parseSuiteOptions(RAW, none);
    expect(d).toMatchObject({ tokens: [1024, 4096, 16384], reps: 3, cpuReps: 1, budgetSeconds: 60, layerTokens: 1024, prefillTokens: 2048, prefillTp: 4, backends: null, outDir: 'bench-results', quick: false });
    expect(d.hcConfig).toBe(FLASH_NEXT);
    expect(d.modelConfig).toBe(SMALL);
    const q = parseSuiteOptions({ ...RAW, quick: true }, none);
    expect(q).toMatchObject({ tokens: [...QUICK.tokens], reps: 1, layerTokens: QUICK.layerTokens, prefillTokens: QUICK.prefillTokens, copyBytes: QUICK.copyBytes, quick: true });
    expect(q.hcConfig).toBe(TINY);
    const given = parseSuiteOptions({ ...RAW, tokens: '64,8', quick: true, budget: '5', out: 'x' }, (k) => ['tokens', 'budget', 'out'].includes(k));
    expect(given).toMatchObject({ tokens: [8, 64], budgetSeconds: 5, outDir: 'x' });
    expect(parseSuiteOptions({ ...RAW, out: '' }, (k) => k === 'out').outDir).toBeNull();
  });

  it('--backends, --no-webgpu (webgpu and cpu), --no-host (rocm on the host), --no-prefill', () => {
    const all = SUITE_BACKENDS.map((b) => b.label);
    expect(all).toEqual(['cpu', 'webgpu', 'rocm:device=host:gemm=exact', 'rocm:device=host:gemm=blas', 'rocm:device=emulated', 'rocm:device=hip', 'rocm:device=cuda']);
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

describe('suite counts', () => {
  it("the mix's flops are bench's hcMixFlops; its fewest bytes are the streams in, the weights, x, streams and raw out", () => {
    const T = 1024;
    const g = hcMixBenchGraph(FLASH_NEXT, T);
    expect(matrixFlops(g, FLASH_NEXT)).toBe(hcMixFlops(FLASH_NEXT, T));
    const nh = 10240;
    const weights = nh + 324 * nh + nh * 320;
    expect(minimumBytes(g)).toBe(2 * (T * nh + weights + T * 2560 + T * nh + T * 4));
  });

  it('the combine: streams, y and raw in, streams out; no GEMM', () => {
    const T = 16;
    const g = hcCombineBenchGraph(FLASH_NEXT, T);
    expect(g.nodes.map((n) => n.op)).toEqual(['hcCombine']);
    expect(matrixFlops(g, FLASH_NEXT)).toBe(0);
    expect(minimumBytes(g)).toBe(2 * (T * 10240 + T * 2560 + T * 4 + T * 10240));
  });

  it('the cases: mix and combine at each T, the layer, the prefill at tp 4 with SP on by the production gate', () => {
    const opts = parseSuiteOptions(RAW, () => false);
    const cases = suiteCases(opts);
    expect(cases.map((c) => `${c.case}@${c.tokens}/tp${c.tp}`)).toEqual([
      'hc-mix@1024/tp1',
      'hc-mix@4096/tp1',
      'hc-mix@16384/tp1',
      'hc-combine@1024/tp1',
      'hc-combine@4096/tp1',
      'hc-combine@16384/tp1',
      'layer@1024/tp1',
      'prefill@2048/tp4',
    ]);
    const prefill = cases.at(-1)!.build();
    expect(prefill.detail).toMatch(/SP on \(C=512 rows\/rank/);
    // moeExperts counted: more than the linears alone
    const linears = prefill.graph.nodes.filter((n) => n.op === 'linear').length;
    expect(linears).toBeGreaterThan(0);
    expect(prefill.flops).toBeGreaterThan(0);
    const layer = cases.find((c) => c.case === 'layer')!.build();
    expect(layer.graph.nodes.filter((n) => /^L[1-9]/.test(n.scope)).map((n) => n.scope)).toEqual([]);
    expect(layer.graph.nodes.filter((n) => n.scope.startsWith('L0.')).length).toBeGreaterThan(10);
  });

  it('tiled inputs: the count asked for, rows not copies of each other, finite', () => {
    const v = tiledNormal(3 * (1 << 20) + 5, 1);
    expect(v.length).toBe(3 * (1 << 20) + 5);
    expect(v[0]).not.toBe(v[1 << 20]);
    const f32 = new Float32Array(new Uint32Array(Array.from(v.subarray(0, 4096), (b) => b << 16)).buffer);
    expect(f32.every(Number.isFinite)).toBe(true);
  });
});

const row = (m: Partial<Measurement>): Measurement =>
  ({ case: 'hc-mix', tokens: 1024, backend: 'cpu', status: 'measured', reason: null, seconds: 1, runs: [1], ...m }) as Measurement;

describe('budget and scale', () => {
  it('a larger T is left out, with the prediction, when its linear extrapolation is over the budget', () => {
    const spec = { case: 'hc-mix', tokens: 16384, scaled: true } as Parameters<typeof whyNotRun>[1];
    const results = [row({ tokens: 1024, seconds: 2 }), row({ tokens: 4096, seconds: 20 })];
    expect(whyNotRun(results, spec, 'cpu', 60)).toBe('a run would take about 80.0 s (T=4096: 20.00 s, x4), over the 60 s budget per case');
    expect(whyNotRun(results, spec, 'cpu', 100)).toBeNull();
    expect(whyNotRun(results, spec, 'webgpu', 1)).toBeNull();
    expect(whyNotRun([row({ tokens: 4096, status: 'not measured', seconds: null })], spec, 'cpu', 60)).toBe('T=4096 was not measured');
    expect(whyNotRun(results, { ...spec, scaled: false }, 'cpu', 1)).toBeNull();
  });

  it('scale: time(T)/time(T0) / (T/T0), with what was not measured said', () => {
    const rows = scaleRows([row({ tokens: 1024, seconds: 1 }), row({ tokens: 4096, seconds: 5 }), row({ tokens: 16384, status: 'not measured', seconds: null, reason: 'too slow' })], [1024, 4096, 16384]);
    expect(rows).toEqual([
      {
        case: 'hc-mix',
        backend: 'cpu',
        base: 1024,
        points: [
          { tokens: 1024, seconds: 1, ratio: 1, note: null },
          { tokens: 4096, seconds: 5, ratio: 1.25, note: null },
          { tokens: 16384, seconds: null, ratio: null, note: 'not measured: too slow' },
        ],
      },
    ]);
  });
});

describe('the suite, quick (tiny config), on the cpu reference, the host device and a GPU', () => {
  it('JSON shape, the table, the SVG with a series per (case, backend)', async () => {
    const out = join(dir, 'run');
    const opts = parseSuiteOptions({ ...RAW, quick: true, quiet: true, out, backends: 'cpu,rocm:device=host:gemm=exact,rocm:device=cuda' }, (k) => ['out', 'backends'].includes(k));
    const { report, stdout } = await suiteCommand(opts);
    const json = JSON.parse(readFileSync(join(out, 'bench.json'), 'utf8')) as SuiteReport;
    expect(json.results.length).toBe(report.results.length);
    expect(Object.keys(json).sort()).toEqual(
      ['backends', 'budgetSeconds', 'cases', 'ceilings', 'counted', 'cpuReps', 'date', 'files', 'loadEnd', 'loadStart', 'machine', 'peakRssBytes', 'quick', 'reps', 'results', 'scale', 'suite'].sort(),
    );
    expect(json.ceilings.bandwidthGBps).toBeGreaterThan(0);
    expect(json.ceilings.matrixGflops === null ? json.ceilings.matrixNote : json.ceilings.matrixGflops).toBeTruthy();
    // every backend is there: run, or with the reason it was not
    expect(json.backends.map((b) => b.label)).toEqual(SUITE_BACKENDS.map((b) => b.label));
    const status = Object.fromEntries(json.backends.map((b) => [b.label, b]));
    expect(status.cpu.status).toBe('available');
    expect(status.webgpu.status).toBe('left out');
    for (const b of json.backends) if (b.status !== 'available') expect(b.detail.length).toBeGreaterThan(10);
    const ran = json.backends.filter((b) => b.status === 'available').map((b) => b.label);
    const cases = ['hc-mix', 'hc-combine', 'layer', 'prefill'];
    for (const label of ran) {
      for (const c of cases) {
        const rows = json.results.filter((m) => m.backend === label && m.case === c);
        expect(rows.length, `${label} ${c}`).toBe(c.startsWith('hc') ? 3 : 1);
        for (const m of rows) {
          expect(m.status, `${label} ${c} ${m.tokens}: ${m.reason}`).toBe('measured');
          expect(m.seconds).toBeGreaterThan(0);
          expect(m.gbps).toBeGreaterThan(0);
          expect(m.overBandwidth).toBeGreaterThan(0);
          expect(m.rssPeakBytes).toBeGreaterThan(0);
          expect(m.outputSha256).toMatch(/^[0-9a-f]{64}$/);
          if (c !== 'hc-combine') expect(m.gflops).toBeGreaterThan(0);
          else expect(m.gflops).toBeNull();
        }
      }
    }
    // the exact host device gives the cpu reference's bits
    if (ran.includes('rocm:device=host:gemm=exact')) expect(json.results.filter((m) => m.backend === 'rocm:device=host:gemm=exact').every((m) => m.sameAsCpu === true)).toBe(true);
    expect(json.scale.filter((s) => s.backend === 'cpu').map((s) => s.case)).toEqual(['hc-mix', 'hc-combine']);
    expect(json.scale[0].points[0].ratio).toBe(1);
    // the table
    expect(stdout).toMatch(/^hcsp bench suite \(--quick/);
    expect(stdout).toMatch(/ceilings, measured in this run:\n  matrix: .*\n[\s\S]*  bandwidth: /);
    expect(stdout).toMatch(/\n  case +T +backend +time s +GFLOP\/s +GB\/s +x matrix +x bw +of roof +RSS peak \(rise\) +bits=cpu +runs\n/);
    expect(stdout).toMatch(/\n  hc-mix +16 +cpu +\d/);
    expect(stdout).toMatch(/\n  prefill +64 +cpu +\d/);
    expect(stdout).toMatch(/rocm:device=cuda +(UNAVAILABLE: .*|rocm on the cuda device)/);
    expect(stdout).toContain(`files: ${join(out, 'bench.json')}, ${join(out, 'time-vs-T.svg')}`);
    expect(formatSuiteReport(json)).toBe(stdout);
    // the plot: one series per (HC case, backend that ran), each named in the legend
    const svg = readFileSync(join(out, 'time-vs-T.svg'), 'utf8');
    expect(svg).toMatch(/^<svg /);
    for (const label of ran) for (const c of ['hc-mix', 'hc-combine']) expect(svg).toContain(`${c} ${label}`);
    expect(svg).not.toContain('hc-mix webgpu');
  });
});

describe("a GPU's ceilings, their kernel calls checked on the host device", () => {
  it('the linear kernel at n^3 and a trim copy, each measured, with what measured it', async () => {
    let backend: RocmBackend;
    try {
      backend = (await createBackend('rocm', { device: 'host', gemm: 'exact' })) as RocmBackend;
    } catch (e) {
      expect((e as Error).message).toMatch(/native addon/);
      return;
    }
    const c = await gpuCeilings(backend, 64, 1 << 20);
    expect(c.matrixGflops).toBeGreaterThan(0);
    expect(c.bandwidthGBps).toBeGreaterThan(0);
    expect(c.matrixNote).toMatch(/exact linear kernel .* at 64x64x64$/);
    expect(c.bandwidthNote).toMatch(/^device trim \(a copy\) of a 1(\.0)? MiB bf16 tensor/);
    expect(backend.addon.stats().liveTensors).toBe(0);
    await backend.dispose();
  });
});

describe('the command', () => {
  const main = fileURLToPath(new URL('../main.ts', import.meta.url));
  const hcsp = (args: string[]) => spawnSync(process.execPath, ['--import', 'tsx', main, 'bench', ...args], { encoding: 'utf8', timeout: 300_000 });

  it('--suite --quick --json: one JSON object on stdout, the files written', () => {
    const out = join(dir, 'cli');
    const r = hcsp(['--suite', '--quick', '--json', '--quiet', '--backends', 'cpu', '--no-prefill', '--out', out]);
    expect(r.status, r.stderr).toBe(0);
    const json = JSON.parse(r.stdout) as SuiteReport;
    expect(json.results.map((m) => `${m.case}@${m.tokens}`)).toEqual(['hc-mix@16', 'hc-mix@32', 'hc-mix@64', 'hc-combine@16', 'hc-combine@32', 'hc-combine@64', 'layer@32']);
    expect(json.files).toEqual({ json: join(out, 'bench.json'), plot: join(out, 'time-vs-T.svg') });
    expect(JSON.parse(readFileSync(join(out, 'bench.json'), 'utf8')).results).toHaveLength(7);
  });

  it('--out is checked before the suite runs: a file as its folder, /proc, a symbolic link as bench.json (its target untouched)', () => {
    const file = join(dir, 'a-file');
    writeFileSync(file, 'x');
    const victim = join(dir, 'victim');
    writeFileSync(victim, 'the user\'s file');
    const linked = join(dir, 'linked');
    mkdirSync(linked);
    symlinkSync(victim, join(linked, 'bench.json'));
    const cases: [string, string][] = [
      [join(file, 'out'), `${file} is a file, not a folder`],
      ['/proc/hcsp-bench', "is under /proc (the kernel's and devices' files), not a place for files"],
      [linked, `${join(linked, 'bench.json')} is a symbolic link; it is not followed (remove it, or give another folder)`],
    ];
    for (const [out, why] of cases) {
      const r = hcsp(['--suite', '--quick', '--backends', 'cpu', '--no-prefill', '--out', out]);
      // the error alone: no progress line, so nothing ran before it
      expect(r.stderr, out).toBe(`hcsp: --out ${out}: ${why}\n`);
      expect(r.status).toBe(1);
      expect(r.stdout).toBe('');
    }
    expect(readFileSync(victim, 'utf8')).toBe('the user\'s file');
  });

  it("options of the single-purpose bench are refused with --suite, the suite's without it", () => {
    const a = hcsp(['--suite', '--host-reps', '2']);
    expect(a.status).toBe(1);
    expect(a.stderr).toMatch(/hcsp: bench --suite: --host-reps \(the suite takes --reps/);
    const b = hcsp(['--budget', '5']);
    expect(b.status).toBe(1);
    expect(b.stderr).toMatch(/hcsp: bench: --budget belongs to --suite/);
  });
});
