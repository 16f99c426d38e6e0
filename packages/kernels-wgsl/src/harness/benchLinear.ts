// Measures the tiled linear kernel on Chromium's SwiftShader for the two HC GEMM shapes
// ([T,10240] x [10240,324]^T and [T,320] x [320,10240]^T), checking sampled outputs
// against a sequential-k fp32 sum. Usage:
//   npx tsx packages/kernels-wgsl/src/harness/benchLinear.ts [T] [reps] [r4c4w64cols ...]
import { bf16ToF32, f32ToBf16 } from '../../../core/src/numerics/bf16.ts';
import { planLinear, type LinearTiling } from '../kernels/linear.ts';
import { launchChromiumGpu } from './chromiumGpu.ts';

function parseTiling(s: string): LinearTiling {
  const m = /^r(\d+)c(\d+)w(\d+)(cols|rows)$/.exec(s);
  if (!m) throw new Error(`benchLinear: tiling '${s}' is not like r4c4w64cols`);
  return { rows: +m[1], cols: +m[2], wgSize: +m[3], fast: m[4] as LinearTiling['fast'] };
}

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

const T = Number(process.argv[2] ?? 1024);
const reps = Number(process.argv[3] ?? 2);
const tilings = (process.argv.length > 4 ? process.argv.slice(4) : ['r4c4w64cols']).map(parseTiling);
const gpu = await launchChromiumGpu();
try {
  for (const [K, O] of [
    [10240, 324],
    [320, 10240],
  ]) {
    const x = randomBf16Words(T * K, 1 + K);
    const w = randomBf16Words(O * K, 2 + O);
    for (const tl of tilings) {
      const plan = planLinear(
        [{ shape: [T, K], dtype: 'bf16' }, { shape: [O, K], dtype: 'bf16' }],
        [{ shape: [T, O], dtype: 'bf16' }],
        tl,
      );
      const run = await gpu.runPlan(plan, [x, w], [(T * O) / 2], reps);
      for (let s = 0; s < 64; s++) {
        const t = (s * 7919) % T;
        const o = (s * 104729) % O;
        let acc = 0;
        for (let k = 0; k < K; k++) acc = Math.fround(acc + elem(x, t * K + k) * elem(w, o * K + k));
        const got = (run.outputs[0][(t * O + o) >> 1] >>> (((t * O + o) & 1) * 16)) & 0xffff;
        if (got !== f32ToBf16(acc)) throw new Error(`benchLinear: y[${t},${o}] = ${got} differs from ${f32ToBf16(acc)}`);
      }
      const best = Math.min(...run.seconds);
      const gflops = (2 * T * K * O) / best / 1e9;
      console.log(`T=${T} K=${K} O=${O} ${plan.dispatches.at(-1)!.key}: ${best.toFixed(3)} s  ${gflops.toFixed(2)} GFLOP/s  (reps ${run.seconds.map((v) => v.toFixed(3)).join(' ')})`);
    }
  }
} finally {
  await gpu.close();
}
