// Measures the tiled linear kernel on Chromium's SwiftShader for the two HC GEMM shapes
// ([T,10240] x [10240,324]^T and [T,320] x [320,10240]^T), checking sampled outputs
// against a sequential-k fp32 sum. Usage:
//   npx tsx packages/kernels-wgsl/src/harness/benchLinear.ts [T] [reps] [r4c4w4cols-vec4u1 ...]
// Prints the median and the best rep of each variant, the 1-minute load average, and the CPU
// seconds Chromium's GPU process (where SwiftShader runs) spent on the reps: on a shared,
// overloaded machine wall time swings 2x, CPU time much less, so variants are compared by
// GFLOP per CPU-second (x2 = what both cores would give if the kernel had them to itself).
import { readdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { bf16ToF32, f32ToBf16 } from '../../../core/src/numerics/bf16.ts';
import { DEFAULT_LINEAR_TILING, planLinear, tilingName, type LinearTiling } from '../kernels/linear.ts';
import { launchChromiumGpu } from './chromiumGpu.ts';

function parseTiling(s: string): LinearTiling {
  const m = /^r(\d+)c(\d+)w(\d+)(cols|rows)-(u32|vec4)u(\d+)(ch)?$/.exec(s);
  if (!m) throw new Error(`benchLinear: tiling '${s}' is not like r4c4w4cols-vec4u1`);
  return { rows: +m[1], cols: +m[2], wgSize: +m[3], fast: m[4] as LinearTiling['fast'], load: m[5] as LinearTiling['load'], unroll: +m[6], chain: m[7] === 'ch' };
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

const CLOCK_TICKS_PER_S = 100;

function procStat(pid: string): { ppid: string; cpuTicks: number } | null {
  try {
    // fields after the ')' that ends the command name: state ppid ... utime(14) stime(15)
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return { ppid: f[1], cpuTicks: Number(f[11]) + Number(f[12]) };
  } catch {
    return null; // the process ended between readdir and read
  }
}

/** CPU seconds so far of the GPU processes among this process's descendants. */
function gpuProcessCpuSeconds(): number {
  const parent = new Map<string, string>();
  const ticks = new Map<string, number>();
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    const st = procStat(pid);
    if (st) {
      parent.set(pid, st.ppid);
      ticks.set(pid, st.cpuTicks);
    }
  }
  const mine = (pid: string): boolean => {
    for (let p: string | undefined = pid; p && p !== '0'; p = parent.get(p)) if (p === String(process.pid)) return true;
    return false;
  };
  let total = 0;
  for (const [pid, t] of ticks) {
    if (!mine(pid)) continue;
    let cmd = '';
    try {
      cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    } catch {
      continue;
    }
    if (cmd.includes('--type=gpu-process')) total += t;
  }
  return total / CLOCK_TICKS_PER_S;
}

const elem = (words: Uint32Array, i: number) => bf16ToF32((words[i >> 1] >>> ((i & 1) * 16)) & 0xffff);

const T = Number(process.argv[2] ?? 1024);
const reps = Number(process.argv[3] ?? 2);
const tilings = (process.argv.length > 4 ? process.argv.slice(4) : [tilingName(DEFAULT_LINEAR_TILING)]).map(parseTiling);
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
      // CPU of the reps = CPU(warm-up + reps) - CPU(warm-up alone): uploads, compile and readback cancel
      const c0 = gpuProcessCpuSeconds();
      await gpu.runPlan(plan, [x, w], [(T * O) / 2], 1);
      const c1 = gpuProcessCpuSeconds();
      const run = await gpu.runPlan(plan, [x, w], [(T * O) / 2], reps + 1);
      const cpuPerRep = (gpuProcessCpuSeconds() - c1 - (c1 - c0)) / reps;
      run.seconds.shift();
      for (let s = 0; s < 64; s++) {
        const t = (s * 7919) % T;
        const o = (s * 104729) % O;
        let acc = 0;
        for (let k = 0; k < K; k++) acc = Math.fround(acc + elem(x, t * K + k) * elem(w, o * K + k));
        const got = (run.outputs[0][(t * O + o) >> 1] >>> (((t * O + o) & 1) * 16)) & 0xffff;
        if (got !== f32ToBf16(acc)) throw new Error(`benchLinear: y[${t},${o}] = ${got} differs from ${f32ToBf16(acc)}`);
      }
      const med = median(run.seconds);
      const gflops = (s: number) => ((2 * T * K * O) / s / 1e9).toFixed(2);
      console.log(
        `T=${T} K=${K} O=${O} ${plan.dispatches.at(-1)!.key}: median ${med.toFixed(3)} s ${gflops(med)} GFLOP/s, ` +
          `best ${gflops(Math.min(...run.seconds))}, per CPU-s x2 ${gflops(cpuPerRep / 2)}, load ${loadavg()[0].toFixed(2)} (reps ${run.seconds.map((v) => v.toFixed(3)).join(' ')})`,
      );
    }
  }
} finally {
  await gpu.close();
}
