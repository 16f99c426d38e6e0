// The suite's report as a table.
import { formatBytes } from '@hcsp/core';
import type { SuiteReport } from './suite.ts';

const f = (v: number | null | undefined, d = 2): string => (v === null || v === undefined ? '-' : v.toFixed(d));
const sig = (v: number | null | undefined): string =>
  v === null || v === undefined ? '-' : v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v >= 1 ? v.toFixed(2) : v.toPrecision(3);

export function formatSuiteReport(r: SuiteReport): string {
  const L: string[] = [];
  L.push(`hcsp bench suite${r.quick ? ' (--quick: tiny config, tiny sizes)' : ''}, ${r.date}`);
  L.push(
    `machine: ${r.machine.cpus} CPUs (${r.machine.model}), node ${r.machine.node}; load average ${r.loadStart.map((v) => v.toFixed(2)).join(' ')} at start, ${r.loadEnd.map((v) => v.toFixed(2)).join(' ')} at end`,
  );
  L.push('ceilings, measured in this run:');
  L.push(`  matrix:    ${f(r.ceilings.matrixGflops, 1)} GFLOP/s: ${r.ceilings.matrixNote}`);
  if (r.ceilings.gemms.length > 1)
    L.push(`             ${r.ceilings.gemms.map((g) => `${g.label} ${g.shape.T}x${g.shape.K}x${g.shape.O} ${f(g.gflops, 1)}`).join('; ')} GFLOP/s`);
  L.push(`  bandwidth: ${f(r.ceilings.bandwidthGBps, 2)} GB/s: ${r.ceilings.bandwidthNote}`);
  L.push(`             ${r.ceilings.copies.map((c) => `${c.what} ${f(c.gbps, 2)}`).join('; ')} GB/s`);
  L.push('backends:');
  const w = Math.max(...r.backends.map((b) => b.label.length));
  for (const b of r.backends) {
    const text = b.status === 'available' ? `${b.detail}; ceilings: ${b.ceilingsNote}` : `${b.status.toUpperCase()}: ${b.detail}`;
    L.push(`  ${b.label.padEnd(w)}  ${text}`);
    if (b.gpuCeilings)
      L.push(
        `  ${''.padEnd(w)}  GPU ceilings: matrix ${f(b.gpuCeilings.matrixGflops, 1)} GFLOP/s (${b.gpuCeilings.matrixNote}); bandwidth ${f(b.gpuCeilings.bandwidthGBps, 1)} GB/s (${b.gpuCeilings.bandwidthNote})`,
      );
  }
  L.push('cases:');
  const seenCase = new Set<string>();
  for (const c of r.cases) {
    if (c.case !== 'hc-mix' && c.case !== 'hc-combine')
      L.push(`  ${c.case} (${c.config}, T=${c.tokens}, tp ${c.tp}): ${c.what}; ${c.detail}; ${sig(c.gflop)} GFLOP, ${sig(c.gbytes)} GB`);
    else if (!seenCase.has(c.case))
      L.push(
        `  ${c.case} (${c.config}, T=${r.cases
          .filter((x) => x.case === c.case)
          .map((x) => x.tokens)
          .join(', ')}, tp 1): ${c.what}`,
      );
    seenCase.add(c.case);
  }
  const head = ['case', 'T', 'backend', 'time s', 'GFLOP/s', 'GB/s', 'x matrix', 'x bw', 'of roof', 'RSS peak (rise)', 'bits=cpu', 'runs'];
  const rows: string[][] = [];
  const notes: string[] = [];
  for (const m of r.results) {
    if (m.status !== 'measured') {
      rows.push([m.case, String(m.tokens), m.backend, m.status.toUpperCase(), '', '', '', '', '', '', '', `[${notes.length + 1}]`]);
      notes.push(`[${notes.length + 1}] ${m.case} T=${m.tokens} ${m.backend}: ${m.status}: ${m.reason}`);
      continue;
    }
    rows.push([
      m.case,
      String(m.tokens),
      m.backend,
      m.seconds! < 0.1 ? m.seconds!.toFixed(5) : m.seconds!.toFixed(3),
      sig(m.gflops),
      sig(m.gbps),
      f(m.overMatrix, 3),
      f(m.overBandwidth, 3),
      f(m.ofRoofline, 3),
      `${formatBytes(m.rssPeakBytes!)}${m.rssPeakExact ? '' : '~'} (+${formatBytes(Math.max(0, m.rssPeakBytes! - m.rssBeforeBytes!))})`,
      m.sameAsCpu === null ? '-' : m.sameAsCpu ? 'same' : 'differ',
      m.firstRunOnly ? 'first run only' : `${m.runs.length}`,
    ]);
  }
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i].length)));
  const line = (cells: string[]): string => `  ${cells.map((c, i) => (i <= 2 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ')}`.trimEnd();
  L.push(line(head));
  let prevCase = '';
  for (const row of rows) {
    if (prevCase && row[0] !== prevCase) L.push('');
    prevCase = row[0];
    L.push(line(row));
  }
  for (const n of notes) L.push(`  ${n}`);
  L.push(`scale: (time(T) / time(${r.scale[0]?.base ?? '-'})) / (T / ${r.scale[0]?.base ?? '-'}); 1.00 is linear in T`);
  for (const s of r.scale) {
    L.push(
      `  ${s.case.padEnd(10)} ${s.backend.padEnd(w)}  ${s.points.map((p) => `T=${p.tokens} ${p.ratio !== null ? f(p.ratio, 3) : p.seconds !== null ? '(no base)' : 'not measured'}`).join('   ')}`,
    );
  }
  L.push(
    `peak RSS of this process over the run: ${formatBytes(r.peakRssBytes)} (getrusage maxRSS). In the table: this process's peak during the measurement ("~": the highest of 5 ms samples, maxRSS did not rise) and its rise over the RSS before it`,
  );
  L.push('counted:');
  for (const [k, v] of Object.entries(r.counted)) L.push(`  ${k}: ${v}`);
  if (r.files.json || r.files.plot) L.push(`files: ${[r.files.json, r.files.plot].filter(Boolean).join(', ')}`);
  return `${L.join('\n')}\n`;
}
