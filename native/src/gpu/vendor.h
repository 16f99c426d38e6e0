// The one vendor header of the GPU kernels (llama.cpp's vendors/hip.h idea): the same kernel
// sources build with Debian's hipcc (gfx940), bare clang-19 HIP without device libraries
// (gfx942: -nogpulib -nogpuinc, so nothing here may need hip_runtime.h), nvcc (sm_90) and,
// for the host build, plain g++ (HCSP_EMULATED_GRID: a kernel runs as one thread over the
// whole grid-stride range, so its arithmetic can be checked on a machine without a GPU).
//
// Kernels are written as grid-stride loops with no shared memory and no cross-lane
// reductions: every sum the reference orders is summed by one thread in that order, which
// is what makes a GPU run bit-exact with the CPU reference. HCSP_WAVE is the wavefront
// width the project sizes blocks by: 64 on CDNA, 32 on NVIDIA, never assumed elsewhere.
#pragma once
#include <stdint.h>

#if defined(__CUDACC__)
#define HCSP_GPU_CUDA 1
#define HCSP_WAVE 32
#define HCSP_HD __host__ __device__ __forceinline__
#define HCSP_GLOBAL extern "C" __global__
#define HCSP_THREAD_ID() (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x)
#define HCSP_THREAD_COUNT() (static_cast<int64_t>(gridDim.x) * blockDim.x)
#elif defined(__HIP__)
#define HCSP_GPU_HIP 1
#define HCSP_WAVE 64
#ifndef __global__
// bare clang HIP (-nogpuinc): the attributes the HIP headers would supply (hipcc includes them)
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __host__ __attribute__((host))
#endif
#define HCSP_HD __host__ __device__ inline __attribute__((always_inline))
#define HCSP_GLOBAL extern "C" __global__ __attribute__((amdgpu_flat_work_group_size(1, 256)))
#define HCSP_THREAD_ID() \
  (static_cast<int64_t>(__builtin_amdgcn_workgroup_id_x()) * __builtin_amdgcn_workgroup_size_x() + __builtin_amdgcn_workitem_id_x())
#define HCSP_THREAD_COUNT() (static_cast<int64_t>(__builtin_amdgcn_grid_size_x()))
#else
// the host build: the emulated runtime (emulated_runtime.cc) runs a kernel on each of its
// pool's threads with that thread's index, so a grid-stride loop covers every i exactly once
#define HCSP_EMULATED_GRID 1
#define HCSP_WAVE 1
#define HCSP_HD inline
#define HCSP_GLOBAL extern "C"
namespace hcsp::gpu {
extern thread_local int64_t emulatedThreadId;
extern thread_local int64_t emulatedThreadCount;
}  // namespace hcsp::gpu
#define HCSP_THREAD_ID() (::hcsp::gpu::emulatedThreadId)
#define HCSP_THREAD_COUNT() (::hcsp::gpu::emulatedThreadCount)
#endif

// HCSP_DEVICE: a helper only kernels call (one that uses a device intrinsic: nvcc refuses
// those in a __host__ __device__ function)
#if defined(HCSP_GPU_CUDA)
#define HCSP_DEVICE __device__ __forceinline__
#elif defined(HCSP_GPU_HIP)
#define HCSP_DEVICE __device__ inline __attribute__((always_inline))
#else
#define HCSP_DEVICE inline
#endif

/** *p = min(*p, v), atomically on the device (the device checks' first failure wins: kernels/checks.h) */
HCSP_DEVICE void hcspAtomicMinU64(unsigned long long* p, unsigned long long v) {
#if defined(HCSP_GPU_CUDA)
  atomicMin(p, v);
#elif defined(HCSP_GPU_HIP)
  // clang's HIP builtin (hipcc's atomicMin is this; bare clang has no HIP headers)
  __hip_atomic_fetch_min(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
#else
  // the emulated grid's threads are the host's: a compare-and-swap loop
  unsigned long long seen = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (v < seen && !__atomic_compare_exchange_n(p, &seen, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
#endif
}

/** for (i in [0, n)) spread over the grid; each i is one thread's, start to end */
#define HCSP_GRID_STRIDE(i, n) for (int64_t i = HCSP_THREAD_ID(); i < static_cast<int64_t>(n); i += HCSP_THREAD_COUNT())

// The few math primitives the kernels use, correctly rounded on every target (no device
// library: clang lowers these builtins to instructions; nvcc's are IEEE with -prec-sqrt/div).
#if defined(HCSP_GPU_CUDA)
#define HCSP_FLOORF(x) floorf(x)
#define HCSP_FABSF(x) fabsf(x)
#define HCSP_COPYSIGNF(x, y) copysignf(x, y)
#define HCSP_SQRTF(x) __fsqrt_rn(x)
#define HCSP_FMAXF(x, y) fmaxf(x, y)
#define HCSP_FMINF(x, y) fminf(x, y)
#else
#define HCSP_FLOORF(x) __builtin_floorf(x)
#define HCSP_FABSF(x) __builtin_fabsf(x)
#define HCSP_COPYSIGNF(x, y) __builtin_copysignf(x, y)
#define HCSP_SQRTF(x) __builtin_sqrtf(x)
#define HCSP_FMAXF(x, y) __builtin_fmaxf(x, y)
#define HCSP_FMINF(x, y) __builtin_fminf(x, y)
#endif
#define HCSP_INFF() __builtin_inff()
#define HCSP_NANF() __builtin_nanf("")

HCSP_HD uint32_t hcspFloatBits(float x) { return __builtin_bit_cast(uint32_t, x); }
HCSP_HD float hcspBitsFloat(uint32_t u) { return __builtin_bit_cast(float, u); }

#if defined(HCSP_GPU_HIP) && defined(__clang_major__) && __clang_major__ < 17
// clang before 17 (Debian's hipcc, clang 15: the gfx940 objects) lowers __builtin_sqrtf to a
// bare v_sqrt_f32, which is not correctly rounded; clang 17+ corrects it itself with this
// sequence (LLVM's AMDGPU lowerFSQRTF32, what clang-19 emits for gfx942): the hardware root s,
// its neighbours one ulp down and up chosen by the signs of the residuals x - s'*s (FMA), tiny
// x scaled by 2^32 first (root by 2^-16 after), zeros and +inf passed through.
HCSP_HD float hcspSqrtRn(float x) {
  const bool tiny = x < 0x1p-96f;
  const float sx = tiny ? x * 0x1p32f : x;
  float s = __builtin_sqrtf(sx);
  const float down = hcspBitsFloat(hcspFloatBits(s) - 1u);
  const float up = hcspBitsFloat(hcspFloatBits(s) + 1u);
  const float residualDown = __builtin_fmaf(-down, s, sx);
  const float residualUp = __builtin_fmaf(-up, s, sx);
  if (residualDown <= 0.0f) s = down;
  if (residualUp > 0.0f) s = up;
  if (tiny) s = s * 0x1p-16f;
  return sx == 0.0f || sx == __builtin_inff() ? sx : s;
}
#undef HCSP_SQRTF
#define HCSP_SQRTF(x) hcspSqrtRn(x)
#endif
