// `hcsp xcheck`: identical runs report no difference; SP on and off at tp 2 are bit-identical;
// a one-ulp change planted in one element of one tensor of a golden dump is found in that
// tensor and layer only and attributed to the planted side by the float64 evaluation; bad
// golden files, bad SPECs and the --max-ulp gate give clear errors; --report writes the
// self-contained HTML with its plots.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bf16ToF32, evaluateExact, int64FileTensor, MODEL_SUB_LAYERS, preparePrefill, TINY, type RawFileTensor, type Tensor } from '@hcsp/core';
import { namedValueIds, overGate, type XcheckReport } from '@hcsp/core/xcheck';
import { openSafetensorsFile, writeSafetensorsFile } from '@hcsp/core/node';
import { afterAll, describe, expect, it } from 'vitest';
import { runPrefillCommand } from './prefill.ts';
import { runXcheckCommand } from './xcheck.ts';

const dir = mkdtempSync(join(tmpdir(), 'hcsp-xcheck-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const base = { config: 'tiny', tokens: '40', tp: '2', seed: '3', stack: 'model', sp: 'auto', reduce: 'ring', exact: true, quiet: true };

/** `hcsp prefill` of the tiny model (T 40, tp 2, seed 3, SP off, ring) with --dump into dir/name: the golden the tests plant changes in */
async function dumpTinyRun(name: string): Promise<string> {
  const dump = join(dir, name);
  await runPrefillCommand({
    backend: 'cpu',
    config: 'tiny',
    tokens: '40',
    tp: '2',
    seed: '3',
    sp: 'off',
    reduce: 'ring',
    stack: 'model',
    quiet: true,
    json: true,
    dump,
  });
  return dump;
}

/** every tensor of a dump, as writeSafetensorsFile takes them back (int64 ids kept int64) */
function readDump(path: string): Map<string, Tensor | RawFileTensor> {
  const f = openSafetensorsFile(path);
  try {
    const out = new Map<string, Tensor | RawFileTensor>();
    for (const n of f.names()) {
      if (f.entry(n).dtype !== 'I64') out.set(n, f.read(n));
      else {
        const t = f.readInt64AsI32(n);
        out.set(n, int64FileTensor(t.shape, t.data as Int32Array));
      }
    }
    return out;
  } finally {
    f.close();
  }
}

async function xcheck(opts: Partial<Parameters<typeof runXcheckCommand>[0]> & { compare: string }): Promise<XcheckReport> {
  return (await runXcheckCommand({ ...base, ...opts })).report;
}

describe('hcsp xcheck', () => {
  it('identical runs report zero differences on every named tensor', async () => {
    const r = await xcheck({ compare: 'cpu:sp=off,cpu:sp=off', exact: false });
    expect(r.ok).toBe(true);
    expect(r.pairs).toHaveLength(1);
    const [pair] = r.pairs;
    expect(pair.tensors.length).toBeGreaterThan(40);
    // golden-dump names and each rank's partials and collective outputs
    for (const name of [
      'embed',
      'layers.0.in',
      'layers.1.attn_hc.mixed',
      'layers.2.mlp.out',
      'final.mixed',
      'logits',
      'layers.3.attn.partial.r1',
      'layers.3.mlp.out.r0',
    ]) {
      expect(
        pair.tensors.some((t) => t.name === name),
        name,
      ).toBe(true);
    }
    for (const t of pair.tensors) {
      expect(t.differing, t.name).toBe(0);
      expect(t.exactFraction).toBe(1);
    }
  });

  it('SP on and off at tp 2 are bit-identical (every tensor, rank shards aligned with the replicated rows)', async () => {
    const r = await xcheck({ compare: 'cpu:sp=off,cpu:sp=on', exact: false });
    expect(r.runs.map((x) => x.sp)).toEqual([false, true]);
    const shard = r.pairs[0].tensors.find((t) => t.name === 'layers.3.attn.out.r1')!;
    // rank 1's shard (C = 20 rows from row 20) against the same rows of the replicated output
    expect(shard.count).toBe(20 * TINY.hiddenSize);
    expect(shard.rows.rowStart).toBe(20);
    expect(r.pairs[0].differing).toBe(0);
  });

  it('a one-ulp change planted in one element of a golden dump is found in that tensor and layer only, and attributed to the planted side', async () => {
    const dump = await dumpTinyRun('run.safetensors');
    // the element to plant: layers.2.attn.out[7, 11], moved one ulp away from its float64 value
    const name = 'layers.2.attn.out';
    const [row, col] = [7, 11];
    const prepared = preparePrefill({ config: TINY, tokens: 40, tp: 2, sp: 'off', reduce: 'ring', seed: 3, subLayers: MODEL_SUB_LAYERS, dump: true });
    const exact = await evaluateExact(prepared.graph, prepared.feeds, prepared.weights, { keep: namedValueIds(prepared) });
    const e = exact.get(prepared.outputs.dumpValues[name])!.data[row * TINY.hiddenSize + col];
    const tensors = readDump(dump);
    const planted = tensors.get(name) as Tensor;
    const bits = planted.data as Uint16Array;
    const i = row * TINY.hiddenSize + col;
    const v = bf16ToF32(bits[i]);
    // one bf16 ulp farther from the float64 value: up when v >= e and positive, etc. (sign-magnitude bits)
    const up = v >= e;
    bits[i] = v >= 0 === up ? bits[i] + 1 : bits[i] - 1;
    expect(Math.abs(bf16ToF32(bits[i]) - e)).toBeGreaterThan(Math.abs(v - e));
    const golden = join(dir, 'planted.safetensors');
    writeSafetensorsFile(golden, tensors);

    const r = await xcheck({ compare: 'cpu:sp=off', golden });
    expect(r.golden).toEqual({ file: golden, unused: [], notCompared: [] });
    const pair = r.pairs.find((p) => p.a === `golden:${golden}`)!;
    const differing = pair.tensors.filter((t) => t.differing > 0);
    expect(differing.map((t) => t.name)).toEqual([name]);
    const [t] = differing;
    expect(t.layer).toBe(2);
    expect(t.rank).toBe(null);
    expect(t.differing).toBe(1);
    expect(t.maxUlp).toBe(1);
    expect(t.first).toMatchObject({ row, col });
    expect(t.exact).toMatchObject({ fartherA: 1, fartherB: 0, attributed: 'a' });
  });

  it("a golden without some of the run's tensors (an HF dump has no mtp.logits) compares the rest and lists the others; a wrong shape or dtype is refused before anything runs", async () => {
    const dump = await dumpTinyRun('for-missing.safetensors');
    const keep = (drop: string[], transpose?: string) => {
      const m = readDump(dump);
      for (const d of drop) m.delete(d);
      if (transpose) {
        const t = m.get(transpose) as Tensor;
        m.set(transpose, { ...t, shape: [t.shape[1], t.shape[0]] });
      }
      return m;
    };
    const noMtp = join(dir, 'no-mtp.safetensors');
    writeSafetensorsFile(noMtp, keep(['mtp.logits', 'layers.1.mlp.out']));
    const { report: r, text } = await runXcheckCommand({ ...base, compare: 'cpu:sp=off', golden: noMtp, exact: false });
    expect(r.golden).toEqual({ file: noMtp, unused: [], notCompared: ['layers.1.mlp.out', 'mtp.logits'] });
    const pair = r.pairs.find((p) => p.a === `golden:${noMtp}`)!;
    const names = pair.tensors.map((t) => t.name);
    expect(names).not.toContain('mtp.logits');
    expect(names).toContain('logits');
    expect(names).toContain('layers.2.mlp.out');
    expect(pair.differing).toBe(0);
    expect(text).toContain(`golden ${noMtp}: 2 of the run's tensors not in it, not compared: layers.1.mlp.out, mtp.logits\n`);
    const json = JSON.parse((await runXcheckCommand({ ...base, compare: 'cpu:sp=off', golden: noMtp, exact: false, json: true })).text);
    expect(json.golden.notCompared).toEqual(['layers.1.mlp.out', 'mtp.logits']);

    const wrong = join(dir, 'wrong.safetensors');
    writeSafetensorsFile(wrong, keep(['mtp.logits'], 'final.mixed'));
    await expect(xcheck({ compare: 'cpu:sp=off', golden: wrong })).rejects.toThrow(
      `--golden ${wrong}: tensor 'final.mixed' has shape [${TINY.hiddenSize},40], the run's is [40,${TINY.hiddenSize}]`,
    );
    const dtype = join(dir, 'dtype.safetensors');
    const m = keep([]);
    const logits = m.get('logits') as Tensor;
    m.set('logits', { dtype: 'f32', shape: logits.shape, data: Float32Array.from(logits.data as Uint16Array, bf16ToF32) });
    writeSafetensorsFile(dtype, m);
    await expect(xcheck({ compare: 'cpu:sp=off', golden: dtype })).rejects.toThrow(`--golden ${dtype}: tensor 'logits' is f32, the run's is bf16`);
  });

  it('the dump carries each MoE layer\'s routed expert ids (int32); a golden whose router chose another expert says "routing differs at rows ..." for that layer', async () => {
    const dump = await dumpTinyRun('for-routing.safetensors');
    const f = openSafetensorsFile(dump);
    try {
      for (let l = 0; l < TINY.numLayers; l++) expect(f.entry(`layers.${l}.mlp.topk_ids`)).toMatchObject({ dtype: 'I32', shape: [40, TINY.moe.topK] });
    } finally {
      f.close();
    }
    const tensors = readDump(dump);
    // row 5 of layer 1 routed to an expert the run did not choose (as another engine's flip would)
    const ids = (tensors.get('layers.1.mlp.topk_ids') as Tensor).data as Int32Array;
    const K = TINY.moe.topK;
    const row = Array.from(ids.subarray(5 * K, 6 * K));
    ids[5 * K + K - 1] = Array.from({ length: TINY.moe.numExperts }, (_, e) => e).find((e) => !row.includes(e))!;
    const flipped = join(dir, 'flipped.safetensors');
    writeSafetensorsFile(flipped, tensors);
    const { report: r, text } = await runXcheckCommand({ ...base, compare: 'cpu:sp=off,cpu:sp=on', golden: flipped, exact: false });
    const pair = r.pairs.find((p) => p.a === `golden:${flipped}`)!;
    expect(pair.routing).toEqual([{ layer: 1, rows: [5], count: 40 }]);
    expect(pair.tensors.find((t) => t.name === 'layers.1.mlp.topk_ids')!.differing).toBe(1);
    expect(r.pairs.find((p) => p.a === 'cpu:sp=on')!.routing).toEqual([]);
    expect(text).toMatch(/\n {2}routing flips, layer 1: 1 of 40 rows \(routing differs at rows 5 \(1 of 40\)\)\n/);
    expect(pair.verdict!.routing).toEqual([{ layer: 1, rows: [5], count: 40 }]);
  });

  it('NaN in a golden dump fails --max-ulp whatever its value (reported, exit 1); a golden of all-NaN tensors is not "ok"', async () => {
    const dump = await dumpTinyRun('for-nan.safetensors');
    const nanBits = 0x7fc0;
    const finalNan = join(dir, 'final-nan.safetensors');
    const tensors = readDump(dump);
    const final = tensors.get('final.mixed') as Tensor;
    (final.data as Uint16Array).fill(nanBits);
    writeSafetensorsFile(finalNan, tensors);
    const cli = fileURLToPath(new URL('../../bin/hcsp.js', import.meta.url));
    const gated = spawnSync(
      process.execPath,
      [
        cli,
        'xcheck',
        '--config',
        'tiny',
        '--tp',
        '2',
        '--seed',
        '3',
        '--compare',
        'cpu:sp=off',
        '--golden',
        finalNan,
        '--max-ulp',
        '0',
        '--quiet',
        '--no-exact',
      ],
      { encoding: 'utf8', timeout: 300_000 },
    );
    expect(gated.status).toBe(1);
    const count = final.shape.reduce((a, b) => a * b, 1);
    expect(gated.stderr).toBe(
      `hcsp: xcheck: 1 tensor exceeds --max-ulp 0: the largest, final.mixed (golden:${finalNan} against cpu:sp=off), holds NaN or Inf (${count} NaN/Inf in golden:${finalNan}, 0 in cpu:sp=off)\n`,
    );
    expect(gated.stdout).toContain(`EXCEEDS --max-ulp 0`);
    expect(gated.stdout).toContain(
      `  1 tensor holds NaN or Inf (a failure under any --max-ulp):\n    final.mixed: ${count} NaN/Inf in golden:${finalNan}, 0 in cpu:sp=off\n`,
    );

    // every float tensor NaN: each one over a gate of any size
    const allNan = join(dir, 'all-nan.safetensors');
    const every = readDump(dump);
    for (const t of every.values()) {
      if (!('dtype' in t)) continue;
      if (t.dtype === 'bf16') (t.data as Uint16Array).fill(nanBits);
      if (t.dtype === 'f32') (t.data as Float32Array).fill(NaN);
    }
    writeSafetensorsFile(allNan, every);
    const r = await xcheck({ compare: 'cpu:sp=off', golden: allNan, maxUlp: '1000', exact: false });
    expect(r.ok).toBe(false);
    const pair = r.pairs.find((p) => p.a === `golden:${allNan}`)!;
    const floats = pair.tensors.filter((t) => t.rowUlp !== null);
    expect(floats.length).toBeGreaterThan(10);
    for (const t of floats) expect(t.nonFinite, t.name).toEqual({ a: t.count, b: 0 });
    expect(overGate(r.pairs, 1000).length).toBe(floats.length);
  });

  it("contract=hf-eager runs HF's eager roundings: against hf the HC mix before the first sub-layer agrees and the first difference is that sub-layer's output; the run reports its contract", async () => {
    const r = await xcheck({ compare: 'cpu:contract=hf,cpu:contract=hf-eager', tp: '1', exact: false });
    expect(r.runs.map((x) => x.options.contract)).toEqual(['hf', 'hf-eager']);
    const [pair] = r.pairs;
    for (const name of ['embed', 'layers.0.in', 'layers.0.attn_hc.mixed']) expect(pair.tensors.find((t) => t.name === name)?.differing, name).toBe(0);
    expect(pair.verdict?.first?.name).toBe('layers.0.attn.out');
    await expect(xcheck({ compare: 'cpu,cpu:contract=torch' })).rejects.toThrow(
      '--compare: SPEC "cpu:contract=torch": contract must be one of atom|hf|hf-eager, got "torch"',
    );
  });

  it('bad SPECs are refused, naming the SPEC and the key', async () => {
    await expect(xcheck({ compare: 'cpu:sp=off' })).rejects.toThrow('--compare needs at least two SPECs, comma-separated (got "cpu:sp=off")');
    await expect(xcheck({ compare: 'cpu,cpu:colour=red' })).rejects.toThrow(
      '--compare: SPEC "cpu:colour=red": unknown key "colour" (keys: sp, reduce, contract, ties, fp8, quant)',
    );
    await expect(xcheck({ compare: 'cpu,cpu:sp=maybe' })).rejects.toThrow('--compare: SPEC "cpu:sp=maybe": sp must be one of auto|on|off, got "maybe"');
    await expect(xcheck({ compare: 'cpu,rocm:device=moon' })).rejects.toThrow(/--compare: SPEC "rocm:device=moon": .*device/);
    await expect(xcheck({ compare: 'cpu,cpu:quant=fused' })).rejects.toThrow('quant=fused places the FP8 quantization: it needs fp8=<format>');
  });

  it("SP on against off, ring, at tp 4 (tiny, T 64): the verdict is rounding reordering, first at layers.2.attn.out (the reduce-scatter against the all-reduce), within each side's float64 error", async () => {
    const { report: r, text } = await runXcheckCommand({
      ...base,
      config: 'tiny',
      tokens: '64',
      tp: '4',
      seed: '0',
      compare: 'cpu:sp=on,cpu:sp=off',
      reduce: 'ring',
      exact: true,
    });
    const v = r.pairs[0].verdict!;
    // checked against the run: layers 0 and 1 are bit-identical, layer 2's attention output is the first to differ (1 row-scaled ulp at row 8, col 0; each side ~32 from float64)
    expect(v).toMatchObject({ kind: 'rounding', beyond: null, first: { name: 'layers.2.attn.out', at: { row: 8, col: 0 } } });
    expect(v.first!.rowUlp).toBeLessThanOrEqual(2);
    expect(Math.min(v.first!.floor!.a, v.first!.floor!.b)).toBeGreaterThan(v.first!.rowUlp!);
    expect(r.pairs[0].tensors.filter((t) => t.layer < 2 && t.differing > 0)).toEqual([]);
    expect(v.line).toMatch(
      /^expected rounding reordering at layers\.2\.attn\.out \(the attention sub-layer's output \(after its collective\); row 8, col 0\) at 1 row-scaled ulp/,
    );
    expect(text).toContain(`\ncpu:sp=off (a) against cpu:sp=on (b):\n  verdict: ${v.line}\n`);
  }, 300_000);

  it('the compiled command: --json is one object, --max-ulp gates the exit status, --report writes the HTML with its plots', () => {
    const cli = fileURLToPath(new URL('../../bin/hcsp.js', import.meta.url));
    const report = join(dir, 'report');
    const run = (extra: string[]) =>
      spawnSync(
        process.execPath,
        [
          cli,
          'xcheck',
          '--config',
          'tiny',
          '--tokens',
          '40',
          '--tp',
          '4',
          '--seed',
          '3',
          '--compare',
          'cpu:sp=off,cpu:sp=on',
          '--quiet',
          '--no-exact',
          ...extra,
        ],
        { encoding: 'utf8', timeout: 300_000 },
      );
    const open = run(['--json', '--report', report]);
    expect(open.status, open.stderr).toBe(0);
    const json = JSON.parse(open.stdout) as XcheckReport;
    // --json keeps stdout one object: the report's path goes to stderr; the verdict is in the object
    expect(open.stderr).toBe(`report: ${join(report, 'index.html')} (data: ${join(report, 'report.json')})\n`);
    expect(json.pairs[0].verdict).toMatchObject({ kind: 'unjudged', first: { name: expect.any(String) } });
    // at tp 4 the reduce-scatter and the all-reduce add in different orders: the runs differ
    expect(json.pairs[0].differing).toBeGreaterThan(0);
    for (const k of ['name', 'layer', 'count', 'differing', 'exactFraction', 'maxUlp', 'maxAbs']) expect(json.pairs[0].tensors[0]).toHaveProperty(k);
    const html = readFileSync(join(report, 'index.html'), 'utf8');
    expect(html.startsWith('<!DOCTYPE html>')).toBe(true);
    expect(html).toContain('<svg');
    expect(JSON.parse(readFileSync(join(report, 'report.json'), 'utf8'))).toEqual(json);
    const gated = run(['--max-ulp', '0.5']);
    expect(gated.status).toBe(1);
    expect(gated.stderr).toMatch(
      /^hcsp: xcheck: \d+ tensors exceed --max-ulp 0\.5: the largest, \S+ \(cpu:sp=on against cpu:sp=off\), [\d.]+ row-scaled ulp\n$/,
    );
    const textReport = join(dir, 'report-text');
    const wide = run(['--max-ulp', '1000', '--report', textReport]);
    expect(wide.status, wide.stderr).toBe(0);
    // the verdict leads each pair; the report's path ends the output
    expect(wide.stdout).toMatch(/\ncpu:sp=on \(a\) against cpu:sp=off \(b\):\n {2}verdict: first difference at \S+ \(/);
    expect(wide.stdout.endsWith(`within --max-ulp 1000\nreport: ${join(textReport, 'index.html')} (data: ${join(textReport, 'report.json')})\n`)).toBe(true);
  });
});
