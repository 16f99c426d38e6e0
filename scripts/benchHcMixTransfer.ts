// Where the full-dimension HC mix's wall time goes on Chromium's SwiftShader (the `hcsp bench`
// graph, flash-next, tp 1, the bench's weights and streams): per timed run, the page's run
// (kernels and GPU readback), the page's result POSTs, Node's receiving of those bodies, and
// the whole prepared.run. Usage:
//   npx tsx scripts/benchHcMixTransfer.ts [T] [reps]
// Prints one line per rep and the 1-minute load average.
import { loadavg } from 'node:os';
import { ChromiumHost } from '@hcsp/backend-webgpu';
import { FLASH_NEXT, hcPrefix, hcWeightSpecs, Rng, SyntheticWeightSource, type Tensor, type ValueId } from '@hcsp/core';
import { hcMixBenchGraph, hcMixFlops } from '@hcsp/bench';

const T = Number(process.argv[2] ?? 1024);
const reps = Number(process.argv[3] ?? 3);
if (!Number.isSafeInteger(T) || T < 1 || !Number.isSafeInteger(reps) || reps < 1)
  throw new Error(`usage: benchHcMixTransfer.ts [T >= 1] [reps >= 1], got ${process.argv.slice(2).join(' ')}`);
const config = FLASH_NEXT;
const graph = hcMixBenchGraph(config, T);
const width = config.hc.count * config.hiddenSize;
const feeds = new Map<ValueId, Tensor>([['streams', { dtype: 'bf16', shape: [T, width], data: new Rng(T).fillBf16Normal(T * width, 1) }]]);
const host = await ChromiumHost.launch();
try {
  const prepared = await host.prepare(graph, new SyntheticWeightSource(hcWeightSpecs(config, hcPrefix(0, 'attn'), true), 0));
  await prepared.run(feeds); // pipeline compile, not timed
  console.log(`T=${T} HC mix on ${host.adapter}, load ${loadavg()[0].toFixed(1)}`);
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    await prepared.run(feeds);
    const wall = (performance.now() - t0) / 1000;
    const s = host.lastRunSeconds()!;
    console.log(
      `rep ${i + 1}: wall ${wall.toFixed(2)} s (${(hcMixFlops(config, T) / wall / 1e9).toFixed(2)} GFLOP/s); page run ${s.pageRun.toFixed(2)} s, ` +
        `page POST ${s.pagePost.toFixed(2)} s of ${(s.postedBytes / 1e6).toFixed(1)} MB, Node receive ${s.nodeReceive.toFixed(2)} s; load ${loadavg()[0].toFixed(1)}`,
    );
  }
  await prepared.dispose();
} finally {
  await host.close();
}
