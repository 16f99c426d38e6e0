import { COUNT, INDEX } from './attrSpecs.ts';
import { bf16, defineOp, i32, intMin, weight } from './opDef.ts';
import { info, num } from './shapeRules.ts';

// PLE ops (model.md "PLE"; layers/ple, as HF `Qwen4ExpTextPLELayer` and ATOM ple.py compute
// it). key_proj and value_proj use the `linear` op. The PLE is replicated: every rank runs
// these on all T rows (sharding starts after it). Its n-gram table is either read row by row
// as the ids need them (pleNgramEmbed, a host op) or vocab-parallel as ATOM keeps it: each
// rank holds a slice of the rows, looks up what falls in it (pleNgramEmbedShard) and the
// ranks all-reduce (layers/ple/pleGraph.ts).

const DECIMAL = /^(0|[1-9][0-9]*)$/;

export const pleNgramIds = defineOp({
  name: 'pleNgramIds',
  doc: "Host integer op: token ids [T] -> rows [T, heads] of the padded n-gram table, offsets included (layers/ple/pleHash.ts pleNgramIds): history EOS before the start and before every EOS, key_s = key_{s-1} XOR prev_s*m[s] in plain int64 (no wrap), id = key mod size + offset per head. `multipliers` are decimal strings (they exceed 2^53; a graph's attrs stay plain JSON). Exact.",
  inputs: [i32('tokens')],
  outputs: [i32('ids')],
  attrs: {
    ngramSize: intMin(2),
    headsPerNgram: COUNT,
    multipliers: 'json',
    vocabSizes: 'int[]',
    offsets: 'int[]',
    vocabSize: COUNT,
    eosTokenId: INDEX,
  },
  opClass: 'data',
  costFamily: 'other',
  shape: (ins, a, r) => {
    const t = r.port(ins, 0, 'tokens');
    if (t.shape.length !== 1) r.fail(`input 'tokens' must be 1-D, got [${t.shape.join(',')}]`);
    const heads = (num(a, 'ngramSize') - 1) * num(a, 'headsPerNgram');
    const m = a.multipliers;
    if (!Array.isArray(m) || m.length !== num(a, 'ngramSize') || !m.every((v) => typeof v === 'string' && DECIMAL.test(v))) {
      r.fail(`attribute 'multipliers' must be ngramSize = ${num(a, 'ngramSize')} decimal strings, got ${JSON.stringify(m)}`);
    }
    for (const name of ['vocabSizes', 'offsets']) {
      const v = a[name] as number[];
      if (v.length !== heads) r.fail(`attribute '${name}' lists ${v.length} heads, expected (ngramSize-1)*headsPerNgram = ${heads}`);
    }
    return [info([t.shape[0], heads], 'i32')];
  },
  // a native device runs it with its own 64-bit kernel (DeviceOps.runsHostOp); WGSL has no int64
  host: true,
});

export const pleNgramEmbed = defineOp({
  name: 'pleNgramEmbed',
  doc: 'E[t] = concat over heads h of table[ids[t,h]]: ids [T,heads] i32 (offsets included), table the padded `ngram_embedding.weight` [rows, headDim] -> [T, heads*headDim]. Exact (a gather); an id outside the table is an error.',
  inputs: [i32('ids'), weight('table')],
  outputs: [bf16('e')],
  attrs: {},
  opClass: 'data',
  costFamily: 'other',
  // the table is the size of the checkpoint's PLE (102 GB bf16 for Flash-Next): its rows are
  // read from the checkpoint as the ids need them, on the host, on every backend
  host: true,
  gathersRows: { table: 1 },
  shape: (ins, _, r) => {
    const [rows, heads] = r.mat(ins, 0, 'ids');
    const [, d] = r.mat(ins, 1, 'table');
    return [info([rows, heads * d], 'bf16')];
  },
});

export const pleNgramEmbedShard = defineOp({
  name: 'pleNgramEmbedShard',
  doc: "pleNgramEmbed on one rank's vocab slice of the table (ATOM `VocabParallelEmbedding` / `_Qwen4ExpFP8Embedding`): ids [T,heads] i32 (offsets included), table the rows [rowStart, rowStart + rows) of the padded table (`tableRows` rows in all) -> [T, heads*headDim], a head's row copied when its id falls in the slice and -0.0 (bf16 0x8000) everywhere else, so that the ranks' all-reduce (one slice holds each id; -0.0 + x = x for every x, -0.0 included) gives the whole table's lookup bit for bit, in any order of adds. ATOM masks with +0.0, which turns a -0.0 table value into +0.0. Exact; an id outside [0, tableRows) is an error.",
  inputs: [i32('ids'), weight('table')],
  outputs: [bf16('e')],
  attrs: { rowStart: INDEX, tableRows: COUNT },
  opClass: 'data',
  costFamily: 'other',
  shape: (ins, a, r) => {
    const [rows, heads] = r.mat(ins, 0, 'ids');
    const [slice, d] = r.mat(ins, 1, 'table');
    if (num(a, 'rowStart') + slice > num(a, 'tableRows'))
      r.fail(`the slice [${num(a, 'rowStart')}, ${num(a, 'rowStart') + slice}) ends past the table's ${num(a, 'tableRows')} rows`);
    return [info([rows, heads * d], 'bf16')];
  },
});

export const pleRms1pNorm = defineOp({
  name: 'pleRms1pNorm',
  doc: 'Grouped RMS1p norm (norm_key, norm_query, norm_conv): per row and group of width/groups columns, rstd = 1/sqrt(fp32(sum x^2 / groupSize) + eps) with the sum in fp32 in canonical reduction order v1 (numerics/canonicalSum.ts: 64 lanes of 8-term chunks 512 apart, then the xor butterfly) (two correctly rounded steps), y = bf((x * rstd) * fp32(1 + w)), one rounding; w [width] stored as an offset from 0.',
  inputs: [bf16('x'), weight('weight')],
  outputs: [bf16('y')],
  attrs: { groups: COUNT, eps: 'float' },
  opClass: 'reduction',
  costFamily: 'other',
  shape: (ins, a, r) => {
    const [x, , width] = r.matrixPort(ins, 0, 'x');
    r.split(width, num(a, 'groups'), "input 'x'");
    r.vec(ins, 1, 'weight', width);
    return [info(x.shape, 'bf16')];
  },
});

export const pleGate = defineOp({
  name: 'pleGate',
  doc: 'Per row t and stream s, from the normed key k and query q [T, n*H] (stream s = columns s*H..): p_j = bf(k_j q_j), sc = bf(bf(fp32 sum of p_j in canonical reduction order v1) / fp32(sqrt(H))), root = bf(sqrt(bf(max(|sc|, fp32(1e-6))))), gate = bf(sigmoid(sign(sc) * root)) with sign(0) = 0 -> gate [T, n] bf16.',
  inputs: [bf16('k'), bf16('q')],
  outputs: [bf16('gate')],
  attrs: { streams: COUNT },
  opClass: 'reduction',
  costFamily: 'other',
  shape: (ins, a, r) => {
    const [k, rows, width] = r.matrixPort(ins, 0, 'k');
    r.split(width, num(a, 'streams'), "input 'k'");
    r.sameAs(ins, 1, 'q', k);
    return [info([rows, num(a, 'streams')], 'bf16')];
  },
});

export const pleGatedValue = defineOp({
  name: 'pleGatedValue',
  doc: 'G[t, s*H+j] = bf(gate[t,s] * value[t,j]): gate [T,n] bf16, value [T,H] bf16 -> [T,n*H].',
  inputs: [bf16('gate'), bf16('value')],
  outputs: [bf16('g')],
  attrs: { streams: COUNT },
  opClass: 'elementwise',
  costFamily: 'other',
  shape: (ins, a, r) => {
    const [rows, h] = r.mat(ins, 1, 'value');
    r.mat(ins, 0, 'gate', num(a, 'streams'), rows);
    return [info([rows, num(a, 'streams') * h], 'bf16')];
  },
});

export const pleConvSilu = defineOp({
  name: 'pleConvSilu',
  doc: 'out = bf(G + bf(silu(bf(conv)))), conv[t,c] = sum_{i=0..K-1} w[c,0,i] * Gn[t-(K-1-i)*dilation, c], fp32 from tap 0 (oldest), zeros before the start (causal depthwise conv1d, `conv1d.weight` [C,1,K]); silu(x) = x * sigmoid(x) in fp32; Gn the normed G.',
  inputs: [bf16('gNormed'), bf16('g'), weight('weight')],
  outputs: [bf16('out')],
  attrs: { dilation: COUNT },
  opClass: 'reduction',
  costFamily: 'other',
  shape: (ins, _, r) => {
    const [g, , c] = r.matrixPort(ins, 1, 'g');
    r.sameAs(ins, 0, 'gNormed', g);
    const w = r.port(ins, 2, 'weight');
    if (w.shape.length !== 3 || w.shape[0] !== c || w.shape[1] !== 1 || !(w.shape[2] >= 1))
      r.fail(`input 'weight' is [${w.shape.join(',')}], expected [${c},1,K]`);
    return [info(g.shape, 'bf16')];
  },
});
