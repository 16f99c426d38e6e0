// The basic ops' argument checks (reference/kernels/basicKernels.ts) but linear's, shared by
// the host kernels (host/kernels/basic_kernels.cc) and the GPU launchers (gpu/ops/basic_ops.cc):
// each check* reads the attributes and the inputs' metadata (shape, dtype; never data) in the
// reference's order, fails with the reference's messages, and returns the validated geometry.
#pragma once
#include <cstdint>
#include <string>

#include "../host/kernels/kernel_args.h"

namespace hcsp::ops {

struct AddArgs {
  const Tensor &a, &b;
};

inline AddArgs checkAdd(const Inputs& in, const Attrs&) {
  const std::string op = "add";
  const auto [a, b] = inputs(in, op, {{"a", DType::BF16}, {"b", DType::BF16}});
  if (a.numel() != b.numel()) fail(ErrorKind::Shape, "add: shapes " + shapeStr(a.shape()) + " and " + shapeStr(b.shape()) + " differ");
  return {a, b};
}

struct SliceColsArgs {
  const Tensor& x;
  /** x is [rows, cols]; the output its columns [start, start + width) */
  int64_t rows, cols, start, width;
};

inline SliceColsArgs checkSliceCols(const Inputs& in, const Attrs& attrs) {
  if (in.empty() || !in[0]) fail(ErrorKind::Shape, "sliceCols: input 'x' is missing");
  const Tensor& x = *in[0];
  const auto [rows, cols] = dims2(x, "sliceCols x");
  const int64_t start = attrs.integer("start"), end = attrs.integer("end");
  if (!(start >= 0 && start < end && end <= cols)) {
    fail(ErrorKind::Attr, "sliceCols: [" + std::to_string(start) + ", " + std::to_string(end) + ") is outside [0, " + std::to_string(cols) + ")");
  }
  return {x, rows, cols, start, end - start};
}

struct EmbedArgs {
  const Tensor &ids, &table;
  int64_t vocab, h;
};

/** the metadata checks; the ids' values are checked by the caller, in order, with failEmbedId */
inline EmbedArgs checkEmbed(const Inputs& in, const Attrs&) {
  const std::string op = "embed";
  const auto [ids, table] = inputs(in, op, {{"ids", DType::I32}, {"table", DType::BF16}});
  const auto [vocab, h] = dims2(table, "embed table");
  return {ids, table, vocab, h};
}

/** the reference's error for token id `id` at position t outside [0, vocab) */
[[noreturn]] inline void failEmbedId(int64_t id, int64_t t, int64_t vocab) {
  fail(ErrorKind::Shape,
       "embed: token id " + std::to_string(id) + " at position " + std::to_string(t) + " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
}

}  // namespace hcsp::ops
