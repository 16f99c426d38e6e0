// Measures the tiled linear kernel on Chromium's SwiftShader for the two HC GEMM shapes
// ([T,10240] x [10240,324]^T and [T,320] x [320,10240]^T), checking sampled outputs
// against a sequential-k fp32 sum. Usage:
//   npx tsx scripts/benchLinearVariants.ts [T] [reps] [r4c4w4cols-vec4u1 | wg-r8c8-t1x8-k16 ...]
// It runs the plans on the WebGPU backend's own device host (headless Chromium), so the
// figures are those of the executor the backend uses.
// Variants run interleaved, one rep each per round (A B C A B C ...), so that a change in
// the machine's load hits all of them alike; it prints each variant's median time and its
// median per-round speed relative to the first variant, with the 1-minute load average; on
// a loaded machine the best rep is the closest to the uncontended speed.
import { loadavg } from 'node:os';
import { ChromiumHost } from '@hcsp/backend-webgpu';
import { bf16ToF32, f32ToBf16 } from '@hcsp/core';
import { DEFAULT_LINEAR_TILING, planLinear, tilingName, type LinearTiling, type WorkgroupTiling } from '@hcsp/kernels-wgsl';

function parseTiling(s: string): LinearTiling | WorkgroupTiling {
  const g = /^wg-r(\d+)c(\d+)-t(\d+)x(\d+)-k(\d+)$/.exec(s);
  if (g) return { kind: 'workgroup', rows: +g[1], cols: +g[2], wgRows: +g[3], wgCols: +g[4], kTile: +g[5] };
  const m = /^r(\d+)c(\d+)w(\d+)(cols|rows)-(u32|vec4)u(\d+)(ch)?$/.exec(s);
  if (!m) throw new Error(`benchLinear: tiling '${s}' is not like r4c4w4cols-vec4u1 or wg-r8c8-t1x8-k16`);
  return {
    rows: +m[1],
    cols: +m[2],
    wgSize: +m[3],
    fast: m[4] as LinearTiling['fast'],
    load: m[5] as LinearTiling['load'],
    unroll: +m[6],
    chain: m[7] === 'ch',
  };
}

const median = (v: number[]) => {
  const s = [...v].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

function randomBf16Words(n: number, seed: number): Uint32Array {
  const out = new Uint32Array(n / 2);
  let s = seed >>> 0 || 1;
  for (let i = 0; i < out.length; i++) {
    let word = 0;
    for (let h = 0; h < 2; h++) {
      s ^= s << 13;
      s ^= s >>> 17;
      s ^= s << 5;
      word |= f32ToBf16(((s >>> 0) / 2 ** 32) * 2 - 1) << (16 * h);
    }
    out[i] = word >>> 0;
  }
  return out;
}

const elem = (words: Uint32Array, i: number) => bf16ToF32((words[i >> 1] >>> ((i & 1) * 16)) & 0xffff);

/** 64 sampled outputs against a sequential-k fp32 sum rounded to bf16. */
function checkSamples(x: Uint32Array, w: Uint32Array, y: Uint32Array, T: number, K: number, O: number): void {
  for (let s = 0; s < 64; s++) {
    const t = (s * 7919) % T;
    const o = (s * 104729) % O;
    let acc = 0;
    for (let k = 0; k < K; k++) acc = Math.fround(acc + elem(x, t * K + k) * elem(w, o * K + k));
    const got = (y[(t * O + o) >> 1] >>> (((t * O + o) & 1) * 16)) & 0xffff;
    if (got !== f32ToBf16(acc)) throw new Error(`benchLinear: y[${t},${o}] = ${got} differs from ${f32ToBf16(acc)}`);
  }
}

const T = Number(process.argv[2] ?? 1024);
const reps = Number(process.argv[3] ?? 2);
const tilings = (process.argv.length > 4 ? process.argv.slice(4) : [tilingName(DEFAULT_LINEAR_TILING)]).map(parseTiling);
const gpu = await ChromiumHost.launch();
try {
  for (const [K, O] of [
    [10240, 324],
    [320, 10240],
  ]) {
    const x = randomBf16Words(T * K, 1 + K);
    const w = randomBf16Words(O * K, 2 + O);
    const plans = tilings.map((tl) =>
      planLinear(
        [
          { shape: [T, K], dtype: 'bf16' },
          { shape: [O, K], dtype: 'bf16' },
        ],
        tl,
      ),
    );
    const seconds: number[][] = plans.map(() => []);
    for (let round = -1; round < reps; round++) {
      for (let v = 0; v < plans.length; v++) {
        const run = await gpu.runPlan(plans[v], [x, w], [(T * O) / 2], 1);
        if (round < 0) {
          checkSamples(x, w, run.outputs[0], T, K, O); // the warm-up round (pipeline compile) is not timed
        } else {
          seconds[v].push(run.seconds[0]);
        }
      }
    }
    const load = loadavg()[0].toFixed(2);
    for (let v = 0; v < plans.length; v++) {
      const med = median(seconds[v]);
      const vsFirst = median(seconds[v].map((s, i) => seconds[0][i] / s));
      console.log(
        `T=${T} K=${K} O=${O} ${plans[v].dispatches.at(-1)!.key}: median ${med.toFixed(3)} s ${((2 * T * K * O) / med / 1e9).toFixed(2)} GFLOP/s, best ${((2 * T * K * O) / Math.min(...seconds[v]) / 1e9).toFixed(2)}, ` +
          `x${vsFirst.toFixed(2)} vs first, load ${load} (reps ${seconds[v].map((s) => s.toFixed(3)).join(' ')})`,
      );
    }
  }
} finally {
  await gpu.close();
}
