// Per-op time of the full-dimension HC mix (the `hcsp bench` graph, flash-next, tp 1) on
// Chromium's SwiftShader: each node's WGSL plan run alone on random bf16 words, so that the
// op that dominates the mix is visible. Usage:
//   npx tsx scripts/benchHcMixOps.ts [T] [reps]
// Prints each node's median seconds and its share of the sum, with the 1-minute load average.
import { loadavg } from 'node:os';
import { ChromiumHost } from '@hcsp/backend-webgpu';
import { FLASH_NEXT, numel } from '@hcsp/core';
import { storageWords, WGSL_KERNELS } from '@hcsp/kernels-wgsl';
import { hcMixBenchGraph } from '@hcsp/bench';

const median = (v: number[]) => {
  const s = [...v].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** Words of random bf16 values in [-1, 1) (both halves), from a xorshift seed. */
function randomWords(n: number, seed: number): Uint32Array {
  const out = new Uint32Array(n);
  let s = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    // sign, exponent 0x7e or below, random mantissa: |v| < 1 in each half
    const h = (s >>> 0) & 0x3f7f3f7f;
    out[i] = h >>> 0;
  }
  return out;
}

const T = Number(process.argv[2] ?? 1024);
const reps = Number(process.argv[3] ?? 3);
const graph = hcMixBenchGraph(FLASH_NEXT, T);
const gpu = await ChromiumHost.launch();
try {
  const rows: { name: string; seconds: number }[] = [];
  for (const [i, node] of graph.nodes.entries()) {
    const info = (id: string | null) => (id === null ? null : { shape: graph.values[id].shape, dtype: graph.values[id].dtype });
    const plan = WGSL_KERNELS.get(node.op)(node.inputs.map(info), node.outputs.map(info), node.attrs);
    const inputs = node.inputs.map((id, j) =>
      id === null ? null : randomWords(storageWords(graph.values[id].dtype, numel(graph.values[id].shape)), 7 + 31 * i + j),
    );
    const outWords = node.outputs.map((id) => (id === null ? 1 : storageWords(graph.values[id].dtype, numel(graph.values[id].shape))));
    const run = await gpu.runPlan(plan, inputs, outWords, reps + 1);
    rows.push({ name: `${node.op} ${node.scope} [${plan.dispatches.map((d) => d.key).join(', ')}]`, seconds: median(run.seconds.slice(1)) });
  }
  const total = rows.reduce((a, r) => a + r.seconds, 0);
  for (const r of rows) console.log(`${r.seconds.toFixed(3)} s  ${((100 * r.seconds) / total).toFixed(1)}%  ${r.name}`);
  console.log(`sum ${total.toFixed(3)} s at T=${T}, load ${loadavg()[0].toFixed(2)}`);
} finally {
  await gpu.close();
}
