// One rank of mpiCommunicator.test.ts, started by mpirun (node --import tsx). Every rank
// makes every rank's seeded inputs, computes core's simulated collective for them (the
// reference) and runs the real one through the MpiCommunicator; rank 0 prints one JSON line
// with what differed and the bytes every rank sent. argv: mode ('collectives' | 'truncate')
// and the ordered fold ('mpiOp' | 'loop').
import {
  allGather,
  allReduce,
  commBytesOf,
  f32ToBf16,
  reduceScatter,
  ringBlocks,
  type GraphNode,
  type OpName,
  type ReduceAlgorithm,
  type Tensor,
} from '@hcsp/core';
import { MpiCommunicator, type OrderedFold } from '../../packages/backend-rocm/src/comm/mpiCommunicator.ts';
import { mulberry32 } from './mulberry32.ts';

const mode = process.argv[2] ?? 'collectives';
const fold = (process.argv[3] ?? 'mpiOp') as OrderedFold;
const comm = MpiCommunicator.open({ fold });
const { rank, tp } = comm;

/** bf16 values over 2^-10 .. 2^10 with both signs, so that the order of the adds shows in the bits */
function bf16Data(seed: number, n: number): Uint16Array {
  const rng = mulberry32(seed);
  return Uint16Array.from({ length: n }, () => f32ToBf16((rng() < 0.5 ? -1 : 1) * 2 ** Math.floor(rng() * 20 - 10) * (1 + rng())));
}

function node(id: number, op: OpName, attrs: Record<string, unknown>): GraphNode {
  return { id, op, rank: null, inputs: [], outputs: [], attrs, scope: `test.case${id}`, layer: -1 };
}

function sameBits(a: Tensor, b: Tensor): boolean {
  if (a.dtype !== b.dtype || a.shape.join() !== b.shape.join()) return false;
  const x = new Uint8Array(a.data.buffer, a.data.byteOffset, a.data.byteLength);
  const y = new Uint8Array(b.data.buffer, b.data.byteOffset, b.data.byteLength);
  return x.length === y.length && x.every((v, i) => v === y[i]);
}

type Case = {
  op: 'allReduce' | 'reduceScatter' | 'allGather';
  algorithm: ReduceAlgorithm | null;
  shape: number[];
  dtype: 'bf16' | 'f32' | 'i32';
  channels?: number;
  chunkElems?: number;
};

function cases(): Case[] {
  const out: Case[] = [];
  for (const algorithm of ['ring', 'oneshot', 'ordered'] as const) {
    for (const shape of [[1], [37], [40, 32], [4099]]) out.push({ op: 'allReduce', algorithm, shape, dtype: 'bf16' });
    // ring layouts with several loops and uneven blocks
    out.push({ op: 'allReduce', algorithm, shape: [1000], dtype: 'bf16', channels: 3, chunkElems: 16 });
    out.push({ op: 'allReduce', algorithm, shape: [777], dtype: 'bf16', channels: 1, chunkElems: 100 });
    for (const [c, cols] of [
      [1, 1],
      [10, 32],
      [3, 33],
    ])
      out.push({ op: 'reduceScatter', algorithm, shape: [c * tp, cols], dtype: 'bf16' });
  }
  for (const dtype of ['bf16', 'f32', 'i32'] as const)
    for (const shape of [
      [3, 5],
      [10, 32],
      [0, 4],
    ])
      out.push({ op: 'allGather', algorithm: null, shape, dtype });
  return out;
}

function input(c: Case, index: number, r: number): Tensor {
  const n = c.shape.reduce((a, b) => a * b, 1);
  const seed = 7919 * index + r;
  if (c.dtype === 'bf16') return { dtype: 'bf16', shape: c.shape, data: bf16Data(seed, n) };
  const rng = mulberry32(seed);
  return c.dtype === 'f32'
    ? { dtype: 'f32', shape: c.shape, data: Float32Array.from({ length: n }, () => rng() * 1000 - 500) }
    : { dtype: 'i32', shape: c.shape, data: Int32Array.from({ length: n }, () => Math.floor(rng() * 2 ** 32) | 0) };
}

function reference(c: Case, ins: Tensor[]): Tensor[] {
  if (c.op === 'allGather') return allGather(ins);
  if (c.op === 'reduceScatter') return reduceScatter(ins, c.algorithm!);
  return allReduce(ins, { algorithm: c.algorithm!, channels: c.channels, chunkElems: c.chunkElems });
}

/** whether every rank sends the same bytes (commBytes.ts gives the mean over ranks): the segments are equal */
function even(c: Case): boolean {
  const n = c.shape.reduce((a, b) => a * b, 1);
  if (c.op !== 'allReduce' || c.algorithm === 'oneshot') return true;
  if (c.algorithm === 'ordered') return n % tp === 0;
  const owned = new Array(tp).fill(0);
  for (const b of ringBlocks(n, tp, { channels: c.channels ?? 2, chunkElems: c.chunkElems ?? 1_048_576 })) owned[b.owner] += b.end - b.start;
  return owned.every((v) => v === owned[0]);
}

async function collectives(): Promise<Record<string, unknown>> {
  const list = cases();
  const differing: string[] = [];
  const sent: number[] = [];
  const expected: number[] = [];
  for (const [i, c] of list.entries()) {
    const ins = Array.from({ length: tp }, (_, r) => input(c, i, r));
    const want = reference(c, ins)[rank];
    const attrs: Record<string, unknown> = c.algorithm ? { algorithm: c.algorithm } : {};
    if (c.channels !== undefined) Object.assign(attrs, { channels: c.channels, chunkElems: c.chunkElems });
    const before = comm.bytesSent()[c.op];
    const [got] = await comm.collective(node(i, c.op, attrs), [ins[rank]]);
    sent.push(comm.bytesSent()[c.op] - before);
    const bytesIn = ins[rank].data.byteLength;
    expected.push(commBytesOf(c.op, c.algorithm, bytesIn, c.op === 'allReduce' ? bytesIn : c.op === 'reduceScatter' ? bytesIn / tp : bytesIn * tp, tp));
    if (!sameBits(got, want)) differing.push(`${c.op} ${c.algorithm ?? ''} ${c.dtype}[${c.shape}] ${c.channels ?? ''}`);
  }
  // the orders differ somewhere (else a test of the orders would prove nothing)
  let ordersDiffer = 0;
  for (const [i, c] of list.entries()) {
    if (c.op !== 'allReduce' || c.algorithm !== 'ring') continue;
    const ins = Array.from({ length: tp }, (_, r) => input(c, i, r));
    const [ring, oneshot, ordered] = (['ring', 'oneshot', 'ordered'] as const).map(
      (algorithm) => allReduce(ins, { algorithm, channels: c.channels, chunkElems: c.chunkElems })[0],
    );
    if (!sameBits(ring, ordered) || !sameBits(oneshot, ordered)) ordersDiffer++;
  }
  const everyRank = await comm.gatherControl(Float64Array.from([...sent, differing.length]));
  // ranks that disagree refuse together, naming every rank's call, and the world stays usable
  const x = { dtype: 'bf16' as const, shape: [rank === 1 ? 8 : 4], data: bf16Data(1, rank === 1 ? 8 : 4) };
  const mismatch = await comm.collective(node(900, 'allReduce', { algorithm: 'ordered' }), [x]).then(
    () => null,
    (e: Error) => ({ name: e.name, message: e.message }),
  );
  const otherNode = await comm.collective(node(901 + rank, 'allGather', {}), [{ dtype: 'bf16', shape: [1], data: bf16Data(2, 1) }]).then(
    () => null,
    (e: Error) => ({ name: e.name, message: e.message }),
  );
  const after = await comm.collective(node(903, 'allGather', {}), [{ dtype: 'i32', shape: [1], data: Int32Array.of(rank) }]);
  // the collectives run off the JS thread: while rank 0 waits for a late peer, its event loop turns
  if (rank === 1) await new Promise((r) => setTimeout(r, 600));
  let ticks = 0;
  const timer = setInterval(() => ticks++, 10);
  const t0 = performance.now();
  await comm.collective(node(904, 'allGather', {}), [{ dtype: 'i32', shape: [1], data: Int32Array.of(rank) }]);
  const waitedMs = performance.now() - t0;
  clearInterval(timer);
  return {
    cases: list.length,
    differing,
    differingPerRank: everyRank.map((v) => v[list.length]),
    sentPerRank: everyRank.map((v) => Array.from(v.subarray(0, list.length))),
    expected,
    even: list.map(even),
    ops: list.map((c) => c.op),
    ordersDiffer,
    mismatch,
    otherNode,
    afterMismatch: Array.from(after[0].data),
    waitedMs,
    ticks,
    control: comm.bytesSent().control,
  };
}

async function truncate(): Promise<Record<string, unknown>> {
  // without the agreement check, ranks with different sizes fail inside the pattern: the
  // longer message truncates in MPI, the shorter one fails the count check
  const addonComm = MpiCommunicator.open({ fold, check: false });
  const errs = await addonComm
    .collective(node(1, 'allGather', {}), [{ dtype: 'i32', shape: [rank === 1 ? 2 : 4], data: new Int32Array(rank === 1 ? 2 : 4) }])
    .then(
      () => null,
      (e: Error & { call?: string; mpiErrorClass?: string }) => ({ name: e.name, call: e.call, mpiErrorClass: e.mpiErrorClass, message: e.message }),
    );
  const refused = await addonComm.collective(node(2, 'allGather', {}), [{ dtype: 'i32', shape: [1], data: new Int32Array(1) }]).then(
    () => null,
    (e: Error) => e.message,
  );
  return { rank, errs, refused };
}

const result = mode === 'truncate' ? await truncate() : await collectives();
if (mode === 'truncate') {
  // every rank reports its own error
  process.stdout.write(`${JSON.stringify(result)}\n`);
} else if (rank === 0) {
  process.stdout.write(`${JSON.stringify({ tp, fold, ...result })}\n`);
}
await comm.finalize();
