// Launchers of the PLE device ops on the GPU devices (pleRms1pNorm, pleGate, pleGatedValue,
// pleConvSilu, pleNgramEmbedShard, and pleNgramIds: a host op the native devices run
// themselves), with the checks and messages the host kernels share (ops/ple_checks.h); the
// arithmetic is in kernels/ple.cu (the norm and the gate: block kernels, one 64-thread row
// group per reduction, g.blockRows of them per block). pleNgramEmbed (the gathered table's
// lookup) is a host op.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "../../host/kernels/js_text.h"
#include "../../host/kernels/kernel_args.h"
#include "../../ops/ple_checks.h"
#include "../../numerics/fp32_math.h"
#include "../gpu_op_registry.h"
#include "../kernels/ple.h"
#include "../kernels/reduce.h"

namespace hcsp::gpu {
namespace {

Outputs pleRms1pNorm(const Inputs& in, const GpuContext& g) {
  const ops::PleNormArgs a = ops::checkPleRms1pNorm(in, g.attrs);
  const int64_t rows = a.rows, width = a.width, groupSize = a.groupSize, groups = a.groups;
  const Tensor& x = a.x;
  TensorPtr y = g.alloc(DType::BF16, x.shape());
  // one block-kernel launch: a 64-thread row group per (row, group) segment, g.blockRows of them per block
  const int64_t segments = rows * groups;
  if (segments == 0 || groupSize == 0) return {y};
  const int perBlock = g.blockRows(segments);
  HCSP_LAUNCH_BLOCKS(g.rt, hcsp_ple_rms1p_norm, hcspBlocksFor(segments, perBlock), perBlock * HCSP_CANONICAL_LANES, x.bf16(), a.weight.bf16(), y->bf16(),
                     segments, width, groupSize, a.epsF);
  return {y};
}

Outputs pleGate(const Inputs& in, const GpuContext& g) {
  const ops::PleGateArgs a = ops::checkPleGate(in, g.attrs);
  const int64_t rows = a.rows, hidden = a.hidden, streams = a.streams;
  const float sqrtH = fp32::sqrtF32(static_cast<float>(hidden));
  TensorPtr gate = g.alloc(DType::BF16, {rows, streams});
  // one block-kernel launch: a 64-thread row group per (row, stream), g.blockRows of them per block
  const int64_t segments = rows * streams;
  const int perBlock = g.blockRows(segments);
  HCSP_LAUNCH_BLOCKS(g.rt, hcsp_ple_gate, hcspBlocksFor(segments, perBlock), perBlock * HCSP_CANONICAL_LANES, a.k.bf16(), a.q.bf16(), gate->bf16(), segments,
                     hidden, sqrtH);
  return {gate};
}

Outputs pleGatedValue(const Inputs& in, const GpuContext& g) {
  const ops::PleGatedValueArgs a = ops::checkPleGatedValue(in, g.attrs);
  const int64_t rows = a.rows, hidden = a.hidden, streams = a.streams;
  TensorPtr y = g.alloc(DType::BF16, {rows, streams * hidden});
  HCSP_LAUNCH(g.rt, hcsp_ple_gated_value, rows * streams * hidden, a.gate.bf16(), a.value.bf16(), y->bf16(), rows, streams, hidden);
  return {y};
}

Outputs pleConvSilu(const Inputs& in, const GpuContext& g) {
  const ops::PleConvArgs a = ops::checkPleConvSilu(in, g.attrs);
  const int64_t rows = a.rows, channels = a.channels;
  TensorPtr y = g.alloc(DType::BF16, {rows, channels});
  HCSP_LAUNCH(g.rt, hcsp_ple_conv_silu, rows * channels, a.gNormed.bf16(), a.g.bf16(), a.weight.bf16(), y->bf16(), rows, channels, a.kernel, a.dilation);
  return {y};
}

/**
 * pleNgramIds: one thread per position, the hash's constants in the launch's arguments (no
 * upload, nothing to free). The tokens' vocabulary check, and the products' int64 check where a
 * multiplier lets a token overflow, are device checks raised at the run's sync (in that order:
 * the reference checks every token before it hashes).
 */
Outputs pleNgramIds(const Inputs& in, const GpuContext& g) {
  const ops::PleNgramIdsArgs a = ops::checkPleNgramIds(in, g.attrs);
  if (a.ngramSize > HCSP_PLE_MAX_NGRAM || a.heads > HCSP_PLE_MAX_HEADS) {
    fail(ErrorKind::Unsupported, "pleNgramIds: ngramSize " + std::to_string(a.ngramSize) + " with " + std::to_string(a.heads) +
                                     " heads; the GPU kernel takes at most " + std::to_string(HCSP_PLE_MAX_NGRAM) + " and " +
                                     std::to_string(HCSP_PLE_MAX_HEADS));
  }
  HcspPleHash h{};
  std::copy(a.multipliers.begin(), a.multipliers.end(), h.multipliers);
  std::copy(a.maxIds.begin(), a.maxIds.end(), h.maxIds);
  std::copy(a.sizes.begin(), a.sizes.end(), h.sizes);
  std::copy(a.offsets.begin(), a.offsets.end(), h.offsets);
  h.eos = a.eos;
  h.vocabBound = a.vocabBound;
  h.ngramSize = a.ngramSize;
  h.headsPerNgram = a.headsPerNgram;
  TensorPtr ids = g.alloc(DType::I32, {a.T, a.heads});
  if (a.T == 0) return {ids};
  const std::string vocabText = a.vocabText;
  unsigned long long* tokenFailed =
      g.rt.deviceCheck("pleNgramIds", a.T, 1, [vocabText](const uint64_t* w) { ops::failPleToken(checkDetail(w[0]), checkPosition(w[0]), vocabText); });
  unsigned long long* productFailed = nullptr;
  if (a.productsCanWrap) {
    const int64_t n = a.ngramSize;
    const std::vector<std::string> digits = a.multiplierDigits;
    productFailed = g.rt.deviceCheck("pleNgramIds", a.T * n, 1, [digits, n](const uint64_t* w) {
      ops::failPleProduct(digits, checkDetail(w[0]), static_cast<int32_t>(checkPosition(w[0]) % n));
    });
  }
  HCSP_LAUNCH(g.rt, hcsp_ple_ngram_ids, a.T, a.tokens.data<int32_t>(), ids->data<int32_t>(), tokenFailed, productFailed, a.T, h);
  return {ids};
}

/** pleNgramEmbedShard: one thread per output element; an id outside the table is a device check raised at the run's sync */
Outputs pleNgramEmbedShard(const Inputs& in, const GpuContext& g) {
  const ops::PleShardArgs a = ops::checkPleNgramEmbedShard(in, g.attrs);
  const int64_t n = a.T * a.heads;
  TensorPtr e = g.alloc(DType::BF16, {a.T, a.heads * a.headDim});
  if (n == 0) return {e};
  const int64_t heads = a.heads;
  const std::string tableRowsText = a.tableRowsText;
  unsigned long long* failed = g.rt.deviceCheck("pleNgramEmbedShard", n, 1, [heads, tableRowsText](const uint64_t* w) {
    ops::failPleNgramId(checkDetail(w[0]), checkPosition(w[0]), heads, tableRowsText);
  });
  HCSP_LAUNCH(g.rt, hcsp_ple_ngram_embed_shard, n * a.headDim, a.ids.data<int32_t>(), a.table.bf16(), e->bf16(), failed, n, a.headDim, a.rowStart, a.rows,
              a.tableBound);
  return {e};
}

}  // namespace

HCSP_GPU_OP(pleNgramIds, pleNgramIds);
HCSP_GPU_OP(pleNgramEmbedShard, pleNgramEmbedShard);
HCSP_GPU_OP(pleRms1pNorm, pleRms1pNorm);
HCSP_GPU_OP(pleGate, pleGate);
HCSP_GPU_OP(pleGatedValue, pleGatedValue);
HCSP_GPU_OP(pleConvSilu, pleConvSilu);

}  // namespace hcsp::gpu
