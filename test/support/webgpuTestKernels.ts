import { KernelTable } from '@hcsp/core';
import type { KernelPlan, KernelPlanner } from '@hcsp/kernels-wgsl';

// Kernels for the WebGPU device host's own tests only (the real ones are in
// @hcsp/kernels-wgsl), under declared op names: `pad` as a plain word copy (the tests pad to
// the same rows), `add` as a shader with a syntax error, and the two collectives done the
// simplest exact way, so the tests check the plumbing (binding, uniforms, stacking,
// scattering), not kernel numerics. Bundled into the test page by ChromiumHost({ kernels }).

const COPY_WORDS_WGSL = /* wgsl */ `
@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;
struct U { words: u32, groupsX: u32 }
@group(0) @binding(2) var<uniform> u: U;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3u) {
  let i = g.y * u.groupsX * 256u + g.x;
  if (i < u.words) { dst[i] = src[i]; }
}`;

function wordsOf(dtype: string, shape: readonly number[]): number {
  const n = shape.reduce((a, b) => a * b, 1);
  return dtype === 'bf16' ? Math.ceil(n / 2) : n;
}

/** dst words = src words, over a 2-D grid so large buffers fit the 65535 workgroup limit. */
function copyPlan(words: number, key: string): KernelPlan {
  const groups = Math.ceil(words / 256);
  const groupsX = Math.min(groups, 65535);
  const groupsY = Math.ceil(groups / groupsX);
  return {
    scratch: [],
    dispatches: [
      {
        key,
        wgsl: COPY_WORDS_WGSL,
        bindings: [
          { target: { kind: 'input', port: 0 }, access: 'read' },
          { target: { kind: 'output', port: 0 }, access: 'read_write' },
        ],
        uniforms: new Uint32Array([words, groupsX]),
        workgroups: [groupsX, groupsY, 1],
      },
    ],
  };
}

const copyWords: KernelPlanner = (inputs) => {
  const x = inputs[0]!;
  return copyPlan(wordsOf(x.dtype, x.shape), 'test.copyWords');
};

const brokenWgsl: KernelPlanner = () => ({
  scratch: [],
  dispatches: [
    {
      key: 'test.brokenWgsl',
      wgsl: '@compute @workgroup_size(1) fn main() { let x: u32 = ; }',
      bindings: [],
      uniforms: new Uint32Array(0),
      workgroups: [1, 1, 1],
    },
  ],
});

/** The stacked [tp, C, ...] input is already the gathered [tp*C, ...] output, word for word. */
const allGather: KernelPlanner = (inputs) => {
  const x = inputs[0]!;
  return copyPlan(wordsOf(x.dtype, x.shape), 'test.allGather');
};

/** bf16 sum over ranks in fp32, rank order, one RNE rounding; exact for the small integers the tests use. */
const reduceScatter: KernelPlanner = (inputs, _outputs, attrs) => {
  const x = inputs[0]!;
  const tp = attrs.tp as number;
  const rankWords = wordsOf(x.dtype, x.shape.slice(1));
  return {
    scratch: [],
    dispatches: [
      {
        key: 'test.reduceScatter',
        wgsl: /* wgsl */ `
@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;
struct U { rankWords: u32, tp: u32 }
@group(0) @binding(2) var<uniform> u: U;
fn bf16(x: f32) -> u32 {
  let b = bitcast<u32>(x);
  return ((b + 0x7fffu + ((b >> 16u) & 1u)) >> 16u) & 0xffffu;
}
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3u) {
  let i = g.x;
  if (i >= u.rankWords) { return; }
  var lo = 0.0;
  var hi = 0.0;
  for (var r = 0u; r < u.tp; r++) {
    let w = src[r * u.rankWords + i];
    lo = lo + bitcast<f32>(w << 16u);
    hi = hi + bitcast<f32>(w & 0xffff0000u);
  }
  dst[i] = bf16(lo) | (bf16(hi) << 16u);
}`,
        bindings: [
          { target: { kind: 'input', port: 0 }, access: 'read' },
          { target: { kind: 'output', port: 0 }, access: 'read_write' },
        ],
        uniforms: new Uint32Array([rankWords, tp]),
        workgroups: [Math.ceil(rankWords / 64), 1, 1],
      },
    ],
  };
};

export const TEST_KERNELS = new KernelTable<KernelPlanner>('webgpu (test kernels)', [{ pad: copyWords, add: brokenWgsl, allGather, reduceScatter }]);
