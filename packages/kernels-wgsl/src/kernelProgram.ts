// A WGSL kernel as data (after onnxruntime-web's program descriptions): the WGSL text and
// its cache key are compile-time; shapes that vary per call go in the uniform words.
// Storage layout of every tensor: a flat array of u32 words. bf16 is packed two per word
// (element i in word i >> 1, low half when i is even); f32 and i32 one per word; fp8 four
// per word (element i in byte i & 3 of word i >> 2). A kernel that writes packed values
// writes whole words, so no two invocations ever share a word.

/** What a binding is bound to: an op port (rank-local tensor) or a scratch buffer. */
export type BindingTarget = { kind: 'input'; port: number } | { kind: 'output'; port: number } | { kind: 'scratch'; name: string };

export interface KernelBinding {
  target: BindingTarget;
  access: 'read' | 'read_write';
}

export interface KernelDispatch {
  /** pipeline cache key: equal keys mean equal WGSL text */
  key: string;
  wgsl: string;
  /** @group(0) @binding(i) for i in order; the uniform block, when present, comes last */
  bindings: KernelBinding[];
  /** u32 words of the uniform block (f32 values as their bit patterns), or empty */
  uniforms: Uint32Array;
  workgroups: [number, number, number];
}

export interface ScratchDecl {
  name: string;
  /** size in u32 words */
  words: number;
}

/** The dispatches that compute one op on one rank, in order, and the scratch they need. */
export interface KernelPlan {
  scratch: ScratchDecl[];
  dispatches: KernelDispatch[];
}

/** Shapes and dtypes of a node's tensors, as the planner sees them. */
export interface TensorInfo {
  shape: readonly number[];
  dtype: string;
}

/**
 * Builds the plan for an op from its tensors' shapes and its attributes, which have passed the
 * op's declaration (core's checkOpInputs): the WebGPU device plans graph nodes only, which
 * GraphSession checked (checkNode); a call outside a graph goes through checkedPlanner. A planner refuses
 * only what the declaration allows and its WGSL cannot do (WebGPU limits, odd dims a packed
 * kernel cannot write, attribute values not implemented here).
 */
export type KernelPlanner = (inputs: (TensorInfo | null)[], outputs: (TensorInfo | null)[], attrs: Record<string, unknown>) => KernelPlan;

/** Words needed to store n elements of a dtype in the packed layout above. */
export function storageWords(dtype: string, n: number): number {
  switch (dtype) {
    case 'bf16':
      return Math.ceil(n / 2);
    case 'f32':
    case 'i32':
      return n;
    case 'fp8e4m3fn':
    case 'fp8e4m3fnuz':
      return Math.ceil(n / 4);
    default:
      throw new Error(`kernels-wgsl: no storage layout for dtype '${dtype}'`);
  }
}
