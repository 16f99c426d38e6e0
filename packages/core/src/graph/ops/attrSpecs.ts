import { QUANT_STYLES } from '../../numerics/quant.ts';
import { TOPK_TIES } from '../../numerics/topkTies.ts';
import { type AttrSpec, intMin, oneOf } from './opDef.ts';

// Attribute specs several families declare alike.

/** the FP8 encoding (it follows the target GPU and decides the fp8 dtype) */
export const FP8_FORMAT = oneOf(['e4m3fn', 'e4m3fnuz']);
/** the arithmetic of a per-token quantization (quantOps.ts) */
export const QUANT_STYLE = oneOf(QUANT_STYLES);
/** which scale an FP8 GEMM applies first */
export const SCALE_ORDER = oneOf(['weightFirst', 'tokenFirst']);
/** the top-k tie rule; absent: ATOM's (lower index) */
export const TOPK_TIES_ATTR: AttrSpec = { ...oneOf(TOPK_TIES), optional: true };
/** an optional flag of the 'hf-eager' contract (absent = false) */
export const OPTIONAL_BOOL: AttrSpec = { kind: 'bool', optional: true };
/** a count that is at least 1 (heads, streams, ratios) */
export const COUNT = intMin(1);
/** an index or size that may be 0 */
export const INDEX = intMin(0);
