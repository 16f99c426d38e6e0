import type { BackendPrecision, ClassPrecision, ToleranceClass } from '@hcsp/core';

// The GPU devices' production kernels (kernels 'fast': chunked GatedDeltaNet, tiled attention,
// grouped MoE) reorder sums the reference adds in order. Each declares its tolerance here, as
// measured on the emulated device against the CPU reference, with why it holds; an op class
// takes the largest of its ops' and of the GEMM mode's own.

interface FastKernelTolerance extends ClassPrecision {
  /** the op's tolerance class (its declaration's opClass) */
  opClass: ToleranceClass;
}

export const FAST_KERNEL_TOLERANCES: Readonly<Record<string, FastKernelTolerance>> = {
  gdnRecurrence: {
    opClass: 'sequence',
    maxUlp: 2,
    note:
      'gdnRecurrence: chunked (chunks of 64, WY form; the chunk solve in double, the state pass in fp32 with FMAs, cumulative log decays in double) against the per-token reference: ' +
      "measured at most 1 row-scaled ulp (T 1-4096, dk 16-128, no, mild and strong decay; 99.9%+ of elements bit-exact; 1 where a row's largest element flips), " +
      'and where the two differ it is the farther from float64 on about a quarter of the elements; 2 leaves room for rows that cancel more',
  },
  attnCausalQsa: {
    opClass: 'sequence',
    maxUlp: 1,
    note: "attnCausalQsa: tiled online-softmax kernel; its scores are the reference's bits, only the fp32 sums l and p.v (tile order, FMA, rescaled when the running max grows) differ, by ~keys x 2^-24 relative, far under a bf16 ulp: at most one bf16 rounding flip of an output, 1 row-scaled ulp (measured max 0.5)",
  },
  moeExperts: {
    opClass: 'gemm',
    maxUlp: 2,
    note:
      'moeExperts: the grouped GEMMs (moe_grouped.cu) sum each output over 32-term k tiles, the tiles added once each (fp32); that moves a sum far less than half a bf16 ulp, ' +
      "so a difference is an intermediate (gate, up, h or o) rounding to the other bf16 neighbour, which moves one weighted contribution by at most 1 ulp of it, so at most 1 ulp of the row's largest output; " +
      'measured at most 1 (mean 0.0007) row-scaled ulp on the emulated device (gpuGroupedMoe.test.ts); 2 allows two such flips in one output, the bound the vendor GEMM declares',
  },
  moeExpertsFp8Ptpc: {
    opClass: 'gemm',
    maxUlp: 0,
    note:
      "moeExpertsFp8Ptpc: the tiled kernels (moe_fp8.cu, 16-row tiles of one expert x 16 weight rows, 64-byte k slabs in shared memory) keep each output's k order, and every fp8 x fp8 product is exact in fp32, " +
      "so they give the reference's bits (bit for bit on the emulated device, gpuMoeFp8.test.ts)",
  },
};

/** `base` (the GEMM mode's precision) with each fast kernel's tolerance folded into its class */
export function withFastKernels(base: BackendPrecision): BackendPrecision {
  const out: Record<ToleranceClass, ClassPrecision> = { ...base };
  for (const t of Object.values(FAST_KERNEL_TOLERANCES)) {
    const c = out[t.opClass];
    out[t.opClass] = { maxUlp: Math.max(c.maxUlp, t.maxUlp), note: `${c.note}; fast kernels: ${t.note}` };
  }
  return out;
}
