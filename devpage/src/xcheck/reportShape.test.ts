import type { XcheckTensor } from '@hcsp/core/xcheck';
import { describe, expect, it } from 'vitest';
import { parseXcheckReport, ReportShapeError, validateXcheckReport } from './reportShape.ts';
import {
  attribution,
  barTicks,
  kindGrid,
  metricColor,
  metricDomain,
  metricValue,
  rankGrid,
  scalePosition,
  stepLabel,
  tensorKind,
  worstTensors,
} from './xcheckHeatmap.ts';

/** the minimal --json tensor */
const minimal = (name: string, layer: number, differing: number, maxUlp: number | null, count = 100) => ({
  name,
  layer,
  count,
  differing,
  exactFraction: (count - differing) / count,
  maxUlp,
  maxAbs: differing ? 0.5 : 0,
});

const minimalReport = () => ({
  ok: true,
  pairs: [
    {
      a: 'cpu:sp=on',
      b: 'cpu:sp=off',
      tensors: [
        minimal('embed', -1, 0, 0),
        minimal('layers.0.in', 0, 0, 0),
        minimal('layers.0.attn.out', 0, 3, 2),
        minimal('layers.0.attn.partial.r0', 0, 0, 0),
        minimal('layers.0.attn.out.r0', 0, 1, 1, 50),
        minimal('layers.0.attn.partial.r1', 0, 0, 0),
        minimal('layers.0.attn.out.r1', 0, 2, 2, 50),
        minimal('layers.1.ple.ngram_ids', 1, 4, null),
        minimal('final.mixed', 2, 10, 7),
        minimal('logits', 2, 0, 0),
      ],
    },
  ],
});

describe('xcheck report shape', () => {
  it("reads the golden file's tensors not compared either way (older reports have no notCompared)", () => {
    const golden = { file: 'hf.safetensors', unused: ['extra'], notCompared: ['mtp.logits'] };
    expect(validateXcheckReport({ ...minimalReport(), golden }).golden).toEqual(golden);
    expect(validateXcheckReport({ ...minimalReport(), golden: { file: 'old.safetensors' } }).golden).toEqual({
      file: 'old.safetensors',
      unused: [],
      notCompared: [],
    });
    expect(() => validateXcheckReport({ ...minimalReport(), golden: { file: 'x', notCompared: 'mtp.logits' } })).toThrow(ReportShapeError);
  });

  it("accepts the issue's minimal --json object, placing ranks by name and filling the rest", () => {
    const r = validateXcheckReport(minimalReport());
    expect(r.config).toBe('?');
    expect(r.runs).toEqual([]);
    expect(r.exact).toBe(false);
    const p = r.pairs[0];
    expect(p.differing).toBe(20);
    expect(p.maxUlp).toBe(7);
    expect(p.tensors.find((t) => t.name === 'layers.0.attn.out.r1')!.rank).toBe(1);
    expect(p.tensors.find((t) => t.name === 'layers.0.attn.out')!.rank).toBeNull();
    expect(p.tensors[0].rows).toEqual({ rowStart: 0, bucketRows: 1, differing: [], maxUlp: [] });
  });

  it('names the first bad field, and what is not JSON', () => {
    const bad = (edit: (o: ReturnType<typeof minimalReport>) => unknown): string => {
      const o = minimalReport();
      const v = edit(o) ?? o;
      try {
        validateXcheckReport(v);
      } catch (e) {
        expect(e).toBeInstanceOf(ReportShapeError);
        return (e as Error).message;
      }
      throw new Error('accepted');
    };
    expect(bad(() => [1, 2])).toBe('not an xcheck report: the report must be an object, got an array');
    expect(bad((o) => void delete (o as Partial<typeof o>).pairs)).toBe('not an xcheck report: pairs must be an array, got nothing (the field is missing)');
    expect(bad((o) => void ((o as Record<string, unknown>).ok = 'yes'))).toBe('not an xcheck report: ok must be a boolean, got string "yes"');
    expect(bad((o) => void (o.pairs = []))).toMatch(/pairs is empty/);
    expect(bad((o) => void ((o.pairs[0].tensors[3] as Record<string, unknown>).count = null))).toBe(
      'not an xcheck report: pairs[0].tensors[3].count must be a number, got null',
    );
    expect(bad((o) => void (o.pairs[0].tensors[2].differing = 300))).toBe(
      'not an xcheck report: pairs[0].tensors[2] (layers.0.attn.out): differing 300 exceeds count 100',
    );
    expect(bad((o) => void (o.pairs[0].tensors[2].exactFraction = 2))).toMatch(/pairs\[0\]\.tensors\[2\]\.exactFraction must be a fraction in \[0, 1\]/);
    expect(bad((o) => void ((o.pairs[0] as Record<string, unknown>).b = 3))).toBe('not an xcheck report: pairs[0].b must be a string, got number 3');
    expect(() => parseXcheckReport('{"ok": tru', 'r.json')).toThrow(/^r\.json is not JSON: /);
    expect(() => parseXcheckReport('{"ok": true}', 'r.json')).toThrow(
      'r.json: not an xcheck report: pairs must be an array, got nothing (the field is missing)',
    );
  });

  it('reads a null maxAbs (JSON.stringify of Infinity) back as Infinity, and a float64 attribution', () => {
    const o = minimalReport();
    const t = o.pairs[0].tensors[2] as Record<string, unknown>;
    t.maxAbs = null;
    t.exact = { a: { maxAbs: 1, meanAbs: 0.1, maxUlp: 4 }, b: { maxAbs: 0.1, meanAbs: 0.01, maxUlp: 0.5 }, fartherA: 3, fartherB: 0, attributed: 'a' };
    const r = parseXcheckReport(JSON.stringify(o));
    expect(r.exact).toBe(true);
    expect(r.pairs[0].tensors[2].maxAbs).toBe(Infinity);
    expect(attribution(r.pairs[0])).toEqual({ withExact: 1, a: 1, b: 0, tie: 0, maxUlpA: 4, maxUlpB: 0.5 });
    (t.exact as Record<string, unknown>).attributed = 'c';
    expect(() => validateXcheckReport(o)).toThrow(`pairs[0].tensors[2].exact.attributed must be 'a', 'b', 'tie' or null, got string "c"`);
  });
});

describe('xcheck grids', () => {
  const pair = validateXcheckReport(minimalReport()).pairs[0];

  it('layer x rank: one row per sub-layer step, partial before out per rank', () => {
    const g = rankGrid(pair, 'ulp');
    expect(g.rows).toEqual([{ label: 'L0 attn', layer: 0 }]);
    expect(g.cols.map((c) => c.label)).toEqual(['r0 partial', 'r0 out', 'r1 partial', 'r1 out']);
    expect(g.cells.map((c) => [c.col, c.value])).toEqual([
      [0, 0],
      [1, 1],
      [2, 0],
      [3, 2],
    ]);
    expect(rankGrid(pair, 'fraction').cells.map((c) => c.value)).toEqual([0, 0.02, 0, 0.04]);
    expect(stepLabel('mtp.mlp')).toBe('mtp mlp');
  });

  it('layer x kind: the embedding, the layers and the exit, blank where a layer has no such value', () => {
    const g = kindGrid(pair, 'ulp');
    expect(g.rows.map((r) => r.label)).toEqual(['embed', 'L0', 'L1', 'final']);
    expect(g.cols.map((c) => c.label)).toEqual(['embed', 'in', 'attn.out', 'ple.ngram_ids', 'final.mixed', 'logits']);
    expect(g.cells).toHaveLength(6);
    // ids differ: no ulp distance, the worst class
    const ids = g.cells.find((c) => c.tensor.name === 'layers.1.ple.ngram_ids')!;
    expect(ids.value).toBe(Infinity);
    expect(metricColor(ids.value, [1, 2])).toBe('#111827');
    expect(metricColor(0, [1, 2])).toBe('#eef2f5');
    expect(tensorKind('layers.12.attn_hc.mixed')).toBe('attn_hc.mixed');
  });

  it('worst tensors: non-bf16 differences first, then by ulp and fraction; identical ones left out', () => {
    expect(worstTensors(pair, 3).map((t) => t.name)).toEqual(['layers.1.ple.ngram_ids', 'final.mixed', 'layers.0.attn.out.r1']);
    expect(worstTensors(pair, 100)).toHaveLength(5);
    const rowScaled = { ...pair.tensors[2], rowUlp: 0.5 } as XcheckTensor;
    expect(metricValue(rowScaled, 'rowUlp')).toBe(0.5);
    // the minimal report has no row-scaled figure: unknown where bf16 values differ, 0 where none do, the worst class for ids
    expect(metricValue(pair.tensors[2], 'rowUlp')).toBeNull();
    expect(metricColor(null, [1, 2])).toBe('#d1d5db');
    expect(metricValue(pair.tensors[1], 'rowUlp')).toBe(0);
    expect(metricValue(pair.tensors[7], 'rowUlp')).toBe(Infinity);
  });
});

describe('the verdict, the flips and the colour scale', () => {
  it('reads routing and QSA selection flips (none when absent) and computes the verdict from the tensors', () => {
    const raw = minimalReport() as Record<string, unknown> & { pairs: Record<string, unknown>[] };
    const old = validateXcheckReport(raw).pairs[0];
    expect(old.routing).toEqual([]);
    expect(old.selection).toEqual([]);
    // no float64 in the minimal report: the first difference, not judged
    expect(old.verdict).toMatchObject({ kind: 'unjudged', first: { name: 'layers.0.attn.out' } });
    raw.pairs[0].routing = [{ layer: 0, rows: [3, 9], count: 100 }];
    raw.pairs[0].selection = [{ layer: 1, rows: [2], count: 100 }];
    // a verdict in the file is not trusted: recomputed
    raw.pairs[0].verdict = { kind: 'identical' };
    const pair = validateXcheckReport(raw).pairs[0];
    expect(pair.verdict!.routing).toEqual([{ layer: 0, rows: [3, 9], count: 100 }]);
    expect(pair.verdict!.selection).toEqual([{ layer: 1, rows: [2], count: 100 }]);
    expect(pair.verdict!.kind).toBe('unjudged');
    raw.pairs[0].routing = [{ layer: 0, rows: 'x', count: 100 }];
    expect(() => validateXcheckReport(raw)).toThrow('not an xcheck report: pairs[0].routing[0].rows must be an array, got string "x"');
  });

  it('colours on a continuous log scale from the smallest positive value to the real maximum, not classes ending at 16', () => {
    const values = [0, 0.0625, 2, 714.75, null, Infinity];
    const domain = metricDomain(values)!;
    expect(domain).toEqual([0.0625, 714.75]);
    expect(metricColor(0.0625, domain)).toBe('#440154');
    expect(metricColor(714.75, domain)).toBe('#fde725');
    // 20 and 700 (both "> 16" before) now differ
    expect(metricColor(20, domain)).not.toBe(metricColor(700, domain));
    expect(scalePosition(Math.sqrt(0.0625 * 714.75), domain)).toBeCloseTo(0.5, 12);
    expect(barTicks(domain)).toEqual([0.0625, 0.1, 1, 10, 100, 714.75]);
    expect(metricDomain([0, null])).toBeNull();
  });
});
