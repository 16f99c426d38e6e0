// qsaSelect: the QSA indexer's per-row top-k over block scores (core qsaIndexer
// qsaBlockScores + qsaSelectBlocks), in two dispatches.
//
// 1. Scores, one invocation per (row r, block b) visible to the row:
//      score = fr(sum_h max(dot_d(q_rh, kb_b), 0) / fr(sqrt(headDim)))
//    dot in d order (exact bf16 products, one rounding per add), heads in order, IEEE
//    division, stored as fp32 bits in a [rows, nb] scratch buffer.
// 2. Selection, one workgroup per row. The scores are >= 0 (a relu sum), so their fp32 bit
//    patterns order as the values do; the width-th largest is found exactly by a radix
//    select over the 32 bits, 8 bits per pass (a 256-bin histogram of the scores whose
//    higher bits match the digits chosen so far, counted with atomics, so the counts do
//    not depend on the order; one invocation then walks the bins from the top). That gives
//    the threshold thr and `need`, how many of the scores equal to thr are taken. The row's
//    blocks are then written in ascending order by a workgroup prefix sum over the flags
//    (above thr, equal to thr): block b goes to slot aboveBefore(b) + min(tiesBefore(b),
//    need) when it is above thr or a tie with tiesBefore(b) < need, so ties go to the lower
//    block index, as in the CPU reference. Rows that see at most `width` blocks list them
//    all; rows at or past `tokens` (sequence-parallel padding) are all -1.
// Cost per row with v visible blocks: v dots of nHeads * headDim (dispatch 1); 4 passes of
// v loads and atomic adds, 4 serial walks of at most 256 bins, and ceil(v / 64) prefix-sum
// rounds of 2 log2(64) + 2 barriers (dispatch 2). NaN scores (the CPU throws on them) are
// not detected here.
import { torchCpuTiesRefusal } from '@hcsp/core';
import type { KernelPlanner } from '../kernelProgram.ts';
import { BF16_WGSL } from '../wgsl/bf16.wgsl.ts';
import { buf, preamble } from '../wgsl/bindings.wgsl.ts';
import { f32Bits, flatDispatch, flatMain, readInput, readScratch, writeOutput, writeScratch } from './planParts.ts';

const SCORE_WG = 64;
const WG = 64;
const SCORES = 'scores';

const SCORES_PRE = preamble(
  ['rows', 'nb', 'r0', 'tokens', 'ratio', 'divisor', 'groupsX'],
  [buf('q', readInput(0)), buf('kb', readInput(1)), buf('scores', writeScratch(SCORES))],
);

function scoresWgsl(nh: number, dh: number): string {
  return `${BF16_WGSL}
const NH: u32 = ${nh}u;
const HW: u32 = ${dh / 2}u; // words per head row
${SCORES_PRE.wgsl}
${flatMain(
  SCORE_WG,
  'u.rows * u.nb',
  `let r = inv / u.nb;
  let b = inv % u.nb;
  let p = u.r0 + r;
  if (p >= u.tokens || b >= (p + 1u) / u.ratio) { return; } // never read
  var score: f32 = 0.0;
  for (var h = 0u; h < NH; h = h + 1u) {
    let qw = (r * NH + h) * HW;
    var dot: f32 = 0.0;
    for (var i = 0u; i < HW; i = i + 1u) {
      let qq = q[qw + i];
      let kk = kb[b * HW + i];
      dot = dot + bf16_lo(qq) * bf16_lo(kk);
      dot = dot + bf16_hi(qq) * bf16_hi(kk);
    }
    score = score + max(dot, 0.0);
  }
  scores[inv] = bitcast<u32>(score / bitcast<f32>(u.divisor));`,
)}`;
}

const SELECT = preamble(
  ['rows', 'nb', 'r0', 'tokens', 'ratio', 'width', 'groupsX'],
  [buf('scores', readScratch(SCORES)), buf('blocks', writeOutput(0), 'i32')],
);
const SELECT_WGSL = `
const WG: u32 = ${WG}u;
${SELECT.wgsl}
var<workgroup> hist: array<atomic<u32>, 256>;
// the digits chosen so far, their mask, and the rank still sought among the matching scores
var<workgroup> pick: vec3<u32>;
var<workgroup> flags: array<vec2<u32>, ${WG}>;
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let row = wid.x + wid.y * u.groupsX;
  if (row >= u.rows) { return; }
  let p = u.r0 + row;
  var visible = 0u;
  if (p < u.tokens) { visible = (p + 1u) / u.ratio; }
  let out = row * u.width;
  if (visible <= u.width) {
    for (var i = lid; i < u.width; i = i + WG) { blocks[out + i] = select(-1, i32(i), i < visible); }
    return;
  }
  let base = row * u.nb;
  var prefix = 0u;
  var mask = 0u;
  var k = u.width;
  for (var round = 0u; round < 4u; round = round + 1u) {
    let shift = 24u - 8u * round;
    for (var i = lid; i < 256u; i = i + WG) { atomicStore(&hist[i], 0u); }
    workgroupBarrier();
    for (var b = lid; b < visible; b = b + WG) {
      let bits = scores[base + b];
      if ((bits & mask) == prefix) { atomicAdd(&hist[(bits >> shift) & 255u], 1u); }
    }
    workgroupBarrier();
    if (lid == 0u) {
      // the digit d holding the k-th largest: fewer than k above it, at least k from it up
      var above = 0u;
      var d = 255u;
      loop {
        let c = atomicLoad(&hist[d]);
        if (above + c >= k || d == 0u) { break; }
        above = above + c;
        d = d - 1u;
      }
      pick = vec3<u32>(prefix | (d << shift), mask | (255u << shift), k - above);
    }
    workgroupBarrier();
    prefix = pick.x;
    mask = pick.y;
    k = pick.z;
  }
  // prefix is the threshold's bits; k of the scores equal to it are taken
  var carry = vec2<u32>(0u, 0u);
  for (var c0 = 0u; c0 < visible; c0 = c0 + WG) {
    let b = c0 + lid;
    var f = vec2<u32>(0u, 0u);
    if (b < visible) {
      let bits = scores[base + b];
      if (bits > prefix) { f.x = 1u; } else if (bits == prefix) { f.y = 1u; }
    }
    flags[lid] = f;
    workgroupBarrier();
    for (var off = 1u; off < WG; off = off * 2u) {
      var add = vec2<u32>(0u, 0u);
      if (lid >= off) { add = flags[lid - off]; }
      workgroupBarrier();
      flags[lid] = flags[lid] + add;
      workgroupBarrier();
    }
    let before = carry + flags[lid] - f;
    if (f.x == 1u || (f.y == 1u && before.y < k)) { blocks[out + before.x + min(before.y, k)] = i32(b); }
    carry = carry + flags[WG - 1u];
    workgroupBarrier();
  }
}`;

export const qsaSelectPlanner: KernelPlanner = (inputs, _outputs, attrs) => {
  const op = 'qsaSelect';
  const [r0, tokens, nh, dh, ratio, width] = ['r0', 'tokens', 'nHeads', 'headDim', 'compressRatio', 'width'].map((name) => attrs[name] as number);
  if (attrs.ties === 'torch-cpu') throw new Error(torchCpuTiesRefusal(op, 'webgpu'));
  if (dh % 2 !== 0) throw new Error(`${op}: headDim ${dh} must be even (rows are read as whole packed words)`);
  const [rows] = inputs[0]!.shape;
  const nb = Math.floor(tokens / ratio);
  if (rows === 0) return { scratch: [], dispatches: [] };
  // one workgroup per row
  const selectDispatch = flatDispatch('qsa-select', SELECT_WGSL, SELECT.bindings, rows * WG, WG, [rows, nb, r0, tokens, ratio, width]);
  if (nb === 0) return { scratch: [{ name: SCORES, words: 1 }], dispatches: [selectDispatch] };
  const scoreUniforms = [rows, nb, r0, tokens, ratio, f32Bits(Math.sqrt(dh))];
  return {
    scratch: [{ name: SCORES, words: rows * nb }],
    dispatches: [flatDispatch(`qsa-scores-h${nh}d${dh}`, scoresWgsl(nh, dh), SCORES_PRE.bindings, rows * nb, SCORE_WG, scoreUniforms), selectDispatch],
  };
};

/** qsaKeptCount: one invocation per row t: ratio * (listed blocks) + the tail t + 1 - floor((t+1)/ratio)*ratio. */
const KEPT = preamble(['rows', 'width', 'ratio', 'groupsX'], [buf('blocks', readInput(0), 'i32'), buf('kept', writeOutput(0), 'i32')]);
const KEPT_WGSL = `${KEPT.wgsl}
${flatMain(
  WG,
  'u.rows',
  `var listed = 0u;
  for (var i = 0u; i < u.width; i++) { if (blocks[inv * u.width + i] >= 0) { listed++; } }
  let p = inv + 1u;
  kept[inv] = i32(listed * u.ratio + p - (p / u.ratio) * u.ratio);`,
)}`;

export const qsaKeptCountPlanner: KernelPlanner = (inputs, _outputs, attrs) => {
  const ratio = attrs.compressRatio as number;
  const [rows, width] = inputs[0]!.shape;
  if (rows === 0) return { scratch: [], dispatches: [] };
  return { scratch: [], dispatches: [flatDispatch('qsa-kept-count', KEPT_WGSL, KEPT.bindings, rows, WG, [rows, width, ratio])] };
};
