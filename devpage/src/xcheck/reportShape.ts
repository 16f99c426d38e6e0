// Reads an xcheck report (the JSON `hcsp xcheck --json` prints, `--report DIR` writes as
// report.json, or the page's own live run) and checks its shape before anything is drawn, so
// a wrong file gets one message naming the first bad field instead of a broken view. The
// fields the issue fixes (ok, pairs[{a, b, tensors[{name, layer, count, differing,
// exactFraction, maxUlp, maxAbs}]}]) are required; the rest of XcheckReport is optional and
// filled with neutral values when absent.
import { pairVerdict, tensorPlace, type RoutingDifference, type XcheckPair, type XcheckReport, type XcheckRun, type XcheckTensor } from '@hcsp/core/xcheck';

export class ReportShapeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ReportShapeError';
  }
}

type Obj = Record<string, unknown>;

function typeName(v: unknown): string {
  if (v === undefined) return 'nothing (the field is missing)';
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'object' ? 'an object' : `${typeof v} ${JSON.stringify(v)?.slice(0, 40)}`;
}

function fail(path: string, expected: string, got: unknown): never {
  throw new ReportShapeError(`not an xcheck report: ${path} must be ${expected}, got ${typeName(got)}`);
}

function obj(v: unknown, path: string): Obj {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) fail(path, 'an object', v);
  return v as Obj;
}

function arr(v: unknown, path: string): unknown[] {
  if (!Array.isArray(v)) fail(path, 'an array', v);
  return v;
}

function str(o: Obj, k: string, path: string): string {
  if (typeof o[k] !== 'string') fail(`${path}.${k}`, 'a string', o[k]);
  return o[k] as string;
}

/** a finite number (or Infinity where a distance may be infinite: a NaN/Inf on one side) */
function num(o: Obj, k: string, path: string, opts: { nullable?: boolean; optional?: boolean; nonNegative?: boolean } = {}): number | null | undefined {
  const v = o[k];
  if (v === undefined && opts.optional) return undefined;
  if (v === null && opts.nullable) return null;
  // JSON has no Infinity: JSON.stringify writes it as null, so a nullable field may carry it
  if (typeof v !== 'number' || Number.isNaN(v)) fail(`${path}.${k}`, opts.nullable ? 'a number or null' : 'a number', v);
  if (opts.nonNegative && (v as number) < 0) fail(`${path}.${k}`, 'a non-negative number', v);
  return v as number;
}

function optStr(o: Obj, k: string, path: string, fallback: string): string {
  return o[k] === undefined ? fallback : str(o, k, path);
}

function tensor(v: unknown, path: string, exitLayer: number): XcheckTensor {
  const o = obj(v, path);
  const name = str(o, 'name', path);
  const count = num(o, 'count', path, { nonNegative: true }) as number;
  const differing = num(o, 'differing', path, { nonNegative: true }) as number;
  if (differing > count) throw new ReportShapeError(`not an xcheck report: ${path} (${name}): differing ${differing} exceeds count ${count}`);
  const exactFraction = num(o, 'exactFraction', path) as number;
  if (exactFraction < 0 || exactFraction > 1) fail(`${path}.exactFraction`, 'a fraction in [0, 1]', exactFraction);
  const maxUlp = num(o, 'maxUlp', path, { nullable: true }) as number | null;
  // maxAbs is Infinity when a NaN met a number; JSON.stringify writes that as null
  const maxAbsRaw = num(o, 'maxAbs', path, { nullable: true });
  const place = tensorPlace(name, exitLayer);
  const layer = num(o, 'layer', path) as number;
  let rank: number | null = place.rank;
  if (o.rank !== undefined) rank = num(o, 'rank', path, { nullable: true }) as number | null;
  let exact: XcheckTensor['exact'] = null;
  if (o.exact !== undefined && o.exact !== null) {
    const e = obj(o.exact, `${path}.exact`);
    const side = (k: 'a' | 'b') => {
      const s = obj(e[k], `${path}.exact.${k}`);
      return {
        maxAbs: num(s, 'maxAbs', `${path}.exact.${k}`) as number,
        meanAbs: (num(s, 'meanAbs', `${path}.exact.${k}`, { optional: true }) as number | undefined) ?? 0,
        maxUlp: num(s, 'maxUlp', `${path}.exact.${k}`) as number,
      };
    };
    const attributed = e.attributed;
    if (!(attributed === null || attributed === 'a' || attributed === 'b' || attributed === 'tie'))
      fail(`${path}.exact.attributed`, "'a', 'b', 'tie' or null", attributed);
    exact = {
      a: side('a'),
      b: side('b'),
      fartherA: num(e, 'fartherA', `${path}.exact`, { nonNegative: true }) as number,
      fartherB: num(e, 'fartherB', `${path}.exact`, { nonNegative: true }) as number,
      attributed,
    };
  }
  let first: XcheckTensor['first'] = null;
  if (o.first !== undefined && o.first !== null) {
    const f = obj(o.first, `${path}.first`);
    first = { row: num(f, 'row', `${path}.first`) as number, col: num(f, 'col', `${path}.first`) as number, a: Number(f.a), b: Number(f.b) };
  }
  let rows: XcheckTensor['rows'] = { rowStart: 0, bucketRows: 1, differing: [], maxUlp: [] };
  if (o.rows !== undefined) {
    const r = obj(o.rows, `${path}.rows`);
    const nums = (k: string): number[] =>
      arr(r[k], `${path}.rows.${k}`).map((x, i) => (typeof x === 'number' ? x : fail(`${path}.rows.${k}[${i}]`, 'a number', x)));
    rows = {
      rowStart: num(r, 'rowStart', `${path}.rows`) as number,
      bucketRows: num(r, 'bucketRows', `${path}.rows`) as number,
      differing: nums('differing'),
      maxUlp: nums('maxUlp'),
    };
  }
  // absent in reports from before the field: none counted
  let nonFinite: XcheckTensor['nonFinite'] = { a: 0, b: 0 };
  if (o.nonFinite !== undefined) {
    const n = obj(o.nonFinite, `${path}.nonFinite`);
    nonFinite = { a: num(n, 'a', `${path}.nonFinite`, { nonNegative: true }) as number, b: num(n, 'b', `${path}.nonFinite`, { nonNegative: true }) as number };
  }
  return {
    name,
    layer,
    rank,
    count,
    differing,
    nonFinite,
    exactFraction,
    maxUlp,
    meanUlp: (num(o, 'meanUlp', path, { nullable: true, optional: true }) as number | null | undefined) ?? null,
    rowUlp: (num(o, 'rowUlp', path, { nullable: true, optional: true }) as number | null | undefined) ?? null,
    maxAbs: maxAbsRaw === null ? Infinity : (maxAbsRaw as number),
    maxRel: (num(o, 'maxRel', path, { nullable: true, optional: true }) as number | null | undefined) ?? 0,
    exact,
    first,
    rows,
  };
}

/** routing / selection flips: [{layer, rows, count}] (absent in older reports: none) */
function flips(v: unknown, path: string): RoutingDifference[] {
  if (v === undefined) return [];
  return arr(v, path).map((x, i) => {
    const o = obj(x, `${path}[${i}]`);
    const rows = arr(o.rows, `${path}[${i}].rows`).map((r, j) => (typeof r === 'number' ? r : fail(`${path}[${i}].rows[${j}]`, 'a number', r)));
    return { layer: num(o, 'layer', `${path}[${i}]`) as number, rows, count: num(o, 'count', `${path}[${i}]`, { nonNegative: true }) as number };
  });
}

function run(v: unknown, path: string): XcheckRun {
  const o = obj(v, path);
  const options: Record<string, string> = {};
  if (o.options !== undefined) for (const [k, x] of Object.entries(obj(o.options, `${path}.options`))) options[k] = String(x);
  return {
    spec: str(o, 'spec', path),
    backend: optStr(o, 'backend', path, ''),
    device: optStr(o, 'device', path, ''),
    options,
    sp: o.sp === undefined ? false : typeof o.sp === 'boolean' ? o.sp : fail(`${path}.sp`, 'a boolean', o.sp),
    chunk: (num(o, 'chunk', path, { optional: true }) as number | undefined) ?? 0,
    reduce: optStr(o, 'reduce', path, ''),
    seconds: (num(o, 'seconds', path, { optional: true }) as number | undefined) ?? 0,
  };
}

/** Checks a parsed value against the report's shape; returns it with the optional fields filled. */
export function validateXcheckReport(value: unknown): XcheckReport {
  const o = obj(value, 'the report');
  if (typeof o.ok !== 'boolean') fail('ok', 'a boolean', o.ok);
  const pairsRaw = arr(o.pairs, 'pairs');
  if (pairsRaw.length === 0) throw new ReportShapeError('not an xcheck report: pairs is empty (a report compares at least one pair of runs)');
  const layersRaw = o.layers === undefined ? null : arr(o.layers, 'layers');
  // only used to place a tensor without a rank field; the layer field itself is required
  const exitLayer = layersRaw && typeof layersRaw[1] === 'number' ? layersRaw[1] : 0;
  const pairs: XcheckPair[] = pairsRaw.map((p, i) => {
    const path = `pairs[${i}]`;
    const po = obj(p, path);
    const tensors = arr(po.tensors, `${path}.tensors`).map((t, j) => tensor(t, `${path}.tensors[${j}]`, exitLayer));
    const maxUlp = tensors.reduce((m, t) => Math.max(m, t.maxUlp ?? 0), 0);
    const pair: XcheckPair = {
      a: str(po, 'a', path),
      b: str(po, 'b', path),
      tensors,
      differing: (num(po, 'differing', path, { optional: true }) as number | undefined) ?? tensors.reduce((n, t) => n + t.differing, 0),
      maxUlp: (num(po, 'maxUlp', path, { optional: true }) as number | undefined) ?? maxUlp,
      routing: flips(po.routing, `${path}.routing`),
      selection: flips(po.selection, `${path}.selection`),
    };
    // computed here from what was checked, whatever the file says (an older report has none)
    pair.verdict = pairVerdict(pair);
    return pair;
  });
  const layers: [number, number] = layersRaw
    ? (layersRaw.map((x, i) => (typeof x === 'number' ? x : fail(`layers[${i}]`, 'a number', x))) as [number, number])
    : [0, 0];
  let golden: XcheckReport['golden'] = null;
  if (o.golden !== undefined && o.golden !== null) {
    const g = obj(o.golden, 'golden');
    golden = {
      file: str(g, 'file', 'golden'),
      unused: g.unused !== undefined ? arr(g.unused, 'golden.unused').map(String) : [],
      notCompared: g.notCompared !== undefined ? arr(g.notCompared, 'golden.notCompared').map(String) : [],
    };
  }
  return {
    ok: o.ok,
    config: optStr(o, 'config', 'the report', '?'),
    tokens: (num(o, 'tokens', 'the report', { optional: true }) as number | undefined) ?? 0,
    tp: (num(o, 'tp', 'the report', { optional: true }) as number | undefined) ?? 0,
    seed: (num(o, 'seed', 'the report', { optional: true }) as number | undefined) ?? 0,
    layers,
    weights: optStr(o, 'weights', 'the report', ''),
    maxUlpGate: (num(o, 'maxUlpGate', 'the report', { nullable: true, optional: true }) as number | null | undefined) ?? null,
    exact: o.exact === undefined ? pairs.some((p) => p.tensors.some((t) => t.exact !== null)) : o.exact === true,
    runs: o.runs === undefined ? [] : arr(o.runs, 'runs').map((r, i) => run(r, `runs[${i}]`)),
    pairs,
    golden,
  };
}

/** Parses a file's text as a report: a JSON syntax error or a wrong shape is a ReportShapeError. */
export function parseXcheckReport(text: string, fileName = 'the file'): XcheckReport {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new ReportShapeError(`${fileName} is not JSON: ${(e as Error).message}`);
  }
  try {
    return validateXcheckReport(value);
  } catch (e) {
    if (e instanceof ReportShapeError) throw new ReportShapeError(`${fileName}: ${e.message}`);
    throw e;
  }
}
