// Launchers of the SP ops on the GPU devices (core graph/ops/spOps.ts), with the checks and
// messages the host kernels share (ops/collective_checks.h, the reference's): shard, pad and
// trim per rank, and the collectives of the ranks simulated on this one GPU, every rank's
// buffers in its memory (inputs[rank][0] -> outputs[rank][0]). A collective's kernel gets the
// ranks' buffer addresses and the ring all-reduce's block layout (computed here, on the host,
// as reduce::RingLayout does, reduce_order.h) by value in its launch's arguments: nothing is
// uploaded or allocated for them, so a collective moves no byte between the host and the device.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "../../host/kernels/js_text.h"
#include "../../host/kernels/kernel_args.h"
#include "../../host/kernels/reduce_order.h"
#include "../../ops/collective_checks.h"
#include "../gpu_op_registry.h"
#include "../kernels/collectives.h"

namespace hcsp::gpu {
namespace {

int64_t algorithmCode(reduce::Algorithm a) {
  switch (a) {
    case reduce::Algorithm::Ring:
      return HCSP_REDUCE_RING;
    case reduce::Algorithm::OneShot:
      return HCSP_REDUCE_ONESHOT;
    case reduce::Algorithm::Ordered:
      return HCSP_REDUCE_ORDERED;
  }
  return HCSP_REDUCE_ORDERED;
}

uint64_t address(const void* p) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p)); }

/**
 * Each rank's output, from `alloc()`, into `outs`, and the table of the ranks' input and output
 * addresses. The table holds HCSP_COLLECTIVE_MAX_RANKS ranks: more is refused before anything
 * is allocated.
 */
template <class Alloc>
HcspRankTable rankTable(const std::string& op, const std::vector<const Tensor*>& xs, std::vector<Outputs>& outs, Alloc alloc) {
  if (xs.size() > HCSP_COLLECTIVE_MAX_RANKS) {
    fail(ErrorKind::Unsupported, op + ": tp " + std::to_string(xs.size()) + " is more ranks than the GPU collective kernels take (at most " +
                                     std::to_string(HCSP_COLLECTIVE_MAX_RANKS) + ")");
  }
  HcspRankTable t{};
  for (size_t r = 0; r < xs.size(); r++) {
    outs.push_back({alloc()});
    t.srcs[r] = address(xs[r]->raw());
    t.dsts[r] = address(outs.back()[0]->raw());
  }
  return t;
}

/** dst[0, bytes) = src[0, bytes) on the device, in the widest units the addresses and the size allow */
void copyDevice(const GpuContext& g, void* dst, const void* src, int64_t bytes) {
  if (bytes <= 0) return;
  const uint64_t align = address(dst) | address(src) | static_cast<uint64_t>(bytes);
  if (align % 16 == 0) {
    HCSP_LAUNCH(g.rt, hcsp_collective_copy_u128, bytes / 16, src, dst, bytes / 16);
  } else if (align % 4 == 0) {
    HCSP_LAUNCH(g.rt, hcsp_collective_copy_u32, bytes / 4, static_cast<const uint32_t*>(src), static_cast<uint32_t*>(dst), bytes / 4);
  } else {
    HCSP_LAUNCH(g.rt, hcsp_collective_copy_u8, bytes, static_cast<const uint8_t*>(src), static_cast<uint8_t*>(dst), bytes);
  }
}

/**
 * The ring layout's descriptor (collectives.h HcspRingLayout), by reduce::RingLayout's formulas:
 * loops of channels*tp*chunkElems elements; a full loop's blocks hold chunkElems elements, the
 * last loop's realChunk = min(chunkElems, alignUp(ceil((n-L) / (channels*tp)), 16)). `layout`
 * (which made the checks) confirms the descriptor's blocks at the last loop's start.
 */
HcspRingLayout ringDescriptor(int64_t n, int tp, double channelsAttr, double chunkAttr, const reduce::RingLayout& layout) {
  const double cap = static_cast<double>(n) + reduce::RING_ALIGN_ELEMS + 1;
  const int64_t channels = static_cast<int64_t>(std::min(channelsAttr, cap));
  const int64_t chunkElems = static_cast<int64_t>(std::min(chunkAttr, cap));
  const int64_t blocksPerLoop = channels * tp;
  const double loop = static_cast<double>(blocksPerLoop) * static_cast<double>(chunkElems);
  const int64_t loopSize = loop > static_cast<double>(n) ? n + 1 : blocksPerLoop * chunkElems;
  auto realChunk = [&](int64_t loopOffset) {
    const int64_t perBlock = (n - loopOffset + blocksPerLoop - 1) / blocksPerLoop;
    const int64_t aligned = (perBlock + reduce::RING_ALIGN_ELEMS - 1) / reduce::RING_ALIGN_ELEMS * reduce::RING_ALIGN_ELEMS;
    return std::min(chunkElems, aligned);
  };
  const int64_t lastLoop = n > 0 ? (n - 1) / loopSize * loopSize : 0;
  const int64_t lastChunk = n > 0 ? realChunk(lastLoop) : 1;
  const int64_t fullChunk = lastLoop > 0 ? realChunk(0) : lastChunk;
  if (n > 0) {
    const reduce::RingBlock b = layout.blockAt(lastLoop);
    const reduce::RingBlock f = layout.blockAt(0);
    if (b.start != lastLoop || b.owner != 0 || b.end != std::min(lastLoop + lastChunk, n) || f.end != std::min(fullChunk, n)) {
      fail(ErrorKind::Runtime, "allReduce: the ring descriptor disagrees with the ring layout (n " + std::to_string(n) + ", tp " + std::to_string(tp) + ")");
    }
  }
  return HcspRingLayout{loopSize, fullChunk, lastLoop, lastChunk};
}

std::vector<Outputs> allReduce(const std::vector<Inputs>& inputs, const GpuContext& g) {
  const ops::AllReduceArgs a = ops::checkAllReduce(inputs, g.attrs);
  HcspRingLayout ring{1, 1, 0, 1};
  if (a.algorithm == reduce::Algorithm::Ring) {
    const reduce::RingLayout layout(a.n, a.tp, a.channels, a.chunkElems);
    ring = ringDescriptor(a.n, a.tp, a.channels, a.chunkElems, layout);
  }
  std::vector<Outputs> outs;
  const HcspRankTable ranks = rankTable("allReduce", a.xs, outs, [&] { return g.alloc(DType::BF16, a.xs[0]->shape()); });
  if (a.n == 0) return outs;
  HCSP_LAUNCH(g.rt, hcsp_collective_all_reduce_bf16, a.n, ranks, a.tp, a.n, algorithmCode(a.algorithm), ring);
  return outs;
}

std::vector<Outputs> reduceScatter(const std::vector<Inputs>& inputs, const GpuContext& g) {
  const ops::ReduceScatterArgs a = ops::checkReduceScatter(inputs, g.attrs);
  std::vector<Outputs> outs;
  const HcspRankTable ranks = rankTable("reduceScatter", a.xs, outs, [&] { return g.alloc(DType::BF16, a.outShape); });
  if (a.shardElems == 0) return outs;
  HCSP_LAUNCH(g.rt, hcsp_collective_reduce_scatter_bf16, a.tp * a.shardElems, ranks, a.tp, a.shardElems, algorithmCode(a.algorithm));
  return outs;
}

std::vector<Outputs> allGather(const std::vector<Inputs>& inputs, const GpuContext& g) {
  const ops::AllGatherArgs a = ops::checkAllGather(inputs, g.attrs);
  const std::vector<const Tensor*>& xs = a.xs;
  const int tp = static_cast<int>(xs.size());
  const int64_t shardBytes = static_cast<int64_t>(xs[0]->bytes());
  std::vector<Outputs> outs;
  const HcspRankTable ranks = rankTable("allGather", xs, outs, [&] { return g.alloc(a.dtype, a.outShape); });
  if (shardBytes == 0) return outs;
  if (shardBytes % 4 == 0) {
    HCSP_LAUNCH(g.rt, hcsp_collective_all_gather_u32, tp * (shardBytes / 4), ranks, tp, shardBytes / 4);
  } else {
    HCSP_LAUNCH(g.rt, hcsp_collective_all_gather_u16, tp * (shardBytes / 2), ranks, tp, shardBytes / 2);
  }
  return outs;
}

/** shardTensorRows of allGather.ts */
Outputs shard(const Inputs& in, const GpuContext& g) {
  const ops::ShardArgs a = ops::checkShard(in, g.attrs);
  const Tensor& x = a.x;
  const int64_t rows = a.rows, c = a.chunk, rk = a.rank;
  const int64_t rowBytes = ops::rowLength(x) * static_cast<int64_t>(dtypeBytes(x.dtype()));
  TensorPtr y = g.alloc(x.dtype(), ops::withRows(x, c));
  const int64_t first = std::min(rk * c, rows), last = std::min((rk + 1) * c, rows);
  const int64_t real = std::max<int64_t>(0, last - first) * rowBytes;
  copyDevice(g, y->raw(), x.data<uint8_t>() + first * rowBytes, real);
  // rows at or past T are zeros: the math's, the only bytes zeroed (the runtime's memset, ordered with the stream)
  if (static_cast<int64_t>(y->bytes()) > real) g.rt.fillZero(y->data<uint8_t>() + real, y->bytes() - static_cast<size_t>(real));
  return {y};
}

/** padRows of allGather.ts */
Outputs pad(const Inputs& in, const GpuContext& g) {
  const ops::RowsArgs a = ops::checkPad(in, g.attrs);
  const Tensor& x = a.x;
  TensorPtr y = g.alloc(x.dtype(), ops::withRows(x, a.rows));
  copyDevice(g, y->raw(), x.raw(), static_cast<int64_t>(x.bytes()));
  // the padding rows are zeros: the math's, the only bytes zeroed
  if (y->bytes() > x.bytes()) g.rt.fillZero(y->data<uint8_t>() + x.bytes(), y->bytes() - x.bytes());
  return {y};
}

/** trimRows of allGather.ts */
Outputs trim(const Inputs& in, const GpuContext& g) {
  const ops::RowsArgs a = ops::checkTrim(in, g.attrs);
  const Tensor& x = a.x;
  TensorPtr y = g.alloc(x.dtype(), ops::withRows(x, a.rows));
  copyDevice(g, y->raw(), x.raw(), static_cast<int64_t>(y->bytes()));
  return {y};
}

}  // namespace

HCSP_GPU_COLLECTIVE_OP(allReduce, allReduce);
HCSP_GPU_COLLECTIVE_OP(reduceScatter, reduceScatter);
HCSP_GPU_COLLECTIVE_OP(allGather, allGather);
HCSP_GPU_OP(shard, shard);
HCSP_GPU_OP(pad, pad);
HCSP_GPU_OP(trim, trim);

}  // namespace hcsp::gpu
