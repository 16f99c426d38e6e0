// What one run of the suite measures (the hcsp command's `bench --suite` options, parsed).
import type { ModelConfig } from '@hcsp/core';

export interface SuiteOptions {
  /** T of the HC mix and combine cases, ascending; the first is the base of the scale ratios */
  tokens: number[];
  /** timed runs per measurement after the first (median reported), within the budget */
  reps: number;
  /** the same for the cpu reference */
  cpuReps: number;
  /** seconds one (backend, case, T) may take: prepare + first run + timed runs */
  budgetSeconds: number;
  /** HC cases' model (flash-next; tiny with --quick) */
  hcConfig: ModelConfig;
  /** the decoder layer's and the prefill's model (small; tiny with --quick) */
  modelConfig: ModelConfig;
  layerTokens: number;
  /** null: left out */
  prefillTokens: number | null;
  prefillTp: number;
  /** labels of the backends to run (null: all); see SUITE_BACKENDS */
  backends: string[] | null;
  /** bytes of the copy that measures the bandwidth */
  copyBytes: number;
  /** the square GEMM the matrix ceiling is measured at (besides the HC mix's shapes) */
  ceilingGemm: number;
  seed: number;
  quiet: boolean;
  json: boolean;
  /** directory of bench.json and time-vs-T.svg; null: no files */
  outDir: string | null;
  maxMemory?: string;
  quick: boolean;
}
