// The physics a roofline leaves out (issue 27), each a pure function of the problem's size and
// the device's figures, never fitted to a throughput gain. Each is one named term that the cost
// model applies and can leave out (PhysicsTerm), so a report can say what each one moved.
//
// Sources:
// - Wave quantization and tile padding: a GEMM library computes C in tiles of tileM x tileN,
//   one tile per CU at a time; a partial last wave leaves CUs idle and a partial tile computes
//   its padding. NVIDIA, "Matrix Multiplication Background User's Guide" (Deep Learning
//   Performance docs, sections "Tile quantization" and "Wave quantization"). The same holds for
//   hipBLASLt's macro tiles on CDNA (the MAF blog below recommends sizes that "evenly
//   distribute work" over the CUs for the same reason).
// - The library's achieved fraction at a well-shaped large GEMM (measured, not the data sheet):
//   stas00/ml-engineering, compute/accelerator/README.md "Maximum Achievable Matmul FLOPS
//   comparison table": MI300X BF16 781.9 of 1300 TFLOPS (60.1%, ROCm 6.2, shape
//   4096x10240x4864), H100 SXM 792.1 of 989 (80.1%, CUDA 12.1); AMD's "Measuring Max-Achievable
//   FLOPs, part 2" (rocm.blogs.amd.com) for the method. It is a device figure (gemmFraction).
// - Memory ramp: a kernel cannot stream before its first loads return, so moving B bytes takes
//   about latency + B / bandwidth (Little's law: the bytes in flight needed to hold the
//   bandwidth are bandwidth x latency); the achieved bandwidth of a small elementwise kernel is
//   B / (B + bandwidth x latency) of the ceiling. The latency is a device figure
//   (memoryLatencyUs, an HBM load-to-use latency of order a microsecond).
// - Collectives: the latency-bandwidth (alpha-beta) model nccl-tests' bus bandwidth follows:
//   t = alpha + busBytes / beta, so the achieved bus bandwidth busBytes / t rises with the
//   message size and reaches half of beta at the knee busBytes = alpha x beta (NVIDIA
//   nccl-tests doc/PERFORMANCE.md for the bus accounting; the measured curves in
//   NVIDIA/nccl#583 and the tables in ROCm/rccl-tests issues show the flat-latency region and
//   the rise). beta is the links' usable bandwidth: on gfx94x xGMI 48 of the 64 GB/s per link
//   and direction after CRC and protocol overhead (AMD ROCm blog "Understanding RCCL
//   Bandwidth and xGMI Performance on AMD Instinct MI300X", 2025; RCCL maintainer in
//   ROCm/rccl#1210: "the max theoretical per-direction bandwidth for gfx94 devices is 48GB/s").

/** The terms beyond the roofline the model can apply; all by default. */
export const PHYSICS_TERMS = {
  gemmWaves: 'GEMM wave quantization over the CUs and tile padding (the rows a rank gets, T/tp or T)',
  gemmLibrary: "the GEMM library's measured achieved fraction of peak at a well-shaped large GEMM",
  memoryRamp: "every kernel's memory ramp (latency + bytes / bandwidth: small kernels' achieved bandwidth)",
} as const;
export type PhysicsTerm = keyof typeof PHYSICS_TERMS;
export const ALL_PHYSICS_TERMS: readonly PhysicsTerm[] = Object.freeze(Object.keys(PHYSICS_TERMS) as PhysicsTerm[]);

export interface TileEfficiency {
  tiles: number;
  waves: number;
  /** useful (m x n) outputs / (waves x CUs x tileM x tileN): the fraction of the matrix units' time doing this GEMM's work */
  fraction: number;
}

function positive(name: string, v: number): void {
  if (!(Number.isFinite(v) && v > 0)) throw new Error(`cost model: ${name} must be a positive number, got ${v}`);
}

/**
 * Wave quantization and tile padding of an m x n output over `cus` compute units with
 * tileM x tileN tiles: ceil(m/tileM) ceil(n/tileN) tiles run in ceil(tiles/cus) waves, each
 * wave as long as one full tile. Example (the case, 256 x 256 tiles, 80 CUs, n 2048):
 * m 1024 is 4 x 8 = 32 tiles in one wave, 32/80 of the CUs busy: 0.4; m 4096 is 128 tiles in
 * two waves (160 slots): 0.8.
 */
export function gemmTileEfficiency(m: number, n: number, cus: number, tileM: number, tileN: number): TileEfficiency {
  for (const [k, v] of [
    ['m', m],
    ['n', n],
    ['cus', cus],
    ['tileM', tileM],
    ['tileN', tileN],
  ] as const)
    positive(k, v);
  const tiles = Math.ceil(m / tileM) * Math.ceil(n / tileN);
  const waves = Math.ceil(tiles / cus);
  return { tiles, waves, fraction: (m * n) / (waves * cus * tileM * tileN) };
}

/**
 * A grouped GEMM (one launch over several groups, e.g. the MoE experts): the groups' tiles
 * share the waves, each group padded to whole tiles.
 */
export function groupedTileEfficiency(groupRows: readonly number[], n: number, cus: number, tileM: number, tileN: number): TileEfficiency {
  positive('n', n);
  let tiles = 0;
  let useful = 0;
  for (const m of groupRows) {
    if (m <= 0) continue;
    tiles += Math.ceil(m / tileM) * Math.ceil(n / tileN);
    useful += m * n;
  }
  if (tiles === 0) return { tiles: 0, waves: 0, fraction: 1 };
  const waves = Math.ceil(tiles / cus);
  return { tiles, waves, fraction: useful / (waves * cus * tileM * tileN) };
}

/**
 * The library's choice among its tiles: the device's large tile and its halves (tileM/2 x
 * tileN, tileM x tileN/2, tileM/2 x tileN/2: hipBLASLt and cuBLAS both carry such tile
 * families, and their heuristics pick the one that wastes least on a skinny or short GEMM).
 * The pick maximizes the wave/tile fraction; a smaller tile's lower operand reuse is not
 * priced (so this is the library at its best for the shape).
 */
export function libraryTileEfficiency(
  groupRows: readonly number[],
  n: number,
  cus: number,
  tileM: number,
  tileN: number,
): TileEfficiency & { tileM: number; tileN: number } {
  let best: (TileEfficiency & { tileM: number; tileN: number }) | null = null;
  for (const [tm, tn] of [
    [tileM, tileN],
    [tileM / 2, tileN],
    [tileM, tileN / 2],
    [tileM / 2, tileN / 2],
  ]) {
    const e = groupedTileEfficiency(groupRows, n, cus, tm, tn);
    if (!best || e.fraction > best.fraction) best = { ...e, tileM: tm, tileN: tn };
  }
  return best!;
}

/** Seconds to move `bytes` at `bytesPerSecond` after a first-byte latency: the memory ramp. */
export function rampedMemorySeconds(bytes: number, bytesPerSecond: number, latencySeconds: number): number {
  if (bytes <= 0) return 0;
  return latencySeconds + bytes / bytesPerSecond;
}

/** The achieved fraction of the bandwidth a kernel moving `bytes` gets: bytes / (bytes + bandwidth x latency). */
export function rampedBandwidthFraction(bytes: number, bytesPerSecond: number, latencySeconds: number): number {
  return bytes / (bytes + bytesPerSecond * latencySeconds);
}

/** A collective's seconds in the alpha-beta model: latency + bus bytes / usable bus bandwidth. */
export function collectiveSeconds(busBytes: number, latencySeconds: number, busBytesPerSecond: number): number {
  return latencySeconds + busBytes / busBytesPerSecond;
}

/** The message (bus bytes) at which the achieved bus bandwidth is half the links': alpha x beta. */
export function collectiveKneeBytes(latencySeconds: number, busBytesPerSecond: number): number {
  return latencySeconds * busBytesPerSecond;
}
