import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { formatSuiteReport, SUITE_BACKENDS, type SuiteReport } from '@hcsp/bench';
import { afterAll, describe, expect, it } from 'vitest';
import { parseSuiteOptions } from './benchOptions.ts';
import { suiteCommand } from './benchSuiteFiles.ts';

const RAW = { tokens: '1024,4096', reps: '3', cpuReps: '1', seed: '0' };
const dir = mkdtempSync(join(tmpdir(), 'hcsp-bench-suite-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the suite, quick (tiny config), on the cpu reference, the host device and a GPU', () => {
  it('JSON shape, the table, the SVG with a series per (case, backend)', async () => {
    const out = join(dir, 'run');
    const opts = parseSuiteOptions({ ...RAW, quick: true, quiet: true, out, backends: 'cpu,rocm:device=host:gemm=exact,rocm:device=cuda' }, (k) =>
      ['out', 'backends'].includes(k),
    );
    const { report, stdout } = await suiteCommand(opts);
    const json = JSON.parse(readFileSync(join(out, 'bench.json'), 'utf8')) as SuiteReport;
    expect(json.results.length).toBe(report.results.length);
    expect(Object.keys(json).sort()).toEqual(
      [
        'backends',
        'budgetSeconds',
        'cases',
        'ceilings',
        'counted',
        'cpuReps',
        'date',
        'files',
        'loadEnd',
        'loadStart',
        'machine',
        'peakRssBytes',
        'quick',
        'reps',
        'results',
        'scale',
        'suite',
      ].sort(),
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
    if (ran.includes('rocm:device=host:gemm=exact'))
      expect(json.results.filter((m) => m.backend === 'rocm:device=host:gemm=exact').every((m) => m.sameAsCpu === true)).toBe(true);
    expect(json.scale.filter((s) => s.backend === 'cpu').map((s) => s.case)).toEqual(['hc-mix', 'hc-combine']);
    expect(json.scale[0].points[0].ratio).toBe(1);
    // the table
    expect(stdout).toMatch(/^hcsp bench suite \(--quick/);
    expect(stdout).toMatch(/ceilings, measured in this run:\n {2}matrix: .*\n[\s\S]* {2}bandwidth: /);
    expect(stdout).toMatch(/\n {2}case +T +backend +time s +GFLOP\/s +GB\/s +x matrix +x bw +of roof +RSS peak \(rise\) +bits=cpu +runs\n/);
    expect(stdout).toMatch(/\n {2}hc-mix +16 +cpu +\d/);
    expect(stdout).toMatch(/\n {2}prefill +64 +cpu +\d/);
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
