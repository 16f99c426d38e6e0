// Launchers of the basic ops on the GPU devices, with the checks and messages the host kernels
// share (ops/basic_checks.h).
#include "../../host/kernels/kernel_args.h"
#include "../../ops/basic_checks.h"
#include "../gpu_op_registry.h"
#include "../kernels/basic.h"

namespace hcsp::gpu {
namespace {

Outputs add(const Inputs& in, const GpuContext& g) {
  const ops::AddArgs args = ops::checkAdd(in, g.attrs);
  const Tensor& a = args.a;
  const Tensor& b = args.b;
  TensorPtr y = g.alloc(DType::BF16, a.shape());
  HCSP_LAUNCH(g.rt, hcsp_add_bf16, a.numel(), a.bf16(), b.bf16(), y->bf16(), a.numel());
  return {y};
}

Outputs sliceCols(const Inputs& in, const GpuContext& g) {
  const ops::SliceColsArgs a = ops::checkSliceCols(in, g.attrs);
  const Tensor& x = a.x;
  const int64_t rows = a.rows, cols = a.cols, start = a.start, width = a.width;
  const int64_t es = static_cast<int64_t>(dtypeBytes(x.dtype()));
  TensorPtr y = g.alloc(x.dtype(), {rows, width});
  HCSP_LAUNCH(g.rt, hcsp_slice_cols_bytes, rows * width * es, x.data<uint8_t>(), y->data<uint8_t>(), rows, cols, start, width, es);
  return {y};
}

Outputs embed(const Inputs& in, const GpuContext& g) {
  const ops::EmbedArgs a = ops::checkEmbed(in, g.attrs);
  const Tensor& ids = a.ids;
  const Tensor& table = a.table;
  const int64_t vocab = a.vocab, h = a.h, tokens = ids.numel();
  // the ids are checked on the device (device_checks.h): the first one outside the vocabulary
  // fails the run at its sync, with the reference's message
  if (tokens > 0) {
    unsigned long long* failed =
        g.rt.deviceCheck("embed", tokens, 1, [vocab](const uint64_t* w) { ops::failEmbedId(checkDetail(w[0]), checkPosition(w[0]), vocab); });
    HCSP_LAUNCH(g.rt, hcsp_embed_check_ids, tokens, ids.data<int32_t>(), failed, tokens, vocab);
  }
  TensorPtr e = g.alloc(DType::BF16, {tokens, h});
  HCSP_LAUNCH(g.rt, hcsp_embed_rows, tokens * h, ids.data<int32_t>(), table.bf16(), e->bf16(), tokens, h, vocab);
  return {e};
}

}  // namespace

HCSP_GPU_OP(add, add);
HCSP_GPU_OP(sliceCols, sliceCols);
HCSP_GPU_OP(embed, embed);

}  // namespace hcsp::gpu
