// The SP ops' argument checks (reference/kernels/collectiveKernels.ts, rankInputs.ts,
// reduceOrder.ts, collectives/allGather.ts), shared by the host kernels
// (host/kernels/collective_kernels.cc) and the GPU launchers (gpu/ops/collective_ops.cc): each
// check* reads the attributes and the ranks' inputs' metadata (shape, dtype; never data) in the
// reference's order, fails with the reference's messages, and returns the validated geometry.
#pragma once
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "../host/kernels/js_text.h"
#include "../host/kernels/kernel_args.h"
#include "../host/kernels/reduce_order.h"

namespace hcsp::ops {

/** intAttr of collectiveKernels.ts: attrs[name] ?? fallback, an integer (as the JavaScript number) */
inline double intAttr(const Attrs& attrs, const std::string& name, const std::string& op, std::optional<double> fallback = std::nullopt) {
  if (!attrs.has(name) && fallback) return *fallback;
  if (!js::isInteger(attrs, name)) fail(ErrorKind::Attr, op + ": attr " + name + " must be an integer, got " + js::json(attrs, name));
  return attrs.number(name);
}

/** checkReduceAlgorithm of reduceOrder.ts */
inline reduce::Algorithm algorithmAttr(const Attrs& attrs, const std::string& where) {
  reduce::Algorithm a;
  const js::AttrProbe p = js::probe(attrs, "algorithm");
  if (p.kind != js::AttrProbe::Kind::String || !reduce::parseAlgorithm(p.string, a)) {
    fail(ErrorKind::Attr, where + ": unknown reduction algorithm " + js::json(attrs, "algorithm") + "; expected one of ring, oneshot, ordered");
  }
  return a;
}

/** port 0 of every rank (portX) */
inline std::vector<const Tensor*> portX(const std::vector<Inputs>& inputs, const std::string& op) {
  std::vector<const Tensor*> xs;
  for (size_t r = 0; r < inputs.size(); r++) {
    if (inputs[r].empty() || !inputs[r][0]) fail(ErrorKind::Shape, op + ": rank " + std::to_string(r) + " has no input x");
    xs.push_back(inputs[r][0].get());
  }
  return xs;
}

/** checkRankInputs of rankInputs.ts (metadata only) */
inline void checkRankInputs(const std::vector<const Tensor*>& xs, const std::string& op, const std::vector<DType>& dtypes) {
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

// ---- the collectives ---------------------------------------------------------------------

struct AllReduceArgs {
  reduce::Algorithm algorithm;
  std::vector<const Tensor*> xs;
  /** the ring's channels and chunkElems attributes (as the JavaScript numbers) */
  double channels, chunkElems;
  int tp;
  int64_t n;
};

inline AllReduceArgs checkAllReduce(const std::vector<Inputs>& inputs, const Attrs& attrs) {
  const std::string op = "allReduce";
  const reduce::Algorithm algorithm = algorithmAttr(attrs, op);
  std::vector<const Tensor*> xs = portX(inputs, op);
  const double channels = intAttr(attrs, "channels", op, static_cast<double>(reduce::RING_DEFAULT_CHANNELS));
  const double chunkElems = intAttr(attrs, "chunkElems", op, static_cast<double>(reduce::RING_DEFAULT_CHUNK_ELEMS));
  checkRankInputs(xs, op, {DType::BF16});
  const int tp = static_cast<int>(xs.size());
  const int64_t n = xs[0]->numel();
  return {algorithm, std::move(xs), channels, chunkElems, tp, n};
}

struct ReduceScatterArgs {
  reduce::Algorithm algorithm;
  std::vector<const Tensor*> xs;
  int tp;
  /** each rank's output: rows / tp of the input's rows */
  Shape outShape;
  int64_t shardElems;
};

inline ReduceScatterArgs checkReduceScatter(const std::vector<Inputs>& inputs, const Attrs& attrs) {
  const std::string op = "reduceScatter";
  const reduce::Algorithm algorithm = algorithmAttr(attrs, op);
  std::vector<const Tensor*> xs = portX(inputs, op);
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
  return {algorithm, std::move(xs), tp, std::move(outShape), shardElems};
}

struct AllGatherArgs {
  std::vector<const Tensor*> xs;
  DType dtype;
  /** every rank's output: the ranks' rows in rank order */
  Shape outShape;
};

inline AllGatherArgs checkAllGather(const std::vector<Inputs>& inputs, const Attrs&) {
  const std::string op = "allGather";
  std::vector<const Tensor*> xs = portX(inputs, op);
  checkRankInputs(xs, op, {DType::BF16, DType::F32, DType::I32});
  const DType dtype = xs[0]->dtype();
  Shape outShape = xs[0]->shape();
  outShape[0] *= static_cast<int64_t>(xs.size());
  return {std::move(xs), dtype, std::move(outShape)};
}

// ---- the per-rank row movement -----------------------------------------------------------

inline const Tensor& oneInput(const Inputs& in, const std::string& op) {
  if (in.empty() || !in[0]) fail(ErrorKind::Shape, op + ": input x is missing");
  return *in[0];
}

/** the elements of one row (the product of the dims past the first) */
inline int64_t rowLength(const Tensor& x) {
  int64_t n = 1;
  for (size_t i = 1; i < x.rank(); i++) n *= x.dim(i);
  return n;
}

/** x's shape with `rows` rows */
inline Shape withRows(const Tensor& x, int64_t rows) {
  Shape s = x.shape();
  s[0] = rows;
  return s;
}

inline bool isInt(double v) { return std::isfinite(v) && std::floor(v) == v; }

inline void checkRowCount(double value, const std::string& op) {
  if (!isInt(value) || value < 0) fail(ErrorKind::Attr, op + ": rows must be a non-negative integer, got " + js::number(value));
}

struct ShardArgs {
  const Tensor& x;
  /** x's rows; this rank's chunk of rows and its index */
  int64_t rows, chunk, rank;
};

/** shardTensorRows of allGather.ts */
inline ShardArgs checkShard(const Inputs& in, const Attrs& attrs) {
  const std::string op = "shard";
  const Tensor& x = oneInput(in, op);
  const double rank = intAttr(attrs, "rank", op);
  const double tp = intAttr(attrs, "tp", op);
  const double chunk = intAttr(attrs, "chunk", op);
  if (!isInt(tp) || tp < 1) fail(ErrorKind::Attr, "shard: tp must be a positive integer, got " + js::number(tp));
  if (!isInt(rank) || rank < 0 || rank >= tp) fail(ErrorKind::Attr, "shard: rank " + js::number(rank) + " is not in [0, " + js::number(tp) + ")");
  if (!isInt(chunk) || chunk < 1) fail(ErrorKind::Attr, "shard: chunk must be a positive integer, got " + js::number(chunk));
  if (x.rank() == 0) fail(ErrorKind::Shape, "shard: x needs a leading (row) dimension, got shape []");
  const int64_t rows = x.dim(0);
  if (chunk * tp < static_cast<double>(rows)) {
    fail(ErrorKind::Shape, "shard: chunk " + js::number(chunk) + " * tp " + js::number(tp) + " = " + js::number(chunk * tp) + " rows cannot hold the " +
                               std::to_string(rows) + " rows of " + shapeStr(x.shape()));
  }
  return {x, rows, static_cast<int64_t>(chunk), static_cast<int64_t>(rank)};
}

struct RowsArgs {
  const Tensor& x;
  /** the output's rows */
  int64_t rows;
};

/** padRows of allGather.ts */
inline RowsArgs checkPad(const Inputs& in, const Attrs& attrs) {
  const std::string op = "pad";
  const Tensor& x = oneInput(in, op);
  const double rows = intAttr(attrs, "rows", op);
  checkRowCount(rows, op);
  if (x.rank() == 0) fail(ErrorKind::Shape, "pad: x needs a leading (row) dimension, got shape []");
  if (rows < static_cast<double>(x.dim(0))) {
    fail(ErrorKind::Shape, "pad: rows " + js::number(rows) + " is fewer than the " + std::to_string(x.dim(0)) + " rows of " + shapeStr(x.shape()));
  }
  return {x, static_cast<int64_t>(rows)};
}

/** trimRows of allGather.ts */
inline RowsArgs checkTrim(const Inputs& in, const Attrs& attrs) {
  const std::string op = "trim";
  const Tensor& x = oneInput(in, op);
  const double rows = intAttr(attrs, "rows", op);
  checkRowCount(rows, op);
  if (x.rank() == 0) fail(ErrorKind::Shape, "trim: x needs a leading (row) dimension, got shape []");
  if (rows > static_cast<double>(x.dim(0))) {
    fail(ErrorKind::Shape, "trim: rows " + js::number(rows) + " is more than the " + std::to_string(x.dim(0)) + " rows of " + shapeStr(x.shape()));
  }
  return {x, static_cast<int64_t>(rows)};
}

}  // namespace hcsp::ops
