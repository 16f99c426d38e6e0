// Host kernels of the SP ops (core graph/ops/spOps.ts), as reference/kernels/collectiveKernels.ts:
// the per-rank row movement shard, pad and trim (collectives/allGather.ts, any dtype, exact
// copies) and the collectives allReduce, reduceScatter and allGather, every rank's buffers in
// one process in lockstep (inputs[rank][0] -> outputs[rank][0]). The sums run in the orders of
// collectives/reduceOrder.ts and ringAllReduce.ts (reduce_order.h); threads split the elements,
// each element summed by one thread in its algorithm's order. The checks and their messages (the
// reference's) are shared with the GPU launchers (ops/collective_checks.h).
#include <cstring>
#include <optional>

#include "../../numerics/bf16.h"
#include "js_text.h"
#include "kernel_args.h"
#include "reduce_order.h"
#include "../../ops/collective_checks.h"

namespace hcsp {
namespace {

constexpr int64_t GRAIN = 1 << 14;

std::vector<const uint16_t*> bf16Partials(const std::vector<const Tensor*>& xs) {
  std::vector<const uint16_t*> p;
  for (const Tensor* t : xs) p.push_back(t->bf16());
  return p;
}

/** rank 0's result, then a separately allocated equal copy for every other rank */
std::vector<Outputs> replicate(const TensorPtr& y, size_t tp) {
  std::vector<Outputs> outs{{y}};
  for (size_t r = 1; r < tp; r++) {
    TensorPtr c = makeTensor(y->dtype(), y->shape());
    if (y->bytes()) std::memcpy(c->raw(), y->raw(), y->bytes());
    outs.push_back({c});
  }
  return outs;
}

std::vector<Outputs> allReduce(const std::vector<Inputs>& inputs, const KernelContext& ctx) {
  const ops::AllReduceArgs a = ops::checkAllReduce(inputs, ctx.attrs);
  const std::vector<const Tensor*>& xs = a.xs;
  const reduce::Algorithm algorithm = a.algorithm;
  const int tp = a.tp;
  const int64_t n = a.n;
  const std::vector<const uint16_t*> partials = bf16Partials(xs);
  TensorPtr y = makeTensor(DType::BF16, xs[0]->shape());
  uint16_t* out = y->bf16();
  if (algorithm == reduce::Algorithm::Ring) {
    const reduce::RingLayout layout(n, tp, a.channels, a.chunkElems);
    ctx.pool.parallelFor(n, GRAIN, [&](int64_t i0, int64_t i1) { reduce::ringAllReduceRange(partials.data(), tp, layout, i0, i1, out + i0); });
  } else {
    ctx.pool.parallelFor(n, GRAIN, [&](int64_t i0, int64_t i1) { reduce::reduceInto(algorithm, 0, partials.data(), tp, i0, i1, out + i0); });
  }
  return replicate(y, xs.size());
}

std::vector<Outputs> reduceScatter(const std::vector<Inputs>& inputs, const KernelContext& ctx) {
  const ops::ReduceScatterArgs a = ops::checkReduceScatter(inputs, ctx.attrs);
  const std::vector<const Tensor*>& xs = a.xs;
  const reduce::Algorithm algorithm = a.algorithm;
  const int tp = a.tp;
  const Shape& outShape = a.outShape;
  const int64_t shardElems = a.shardElems;
  const std::vector<const uint16_t*> partials = bf16Partials(xs);
  std::vector<Outputs> outs;
  std::vector<uint16_t*> dst;
  for (int r = 0; r < tp; r++) {
    outs.push_back({makeTensor(DType::BF16, outShape)});
    dst.push_back(outs.back()[0]->bf16());
  }
  // rank r's block [r*shard, (r+1)*shard) of the flat buffer, owned (ring) by position r
  ctx.pool.parallelFor(tp * shardElems, GRAIN, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1;) {
      const int64_t r = i / shardElems;
      const int64_t stop = std::min(i1, (r + 1) * shardElems);
      reduce::reduceInto(algorithm, static_cast<int>(r), partials.data(), tp, i, stop, dst[r] + (i - r * shardElems));
      i = stop;
    }
  });
  return outs;
}

std::vector<Outputs> allGather(const std::vector<Inputs>& inputs, const KernelContext& ctx) {
  const ops::AllGatherArgs a = ops::checkAllGather(inputs, ctx.attrs);
  const std::vector<const Tensor*>& xs = a.xs;
  const size_t shardBytes = xs[0]->bytes();
  TensorPtr y = makeTensor(a.dtype, a.outShape);
  auto* dst = static_cast<uint8_t*>(y->raw());
  for (size_t r = 0; r < xs.size(); r++) {
    if (shardBytes) std::memcpy(dst + r * shardBytes, xs[r]->raw(), shardBytes);
  }
  return replicate(y, xs.size());
}

/** shardTensorRows of allGather.ts */
Outputs shard(const Inputs& in, const KernelContext& ctx) {
  const ops::ShardArgs a = ops::checkShard(in, ctx.attrs);
  const Tensor& x = a.x;
  const int64_t rows = a.rows, c = a.chunk, rk = a.rank;
  const int64_t rowLen = ops::rowLength(x);
  const size_t es = dtypeBytes(x.dtype());
  TensorPtr y = makeTensor(x.dtype(), ops::withRows(x, c));
  // rank*chunk <= (tp-1)*chunk < chunk*tp: in range once chunk*tp rows are allocatable
  const int64_t first = std::min(rk * c, rows), last = std::min((rk + 1) * c, rows);
  const size_t real = static_cast<size_t>(std::max<int64_t>(0, last - first) * rowLen) * es;
  if (real) std::memcpy(y->raw(), static_cast<const uint8_t*>(x.raw()) + first * rowLen * es, real);
  // the padding rows (past T) are zeros: the math's, the only bytes zeroed
  if (y->bytes() > real) y->memory().fillZero(static_cast<uint8_t*>(y->raw()) + real, y->bytes() - real);
  return {y};
}

/** padRows of allGather.ts */
Outputs pad(const Inputs& in, const KernelContext& ctx) {
  const ops::RowsArgs a = ops::checkPad(in, ctx.attrs);
  const Tensor& x = a.x;
  TensorPtr y = makeTensor(x.dtype(), ops::withRows(x, a.rows));
  if (x.bytes()) std::memcpy(y->raw(), x.raw(), x.bytes());
  // the padding rows are zeros: the math's, the only bytes zeroed
  if (y->bytes() > x.bytes()) y->memory().fillZero(static_cast<uint8_t*>(y->raw()) + x.bytes(), y->bytes() - x.bytes());
  return {y};
}

/** trimRows of allGather.ts */
Outputs trim(const Inputs& in, const KernelContext& ctx) {
  const ops::RowsArgs a = ops::checkTrim(in, ctx.attrs);
  const Tensor& x = a.x;
  TensorPtr y = makeTensor(x.dtype(), ops::withRows(x, a.rows));
  if (y->bytes()) std::memcpy(y->raw(), x.raw(), y->bytes());
  return {y};
}

}  // namespace

HCSP_COLLECTIVE_KERNEL(allReduce, allReduce);
HCSP_COLLECTIVE_KERNEL(reduceScatter, reduceScatter);
HCSP_COLLECTIVE_KERNEL(allGather, allGather);
HCSP_KERNEL(shard, shard);
HCSP_KERNEL(pad, pad);
HCSP_KERNEL(trim, trim);

}  // namespace hcsp
