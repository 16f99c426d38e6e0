// What the two FP8 release layouts `hcsp weights` writes share (weights.ts's fp8-release with
// 128x128 block scales, ptpcFp8Layout.ts's ptpc-fp8 with per-channel scales): the multimodal
// names, the routed experts one tensor per expert and projection (each part quantized by the
// layout), the PLE table's shards FP8 with one global scale, and everything else as it is.
import { bf16ToF32, f32ToFp8, numel, roundBf16, type SyntheticWeightSource, type Tensor, type WeightSpec } from '@hcsp/core';

export const E4M3FN_MAX = 448;

/** Tensors written together (one checkpoint spec's), made only when their shard is written. */
export interface TensorGroup {
  bytes: number;
  make(): [string, Tensor][];
}

/** the release's name of a text-model tensor: under model.language_model. */
export function multimodalName(name: string): string {
  return name.startsWith('model.') ? `model.language_model.${name.slice('model.'.length)}` : name;
}

export interface Fp8Layout {
  /** one expert's projection `base` ([rows, cols] bf16) as the layout stores it */
  expertPart(base: string, w: Uint16Array, rows: number, cols: number): [string, Tensor][];
  /** the bytes expertPart writes for a [rows, cols] part */
  expertPartBytes(rows: number, cols: number): number;
  /** a tensor the layout stores its own way (not an expert or the PLE table), or null */
  other?(spec: WeightSpec, w: SyntheticWeightSource): TensorGroup | null;
}

/** The specs' tensors in a release layout, one group per spec. */
export function fp8ReleaseGroups(specs: readonly WeightSpec[], w: SyntheticWeightSource, layout: Fp8Layout): TensorGroup[] {
  // the PLE table's one scale, over all its shards: s = fl(amax / 448); q = cvt(fl(w / bf(s)))
  const tableScales = new Map<string, number>();
  const tableScale = (table: string): number => {
    let s = tableScales.get(table);
    if (s === undefined) {
      let amax = 0;
      for (const spec of specs) {
        if (!spec.name.startsWith(`${table}.shard_`)) continue;
        for (const v of w.tensor(spec.name).data as Uint16Array) amax = Math.max(amax, Math.abs(bf16ToF32(v)));
      }
      s = amax === 0 ? 1 : Math.fround(amax / E4M3FN_MAX);
      tableScales.set(table, s);
    }
    return s;
  };
  return specs.map((spec): TensorGroup => {
    const experts = /^(.+\.mlp\.experts)\.(gate_up_proj|down_proj)$/.exec(spec.name);
    const shard = /^(.+\.ngram_embedding)\.shard_\d+\.weight$/.exec(spec.name);
    if (experts) {
      const [E, rows, cols] = spec.shape;
      const parts = experts[2] === 'gate_up_proj' ? ['gate_proj', 'up_proj'] : ['down_proj'];
      const partRows = rows / parts.length;
      return {
        bytes: E * parts.length * layout.expertPartBytes(partRows, cols),
        make: () => {
          const data = w.tensor(spec.name).data as Uint16Array;
          const out: [string, Tensor][] = [];
          for (let e = 0; e < E; e++) {
            parts.forEach((part, k) => {
              const start = (e * rows + k * partRows) * cols;
              out.push(...layout.expertPart(multimodalName(`${experts[1]}.${e}.${part}`), data.subarray(start, start + partRows * cols), partRows, cols));
            });
          }
          return out;
        },
      };
    }
    if (shard) {
      const table = shard[1];
      return {
        bytes: numel(spec.shape),
        make: () => {
          const s = roundBf16(tableScale(table));
          const data = Uint8Array.from(w.tensor(spec.name).data as Uint16Array, (v) => f32ToFp8(Math.fround(bf16ToF32(v) / s), 'e4m3fn'));
          const out: [string, Tensor][] = [[multimodalName(spec.name), { dtype: 'fp8e4m3fn', shape: spec.shape, data }]];
          if (spec.name === `${table}.shard_0.weight`)
            out.push([multimodalName(`${table}.weight_scale`), { dtype: 'f32', shape: [1], data: Float32Array.of(tableScale(table)) }]);
          return out;
        },
      };
    }
    return (
      layout.other?.(spec, w) ?? { bytes: numel(spec.shape) * (spec.dtype === 'f32' ? 4 : 2), make: () => [[multimodalName(spec.name), w.tensor(spec.name)]] }
    );
  });
}
