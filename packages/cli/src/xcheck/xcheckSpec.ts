// One SPEC of `hcsp xcheck --compare`: a backend and its options, and how the run differs
// from the others (the SP mode, the reduction order, the HC contract, the FP8 path), e.g.
// `cpu:sp=off`, `cpu:sp=on:reduce=ring`, `webgpu:sp=on`, `rocm:device=host:gemm=blas`,
// `cpu:contract=hf`, `cpu:contract=hf-eager` (to compare with an HF dump made by PyTorch's
// eager paths; its top-k ties follow torch's CPU rule, `ties=lower-index` keeps ATOM's),
// `cpu:fp8=e4m3fnuz:quant=separate`.
import {
  FP8_FORMATS,
  REDUCE_ALGORITHMS,
  ROUNDING_CONTRACTS,
  TOPK_TIES,
  type Fp8Format,
  type ReduceAlgorithm,
  type RoundingContract,
  type SpMode,
  type TopkTies,
} from '@hcsp/core';
import { checkBackendOptions, findBackend, type BackendOptions } from '@hcsp/backends';

export interface XcheckSpec {
  /** as written */
  text: string;
  backend: string;
  backendOptions: BackendOptions;
  sp: SpMode;
  reduce: ReduceAlgorithm;
  contract: RoundingContract;
  /** moeRoute's and qsaSelect's tie rule; null: the contract's (torch-cpu under hf-eager, else lower-index) */
  ties: TopkTies | null;
  fp8: Fp8Format | null;
  quant: 'fused' | 'separate' | null;
}

/** the run keys a SPEC takes besides its backend's options, with their values */
const RUN_KEYS: Record<string, readonly string[]> = {
  sp: ['auto', 'on', 'off'],
  reduce: REDUCE_ALGORITHMS,
  contract: ROUNDING_CONTRACTS,
  ties: TOPK_TIES,
  fp8: Object.keys(FP8_FORMATS),
  quant: ['fused', 'separate'],
};

/** `defaults`: what a key left out means (the command's --sp, --reduce) */
export function parseXcheckSpec(text: string, defaults: { sp: SpMode; reduce: ReduceAlgorithm }): XcheckSpec {
  const [name, ...parts] = text.split(':');
  if (!name) throw new Error(`--compare: empty backend in SPEC ${JSON.stringify(text)} (write backend[:key=value...], e.g. cpu:sp=on)`);
  let entry: ReturnType<typeof findBackend>;
  try {
    entry = findBackend(name);
  } catch (e) {
    throw new Error(`--compare: SPEC ${JSON.stringify(text)}: ${(e as Error).message}`);
  }
  const run: Record<string, string> = {};
  const backendOptions: Record<string, string> = {};
  for (const part of parts) {
    const eq = part.indexOf('=');
    if (eq <= 0) throw new Error(`--compare: SPEC ${JSON.stringify(text)}: ${JSON.stringify(part)} is not key=value`);
    const key = part.slice(0, eq);
    const value = part.slice(eq + 1);
    if (key in run || key in backendOptions) throw new Error(`--compare: SPEC ${JSON.stringify(text)}: ${key} is given twice`);
    if (key in RUN_KEYS) {
      if (!RUN_KEYS[key].includes(value))
        throw new Error(`--compare: SPEC ${JSON.stringify(text)}: ${key} must be one of ${RUN_KEYS[key].join('|')}, got ${JSON.stringify(value)}`);
      run[key] = value;
    } else if (key in entry.options) {
      backendOptions[key] = value;
    } else {
      const known = [...Object.keys(RUN_KEYS), ...Object.keys(entry.options)];
      throw new Error(`--compare: SPEC ${JSON.stringify(text)}: unknown key ${JSON.stringify(key)} (keys: ${known.join(', ')})`);
    }
  }
  let checked: BackendOptions;
  try {
    checked = checkBackendOptions(entry, withXcheckGpuGemm(entry.name, backendOptions));
  } catch (e) {
    throw new Error(`--compare: SPEC ${JSON.stringify(text)}: ${(e as Error).message}`);
  }
  if (run.quant && !run.fp8) throw new Error(`--compare: SPEC ${JSON.stringify(text)}: quant=${run.quant} places the FP8 quantization: it needs fp8=<format>`);
  return {
    text,
    backend: entry.name,
    backendOptions: checked,
    sp: (run.sp as SpMode | undefined) ?? defaults.sp,
    reduce: (run.reduce as ReduceAlgorithm | undefined) ?? defaults.reduce,
    contract: (run.contract as RoundingContract | undefined) ?? 'atom',
    ties: (run.ties as TopkTies | undefined) ?? null,
    fp8: (run.fp8 as Fp8Format | undefined) ?? null,
    quant: (run.quant as 'fused' | 'separate' | undefined) ?? null,
  };
}

/**
 * xcheck's GEMM on a GPU device when a SPEC names none: 'vendor-invariant' (one vendor algorithm
 * per (N, K) for every row count), so two GPU SPECs that differ in SP or tp compare the same
 * rows' same bits, not the library's per-M choices; `gemm=vendor` in the SPEC asks for those.
 */
export const XCHECK_GPU_GEMM = 'vendor-invariant';

function withXcheckGpuGemm(backend: string, options: Record<string, string>): Record<string, string> {
  const gpu = backend === 'rocm' && (options.device === 'hip' || options.device === 'cuda');
  return gpu && options.gemm === undefined ? { ...options, gemm: XCHECK_GPU_GEMM } : options;
}

/** `--compare A,B[,...]`: at least two SPECs */
export function parseXcheckSpecs(list: string, defaults: { sp: SpMode; reduce: ReduceAlgorithm }, golden: boolean): XcheckSpec[] {
  const texts = list.split(',').map((s) => s.trim());
  if (texts.some((t) => t === '')) throw new Error(`--compare: an empty SPEC in ${JSON.stringify(list)}`);
  const specs = texts.map((t) => parseXcheckSpec(t, defaults));
  if (specs.length < (golden ? 1 : 2))
    throw new Error(`--compare needs ${golden ? 'a SPEC' : 'at least two SPECs, comma-separated'} (got ${JSON.stringify(list)})`);
  return specs;
}
