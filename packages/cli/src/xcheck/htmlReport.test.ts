import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { overGate, type XcheckReport, type XcheckTensor } from '@hcsp/core/xcheck';
import { HtmlValidate } from 'html-validate';
import { afterAll, describe, expect, it } from 'vitest';
import { checkXcheckReport, escapeHtml, renderXcheckHtml, writeXcheckReport } from './htmlReport.ts';

const dir = mkdtempSync(join(tmpdir(), 'hcsp-xcheck-html-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function tensor(name: string, layer: number, rank: number | null, maxUlp: number, differing: number): XcheckTensor {
  const count = 4096;
  return {
    name,
    layer,
    rank,
    count,
    differing,
    nonFinite: { a: 0, b: 0 },
    exactFraction: (count - differing) / count,
    maxUlp,
    meanUlp: differing ? maxUlp / 4 : 0,
    rowUlp: maxUlp / 2,
    maxAbs: maxUlp * 1e-3,
    maxRel: maxUlp * 4e-3,
    exact: {
      a: { maxAbs: 1e-3, meanAbs: 2e-4, maxUlp: 0.5 + maxUlp },
      b: { maxAbs: 5e-4, meanAbs: 1e-4, maxUlp: 0.5 },
      fartherA: differing,
      fartherB: 0,
      attributed: differing ? 'a' : null,
    },
    first: differing ? { row: 3, col: 7, a: 1.0078125, b: 1 } : null,
    rows: { rowStart: 0, bucketRows: 4, differing: [differing, 0, 0, 0], maxUlp: [maxUlp, 0, 0, 0] },
  };
}

const LAYERS = 6;

function report(over: Partial<XcheckReport> = {}): XcheckReport {
  const tensors: XcheckTensor[] = [tensor('embed', -1, null, 0, 0)];
  for (let i = 0; i < LAYERS; i++) {
    tensors.push(tensor(`layers.${i}.in`, i, null, i, i * 10));
    tensors.push(tensor(`layers.${i}.attn.partial.r0`, i, 0, i + 1, i * 5));
    tensors.push(tensor(`layers.${i}.attn.partial.r1`, i, 1, i + 2, i * 5));
    tensors.push(tensor(`layers.${i}.attn.out`, i, null, 2 * i, i * 20));
  }
  tensors.push(tensor('logits', LAYERS, null, 9, 100));
  tensors.push(tensor('<b>&', LAYERS, null, 1, 1));
  // Not a fresh literal: fits XcheckPair with or without maxRowUlp.
  const pair = { a: 'native:threads=2&<x>', b: 'cpu', tensors, differing: tensors.reduce((s, t) => s + t.differing, 0), maxUlp: 10, maxRowUlp: 5 };
  return {
    ok: false,
    config: 'tiny "quoted"',
    tokens: 16,
    tp: 2,
    seed: 7,
    layers: [0, LAYERS],
    weights: 'random (seed 7) <none>',
    maxUlpGate: 4,
    exact: true,
    runs: [
      { spec: 'cpu', backend: 'cpu', device: 'host, 2 threads', options: {}, sp: false, chunk: 16, reduce: 'ring', seconds: 0.5 },
      { spec: 'native:threads=2&<x>', backend: 'native', device: 'host AVX2', options: { threads: '2' }, sp: true, chunk: 8, reduce: 'ring', seconds: 0.25 },
    ],
    pairs: [pair],
    golden: null,
    ...over,
  };
}

/** The <svg> elements of a page. */
function svgs(html: string): string[] {
  return [...html.matchAll(/<svg[\s\S]*?<\/svg>/g)].map((m) => m[0]);
}

describe('renderXcheckHtml', () => {
  it('is valid HTML (html-validate: standard and document rules)', async () => {
    const html = await renderXcheckHtml(report());
    const validator = new HtmlValidate({ extends: ['html-validate:standard', 'html-validate:document'] });
    const result = await validator.validateString(html);
    const messages = result.results.flatMap((r) => r.messages.map((m) => `${m.line}:${m.column} ${m.ruleId}: ${m.message}`));
    expect(messages).toEqual([]);
    expect(result.valid).toBe(true);
    // The validator does reject what is wrong: a duplicate id, a block in a paragraph.
    const bad = await validator.validateString(
      '<!DOCTYPE html><html lang="en"><head><title>x</title></head><body><p id="a"><div id="a"></div></p></body></html>',
    );
    expect(bad.valid).toBe(false);
    const ids = [...html.matchAll(/\bid="([^"]+)"/g)].map((m) => m[1]);
    expect(ids.length).toBeGreaterThan(0);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('plots each layer once: the differing fraction per layer has one point per layer (and the embedding)', async () => {
    const html = await renderXcheckHtml(report());
    const plot = svgs(html).find((s) => s.includes('fraction of elements differing by layer'));
    expect(plot).toBeDefined();
    const points = [...(plot as string).matchAll(/aria-label="([^"]*)"[^>]*aria-roledescription="point"/g)].map((m) => m[1]);
    expect(points).toHaveLength(LAYERS + 2);
    // layer 2: in (20 of 4096), two partials (10 each), attn.out (40): 80 of 4 x 4096 elements.
    expect(points).toContain(`differing / compared: layer L2, differing fraction ${80 / (4 * 4096)}`);
    expect(points).toContain('differing / compared: layer embed, differing fraction 0');
    // The ulp plot: the row-scaled distance beside each side's float64 error, and the gate.
    const ulp = svgs(html).find((s) => s.includes('largest row-scaled ulp distance by layer')) as string;
    expect(ulp).toContain('a against b (row-scaled ulp): layer L5, row-scaled bf16 ulps (log) 5');
    expect(ulp).toContain('a against float64 (noise floor): layer L5, row-scaled bf16 ulps (log) 10.5');
    expect(ulp).toContain('--max-ulp 4');
    // Heatmaps: layer x tensor, layer x rank, layer x rows.
    expect(html).toContain('row-scaled ulp, layer x tensor');
    expect(html).toContain('layer x rank');
    expect(html).toContain('layer x rows');
  });

  it('has no external references: no src/href outside the page, no scripts, no imports', async () => {
    const html = await renderXcheckHtml(report());
    expect(html).not.toMatch(/<script|<link|<iframe|<img|<object|<embed|@import|@font-face/i);
    expect(html).not.toMatch(/\ssrc\s*=/i);
    for (const m of html.matchAll(/\s(?:xlink:)?href\s*=\s*"([^"]*)"/gi)) expect(m[1]).toMatch(/^#/);
    expect(html).not.toMatch(/url\((?!#)/i);
    // The only URLs left are the SVG namespaces.
    const urls = [...html.matchAll(/https?:\/\/[^\s"'<>)]+/g)].map((m) => m[0]);
    expect(new Set(urls)).toEqual(new Set(['http://www.w3.org/2000/svg', 'http://www.w3.org/1999/xlink']));
  });

  it('says in which rows of which layer the routers chose other experts', async () => {
    const r = report();
    r.pairs[0].routing = [{ layer: 1, rows: [3, 9], count: 16 }];
    expect(await renderXcheckHtml(r)).toContain(
      '<li>routing flips, layer 1: routing differs at rows 3, 9 (2 of 16): the MoE output of those rows follows another expert choice, not arithmetic</li>',
    );
    expect(await renderXcheckHtml(report())).not.toContain('routing differs');
  });

  it('escapes tensor names, specs, config and weights', async () => {
    const html = await renderXcheckHtml(report({ golden: { file: '/tmp/<golden>.safetensors', unused: ['a&b'], notCompared: ['mtp.logits'] } }));
    for (const escaped of [
      '<td class="name">&lt;b&gt;&amp;</td>',
      'native:threads=2&amp;&lt;x&gt;',
      'tiny &quot;quoted&quot;',
      'random (seed 7) &lt;none&gt;',
      '/tmp/&lt;golden&gt;.safetensors',
      '<code>a&amp;b</code>',
      "the run's but not in the file, not compared: <code>mtp.logits</code>",
    ])
      expect(html).toContain(escaped);
    for (const raw of ['<b>&', '<x>']) expect(html).not.toContain(raw);
    expect(escapeHtml(`<a href="x">'&'</a>`)).toBe('&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
  });

  it('has the header and a row per tensor, over the gate marked, with each side against float64', async () => {
    const r = report();
    const html = await renderXcheckHtml(r);
    expect(html).toContain('<span class="badge fail">failed: 1 pair compared, 22 of 27 tensors differ; over --max-ulp 4</span>');
    for (const header of [
      '<dt>tokens (T)</dt><dd>16</dd>',
      '<dt>tp</dt><dd>2</dd>',
      '<dt>seed</dt><dd>7</dd>',
      '<dt>--max-ulp gate</dt><dd>4</dd>',
      '0:6 (decoder layers [0, 6))',
    ])
      expect(html).toContain(header);
    expect(html).toMatch(/<dt>float64 attribution<\/dt><dd>ran/);
    const rows = [...html.matchAll(/<tr(?: class="[^"]*")?><td class="name">/g)];
    expect(rows).toHaveLength(r.pairs[0].tensors.length);
    // Rows over the gate (core's rule) marked, the others not: layers.5.attn.out is over (10 ulps, row 5), layers.1.in under.
    const over = new Set(overGate(r.pairs, 4).map((o) => o.tensor.name));
    expect(over.has('layers.5.attn.out')).toBe(true);
    expect(over.has('layers.1.in')).toBe(false);
    for (const t of r.pairs[0].tensors) {
      const row = new RegExp(`<tr(?: class="([^"]*)")?><td class="name">${escapeHtml(t.name).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}</td>`).exec(html);
      expect(row, t.name).not.toBeNull();
      expect((row?.[1] ?? '').split(' ').includes('over'), t.name).toBe(over.has(t.name));
    }
    expect(html).toContain('<td>8.5 ulp<br><span class="small">abs 0.001, mean 2.000e-4</span></td>');
    expect(html).toContain('a<br><span class="small">a 80, b 0</span>');
    expect(html).toContain('row 3, col 7<br><span class="small">a 1.008, b 1</span>');
    expect(html).toContain('first difference in graph order: <code>layers.1.in</code> (the layer input, row 3, col 7): 0.5 row-scaled ulp');
  });

  it('renders a report without float64, gate, pairs or float values', async () => {
    const r = report({ ok: true, exact: false, maxUlpGate: null });
    r.pairs[0].tensors = r.pairs[0].tensors.slice(0, 3).map((t) => ({ ...t, exact: null, maxUlp: null, meanUlp: null, rowUlp: null }));
    const html = await renderXcheckHtml(r);
    expect(html).toContain('<span class="badge ran">ran: 1 pair compared, 0 of 3 tensors differ</span>');
    expect(html).toContain('<dt>float64 attribution</dt><dd>not run</dd>');
    expect(html).not.toContain('largest row-scaled ulp distance');
    expect(html).toContain('fraction of elements differing by layer');
    const empty = await renderXcheckHtml(report({ pairs: [] }));
    expect(empty).toContain('No pairs compared.');
    const validator = new HtmlValidate({ extends: ['html-validate:standard', 'html-validate:document'] });
    expect((await validator.validateString(html)).valid).toBe(true);
  });
});

describe('writeXcheckReport', () => {
  it('writes DIR/index.html and DIR/report.json, creating DIR; replaces them only when forced', async () => {
    const out = join(dir, 'a', 'b');
    const r = report();
    const files = await writeXcheckReport(checkXcheckReport(out, false), r);
    expect(files).toEqual({ json: join(out, 'report.json'), html: join(out, 'index.html') });
    expect(JSON.parse(readFileSync(files.json, 'utf8'))).toEqual(r);
    expect(readFileSync(files.html, 'utf8')).toBe(await renderXcheckHtml(r));
    expect(() => checkXcheckReport(out, false)).toThrow(`--report ${out}: ${join(out, 'report.json')} exists (--force replaces it)`);
    await writeXcheckReport(checkXcheckReport(out, true), report({ ok: true }));
    expect(JSON.parse(readFileSync(files.json, 'utf8')).ok).toBe(true);
    // No temp files left.
    expect(readdirSync(out).sort()).toEqual(['index.html', 'report.json']);
  });

  it('names the path in its errors', () => {
    const file = join(dir, 'file');
    writeFileSync(file, 'x');
    expect(() => checkXcheckReport(join(file, 'sub'), false)).toThrow(`--report ${join(file, 'sub')}: ${file} is a file, not a folder`);
    // A directory where index.html goes: refused before anything is written.
    const blocked = join(dir, 'blocked');
    mkdirSync(join(blocked, 'index.html'), { recursive: true });
    expect(() => checkXcheckReport(blocked, true)).toThrow(`--report ${blocked}: ${join(blocked, 'index.html')} is a directory, not a regular file`);
    expect(readdirSync(blocked)).toEqual(['index.html']);
  });

  it('a NaN or Inf is marked: its count in the table, the tensor over any gate, the report failed', async () => {
    const r = report({ maxUlpGate: 1000 });
    const t = r.pairs[0].tensors[1];
    t.nonFinite = { a: 3, b: 0 };
    t.rowUlp = 0;
    expect(overGate(r.pairs, 1000).map((o) => o.tensor.name)).toEqual([t.name]);
    const html = await renderXcheckHtml(r);
    expect(html).toContain('<td class="nonfinite">a 3, b 0</td>');
    expect(html).toMatch(new RegExp(`<tr class="over"><td class="name">${t.name.replace(/\./g, '\\.')}</td>`));
    expect(html).toContain(`NaN or Inf (over any --max-ulp, on either side): <code>${t.name}</code> (a 3, b 0)`);
  });
});

describe('plots that read', () => {
  /** A heatmap's colour bar: its labels (bottom to top as drawn) and its gradient's end colours; the cells' fills and hover texts. */
  function heatmap(svg: string) {
    const legend = /role-legend-label[^>]*>([\s\S]*?)<\/g>/.exec(svg)![1];
    const labels = [...legend.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((m) => m[1]);
    const stops = [...svg.matchAll(/<stop offset="([^"]+)" stop-color="([^"]+)"/g)].map((m) => ({ offset: Number(m[1]), color: m[2] }));
    const cells = [
      ...svg.matchAll(/<path aria-label="([^"]*)" role="graphics-symbol" aria-roledescription="rect mark"[^>]*fill="([^"]+)"><title>([^<]*)<\/title>/g),
    ].map((m) => ({ label: m[1], fill: m[2], title: m[3] }));
    return { labels, low: stops[0], high: stops[stops.length - 1], cells };
  }

  it("the layer x tensor heatmap's log colour scale spans exactly the data's row-scaled range, labelled at both ends, every cell with its hover value", async () => {
    const r = report();
    // a wide range, not a power of ten at either end
    r.pairs[0].tensors.find((t) => t.name === 'layers.5.attn.out')!.rowUlp = 714.75;
    r.pairs[0].tensors.find((t) => t.name === 'layers.1.in')!.rowUlp = 0.0625;
    const svg = svgs(await renderXcheckHtml(r)).find((s) => s.includes('row-scaled ulp, layer x tensor'))!;
    const m = heatmap(svg);
    const positive = r.pairs[0].tensors
      .filter((t) => t.rank === null)
      .map((t) => t.rowUlp as number)
      .filter((v) => v > 0);
    expect(Math.min(...positive)).toBe(0.0625);
    expect(Math.max(...positive)).toBe(714.75);
    // the bar's ends are the data's smallest and largest value; the powers of ten between label it
    expect(m.labels[0]).toBe('0.0625');
    expect(m.labels[m.labels.length - 1]).toBe('714.75');
    expect(m.labels.slice(1, -1)).toEqual(['0.1', '1', '10', '100']);
    // the smallest cell takes the bar's bottom colour, the largest its top one
    const cell = (name: string) => m.cells.find((c) => c.title.startsWith(`${name}:`))!;
    expect(cell('layers.1.in').fill).toBe(m.low.color);
    expect(cell('layers.5.attn.out').fill).toBe(m.high.color);
    expect(m.low.offset).toBe(0);
    expect(m.high.offset).toBe(1);
    expect(cell('layers.5.attn.out').title).toBe('layers.5.attn.out: 715 row-scaled ulp, 100 of 4096 differ; own error against float64 a 10.5, b 0.5');
    // 0 (bit-identical) is its own grey, not the scale's bottom
    expect(cell('embed').fill).toBe('#d9dde3');
  });

  it('the ulp plot has log ticks at powers of ten; places are named embed, L{i}, final, mtp; the table is worst first', async () => {
    const r = report();
    r.pairs[0].tensors.push({ ...r.pairs[0].tensors[1], name: 'mtp.logits', layer: LAYERS, rowUlp: 3 });
    const html = await renderXcheckHtml(r);
    const ulp = svgs(html).find((s) => s.includes('largest row-scaled ulp distance by layer'))!;
    const axis = (title: string) =>
      [...new RegExp(`aria-label="${title}[^"]*"[\\s\\S]*?role-axis-label[^>]*>([\\s\\S]*?)</g>`).exec(ulp)![1].matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map(
        (m) => m[1],
      );
    expect(axis('Y-axis')).toEqual(['0.1', '1', '10', '100']);
    expect(axis('X-axis')).toEqual(['embed', 'L0', 'L1', 'L2', 'L3', 'L4', 'L5', 'final', 'mtp']);
    expect(html).not.toContain('layer -1');
    const order = [...html.matchAll(/<tr(?: class="[^"]*")?><td class="name">([^<]*)<\/td><td>(\d+)<\/td><td>([^<]*)<\/td>/g)].map((m) => ({
      name: m[1],
      place: m[3],
    }));
    expect(order[0]).toEqual({ name: 'layers.5.attn.out', place: 'L5' });
    expect(order.find((o) => o.name === 'mtp.logits')!.place).toBe('mtp');
    expect(order.find((o) => o.name === 'embed')!.place).toBe('embed');
    const ulps = [...html.matchAll(/<tr(?: class="[^"]*")?><td class="name">[^<]*<\/td>(?:<td>[^<]*<\/td>){6}<td[^>]*>[^<]*<\/td><td>([^<]*)<\/td>/g)].map(
      (m) => Number(m[1]),
    );
    expect(ulps).toEqual([...ulps].sort((a, b) => b - a));
  });
});
