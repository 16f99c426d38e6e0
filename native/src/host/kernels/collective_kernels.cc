// Host kernels of the SP ops (core graph/ops/spOps.ts), as reference/kernels/collectiveKernels.ts:
// the per-rank row movement shard, pad and trim (collectives/allGather.ts, any dtype, exact
// copies) and the collectives allReduce, reduceScatter and allGather, every rank's buffers in
// one process in lockstep (inputs[rank][0] -> outputs[rank][0]). The sums run in the orders of
// collectives/reduceOrder.ts and ringAllReduce.ts (reduce_order.h); threads split the elements,
// each element summed by one thread in its algorithm's order. Error messages are the reference's.
#include <cstring>
#include <optional>

#include "../numerics/bf16.h"
#include "js_text.h"
#include "kernel_args.h"
#include "reduce_order.h"

namespace hcsp {
namespace {

constexpr int64_t GRAIN = 1 << 14;

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

/** port 0 of every rank (portX) */
std::vector<const Tensor*> portX(const std::vector<Inputs>& inputs, const std::string& op) {
  std::vector<const Tensor*> xs;
  for (size_t r = 0; r < inputs.size(); r++) {
    if (inputs[r].empty() || !inputs[r][0]) fail(ErrorKind::Shape, op + ": rank " + std::to_string(r) + " has no input x");
    xs.push_back(inputs[r][0].get());
  }
  return xs;
}

/** checkRankInputs of rankInputs.ts */
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
  const std::string op = "allReduce";
  const reduce::Algorithm algorithm = algorithmAttr(ctx.attrs, op);
  const std::vector<const Tensor*> xs = portX(inputs, op);
  const double channels = intAttr(ctx.attrs, "channels", op, static_cast<double>(reduce::RING_DEFAULT_CHANNELS));
  const double chunkElems = intAttr(ctx.attrs, "chunkElems", op, static_cast<double>(reduce::RING_DEFAULT_CHUNK_ELEMS));
  checkRankInputs(xs, op, {DType::BF16});
  const int tp = static_cast<int>(xs.size());
  const int64_t n = xs[0]->numel();
  const std::vector<const uint16_t*> partials = bf16Partials(xs);
  TensorPtr y = makeTensor(DType::BF16, xs[0]->shape());
  uint16_t* out = y->bf16();
  if (algorithm == reduce::Algorithm::Ring) {
    const reduce::RingLayout layout(n, tp, channels, chunkElems);
    ctx.pool.parallelFor(n, GRAIN, [&](int64_t i0, int64_t i1) { reduce::ringAllReduceRange(partials.data(), tp, layout, i0, i1, out + i0); });
  } else {
    ctx.pool.parallelFor(n, GRAIN, [&](int64_t i0, int64_t i1) { reduce::reduceInto(algorithm, 0, partials.data(), tp, i0, i1, out + i0); });
  }
  return replicate(y, xs.size());
}

std::vector<Outputs> reduceScatter(const std::vector<Inputs>& inputs, const KernelContext& ctx) {
  const std::string op = "reduceScatter";
  const reduce::Algorithm algorithm = algorithmAttr(ctx.attrs, op);
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
  const std::string op = "allGather";
  const std::vector<const Tensor*> xs = portX(inputs, op);
  checkRankInputs(xs, op, {DType::BF16, DType::F32, DType::I32});
  const DType dtype = xs[0]->dtype();
  Shape outShape = xs[0]->shape();
  outShape[0] *= static_cast<int64_t>(xs.size());
  const size_t shardBytes = xs[0]->bytes();
  TensorPtr y = makeTensor(dtype, outShape);
  auto* dst = static_cast<uint8_t*>(y->raw());
  for (size_t r = 0; r < xs.size(); r++) {
    if (shardBytes) std::memcpy(dst + r * shardBytes, xs[r]->raw(), shardBytes);
  }
  return replicate(y, xs.size());
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
Outputs shard(const Inputs& in, const KernelContext& ctx) {
  const std::string op = "shard";
  const Tensor& x = oneInput(in, op);
  const double rank = intAttr(ctx.attrs, "rank", op);
  const double tp = intAttr(ctx.attrs, "tp", op);
  const double chunk = intAttr(ctx.attrs, "chunk", op);
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
  const int64_t rowLen = rowLength(x);
  const size_t es = dtypeBytes(x.dtype());
  TensorPtr y = makeTensor(x.dtype(), withRows(x, c));
  // rank*chunk <= (tp-1)*chunk < chunk*tp: in range once chunk*tp rows are allocatable
  const int64_t first = std::min(rk * c, rows), last = std::min((rk + 1) * c, rows);
  if (last > first) std::memcpy(y->raw(), static_cast<const uint8_t*>(x.raw()) + first * rowLen * es, (last - first) * rowLen * es);
  return {y};
}

void checkRowCount(double value, const std::string& op) {
  if (!isInt(value) || value < 0) fail(ErrorKind::Attr, op + ": rows must be a non-negative integer, got " + js::number(value));
}

/** padRows of allGather.ts */
Outputs pad(const Inputs& in, const KernelContext& ctx) {
  const std::string op = "pad";
  const Tensor& x = oneInput(in, op);
  const double rows = intAttr(ctx.attrs, "rows", op);
  checkRowCount(rows, op);
  if (x.rank() == 0) fail(ErrorKind::Shape, "pad: x needs a leading (row) dimension, got shape []");
  if (rows < static_cast<double>(x.dim(0))) {
    fail(ErrorKind::Shape, "pad: rows " + js::number(rows) + " is fewer than the " + std::to_string(x.dim(0)) + " rows of " + shapeStr(x.shape()));
  }
  TensorPtr y = makeTensor(x.dtype(), withRows(x, static_cast<int64_t>(rows)));
  if (x.bytes()) std::memcpy(y->raw(), x.raw(), x.bytes());
  return {y};
}

/** trimRows of allGather.ts */
Outputs trim(const Inputs& in, const KernelContext& ctx) {
  const std::string op = "trim";
  const Tensor& x = oneInput(in, op);
  const double rows = intAttr(ctx.attrs, "rows", op);
  checkRowCount(rows, op);
  if (x.rank() == 0) fail(ErrorKind::Shape, "trim: x needs a leading (row) dimension, got shape []");
  if (rows > static_cast<double>(x.dim(0))) {
    fail(ErrorKind::Shape, "trim: rows " + js::number(rows) + " is more than the " + std::to_string(x.dim(0)) + " rows of " + shapeStr(x.shape()));
  }
  TensorPtr y = makeTensor(x.dtype(), withRows(x, static_cast<int64_t>(rows)));
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
