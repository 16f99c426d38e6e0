// Launchers of the LM/MTP head ops on the GPU devices, with the checks and messages the host
// kernels share (ops/head_checks.h, as reference/kernels/headKernels.ts).
#include <cstdint>
#include <string>
#include <vector>

#include "../../host/kernels/kernel_args.h"
#include "../../ops/head_checks.h"
#include "../gpu_op_registry.h"
#include "../kernels/head.h"

namespace hcsp::gpu {
namespace {

/** bytes from src to dst, both in the GPU's memory: by 4-byte words when both ends and the size allow */
void copyOnDevice(const GpuContext& g, const uint8_t* src, uint8_t* dst, int64_t bytes) {
  if (((reinterpret_cast<uintptr_t>(src) | reinterpret_cast<uintptr_t>(dst) | static_cast<uintptr_t>(bytes)) & 3u) == 0) {
    HCSP_LAUNCH(g.rt, hcsp_head_copy_words, bytes / 4, reinterpret_cast<const uint32_t*>(src), reinterpret_cast<uint32_t*>(dst), bytes / 4);
  } else {
    HCSP_LAUNCH(g.rt, hcsp_head_copy_bytes, bytes, src, dst, bytes);
  }
}

Outputs sliceRows(const Inputs& in, const GpuContext& g) {
  const ops::SliceRowsArgs a = ops::checkSliceRows(in, g.attrs);
  TensorPtr y = g.alloc(a.x.dtype(), a.shape);
  copyOnDevice(g, a.x.data<uint8_t>() + a.start * a.rowBytes, y->data<uint8_t>(), (a.end - a.start) * a.rowBytes);
  return {y};
}

Outputs reshape(const Inputs& in, const GpuContext& g) {
  const ops::ReshapeArgs a = ops::checkReshape(in, g.attrs);
  TensorPtr y = g.alloc(a.x.dtype(), a.shape);
  copyOnDevice(g, a.x.data<uint8_t>(), y->data<uint8_t>(), static_cast<int64_t>(a.x.bytes()));
  return {y};
}

Outputs rowBlocksToCols(const Inputs& in, const GpuContext& g) {
  const ops::RowBlocksToColsArgs a = ops::checkRowBlocksToCols(in, g.attrs);
  const Tensor& x = a.x;
  const int64_t r = a.r, parts = a.parts, cols = a.cols;
  const int64_t colBytes = cols * static_cast<int64_t>(dtypeBytes(x.dtype()));
  TensorPtr y = g.alloc(x.dtype(), {r, parts * cols});
  HCSP_LAUNCH(g.rt, hcsp_head_row_blocks_to_cols, r * parts * colBytes, x.data<uint8_t>(), y->data<uint8_t>(), r, parts, colBytes);
  return {y};
}

Outputs argmax(const Inputs& in, const GpuContext& g) {
  const ops::ArgmaxArgs a = ops::checkArgmax(in, g.attrs);
  TensorPtr ids = g.alloc(DType::I32, {a.rows});
  HCSP_LAUNCH(g.rt, hcsp_head_argmax, a.rows, a.logits.bf16(), ids->data<int32_t>(), a.rows, a.vocab);
  return {ids};
}

Outputs mtpDraftIds(const Inputs& in, const GpuContext& g) {
  const ops::MtpDraftIdsArgs a = ops::checkMtpDraftIds(in, g.attrs);
  TensorPtr y = g.alloc(DType::I32, {a.t});
  HCSP_LAUNCH(g.rt, hcsp_head_mtp_draft_ids, a.t, a.ids.data<int32_t>(), a.next.data<int32_t>(), y->data<int32_t>(), a.t);
  return {y};
}

}  // namespace

HCSP_GPU_OP(sliceRows, sliceRows);
HCSP_GPU_OP(reshape, reshape);
HCSP_GPU_OP(rowBlocksToCols, rowBlocksToCols);
HCSP_GPU_OP(argmax, argmax);
HCSP_GPU_OP(mtpDraftIds, mtpDraftIds);

}  // namespace hcsp::gpu
