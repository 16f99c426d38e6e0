// What hcsp's own GPU kernels cost (`hcsp model --engine hcsp`, issue 27): ONE declared table,
// keyed by op and kernels mode ('exact': today's reference-order kernels; 'fast': the
// production algorithms of issue 24), each entry the kernel's launch geometry, FLOPs by unit,
// bytes, serial chain and host syncs, read from the GPU sources named in `source`. An op not
// in the table runs as the roofline engine prices it (the vendor BLASLt GEMMs, the fused HC
// and quant kernels at memory speed, the elementwise kernels).
//
// The engine runs the graph as built: one sequence of the graph's T rows (it does not split
// a batch into requests), so the sequence ops (gdnRecurrence, attnCausalQsa) see T rows with
// one causal sequence, where the roofline engine prices production's per-request attention.
import type { GraphNode } from '../../graph/graph.ts';
import { qsaKept, qsaSums } from '../pricing/attentionCost.ts';
import { inputPort } from '../../graph/ops/opDef.ts';
import { getOpDef, type OpName } from '../../graph/ops/registry.ts';
import { bytesOf, ioBytes, num, portBytes, type PricingContext, shapeOf } from '../pricing/types.ts';

export type KernelsMode = 'exact' | 'fast';
export const KERNELS_MODES: readonly KernelsMode[] = ['exact', 'fast'];

/** One op's kernels as the GPU path launches them. */
export interface HcspKernel {
  /** the GPU source and kernels this entry describes */
  source: string;
  launches: number;
  /** work-items resident at once across the device (caps the fraction of the units busy) */
  threads: number;
  /** FLOPs on the fp32 vector units (FMA chains: the fast kernels use no matrix instructions) */
  vectorFlops: number;
  /** FLOPs in double (the exact kernels' unrounded products): half the fp32 vector rate */
  fp64Flops: number;
  /** bytes moved through HBM (inputs, outputs, weights, scratch and state traffic) */
  bytes: number;
  /** dependent steps one work-item runs in sequence (latency-bound kernels) */
  chain: number;
  /** per chain step: dependent ALU operations (each the device's dependent-issue latency) and global-memory round trips */
  stepOps: number;
  stepMemoryTrips: number;
  /** host synchronizations (the engine waits for the device) */
  hostSyncs: number;
  /** device memory the kernels allocate for the op beyond its inputs and outputs (held while it runs) */
  scratchBytes: number;
}

export type HcspKernelFn = (node: GraphNode, ctx: PricingContext) => HcspKernel;

/** Declared per op; absent modes run as the roofline engine prices the op. */
export const HCSP_KERNELS: { readonly [N in OpName]?: Partial<Record<KernelsMode, HcspKernelFn>> } = {
  gdnRecurrence: {
    /**
     * gdn.cu (hcsp_gdn_recurrence): one thread per (value head, state column), T dependent
     * steps; each step reloads its column of S from global memory (stored after every token),
     * u = S^T k and o = S^T q as dk-long sums in order with products in double, the update dk
     * more: 3 dk dependent operations and one memory round trip per step.
     */
    exact: (n, ctx) => {
      const [rows] = shapeOf(ctx, n.inputs[0]);
      const dk = num(n, 'keyDim');
      const dv = num(n, 'valueDim');
      const vh = num(n, 'valueHeads');
      const io = ioBytes(n, ctx);
      return {
        source: 'native/src/gpu/kernels/gdn.cu',
        launches: 1,
        threads: vh * dv,
        vectorFlops: rows * num(n, 'keyHeads') * dk * 2 * 3,
        fp64Flops: rows * vh * 7 * dk * dv,
        bytes: io.actBytes + io.weightBytes + rows * vh * dk * dv * 4 * 2,
        chain: rows,
        stepOps: 3 * dk,
        stepMemoryTrips: 1,
        hostSyncs: 0,
        scratchBytes: vh * dk * dv * 4,
      };
    },
    /**
     * gdn_chunked.cu: chunks of C = 64 (HCSP_GDN_CHUNK). hcsp_gdn_chunk_prep per (value head,
     * chunk), all in parallel, in double (the fp32 chains carried most of the kernel's error):
     * A (C dk per token), P (C dk), the forward substitution for W and U (C (dk + dv) per
     * token); writes G, W, U (fp32 [vh, T, dk|dv]) and P (fp32 [vh, chunks, C, C]).
     * hcsp_gdn_chunk_state per (value head, 16 state columns), the state in shared memory, the
     * chunks in order: delta = U - W S, o = Q S + P delta, the update: 6 dk dv + C dv fp32 per
     * token. Chain: T / C steps of 3 dk dependent FMAs and one memory round trip.
     */
    fast: (n, ctx) => {
      const [rows] = shapeOf(ctx, n.inputs[0]);
      const dk = num(n, 'keyDim');
      const dv = num(n, 'valueDim');
      const vh = num(n, 'valueHeads');
      const C = 64;
      const chunks = Math.ceil(rows / C);
      const io = ioBytes(n, ctx);
      const scratch = vh * rows * (1 + dk + dv) * 4 + vh * chunks * C * C * 4;
      return {
        source: 'native/src/gpu/kernels/gdn_chunked.cu',
        launches: 2,
        threads: Math.max(vh * chunks * 64, (vh * dv * 256) / 16),
        vectorFlops: rows * vh * (6 * dk * dv + C * dv) + rows * num(n, 'keyHeads') * dk * 2 * 3,
        fp64Flops: rows * vh * (2 * C * dk + C * (dk + dv)),
        bytes: io.actBytes + io.weightBytes + 2 * scratch,
        chain: chunks,
        stepOps: 3 * dk,
        stepMemoryTrips: 1,
        hostSyncs: 0,
        scratchBytes: scratch,
      };
    },
  },
  attnCausalQsa: {
    /**
     * attention.cu (hcsp_attention_causal_qsa): one thread per (token, head) walking its kept
     * keys, the q.k dot in double (hd dependent operations per key, then p.v), scores kept in
     * an fp32 scratch p; k and v rows read per (token, kv group) through the cache.
     */
    exact: (n, ctx) => {
      const [rows] = shapeOf(ctx, n.inputs[0]);
      const heads = num(n, 'heads');
      const hd = num(n, 'headDim');
      const ratio = num(n, 'compressRatio');
      const width = num(n, 'width');
      const kept = qsaSums(rows, ratio, width).kept;
      const pairs = kept * heads;
      const io = ioBytes(n, ctx);
      return {
        source: 'native/src/gpu/kernels/attention.cu',
        launches: 1,
        threads: rows * heads,
        vectorFlops: pairs * 5,
        fp64Flops: pairs * 4 * hd,
        bytes: io.actBytes + io.weightBytes + kept * num(n, 'kvHeads') * hd * 2 * 2 + pairs * 4 * 2,
        chain: qsaKept(rows - 1, ratio, width),
        stepOps: 2 * hd,
        stepMemoryTrips: 0,
        hostSyncs: 0,
        // the per-thread score scratch, at most attention_ops.cc's SCRATCH_BUDGET (256 MiB) per launch
        scratchBytes: Math.min(pairs * 4, 256 * 2 ** 20),
      };
    },
    /**
     * attention_tiled.cu (hcsp_attention_tiled_qsa): FlashAttention-2's forward in fp32 FMAs,
     * 32 query rows x 8 lanes per block (256 threads), ceil(T/32) x heads blocks, key tiles of
     * 32 in shared memory loaded once per query tile (the rows of a tile keep mostly the same
     * blocks: counted as one row's kept keys per tile). Chain: a block's key tiles in order,
     * each 32 keys x (hd/8 dependent FMAs + 3 butterfly steps).
     */
    fast: (n, ctx) => {
      const [rows] = shapeOf(ctx, n.inputs[0]);
      const heads = num(n, 'heads');
      const hd = num(n, 'headDim');
      const ratio = num(n, 'compressRatio');
      const width = num(n, 'width');
      const kept = qsaSums(rows, ratio, width).kept;
      const pairs = kept * heads;
      const io = ioBytes(n, ctx);
      return {
        source: 'native/src/gpu/kernels/attention_tiled.cu',
        launches: 1,
        threads: Math.ceil(rows / 32) * heads * 256,
        vectorFlops: pairs * (4 * hd + 5),
        fp64Flops: 0,
        bytes: io.actBytes + io.weightBytes + (pairs / 32) * hd * 2 * 2,
        chain: Math.ceil(qsaKept(rows - 1, ratio, width) / 32),
        stepOps: 32 * (hd / 8 + 3),
        stepMemoryTrips: 1,
        hostSyncs: 0,
        scratchBytes: 0,
      };
    },
  },
  moeExperts: {
    /**
     * moe.cu's layout kernels + gemm.cu's hcsp_gemm_grouped_bf16 (the exact GEMM, one launch
     * per projection): every routed row against its expert's weight in fp32 FMAs in k order,
     * weights read once per row tile of 4. Balanced routing as the roofline's.
     */
    exact: (n, ctx) => moeKernel(n, ctx, 'native/src/gpu/kernels/moe.cu + gemm.cu (hcsp_gemm_grouped_bf16)', 4, 6, 3),
    /**
     * moe_grouped.cu: rows sorted by expert, M-tiles of 64 (HCSP_MOE_TILE_M) that never
     * straddle two experts (each expert's last tile padded), gate-up with the SwiGLU fused,
     * then down; fp32 FMAs; a block stages its expert's weight slab once per M-tile.
     */
    fast: (n, ctx) => moeKernel(n, ctx, 'native/src/gpu/kernels/moe_grouped.cu', 64, 5, 1),
  },
  moeExpertsFp8Ptpc: {
    /**
     * moe_fp8.cu on moe.cu's layout: one thread per output (gate-up, then the per-row quant of
     * h, then down), each summing its k in order in fp32 FMAs on the decoded FP8 bytes: weights
     * read once per routed row.
     */
    exact: (n, ctx) => moeKernel(n, ctx, 'native/src/gpu/kernels/moe_fp8.cu (one thread per output)', 1, 6, 2),
    /** moe_fp8.cu's tiled kernels: 16 routed rows of one expert against 16 weight rows, k staged in shared memory, in order */
    fast: (n, ctx) => moeKernel(n, ctx, 'native/src/gpu/kernels/moe_fp8.cu (16-row tiles)', 16, 6, 2),
  },
};

/** `rowBuffers`: the [T x topK, I] bf16 buffers the kernels allocate for the routed rows (worst case, moe_ops.cc): gate-up out, h (exact) or h alone (fast, SwiGLU fused) */
function moeKernel(n: GraphNode, ctx: PricingContext, source: string, tileRows: number, launches: number, rowBuffers: number): HcspKernel {
  // the routed rows are input 0 (x, or its FP8 bytes); weights and activations as the op declares them
  const [rows, h] = shapeOf(ctx, n.inputs[0]);
  const k = shapeOf(ctx, n.inputs[inputPort(getOpDef(n.op), 'ids')])[1];
  const local = num(n, 'numLocal');
  const i = num(n, 'intermediate');
  const pairs = (rows * k * local) / ctx.config.moe.numExperts;
  const perExpertRows = pairs / local;
  // each expert's rows padded to whole M-tiles: the padding rows are computed too
  const tiles = local * Math.ceil(perExpertRows / tileRows);
  const computedRows = pairs > 0 ? tiles * tileRows : 0;
  const weights = portBytes(n, ctx, 'weight');
  const act = portBytes(n, ctx, 'activation') + bytesOf(ctx, n.outputs[0]);
  return {
    source,
    launches,
    threads: Math.max(1, tiles) * 256,
    vectorFlops: computedRows * (2 * h * 2 * i + 2 * i * h) + pairs * (5 * i + 3 * h),
    fp64Flops: 0,
    // weights once per M-tile of their expert; the routed rows' x gathered, h written and read
    bytes: act + (weights / local) * tiles + pairs * (h + i) * 2 * 2,
    chain: 0,
    stepOps: 0,
    stepMemoryTrips: 0,
    hostSyncs: 0,
    // the routed rows' token and pair ids (i32 each) and the bf16 row buffers, sized for all T x topK pairs
    scratchBytes: rows * k * (8 + rowBuffers * i * 2),
  };
}

/** The most scratch one declared kernel of `part` (a rank's part of a graph) allocates: the hcsp engine's memory beyond the graph's values. */
export function hcspScratchPeak(nodes: readonly GraphNode[], ctx: PricingContext, kernels: KernelsMode): number {
  let peak = 0;
  for (const node of nodes) {
    const declared = HCSP_KERNELS[node.op]?.[kernels];
    if (declared) peak = Math.max(peak, declared(node, ctx).scratchBytes);
  }
  return peak;
}

/** The engine's collectives: the device-buffer path of the nccl communicator, one host sync each (native/src/gpu/nccl_communicator.cc). */
export const HCSP_COLLECTIVE_HOST_SYNCS = 1;
