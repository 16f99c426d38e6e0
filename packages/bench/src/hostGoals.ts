// The host bench's goals: the ratios it sets against this machine's ceilings.

/** goals of the four ratios */
export const GOALS = {
  /** exact GEMM GFLOP/s over the BLAS ceiling, at least */
  gemmOverCeiling: 0.8,
  /** HC mix time over its roofline bound, at most */
  mixOverBound: 1.5,
  /** peak memory over the tensors that must be live, at most */
  memoryOverLive: 1.5,
} as const;
