// `hcsp hc`: one HC step (the pending combine fused with combine-norm, then the mix) on the
// CPU reference, over tensors dumped from a PyTorch engine under ATOM's names, written back
// as .safetensors for a bit-level diff against the engine's own outputs.
import { Option, type Command } from 'commander';
import { hcContractOf, layoutSafetensors, parseRoundingContract, ROUNDING_CONTRACTS, runHcStep, shapeStr } from '@hcsp/core';
import type { HcStepOutputs, RoundingContract, Tensor } from '@hcsp/core';
import { SafetensorsWeightSource } from '@hcsp/core/node';
import type { ExpectedTensor } from '@hcsp/core/node';
import { countNonFinite, describeNonFinite } from '../checkpoint/nonFinite.ts';
import { resolveOutputTarget } from '../output/outputTarget.ts';
import { writeOutput } from '../output/safeOutputFile.ts';

const STREAMS = 4;

export const HC_INPUT_NAMES = {
  h: 'h',
  blockOut: 'block_out',
  rawPrev: 'raw_prev',
  normWeight: 'hc_norm.weight',
  wDown: 'input_mix_weight_down.weight',
  wInject: 'block_inject_weight.weight',
  wUp: 'input_mix_weight_up.weight',
} as const;

/** Output tensor names, in ATOM's vocabulary, for each field of HcStepOutputs. */
export const HC_OUTPUT_NAMES: Record<keyof HcStepOutputs, string> = {
  hNew: 'h_new',
  normed: 'normed',
  d: 'd',
  gate: 'gate',
  up: 'up',
  mixed: 'mixed',
  raw: 'raw',
};

interface HcOptions {
  in: string;
  out: string;
  contract: string;
  rejectNonfinite?: boolean;
}

/** T, H and r from the two tensors that define them, each checked with its own name. */
function stepDims(source: SafetensorsWeightSource, inPath: string): { rows: number; hidden: number; rank: number } {
  const need = (name: string): readonly number[] => {
    if (!source.has(name)) throw new Error(`${inPath}: missing tensor '${name}'`);
    return source.entry(name).shape;
  };
  const h = need(HC_INPUT_NAMES.h);
  if (h.length !== 2 || h[0] < 1 || h[1] < STREAMS || h[1] % STREAMS !== 0) {
    throw new Error(`${inPath}: tensor 'h': wrong shape: expected [T, ${STREAMS}*H] with T >= 1 and H >= 1, got ${shapeStr(h)}`);
  }
  const down = need(HC_INPUT_NAMES.wDown);
  if (down.length !== 2 || down[0] < 1) {
    throw new Error(`${inPath}: tensor '${HC_INPUT_NAMES.wDown}': wrong shape: expected [r, ${h[1]}] with r >= 1, got ${shapeStr(down)}`);
  }
  return { rows: h[0], hidden: h[1] / STREAMS, rank: down[0] };
}

/** Every input's expected name, shape and dtype; block_out and raw_prev only as a pair. */
function expectedInputs(source: SafetensorsWeightSource, inPath: string): { specs: ExpectedTensor[]; pending: boolean } {
  const { rows, hidden, rank } = stepDims(source, inPath);
  const width = STREAMS * hidden;
  const hasBlockOut = source.has(HC_INPUT_NAMES.blockOut);
  const hasRawPrev = source.has(HC_INPUT_NAMES.rawPrev);
  if (hasBlockOut !== hasRawPrev) {
    const [given, absent] = hasBlockOut ? ['block_out', 'raw_prev'] : ['raw_prev', 'block_out'];
    throw new Error(`${inPath}: tensor '${given}' is given without '${absent}': the pending combine needs both or neither`);
  }
  const bf16 = (name: string, shape: number[]): ExpectedTensor => ({ name, shape, dtype: 'bf16' });
  const specs = [
    bf16(HC_INPUT_NAMES.h, [rows, width]),
    bf16(HC_INPUT_NAMES.normWeight, [width]),
    bf16(HC_INPUT_NAMES.wDown, [rank, width]),
    bf16(HC_INPUT_NAMES.wInject, [STREAMS, width]),
    bf16(HC_INPUT_NAMES.wUp, [width, rank]),
  ];
  if (hasBlockOut) specs.push(bf16(HC_INPUT_NAMES.blockOut, [rows, hidden]), bf16(HC_INPUT_NAMES.rawPrev, [rows, STREAMS]));
  return { specs, pending: hasBlockOut };
}

export interface HcRun {
  outputs: HcStepOutputs;
  contract: RoundingContract;
  /** inputs holding NaN/Inf (warned about unless --reject-nonfinite refused them) */
  warnings: string[];
}

/**
 * Checks OUT (before reading anything), reads and checks IN, runs the step, writes OUT
 * (atomically, only after the step succeeded).
 */
export async function runHcCommand(opts: HcOptions): Promise<HcRun> {
  const contract = parseRoundingContract(opts.contract);
  const target = resolveOutputTarget(opts.out, '--out', [opts.in]);
  const source = SafetensorsWeightSource.open(opts.in);
  const warnings: string[] = [];
  let outputs: HcStepOutputs;
  try {
    const { specs, pending } = expectedInputs(source, opts.in);
    source.validateAgainst(specs);
    const inputs = new Map<string, Tensor>();
    for (const { name } of specs) {
      const t = await source.read(name);
      const bad = countNonFinite(t);
      if (bad.nan + bad.inf > 0) {
        const what = `${opts.in}: ${describeNonFinite(name, bad)}`;
        if (opts.rejectNonfinite) throw new Error(`${what}; refused by --reject-nonfinite`);
        warnings.push(what);
      }
      inputs.set(name, t);
    }
    const get = (name: string): Tensor => inputs.get(name)!;
    outputs = runHcStep(
      {
        h: get(HC_INPUT_NAMES.h),
        blockOut: pending ? get(HC_INPUT_NAMES.blockOut) : null,
        rawPrev: pending ? get(HC_INPUT_NAMES.rawPrev) : null,
        normWeight: get(HC_INPUT_NAMES.normWeight),
        wDown: get(HC_INPUT_NAMES.wDown),
        wInject: get(HC_INPUT_NAMES.wInject),
        wUp: get(HC_INPUT_NAMES.wUp),
      },
      { contract: hcContractOf(contract), streams: STREAMS },
    );
  } finally {
    source.close();
  }
  const named = new Map<string, Tensor>();
  for (const key of Object.keys(HC_OUTPUT_NAMES) as (keyof HcStepOutputs)[]) named.set(HC_OUTPUT_NAMES[key], outputs[key]);
  const layout = layoutSafetensors(named, { format: 'pt', producer: 'hcsp hc', contract, input: opts.in });
  await writeOutput(target, [layout.header, ...layout.order.map((o) => o.bytes)], '--out', opts.out);
  return { outputs, contract, warnings };
}

export function registerHc(program: Command): void {
  program
    .command('hc')
    .description('one HC combine-norm + mix on the CPU reference, reading and writing ATOM-named tensors in .safetensors')
    .requiredOption(
      '--in <file>',
      'input: h [T,4H], hc_norm.weight, input_mix_weight_down/up.weight, block_inject_weight.weight; optional block_out + raw_prev (the pending combine)',
    )
    .requiredOption(
      '--out <file>',
      'output: h_new, normed, d, gate, up, mixed, raw (bf16), written atomically only when the step succeeds; a new or existing regular file (never a device, fifo, socket, directory or the input), or - for standard output',
    )
    .addOption(
      new Option(
        '--contract <contract>',
        "rounding contract: atom (production), hf (Hugging Face reference) or hf-eager (HF's eager torch paths; the HC step rounds as hf)",
      )
        .choices([...ROUNDING_CONTRACTS])
        .default('atom'),
    )
    .option('--reject-nonfinite', 'refuse inputs holding NaN or Inf (default: warn on stderr)')
    .action(async (opts: HcOptions) => {
      const { outputs, contract, warnings } = await runHcCommand(opts);
      for (const w of warnings) process.stderr.write(`hcsp: warning: ${w}\n`);
      const [rows, width] = outputs.hNew.shape;
      const summary = `wrote ${opts.out === '-' ? 'standard output' : opts.out}: T ${rows}, H ${width / STREAMS}, r ${outputs.gate.shape[1]}, contract ${contract}\n`;
      // With --out - the tensors own stdout.
      (opts.out === '-' ? process.stderr : process.stdout).write(summary);
    });
}
