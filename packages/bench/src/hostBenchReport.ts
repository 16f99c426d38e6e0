// The host bench's report as text.
import { formatBytes } from '@hcsp/core';
import type { HostBenchReport } from './hostBench.ts';
import type { MemoryMeasure } from './memoryMeasure.ts';

const metText = (met: boolean | null): string => (met === null ? 'unmeasured' : met ? 'met' : 'NOT MET');
const f = (v: number | null, d = 2): string => (v === null ? '-' : v.toFixed(d));
const gib = (b: number): string => formatBytes(b);

function memoryLine(m: MemoryMeasure, panelExtra: number): string {
  return (
    `must-live ${gib(m.mustLive.total)} (weights ${gib(m.mustLive.weights)} + activations ${gib(m.mustLive.activationPeak)}); ` +
    `addon peak ${gib(m.addonPeakBytes)}${m.addonPeakExact ? '' : ' (sampled)'} (with the GEMMs' panels beyond each weight once, ${gib(panelExtra)}) = ${f(m.addonOverLive, 3)}x [${metText(m.addonMet)}]; ` +
    `RSS ${gib(m.rssBeforeBytes)} -> ${gib(m.rssPeakBytes)}${m.rssPeakExact ? '' : ' (sampled)'}, rise ${gib(m.rssDeltaBytes)} = ${f(m.rssDeltaOverLive, 3)}x [${metText(m.rssMet)}]`
  );
}

export function formatHostBenchReport(r: HostBenchReport): string {
  const L: string[] = [];
  L.push(`host device bench: ${r.config}; ${r.device}`);
  L.push(`  blas mode: ${r.blasDevice}`);
  L.push(
    `  machine: ${r.machine.cpus} CPUs (${r.machine.model}), addon threads ${r.machine.addonThreads}; load average ${r.loadStart.map((v) => v.toFixed(2)).join(' ')} at start, ${r.loadEnd.map((v) => v.toFixed(2)).join(' ')} at end`,
  );
  L.push(`  ceiling: ${r.ceilings.gemmNote}`);
  L.push(
    `  bandwidth: ${f(r.ceilings.bandwidthGBps)} GB/s, ${r.ceilings.bandwidthNote}; ${r.ceilings.copies.map((c) => `${c.what} ${f(c.gbps)} GB/s`).join('; ')}`,
  );
  L.push(`  check: exact HC mix at T=${r.check.tokens} vs the cpu reference: ${r.check.bitExact ? 'bit-exact' : `DIFFERS: ${r.check.mismatch}`}`);
  L.push('(a) GEMMs alone: exact kernel GFLOP/s / numpy fp32 GFLOP/s (goal >= 0.8)');
  L.push('    T      GEMM   [K -> O]          exact s   GFLOP/s  blas s    GFLOP/s  numpy s   GFLOP/s  exact/np  blas/np  graph exact/blas s  goal');
  for (const g of r.gemms) {
    L.push(
      `    ${String(g.tokens).padEnd(6)} ${g.name.padEnd(6)} [${g.shape.K} -> ${g.shape.O}]`.padEnd(38) +
        `${f(g.exact.seconds, 4).padStart(8)}  ${f(g.exact.gflops, 1).padStart(7)}  ${f(g.blas.seconds, 4).padStart(8)}  ${f(g.blas.gflops, 1).padStart(7)}  ` +
        `${f(g.numpy?.seconds ?? null, 4).padStart(8)}  ${f(g.numpy?.gflops ?? null, 1).padStart(7)}  ${f(g.exactOverCeiling, 3).padStart(8)}  ${f(g.blasOverCeiling, 3).padStart(7)}  ` +
        `${f(g.exactGraph.seconds, 4)}/${f(g.blasGraph.seconds, 4)}`.padEnd(20) +
        metText(g.met) +
        `  (load ${f(g.load)})`,
    );
  }
  L.push('(b) HC mix (exact): time / (GEMMs at numpy time + other bytes at the bandwidth) (goal <= 1.5)');
  for (const m of r.mix) {
    L.push(
      `    T=${m.tokens}: ${f(m.exact.seconds, 4)} s (median of ${m.exact.reps.length}: ${m.exact.reps.map((s) => f(s, 4)).join(' ')}), ${f(m.exact.gflops, 1)} GFLOP/s; ` +
        `bound ${f(m.bound?.seconds ?? null, 4)} s (GEMMs ${f(m.bound?.gemmSeconds ?? null, 4)} + memory ${f(m.bound?.memorySeconds ?? null, 4)} for ${f((m.cost.otherBytes + 2 * m.cost.ioBytes) / 1e9, 3)} GB); ` +
        `ratio ${f(m.overBound, 3)} [${metText(m.met)}] (load ${f(m.load)})`,
      `        by node: ${m.ops.map((o) => `${o.op} ${f(o.seconds, 4)}`).join(', ')}; first run after prepare ${f(m.firstRunSeconds, 3)} s`,
    );
  }
  if (r.linearity) {
    L.push(`(c) HC mix linearity from T=${r.linearity.base}: (time(T)/time(${r.linearity.base})) / (T/${r.linearity.base}) (${r.linearity.note})`);
    L.push(`    ${r.linearity.rows.map((x) => `T=${x.tokens}: ${f(x.seconds, 4)} s -> ${f(x.ratio, 3)}`).join('; ')}`);
  }
  L.push('(d) memory: peak / the tensors that must be live (goal <= 1.5)');
  for (const m of r.mix) L.push(`    HC mix T=${m.tokens}: ${memoryLine(m.memory, m.gemmPanelExtraBytes)}`);
  const p = r.prefill;
  if (p) {
    L.push(`    HC-only prefill: ${memoryLine(p.memory, p.gemmPanelExtraBytes)}`);
    L.push(
      `prefill: ${p.config} ${p.stack} stack, ${p.layers} layers, tp ${p.tp}, T=${p.tokens}, SP ${p.sp ? 'on' : `off (${p.spReason})`}, ${p.nodes} nodes; weights ${p.weights}`,
    );
    L.push(
      `    prepare ${f(p.prepareSeconds, 2)} s; first run ${f(p.firstRunSeconds, 2)} s; run ${f(p.exact.seconds, 3)} s (median of ${p.exact.reps.length}: ${p.exact.reps.map((s) => f(s, 3)).join(' ')}), ${f(p.exact.gflops, 1)} GFLOP/s over ${f(p.cost.gemmFlops / 1e9, 1)} GFLOP in ${p.cost.gemms.reduce((a, g) => a + g.count, 0)} GEMMs; ` +
        `${f(p.tokens / p.exact.seconds, 1)} tokens/s (load ${f(p.load)})`,
    );
    L.push(
      `    (b) bound ${f(p.bound?.seconds ?? null, 3)} s (GEMMs ${f(p.bound?.gemmSeconds ?? null, 3)} + memory ${f(p.bound?.memorySeconds ?? null, 3)} for ${f((p.cost.otherBytes + 2 * p.cost.ioBytes) / 1e9, 3)} GB); ratio ${f(p.overBound, 3)} [${metText(p.met)}]`,
    );
    L.push(`    output sha256 ${p.outputSha256}; next token ${p.nextToken}`);
  }
  L.push('goals:');
  for (const g of r.goals) L.push(`    ${g.name}: ${f(g.value, 3)} (goal ${g.goal}) ${metText(g.met)}`);
  L.push('counted:');
  for (const [k, v] of Object.entries(r.counted)) L.push(`    ${k}: ${v}`);
  return `${L.join('\n')}\n`;
}
