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
  gdnRecurrence: { opClass: 'sequence', maxUlp: 0, note: 'gdnRecurrence: the reference-order kernel in both modes (no chunked kernel yet)' },
  attnCausalQsa: { opClass: 'sequence', maxUlp: 0, note: 'attnCausalQsa: the reference-order kernel in both modes (no tiled kernel yet)' },
  moeExperts: { opClass: 'gemm', maxUlp: 0, note: 'moeExperts: the reference-order grouped kernel in both modes (no fast grouped GEMM yet)' },
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
