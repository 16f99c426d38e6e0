// The routed-row layout on the device that the MoE experts' launchers share (moeExperts in
// moe_ops.cc, moeExpertsFp8Ptpc in moe_fp8_ops.cc; moe_ops.cc's header tells the layout): the
// buffers sized for the worst case, T x topK rows, and the two launches that fill them from
// the routing ids, the row count left on the device.
#pragma once
#include <cstdint>
#include <string>

#include "../gpu_op_registry.h"
#include "../kernels/moe.h"

namespace hcsp::gpu {

struct MoeRowLayout {
  /** the most routed rows a rank can own: every pair (t, k) */
  int64_t maxRows;
  /** first[numLocal + 1]: expert e's rows start at first[e]; first[numLocal] is the row count every kernel after the layout reads */
  TensorPtr first;
  TensorPtr rowToken;
  TensorPtr rowPair;
  TensorPtr rowExpert;
  TensorPtr pairRow;
  /** [T, topK]: token t's rows in the reference's order of adds, then -1 */
  TensorPtr tokenRows;
  /** the device's row count (first + numLocal) */
  const int32_t* rows;
};

/** lays out op's routed rows for ids [T, topK] (row numbers are int32 on the device: more pairs than that is a shape error) */
inline MoeRowLayout moeRowLayout(const GpuContext& g, const std::string& op, const int32_t* ids, int64_t T, int64_t topK, int64_t firstExpert,
                                 int64_t numLocal) {
  const int64_t maxRows = T * topK;
  if (maxRows > INT32_MAX) fail(ErrorKind::Shape, op + ": " + std::to_string(maxRows) + " routing pairs (T x topK) exceed the GPU layout's int32 rows");
  MoeRowLayout l{maxRows,
                 g.alloc(DType::I32, {numLocal + 1}),
                 g.alloc(DType::I32, {maxRows}),
                 g.alloc(DType::I32, {maxRows}),
                 g.alloc(DType::I32, {maxRows}),
                 g.alloc(DType::I32, {maxRows}),
                 g.alloc(DType::I32, {T, topK}),
                 nullptr};
  l.rows = l.first->data<int32_t>() + numLocal;
  HCSP_LAUNCH(g.rt, hcsp_moe_layout, numLocal + 1, ids, l.first->data<int32_t>(), l.rowToken->data<int32_t>(), l.rowPair->data<int32_t>(),
              l.rowExpert->data<int32_t>(), l.pairRow->data<int32_t>(), T, topK, firstExpert, numLocal);
  HCSP_LAUNCH(g.rt, hcsp_moe_token_rows, T, ids, l.pairRow->data<int32_t>(), l.tokenRows->data<int32_t>(), T, topK, firstExpert, numLocal);
  return l;
}

}  // namespace hcsp::gpu
