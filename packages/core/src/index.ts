// The public API of @hcsp/core: what a backend, the CLI, the bench, the ranks and the dev page
// import, listed by name (index.test.ts fails on an `export *` or on a name nothing outside core
// imports; core's own files and tests import relative paths). For the tools only: the cost model
// (@hcsp/core/cost-model), comparing runs (@hcsp/core/xcheck), file I/O on Node (@hcsp/core/node).

// Tensors and the numerics every kernel shares (bf16, fp8, fp32 math, ulps, the canonical sum, the seeded RNG)
export { bf16ArrayToF32, bf16ToF32, f32ArrayToBf16, f32ToBf16, roundBf16 } from './numerics/bf16.ts';
export { CANONICAL_CHUNK, CANONICAL_LANES, canonicalSumF32 } from './numerics/canonicalSum.ts';
export { expF32, logF32, rsqrtF32, sigmoidF32, siluF32, softplusF32, sqrtF32 } from './numerics/fp32Math.ts';
export { f32ToFp8, FP8_FORMATS, type Fp8Format, fp8FormatOfDtype, fp8Info, fp8ToF32 } from './numerics/fp8.ts';
export { perTokenScale, PRODUCTION_QUANT_STYLE, quantizeBf16RowsFp8 } from './numerics/quant.ts';
export { Rng } from './numerics/rng.ts';
export { bf16UlpAt, rowScaledError } from './numerics/rowScaledError.ts';
export { refuseTorchCpuTies, TOPK_TIES, type TopkTies, torchCpuTiesRefusal } from './numerics/topkTies.ts';
export { compareBf16 } from './numerics/ulp.ts';
export { sliceTensor } from './tensor/axisSlice.ts';
export { allocData, bytesPerElement, type DType, numel, sameShape, shapeStr, tensor, type Tensor, type TensorData } from './tensor/tensor.ts';

// The model's configuration and presets
export { layerKind, type ModelConfig } from './config/modelConfig.ts';
export { FLASH_NEXT, getConfig, PRESETS, SMALL, TINY } from './config/presets.ts';

// Ops and graphs: the declarations, building a graph, its per-rank form, feeds, value lifetimes, memory and footprint
export { gemmShape, type GemmShape, heldWeightBytes, heldWeights, valueBytes } from './graph/footprint.ts';
export type { Graph, GraphNode, ValueDecl, ValueId, WeightRef, WeightSlice } from './graph/graph.ts';
export { GraphBuilder } from './graph/graphBuilder.ts';
export { planMemory } from './graph/memoryPlan.ts';
export { checkOpInputs, checkOpOutputs } from './graph/ops/checkOpInputs.ts';
export { matrixWeightPort, type ToleranceClass } from './graph/ops/opDef.ts';
export { allOpDefs, getOpDef, isCollectiveOp, type OpName } from './graph/ops/registry.ts';
export { REDUCE_ALGORITHMS, type ReduceAlgorithm } from './graph/ops/spOps.ts';
export { rankGraph } from './graph/rankGraph.ts';
export { validateFeeds } from './graph/validateFeeds.ts';
export { lastUses } from './graph/valueLifetimes.ts';

// The execution loop and the backend interface: a backend supplies a kernel table and device ops, GraphSession runs the graph
export {
  type Backend,
  type BackendPrecision,
  type ClassPrecision,
  type CommBytes,
  type DeviceCounters,
  type EngineStats,
  exactPrecision,
  type PreparedGraph,
  runOnce,
  type RunOptions,
  type RunResult,
  type RunStats,
} from './backend/backend.ts';
export { BackendUnavailableError } from './backend/backendErrors.ts';
export { ENGINE_STATS_NUMBERS, engineStatsFromNumbers, engineStatsToNumbers } from './backend/engineStats.ts';
export type { DeviceOps, RecordedRun, RunProgram } from './graph/deviceOps.ts';
export { GraphSession, nodeLabel, type SessionOptions, withNodeContext } from './graph/graphSession.ts';
export { type KernelsFor, KernelTable } from './graph/kernelTable.ts';

// Collectives: the communicator interface, the reduce order and ring shapes every backend follows, bytes moved
export { allGather } from './collectives/allGather.ts';
export { allReduce } from './collectives/allReduce.ts';
export { type CollectiveOp, commBytesOf } from './collectives/commBytes.ts';
export type { Communicator } from './collectives/communicator.ts';
export { checkReduceAlgorithm } from './collectives/reduceOrder.ts';
export { reduceScatter } from './collectives/reduceScatter.ts';
export { RING_DEFAULT_CHANNELS, RING_DEFAULT_CHUNK_ELEMS, ringBlocks } from './collectives/ringAllReduce.ts';

// Hyper-connections: the rounding contract, the mix and combine graphs, one step
export { hcContractOf, parseRoundingContract, ROUNDING_CONTRACTS, type RoundingContract } from './hc/hcContract.ts';
export { buildHcCombine, buildHcMix } from './hc/hcGraph.ts';
export { type HcStepOutputs, runHcStep } from './hc/hcStep.ts';

// Sequence parallelism: the plan, its collectives and the gate
export { HC_QUANT_ROWS_MAX, readSpFloor, SP_MIN_TOKENS_DEFAULT, SP_MIN_TOKENS_ENV, type SpFloor, type SpFloorSource, spGate } from './sp/gate.ts';
export { planForward, type PlanInput, type SpPlan, spStartLayerOf } from './sp/plan.ts';
export { layerList, type PlanCollective, planTraffic, type PlanTraffic } from './sp/planCollectives.ts';

// The model: sub-layer graphs and their weights, the decoder graph, weight sources and prefill
export { buildAttention, buildAttentionRanks } from './layers/attention/attentionGraph.ts';
export { attentionRankWeights } from './layers/attention/attentionWeights.ts';
export { qsaIndexerDims } from './layers/attention/qsaIndexer.ts';
export { ropeTablesBf16 } from './layers/attention/ropeTables.ts';
export { buildGdn } from './layers/gdn/gdnGraph.ts';
export { gdnRankWeights } from './layers/gdn/gdnWeights.ts';
export { MODEL_SUB_LAYERS } from './layers/modelSubLayers.ts';
export { buildMoe } from './layers/moe/moeGraph.ts';
export { moeRankPartition, moeRankWeights } from './layers/moe/moeWeights.ts';
export { buildPle, pleNgramIdsAttrs } from './layers/ple/pleGraph.ts';
export { pleBuffers, pleShape } from './layers/ple/pleWeights.ts';
export { STAND_IN_SUB_LAYERS } from './layers/standIn/standInSubLayers.ts';
export { buildDecoderGraph } from './model/decoderGraph.ts';
export { type Fp8WeightLookup, type Fp8WeightParts, keepFp8Weights } from './model/fp8WeightLinears.ts';
export { hcPrefix, hcWeightSpecs } from './model/hcWeights.ts';
export { modelWeightSpecs } from './model/modelWeights.ts';
export { planForMode, type PrefillOptions, type PreparedPrefill, preparePrefill, type SpMode } from './model/prefill.ts';
export { planWeightRead, resolveWeight, resolveWeightRows, type WeightReadPlan } from './model/resolveWeight.ts';
export type { SubLayerBuilders } from './model/subLayerBuilders.ts';
export { SyntheticWeightSource } from './model/syntheticWeights.ts';
export type { PlannedReadFindings, WeightFilePlan, WeightInfo, WeightSource } from './model/weightSource.ts';
export type { WeightSpec } from './model/weightSpec.ts';

// The reference a backend falls back on and is tested against: the CPU backend and its kernels, the float64 evaluation, the layers' math
export { attnCausal } from './layers/attention/attentionMath.ts';
export { GDN_L2NORM_EPS } from './layers/gdn/gdnMath.ts';
export { linearBf16 } from './layers/linearMath.ts';
export { moeForwardRank, type MoeRankResult, moeRoute, type MoeShape } from './layers/moe/moeMath.ts';
export { PLE_GATE_SQRT_FLOOR } from './layers/ple/pleMath.ts';
export { CpuBackend } from './reference/cpuBackend.ts';
export { evaluateExact, widenTensor } from './reference/exact/evaluateExact.ts';
export { exactCollectiveKernel, exactKernel } from './reference/exact/exactKernels.ts';
export type { ExactTensor } from './reference/exact/exactTensor.ts';
export { cpuCollectiveKernel, cpuKernel } from './reference/kernels/index.ts';

// I/O that runs anywhere (the browser too): the safetensors layout, byte counts for people
export { formatBytes } from './io/formatBytes.ts';
export { bufferByteSource, int64FileTensor, layoutSafetensors, type RawFileTensor, readSafetensorsHeader } from './io/safetensors.ts';
