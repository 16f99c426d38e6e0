import { describe, expect, it } from 'vitest';
import { runOnce } from '../../backend/backend.ts';
import { getConfig } from '../../config/presets.ts';
import type { ValueId } from '../../graph/graph.ts';
import { GraphBuilder } from '../../graph/graphBuilder.ts';
import { SyntheticWeightSource } from '../../model/syntheticWeights.ts';
import { bf16ArrayToF32 } from '../../numerics/bf16.ts';
import { type Fp8Format, fp8Info } from '../../numerics/fp8.ts';
import { quantizeBf16RowsFp8, type RowQuant } from '../../numerics/quant.ts';
import { Rng } from '../../numerics/rng.ts';
import { CpuBackend } from '../../reference/cpuBackend.ts';
import type { Tensor } from '../../tensor/tensor.ts';
import { fp8LinearPtpc, quantizeWeightPerChannel } from '../fp8Linear.ts';
import type { SubLayerContext } from '../subLayerContext.ts';
import { tpLayerChecks } from '../../../../../test/support/tpLayerChecks.ts';
import { buildGdn, fp8QuantizesInput, GDN_FP8_SCALE_ORDER } from './gdnGraph.ts';
import { gdnRankWeights, gdnWeightSpecs } from './gdnWeights.ts';

const config = getConfig('small');
const LAYER = 0;
const T = 20;
const H = config.hiddenSize;
const { numValueHeads: VH, valueHeadDim: DV } = config.linearAttention;

describe('GatedDeltaNet graph under tensor parallelism', () => {
  tpLayerChecks(
    {
      label: 'gdn',
      tokens: T,
      hidden: H,
      headsValue: 'L0.gdn/normed',
      heads: VH,
      headDim: DV,
      projectionWeight: `model.layers.${LAYER}.linear_attn.out_proj.weight`,
      weights: new SyntheticWeightSource(gdnWeightSpecs(config, LAYER), 7),
      build: (b, xIn) => ({ feeds: [], partial: (rank, tp) => buildGdn(b, { config, layer: LAYER, rank, tp, tokens: T, scope: 'L0.gdn' }, xIn) }),
    },
    new Rng(3).fillBf16Normal(T * H, 1),
    [2, 4],
  );

  it('gives each rank three qkv ranges (q, k, v heads) and out_proj columns', () => {
    const { numKeyHeads: KH, keyHeadDim: DK } = config.linearAttention;
    const w = gdnRankWeights(config, LAYER, 1, 2);
    expect(w.qkv.slice).toEqual({
      axis: 0,
      ranges: [
        [(KH / 2) * DK, KH * DK],
        [KH * DK + (KH / 2) * DK, 2 * KH * DK],
        [2 * KH * DK + (VH / 2) * DV, 2 * KH * DK + VH * DV],
      ],
    });
    expect(w.out.slice).toEqual({ axis: 1, ranges: [[(VH / 2) * DV, VH * DV]] });
    expect(w.norm.slice).toBeUndefined();
  });

  it('rejects a full-attention layer, a bad rank and a tp that does not divide the heads', () => {
    const b = new GraphBuilder(1);
    const xIn = b.input('x', [T, H], 'bf16');
    expect(() => buildGdn(b, { config, layer: 3, rank: 0, tp: 1, tokens: T, scope: 's' }, xIn)).toThrow(/layer 3 .* full-attention/);
    expect(() => gdnRankWeights(config, LAYER, 2, 2)).toThrow(/rank 2 is outside/);
    expect(() => gdnRankWeights(config, LAYER, 0, 3)).toThrow(/tp 3 does not divide/);
  });
});

describe('GatedDeltaNet with the FP8 PTPC input projection', () => {
  const weights = new SyntheticWeightSource(gdnWeightSpecs(config, LAYER), 7);
  const x = new Rng(3).fillBf16Normal(T * H, 1);
  const { numKeyHeads: KH, keyHeadDim: DK } = config.linearAttention;
  const channels = 2 * KH * DK + VH * DV;
  const p = `model.layers.${LAYER}.linear_attn.`;

  /** tp 1, every value kept; `fused`: x's quantization fed as graph inputs (the mix's fused one). */
  async function run(format: Fp8Format | null, fused: RowQuant | null = null) {
    const b = new GraphBuilder(1);
    const xIn = b.input('x', [T, H], 'bf16');
    const feeds = new Map<ValueId, Tensor>([[xIn, { dtype: 'bf16', shape: [T, H], data: x }]]);
    const ctx: SubLayerContext = { config, layer: LAYER, rank: 0, tp: 1, tokens: T, scope: 'L0.gdn' };
    if (format) {
      ctx.fp8 = { format };
      if (fused) {
        ctx.fp8.x = { q: b.input('xq', [T, H], fp8Info(format).dtype), scale: b.input('xs', [T], 'f32') };
        feeds.set('xq', { dtype: fp8Info(format).dtype, shape: [T, H], data: fused.q });
        feeds.set('xs', { dtype: 'f32', shape: [T], data: fused.scale });
      }
    }
    b.markOutput(buildGdn(b, ctx, xIn));
    const graph = b.build();
    const { values } = await runOnce(new CpuBackend(), graph, feeds, weights, { keep: 'all' });
    const get = (name: string) => values.get(`r0/L0.gdn/${name}`)!.data as Uint16Array;
    return { graph, get, ops: (scope: string) => graph.nodes.filter((n) => n.scope === `L0.gdn.${scope}`).map((n) => n.op) };
  }

  /** y = fp8LinearPtpc(x's rows, the weight quantized per output row), the GDN's scale order */
  function expectedProjection(xq: RowQuant, name: string, outF: number, format: Fp8Format): Uint16Array {
    const w = quantizeWeightPerChannel(weights.tensor(`${p}${name}.weight`).data as Uint16Array, outF, H, format);
    return fp8LinearPtpc(xq, w, T, H, outF, format, GDN_FP8_SCALE_ORDER);
  }

  for (const format of ['e4m3fnuz', 'e4m3fn'] as const) {
    it(`${format}, separate: x quantized per token with the separate kernel, qkv and z as PTPC GEMMs, b and a bf16`, async () => {
      const { graph, get, ops } = await run(format);
      const xq = quantizeBf16RowsFp8(x, T, H, format, 'reciprocal');
      expect(get('qkv')).toEqual(expectedProjection(xq, 'in_proj_qkv', channels, format));
      expect(get('z')).toEqual(expectedProjection(xq, 'in_proj_z', VH * DV, format));
      expect(ops('x_quant')).toEqual(['quantFp8PerToken']);
      expect(graph.nodes.find((n) => n.op === 'quantFp8PerToken')!.attrs).toEqual({ format, style: 'reciprocal' });
      expect([ops('qkv'), ops('z'), ops('b'), ops('a')]).toEqual([['fp8LinearPtpc'], ['fp8LinearPtpc'], ['linear'], ['linear']]);
      expect(graph.nodes.filter((n) => n.op === 'fp8QuantWeightPerChannel')).toHaveLength(2);
    });
  }

  it('fused: the GEMMs read the quantization the mix gave them and quantize nothing themselves', async () => {
    // a quantization that differs from what the layer would compute itself: the 'divide' arithmetic
    const fused = quantizeBf16RowsFp8(x, T, H, 'e4m3fnuz', 'divide');
    expect(fused.scale).not.toEqual(quantizeBf16RowsFp8(x, T, H, 'e4m3fnuz', 'reciprocal').scale);
    const { graph, get } = await run('e4m3fnuz', fused);
    expect(graph.nodes.some((n) => n.op === 'quantFp8PerToken')).toBe(false);
    expect(get('qkv')).toEqual(expectedProjection(fused, 'in_proj_qkv', channels, 'e4m3fnuz'));
  });

  it('stays close to the bf16 layer (per-token x per-channel fp8 error only)', async () => {
    const bf = await run(null);
    const f8 = await run('e4m3fnuz');
    for (const name of ['qkv', 'z']) {
      const a = bf16ArrayToF32(bf.get(name));
      const e = bf16ArrayToF32(f8.get(name));
      let num = 0;
      let den = 0;
      for (let i = 0; i < a.length; i++) {
        num += (a[i] - e[i]) ** 2;
        den += a[i] ** 2;
      }
      // two e4m3 roundings (3 mantissa bits each): relative RMS error a few percent
      expect(Math.sqrt(num / den)).toBeGreaterThan(0.005);
      expect(Math.sqrt(num / den)).toBeLessThan(0.06);
    }
  });

  it('quantizes the input of the GDN sub-layer only', () => {
    expect([0, 1, 2, 3, 4].map((l) => fp8QuantizesInput(config, l, 'attn'))).toEqual([true, true, true, false, true]);
    expect(fp8QuantizesInput(config, 0, 'mlp')).toBe(false);
    expect(fp8QuantizesInput(config, config.numLayers, 'attn')).toBe(false);
  });

  // a column-parallel shard holds whole weight rows: its per-channel scales are the full
  // weight's, so every head's activations are bit-exact with tp 1
  tpLayerChecks(
    {
      label: 'gdn fp8',
      tokens: T,
      hidden: H,
      headsValue: 'L0.gdn/normed',
      heads: VH,
      headDim: DV,
      projectionWeight: `${p}out_proj.weight`,
      weights,
      build: (b, xIn) => ({
        feeds: [],
        partial: (rank, tp) => buildGdn(b, { config, layer: LAYER, rank, tp, tokens: T, scope: 'L0.gdn', fp8: { format: 'e4m3fnuz' } }, xIn),
      }),
    },
    x,
    [2, 4],
  );
});
