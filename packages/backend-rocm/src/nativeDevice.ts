import { shapeStr, type DeviceOps, type GraphNode, type Tensor, type TensorData, type ValueDecl } from '@hcsp/core';
import type { GemmMode, GpuDevice, NativeAddon, NativeTensor } from './nativeAddon.ts';
import { native } from './nativeErrors.ts';

function viewOf(dtype: Tensor['dtype'], buf: ArrayBuffer): TensorData {
  switch (dtype) {
    case 'bf16':
      return new Uint16Array(buf);
    case 'f32':
      return new Float32Array(buf);
    case 'i32':
      return new Int32Array(buf);
    case 'fp8e4m3fn':
    case 'fp8e4m3fnuz':
      return new Uint8Array(buf);
  }
}

/** A kernel's output checked against the graph's declaration (null declaration: the port is absent; a stray output is freed). */
function checked(addon: NativeAddon, t: NativeTensor | null, d: ValueDecl | null, op: string): NativeTensor | null {
  if (d === null) {
    if (t) addon.free(t);
    return null;
  }
  if (!t) throw new Error(`op ${op} did not produce '${d.id}'`);
  if (t.dtype !== d.dtype || shapeStr(t.shape) !== shapeStr(d.shape)) {
    addon.free(t);
    throw new Error(`op ${op} produced ${t.dtype}${shapeStr(t.shape)} for '${d.id}', declared ${d.dtype}${shapeStr(d.shape)}`);
  }
  return t;
}

/**
 * A native device as core's DeviceOps: the host device (gpu null) or a GPU. Handles are
 * native tensors in that device's memory; every kernel runs off the JavaScript thread;
 * collectives take every simulated rank's buffer at once, in lockstep, with the reference's
 * reduction orders.
 */
export function nativeDeviceOps(addon: NativeAddon, gemm: GemmMode, gpu: GpuDevice | null = null): DeviceOps<NativeTensor> {
  return {
    upload: (_decl, t) => native(() => addon.upload(t.dtype, t.shape, t.data, gpu)),
    runNode: (node: GraphNode, inputs, _inputDecls, outputs) =>
      native(async () => {
        const out = await addon.run(node.op, inputs, node.attrs, gemm, gpu);
        // check every port, freeing all outputs if one is wrong
        try {
          return outputs.map((d, p) => checked(addon, out[p] ?? null, d, node.op));
        } catch (e) {
          for (const t of out) if (t && !t.freed) addon.free(t);
          throw e;
        }
      }),
    runCollective: (node, inputs, _inputDecls, outputs) =>
      native(async () => {
        const out = await addon.runCollective(node.op, inputs, node.attrs, gemm, gpu);
        try {
          return outputs.map((ds, r) => ds.map((d, p) => checked(addon, out[r]?.[p] ?? null, d, node.op)!));
        } catch (e) {
          for (const ports of out) for (const t of ports) if (t && !t.freed) addon.free(t);
          throw e;
        }
      }),
    download: (decl, h) => native(() => ({ dtype: decl.dtype, shape: [...decl.shape], data: viewOf(decl.dtype, addon.download(h)) })),
    free: (h) => addon.free(h),
  };
}
