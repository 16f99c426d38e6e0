import { describe, expect, it } from 'vitest';
import { expF32, logF32, rsqrtF32, sigmoidF32, siluF32, softplusF32, f32ToBf16 } from '@hcsp/core';
import { useChromiumGpu } from '../../../../test/support/wgslKernelSuite.ts';
import type { KernelPlan } from '../kernelProgram.ts';
import { BF16_WGSL } from './bf16.wgsl.ts';
import { FP32_MATH_WGSL } from './fp32Math.wgsl.ts';

// Bit-equality of the WGSL fp32 library with core's, through Chromium's WebGPU (SwiftShader).
const N = Number(process.env.HCSP_FP32MATH_N ?? 1 << 20);

// SwiftShader flushes subnormal inputs and results (DAZ/FTZ); core's fp32Math flushes them
// explicitly, so the two must agree on every input, subnormals included.
const FUNCS: [string, (x: number) => number][] = [
  ['exp_f32', expF32],
  ['log_f32', logF32],
  ['sigmoid_f32', sigmoidF32],
  ['silu_f32', siluF32],
  ['softplus_f32', softplusF32],
  ['rsqrt_f32', rsqrtF32],
];

function unaryPlan(fn: string, n: number): KernelPlan {
  const wgsl = `${FP32_MATH_WGSL}
@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read_write> y: array<u32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  let i = g.x + g.y * 32768u * 64u;
  if (i < ${n}u) { y[i] = bitcast<u32>(${fn}(bitcast<f32>(x[i]))); }
}`;
  const groups = Math.ceil(n / 64);
  return {
    scratch: [],
    dispatches: [
      {
        key: `test-${fn}-${n}`,
        wgsl,
        bindings: [
          { target: { kind: 'input', port: 0 }, access: 'read' },
          { target: { kind: 'output', port: 0 }, access: 'read_write' },
        ],
        uniforms: new Uint32Array(0),
        workgroups: [Math.min(groups, 32768), Math.ceil(groups / 32768), 1],
      },
    ],
  };
}

/** Deterministic inputs: a quarter uniform in [-100, 100], a quarter in [-2, 2], half random bit patterns. */
function inputs(n: number): Uint32Array {
  const f = new Float32Array(n);
  const u = new Uint32Array(f.buffer);
  let s = 0x9e3779b9;
  const next = () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return s >>> 0;
  };
  for (let i = 0; i < n; i++) {
    const q = i & 3;
    if (q === 0) f[i] = (next() / 2 ** 32) * 200 - 100;
    else if (q === 1) f[i] = (next() / 2 ** 32) * 4 - 2;
    else u[i] = next();
  }
  return u;
}

const host = useChromiumGpu();

describe('fp32Math.wgsl on Chromium WebGPU', () => {
  const x = inputs(N);
  const xf = new Float32Array(x.buffer);
  for (const [name, ref] of FUNCS) {
    it(`${name} is bit-identical to core on ${N} inputs`, async () => {
      const { outputs } = await host().runPlan(unaryPlan(name, N), [x], [N]);
      const got = new Float32Array(outputs[0].buffer);
      const want = new Float32Array(N);
      for (let i = 0; i < N; i++) want[i] = ref(xf[i]);
      const gotBits = outputs[0];
      const wantBits = new Uint32Array(want.buffer);
      let mismatches = 0;
      let first = '';
      for (let i = 0; i < N; i++) {
        const bothNaN = got[i] !== got[i] && want[i] !== want[i];
        if (gotBits[i] !== wantBits[i] && !bothNaN) {
          if (!first) first = `x=${xf[i]} (0x${x[i].toString(16)}): gpu ${got[i]} cpu ${want[i]}`;
          mismatches++;
        }
      }
      expect(mismatches, first).toBe(0);
    });
  }
  it('f32_to_bf16 matches core (RNE, NaN -> 0x7FC0) on the same inputs', async () => {
    const plan = unaryPlan('f32_to_bf16', N);
    plan.dispatches[0].wgsl = plan.dispatches[0].wgsl
      .replace(FP32_MATH_WGSL, BF16_WGSL)
      .replace('bitcast<u32>(f32_to_bf16(bitcast<f32>(x[i])))', 'f32_to_bf16(bitcast<f32>(x[i]))');
    const { outputs } = await host().runPlan(plan, [x], [N]);
    let mismatches = 0;
    for (let i = 0; i < N; i++) if (outputs[0][i] !== f32ToBf16(xf[i])) mismatches++;
    expect(mismatches).toBe(0);
  });
});
