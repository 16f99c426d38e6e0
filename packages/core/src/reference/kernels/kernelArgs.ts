// Attribute access shared by the CPU reference kernels and the float64 ones (exact/). Nothing
// here checks: a kernel is called through its table's lookup (cpuKernel, exactKernel), which
// has checked the inputs and attributes against the op's declaration (reference/checkedKernel.ts).
import type { HeadLayout } from '../../layers/attention/attentionMath.ts';
import type { Tensor } from '../../tensor/tensor.ts';

/** An op's attributes read as numbers (the declaration has checked their kinds). */
export function numAttrs(attrs: Record<string, unknown>): Readonly<Record<string, number>> {
  return attrs as Record<string, number>;
}

/** The head layout attributes (heads of headDim values at `offset` in each head's `stride`). */
export function headLayoutAttrs(attrs: Record<string, unknown>): HeadLayout {
  const { heads, headDim, stride, offset } = numAttrs(attrs);
  return { heads, headDim, stride, offset };
}

/** A present bf16 input's bits (the declaration has checked its presence and dtype). */
export function bits(t: Tensor | null): Uint16Array {
  return t!.data as Uint16Array;
}
