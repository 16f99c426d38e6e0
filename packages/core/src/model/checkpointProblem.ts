// A checkpoint's problem as a record, so callers sort and count problems by kind instead of
// by the wording of a message (issue 26); one formatter gives the message each kind had.

/** Each way a checkpoint can fail to fit a config. */
export type CheckpointProblemKind =
  | 'missing'
  | 'wrong dtype'
  | 'wrong shape'
  | 'duplicate name'
  | 'fp8 where bf16'
  | 'block scales need 2-D'
  | 'wrong block scales'
  | 'wrong channel scales'
  | 'scale layout conflict'
  | 'wrong global scale'
  | 'bad scale value'
  | 'no scale'
  | 'mixed expert layout'
  | 'extra expert'
  | 'wrong expert dtype'
  | 'wrong expert shapes'
  | 'wrong buffer'
  | 'wrong buffer values';

export interface CheckpointProblem {
  readonly kind: CheckpointProblemKind;
  /** The tensor: its stored name where `file` is set, else the model's name (or a name pattern). */
  readonly tensor: string;
  /** The shard that stores `tensor`, where one does. */
  readonly file?: string;
  /** How many stored tensors `tensor` is assembled from, where more than one. */
  readonly sources?: number;
  /** What the config or the format asks for. */
  readonly expected: string;
  /** What the checkpoint holds. */
  readonly found: string;
  /** Where the problem was seen or why it matters, as the message says it. */
  readonly context?: string;
}

/** The tensor as messages name it. */
function label(p: CheckpointProblem): string {
  if (p.file !== undefined) return `${p.file}: tensor '${p.tensor}'`;
  if (p.sources !== undefined) return `tensor '${p.tensor}' (from ${p.sources} checkpoint tensors)`;
  return `tensor '${p.tensor}'`;
}

/** The problem's message. */
export function formatCheckpointProblem(p: CheckpointProblem): string {
  const at = label(p);
  switch (p.kind) {
    case 'missing':
      return `missing tensor '${p.tensor}' (${p.context})`;
    case 'wrong dtype':
      return `${at}: wrong dtype ${p.found}, the model reads it as ${p.expected}`;
    case 'wrong shape':
      return `config/checkpoint mismatch: ${at} is ${p.found}, ${p.context} needs ${p.expected}`;
    case 'duplicate name':
      return `${at} and ${p.found} are both '${p.expected}'`;
    case 'fp8 where bf16':
      return `${at}: ${p.found} where the model reads ${p.expected}: ${p.context}`;
    case 'block scales need 2-D':
      return `${at}: ${p.found} has block scales, which need a ${p.expected} tensor`;
    case 'wrong block scales':
      return `${at}: block scales of ${p.context} must be ${p.expected}, got ${p.found}`;
    case 'wrong channel scales':
      return `${at}: per-channel scales of ${p.context} must be ${p.expected}, got ${p.found}`;
    case 'scale layout conflict':
      return `${at}: per-channel FP8 scales, but ${p.context} declares ${p.expected} block FP8 (quantization_config.weight_block_size): the config and the tensors describe different checkpoints`;
    case 'wrong global scale':
      return `${at}: a global FP8 scale must be ${p.expected}, got ${p.found}${p.context ?? ''}`;
    case 'bad scale value':
      return `${at}: the FP8 scale ${p.found} is not ${p.expected}`;
    case 'no scale':
      return `${at}: ${p.found} has no scale tensor (${p.expected})`;
    case 'mixed expert layout':
      return `${at} is ${p.found} while ${p.expected}: a checkpoint holds one layout`;
    case 'extra expert':
      return `config/checkpoint mismatch: ${p.tensor} is beyond the ${p.expected} experts of ${p.context}`;
    case 'wrong expert dtype':
      return `${at}: wrong dtype ${p.found} for an expert weight`;
    case 'wrong expert shapes':
      return `${at}: ${p.context} ${p.found} are not ${p.expected}`;
    case 'wrong buffer':
      return `${at}: expected ${p.expected}, got ${p.found}`;
    case 'wrong buffer values':
      return `config/checkpoint mismatch: ${at} is ${p.found}, ${p.context} derives ${p.expected} (every n-gram lookup would read the wrong row)`;
  }
}
