import { describe, expect, it } from 'vitest';
import { runOnce } from '../backend/backend.ts';
import { SMALL } from '../config/presets.ts';
import type { Graph } from '../graph/graph.ts';
import { fp8QuantizesInput } from '../layers/gdn/gdnGraph.ts';
import { MODEL_SUB_LAYERS } from '../layers/modelSubLayers.ts';
import type { Fp8Format } from '../numerics/fp8.ts';
import { quantizeBf16RowsFp8 } from '../numerics/quant.ts';
import { CpuBackend } from '../reference/cpuBackend.ts';
import { preparePrefill, type SpMode } from './prefill.ts';

// The FP8 PTPC path (issue 8 item 4) over the small decoder stack on the CPU reference: the
// GDN input projection (layers 0-2 and 4-6) as FP8 GEMMs, its rows quantized exactly as the
// plan's `quant` says: fused into the HC mix when unsharded with T <= 1024, else by the
// separate kernel on the (gathered) bf16 rows.
const backend = new CpuBackend();
const GDN_LAYERS = Array.from({ length: SMALL.numLayers }, (_, l) => l).filter((l) => fp8QuantizesInput(SMALL, l, 'attn'));
const H = SMALL.hiddenSize;

function prepare(tokens: number, tp: number, sp: SpMode, fp8: Fp8Format | null) {
  return preparePrefill({ config: SMALL, tokens, tp, sp, reduce: 'ring', seed: 5, subLayers: MODEL_SUB_LAYERS, fp8 });
}

async function run(tokens: number, tp: number, sp: SpMode, fp8: Fp8Format | null, keepAll = false) {
  const p = prepare(tokens, tp, sp, fp8);
  const { values } = await runOnce(backend, p.graph, p.feeds, p.weights, keepAll ? { keep: 'all' } : {});
  const bytes = (id: string) => Buffer.from(values.get(id)!.data.buffer);
  return { p, values, h: bytes(p.outputs.h), logits: bytes(p.outputs.logits) };
}

const count = (g: Graph, op: string) => g.nodes.filter((n) => n.op === op).length;

describe('FP8 PTPC path over the small stack', () => {
  it('T = 1100 > 1024 at tp 2: SP on and off both quantize separately and are bit-identical', async () => {
    const on = await run(1100, 2, 'on', 'e4m3fnuz');
    const off = await run(1100, 2, 'off', 'e4m3fnuz');
    expect([on.p.plan.sp, off.p.plan.sp]).toEqual([true, false]);
    for (const r of [on, off]) {
      expect(r.p.plan.quant).toBe('separate');
      expect(count(r.p.graph, 'hcGatedMeanQuant')).toBe(0);
      // every rank quantizes its (gathered) bf16 rows of every GDN layer
      expect(count(r.p.graph, 'quantFp8PerToken')).toBe(GDN_LAYERS.length * 2);
      expect(count(r.p.graph, 'fp8LinearPtpc')).toBe(GDN_LAYERS.length * 2 * 2);
    }
    expect(on.h.equals(off.h)).toBe(true);
    expect(on.logits.equals(off.logits)).toBe(true);
    // the option changes the function: the bf16 stack gives other bits
    const bf16 = await run(1100, 2, 'on', null);
    expect(count(bf16.p.graph, 'fp8LinearPtpc')).toBe(0);
    expect(bf16.h.equals(on.h)).toBe(false);
  });

  it("T = 1024 unsharded: the mix fuses the quantization, and the GDN GEMMs read the mix's q and scales", async () => {
    const { p, values } = await run(1024, 1, 'off', 'e4m3fnuz', true);
    expect(p.plan.quant).toBe('fused');
    const fused = p.graph.nodes.filter((n) => n.op === 'hcGatedMeanQuant');
    expect(fused.map((n) => n.layer)).toEqual(GDN_LAYERS);
    expect(fused.every((n) => n.attrs.format === 'e4m3fnuz' && n.attrs.style === 'divide')).toBe(true);
    expect(count(p.graph, 'quantFp8PerToken')).toBe(0);
    for (const n of p.graph.nodes.filter((nd) => nd.op === 'fp8LinearPtpc')) {
      const mix = fused.find((f) => f.layer === n.layer)!;
      expect(n.inputs.slice(0, 2)).toEqual(mix.outputs.slice(1, 3));
    }
    // the separate kernel on the same bf16 rows: its scale is the fused one or one ulp above
    let rows = 0;
    let differ = 0;
    let qDiffer = 0;
    for (const l of GDN_LAYERS) {
      const x = values.get(`r0/L${l}.attn_hc/x`)!.data as Uint16Array;
      const scale = values.get(`r0/L${l}.attn_hc/x_scale`)!.data as Float32Array;
      const q = values.get(`r0/L${l}.attn_hc/x_q`)!.data as Uint8Array;
      const sep = quantizeBf16RowsFp8(x, 1024, H, 'e4m3fnuz', 'reciprocal');
      const up = new Float32Array(1);
      const upBits = new Uint32Array(up.buffer);
      for (let t = 0; t < 1024; t++) {
        rows++;
        if (sep.scale[t] === scale[t]) continue;
        differ++;
        up[0] = scale[t];
        upBits[0]++;
        expect(sep.scale[t]).toBe(up[0]);
      }
      for (let i = 0; i < q.length; i++) if (q[i] !== sep.q[i]) qDiffer++;
    }
    console.log(`small stack T=1024 e4m3fnuz: ${differ}/${rows} rows' scales differ fused vs separate (by one fp32 ulp), ${qDiffer}/${rows * H} fp8 elements`);
    expect(differ).toBeGreaterThan(0);
    expect(differ).toBeLessThan(rows);
  });

  it('the plan decides the path: forced SP at T = 1024 quantizes separately, and fp8 off builds no quant op', () => {
    const forced = prepare(1024, 2, 'on', 'e4m3fn');
    expect([forced.plan.sp, forced.plan.quant]).toEqual([true, 'separate']);
    expect(count(forced.graph, 'hcGatedMeanQuant')).toBe(0);
    expect(count(forced.graph, 'quantFp8PerToken')).toBe(GDN_LAYERS.length * 2);
    expect(forced.graph.nodes.find((n) => n.op === 'fp8LinearPtpc')!.attrs).toEqual({ format: 'e4m3fn', scaleOrder: 'weightFirst' });
    const off = prepare(1024, 2, 'off', null);
    expect(off.plan.quant).toBe('fused');
    for (const op of ['hcGatedMeanQuant', 'quantFp8PerToken', 'fp8QuantWeightPerChannel', 'fp8LinearPtpc']) expect(count(off.graph, op)).toBe(0);
  });
});
