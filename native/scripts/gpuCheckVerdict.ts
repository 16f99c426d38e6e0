/**
 * One line of the GPU check's table and whether it met its threshold. A timed kernel's line
 * carries its seconds, which the model's measured-vs-predicted table reads (gpuCheckModel.ts).
 */
export interface Verdict {
  line: string;
  pass: boolean;
  seconds?: number;
}
