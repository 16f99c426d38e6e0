// Launchers of the SP ops on the GPU devices (core graph/ops/spOps.ts), with the host kernels'
// checks and messages (host/kernels/collective_kernels.cc, the reference's): shard, pad and
// trim per rank, and the collectives of the ranks simulated on this one GPU, every rank's
// buffers in its memory (inputs[rank][0] -> outputs[rank][0]). A collective's kernel gets the
// ranks' buffers as a small device table of their addresses; the ring all-reduce's block layout
// is computed here, on the host, as reduce::RingLayout does (reduce_order.h), and passed down
// as a four-number descriptor.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "../../host/kernels/js_text.h"
#include "../../host/kernels/kernel_args.h"
#include "../../host/kernels/reduce_order.h"
#include "../gpu_op_registry.h"
#include "../kernels/collectives.h"

namespace hcsp::gpu {
namespace {

/** intAttr of collectiveKernels.ts: attrs[name] ?? fallback, an integer (as the JavaScript number) */
double intAttr(const Attrs& attrs, const std::string& name, const std::string& op, std::optional<double> fallback = std::nullopt) {
  if (!attrs.has(name) && fallback) return *fallback;
  if (!js::isInteger(attrs, name)) fail(ErrorKind::Attr, op + ": attr " + name + " must be an integer, got " + js::json(attrs, name));
  return attrs.number(name);
}

/** checkReduceAlgorithm of reduceOrder.ts */
reduce::Algorithm algorithmAttr(const Attrs& attrs, const std::string& where) {
  reduce::Algorithm a;
  const js::AttrProbe p = js::probe(attrs, "algorithm");
  if (p.kind != js::AttrProbe::Kind::String || !reduce::parseAlgorithm(p.string, a)) {
    fail(ErrorKind::Attr, where + ": unknown reduction algorithm " + js::json(attrs, "algorithm") + "; expected one of ring, oneshot, ordered");
  }
  return a;
}

int64_t algorithmCode(reduce::Algorithm a) {
  switch (a) {
    case reduce::Algorithm::Ring: return HCSP_REDUCE_RING;
    case reduce::Algorithm::OneShot: return HCSP_REDUCE_ONESHOT;
    case reduce::Algorithm::Ordered: return HCSP_REDUCE_ORDERED;
  }
  return HCSP_REDUCE_ORDERED;
}

/** port 0 of every rank (portX) */
std::vector<const Tensor*> portX(const std::vector<Inputs>& inputs, const std::string& op) {
  std::vector<const Tensor*> xs;
  for (size_t r = 0; r < inputs.size(); r++) {
    if (inputs[r].empty() || !inputs[r][0]) fail(ErrorKind::Shape, op + ": rank " + std::to_string(r) + " has no input x");
    xs.push_back(inputs[r][0].get());
  }
  return xs;
}

/** checkRankInputs of rankInputs.ts (metadata only) */
void checkRankInputs(const std::vector<const Tensor*>& xs, const std::string& op, const std::vector<DType>& dtypes) {
  if (xs.empty()) fail(ErrorKind::Shape, op + ": no ranks (tp = 0)");
  const Tensor& first = *xs[0];
  for (size_t r = 0; r < xs.size(); r++) {
    const Tensor& t = *xs[r];
    bool allowed = false;
    for (DType d : dtypes) allowed = allowed || d == t.dtype();
    if (!allowed) {
      std::string list;
      for (size_t i = 0; i < dtypes.size(); i++) list += (i ? ", " : "") + std::string(dtypeName(dtypes[i]));
      fail(ErrorKind::DType, op + ": rank " + std::to_string(r) + " has dtype " + dtypeName(t.dtype()) + "; expected one of " + list);
    }
    if (t.dtype() != first.dtype()) {
      fail(ErrorKind::DType, op + ": rank " + std::to_string(r) + " has dtype " + dtypeName(t.dtype()) + ", rank 0 has " + dtypeName(first.dtype()));
    }
    if (t.shape() != first.shape()) {
      fail(ErrorKind::Shape, op + ": rank " + std::to_string(r) + " has shape " + shapeStr(t.shape()) + ", rank 0 has " + shapeStr(first.shape()));
    }
  }
  if (first.rank() == 0) fail(ErrorKind::Shape, op + ": tensors need a leading (row) dimension, got shape []");
}

/**
 * A device copy of `values` (int64 / uint64 words) in a scratch tensor of this GPU. The caller
 * keeps it until the kernels that read it have run (see finish()).
 */
template <class T>
TensorPtr deviceWords(const GpuContext& g, const std::vector<T>& values) {
  static_assert(sizeof(T) == 8, "device tables hold 64-bit words");
  TensorPtr t = g.alloc(DType::I32, {static_cast<int64_t>(values.size()) * 2});
  if (!values.empty()) g.rt.copyIn(t->raw(), values.data(), values.size() * sizeof(T));
  return t;
}

uint64_t address(const void* p) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p)); }

/** the kernels reading this launcher's scratch tables have finished before the tables are freed */
void finish(const GpuContext& g) { g.rt.synchronize(); }

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
 * The ring layout's descriptor (collectives.h HCSP_RING_*), by reduce::RingLayout's formulas:
 * loops of channels*tp*chunkElems elements; a full loop's blocks hold chunkElems elements, the
 * last loop's realChunk = min(chunkElems, alignUp(ceil((n-L) / (channels*tp)), 16)). `layout`
 * (which made the checks) confirms the descriptor's blocks at the last loop's start.
 */
std::vector<int64_t> ringDescriptor(int64_t n, int tp, double channelsAttr, double chunkAttr, const reduce::RingLayout& layout) {
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
  return {loopSize, fullChunk, lastLoop, lastChunk};
}

std::vector<Outputs> allReduce(const std::vector<Inputs>& inputs, const GpuContext& g) {
  const std::string op = "allReduce";
  const reduce::Algorithm algorithm = algorithmAttr(g.attrs, op);
  const std::vector<const Tensor*> xs = portX(inputs, op);
  const double channels = intAttr(g.attrs, "channels", op, static_cast<double>(reduce::RING_DEFAULT_CHANNELS));
  const double chunkElems = intAttr(g.attrs, "chunkElems", op, static_cast<double>(reduce::RING_DEFAULT_CHUNK_ELEMS));
  checkRankInputs(xs, op, {DType::BF16});
  const int tp = static_cast<int>(xs.size());
  const int64_t n = xs[0]->numel();
  std::vector<int64_t> ring{1, 1, 0, 1};
  if (algorithm == reduce::Algorithm::Ring) {
    const reduce::RingLayout layout(n, tp, channels, chunkElems);
    ring = ringDescriptor(n, tp, channels, chunkElems, layout);
  }
  std::vector<Outputs> outs;
  std::vector<uint64_t> srcs, dsts;
  for (int r = 0; r < tp; r++) {
    outs.push_back({g.alloc(DType::BF16, xs[0]->shape())});
    srcs.push_back(address(xs[r]->raw()));
    dsts.push_back(address(outs.back()[0]->raw()));
  }
  if (n == 0) return outs;
  const TensorPtr srcTable = deviceWords(g, srcs), dstTable = deviceWords(g, dsts), ringTable = deviceWords(g, ring);
  HCSP_LAUNCH(g.rt, hcsp_collective_all_reduce_bf16, n, srcTable->data<uint64_t>(), dstTable->data<uint64_t>(), tp, n, algorithmCode(algorithm),
              ringTable->data<int64_t>());
  finish(g);
  return outs;
}

std::vector<Outputs> reduceScatter(const std::vector<Inputs>& inputs, const GpuContext& g) {
  const std::string op = "reduceScatter";
  const reduce::Algorithm algorithm = algorithmAttr(g.attrs, op);
  const std::vector<const Tensor*> xs = portX(inputs, op);
  checkRankInputs(xs, op, {DType::BF16});
  const int tp = static_cast<int>(xs.size());
  const Shape& shape = xs[0]->shape();
  const int64_t rows = shape[0];
  if (rows % tp != 0) {
    fail(ErrorKind::Shape, op + ": " + std::to_string(rows) + " rows of shape " + shapeStr(shape) + " are not divisible by tp " + std::to_string(tp));
  }
  Shape outShape = shape;
  outShape[0] = rows / tp;
  const int64_t shardElems = numel(outShape);
  std::vector<Outputs> outs;
  std::vector<uint64_t> srcs, dsts;
  for (int r = 0; r < tp; r++) {
    outs.push_back({g.alloc(DType::BF16, outShape)});
    srcs.push_back(address(xs[r]->raw()));
    dsts.push_back(address(outs.back()[0]->raw()));
  }
  if (shardElems == 0) return outs;
  const TensorPtr srcTable = deviceWords(g, srcs), dstTable = deviceWords(g, dsts);
  HCSP_LAUNCH(g.rt, hcsp_collective_reduce_scatter_bf16, tp * shardElems, srcTable->data<uint64_t>(), dstTable->data<uint64_t>(), tp, shardElems,
              algorithmCode(algorithm));
  finish(g);
  return outs;
}

std::vector<Outputs> allGather(const std::vector<Inputs>& inputs, const GpuContext& g) {
  const std::string op = "allGather";
  const std::vector<const Tensor*> xs = portX(inputs, op);
  checkRankInputs(xs, op, {DType::BF16, DType::F32, DType::I32});
  const int tp = static_cast<int>(xs.size());
  const DType dtype = xs[0]->dtype();
  Shape outShape = xs[0]->shape();
  outShape[0] *= tp;
  const int64_t shardBytes = static_cast<int64_t>(xs[0]->bytes());
  std::vector<Outputs> outs;
  std::vector<uint64_t> srcs, dsts;
  for (int r = 0; r < tp; r++) {
    outs.push_back({g.alloc(dtype, outShape)});
    srcs.push_back(address(xs[r]->raw()));
    dsts.push_back(address(outs.back()[0]->raw()));
  }
  if (shardBytes == 0) return outs;
  const TensorPtr srcTable = deviceWords(g, srcs), dstTable = deviceWords(g, dsts);
  if (shardBytes % 4 == 0) {
    HCSP_LAUNCH(g.rt, hcsp_collective_all_gather_u32, tp * (shardBytes / 4), srcTable->data<uint64_t>(), dstTable->data<uint64_t>(), tp, shardBytes / 4);
  } else {
    HCSP_LAUNCH(g.rt, hcsp_collective_all_gather_u16, tp * (shardBytes / 2), srcTable->data<uint64_t>(), dstTable->data<uint64_t>(), tp, shardBytes / 2);
  }
  finish(g);
  return outs;
}

const Tensor& oneInput(const Inputs& in, const std::string& op) {
  if (in.empty() || !in[0]) fail(ErrorKind::Shape, op + ": input x is missing");
  return *in[0];
}

int64_t rowLength(const Tensor& x) {
  int64_t n = 1;
  for (size_t i = 1; i < x.rank(); i++) n *= x.dim(i);
  return n;
}

Shape withRows(const Tensor& x, int64_t rows) {
  Shape s = x.shape();
  s[0] = rows;
  return s;
}

bool isInt(double v) { return std::isfinite(v) && std::floor(v) == v; }

/** shardTensorRows of allGather.ts */
Outputs shard(const Inputs& in, const GpuContext& g) {
  const std::string op = "shard";
  const Tensor& x = oneInput(in, op);
  const double rank = intAttr(g.attrs, "rank", op);
  const double tp = intAttr(g.attrs, "tp", op);
  const double chunk = intAttr(g.attrs, "chunk", op);
  if (!isInt(tp) || tp < 1) fail(ErrorKind::Attr, "shard: tp must be a positive integer, got " + js::number(tp));
  if (!isInt(rank) || rank < 0 || rank >= tp) fail(ErrorKind::Attr, "shard: rank " + js::number(rank) + " is not in [0, " + js::number(tp) + ")");
  if (!isInt(chunk) || chunk < 1) fail(ErrorKind::Attr, "shard: chunk must be a positive integer, got " + js::number(chunk));
  if (x.rank() == 0) fail(ErrorKind::Shape, "shard: x needs a leading (row) dimension, got shape []");
  const int64_t rows = x.dim(0);
  if (chunk * tp < static_cast<double>(rows)) {
    fail(ErrorKind::Shape, "shard: chunk " + js::number(chunk) + " * tp " + js::number(tp) + " = " + js::number(chunk * tp) + " rows cannot hold the " +
                               std::to_string(rows) + " rows of " + shapeStr(x.shape()));
  }
  const int64_t c = static_cast<int64_t>(chunk), rk = static_cast<int64_t>(rank);
  const int64_t rowBytes = rowLength(x) * static_cast<int64_t>(dtypeBytes(x.dtype()));
  TensorPtr y = g.alloc(x.dtype(), withRows(x, c));
  // rows at or past T stay zero (the allocation is zero-filled)
  const int64_t first = std::min(rk * c, rows), last = std::min((rk + 1) * c, rows);
  copyDevice(g, y->raw(), x.data<uint8_t>() + first * rowBytes, (last - first) * rowBytes);
  return {y};
}

void checkRowCount(double value, const std::string& op) {
  if (!isInt(value) || value < 0) fail(ErrorKind::Attr, op + ": rows must be a non-negative integer, got " + js::number(value));
}

/** padRows of allGather.ts */
Outputs pad(const Inputs& in, const GpuContext& g) {
  const std::string op = "pad";
  const Tensor& x = oneInput(in, op);
  const double rows = intAttr(g.attrs, "rows", op);
  checkRowCount(rows, op);
  if (x.rank() == 0) fail(ErrorKind::Shape, "pad: x needs a leading (row) dimension, got shape []");
  if (rows < static_cast<double>(x.dim(0))) {
    fail(ErrorKind::Shape, "pad: rows " + js::number(rows) + " is fewer than the " + std::to_string(x.dim(0)) + " rows of " + shapeStr(x.shape()));
  }
  TensorPtr y = g.alloc(x.dtype(), withRows(x, static_cast<int64_t>(rows)));
  copyDevice(g, y->raw(), x.raw(), static_cast<int64_t>(x.bytes()));
  return {y};
}

/** trimRows of allGather.ts */
Outputs trim(const Inputs& in, const GpuContext& g) {
  const std::string op = "trim";
  const Tensor& x = oneInput(in, op);
  const double rows = intAttr(g.attrs, "rows", op);
  checkRowCount(rows, op);
  if (x.rank() == 0) fail(ErrorKind::Shape, "trim: x needs a leading (row) dimension, got shape []");
  if (rows > static_cast<double>(x.dim(0))) {
    fail(ErrorKind::Shape, "trim: rows " + js::number(rows) + " is more than the " + std::to_string(x.dim(0)) + " rows of " + shapeStr(x.shape()));
  }
  TensorPtr y = g.alloc(x.dtype(), withRows(x, static_cast<int64_t>(rows)));
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
