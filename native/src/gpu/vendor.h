// The one vendor header of the GPU kernels (llama.cpp's vendors/hip.h idea): the same kernel
// sources build with Debian's hipcc (gfx940), bare clang-19 HIP without device libraries
// (gfx942: -nogpulib -nogpuinc, so nothing here may need hip_runtime.h), nvcc (sm_90) and,
// for the host build, plain g++ (the emulated device: the kernels run on the host's threads,
// so their arithmetic can be checked on a machine without a GPU).
//
// Two kinds of kernel. A grid-stride kernel (HCSP_GRID_STRIDE, launched by HCSP_LAUNCH) uses
// no shared memory and no cross-lane work: every sum the reference orders is summed by one
// thread in that order. A block kernel (launched by HCSP_LAUNCH_BLOCKS: B blocks of N threads,
// N a multiple of 64 up to 256) cooperates within its block through HCSP_SHARED arrays and
// HCSP_BARRIER; its sums follow the canonical order (kernels/reduce.h), which does not depend
// on N or the wavefront width, so it too gives the reference's bits. HCSP_WAVE is the
// wavefront width the project sizes blocks by: 64 on CDNA, 32 on NVIDIA, never assumed elsewhere.
#pragma once
#include <stdint.h>

#if defined(__CUDACC__)
#define HCSP_GPU_CUDA 1
#define HCSP_WAVE 32
#define HCSP_HD __host__ __device__ __forceinline__
#define HCSP_GLOBAL extern "C" __global__
#define HCSP_THREAD_ID() (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x)
#define HCSP_THREAD_COUNT() (static_cast<int64_t>(gridDim.x) * blockDim.x)
#define HCSP_BLOCK_ID() (static_cast<int64_t>(blockIdx.x))
#define HCSP_BLOCK_COUNT() (static_cast<int64_t>(gridDim.x))
#define HCSP_BLOCK_THREAD() (static_cast<int>(threadIdx.x))
#define HCSP_BLOCK_THREADS() (static_cast<int>(blockDim.x))
#define HCSP_BARRIER() __syncthreads()
#define HCSP_SHARED(type, name, count) __shared__ type name[count]
#elif defined(__HIP__)
#define HCSP_GPU_HIP 1
#define HCSP_WAVE 64
#ifndef __global__
// bare clang HIP (-nogpuinc): the attributes the HIP headers would supply (hipcc includes them)
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __host__ __attribute__((host))
#define __shared__ __attribute__((shared))
#endif
#define HCSP_HD __host__ __device__ inline __attribute__((always_inline))
#define HCSP_GLOBAL extern "C" __global__ __attribute__((amdgpu_flat_work_group_size(1, 256)))
#define HCSP_THREAD_ID() (static_cast<int64_t>(__builtin_amdgcn_workgroup_id_x()) * __builtin_amdgcn_workgroup_size_x() + __builtin_amdgcn_workitem_id_x())
#define HCSP_THREAD_COUNT() (static_cast<int64_t>(__builtin_amdgcn_grid_size_x()))
// (the dispatch's grid size counts work-items: a block launch's are whole blocks)
#define HCSP_BLOCK_ID() (static_cast<int64_t>(__builtin_amdgcn_workgroup_id_x()))
#define HCSP_BLOCK_COUNT() (static_cast<int64_t>(__builtin_amdgcn_grid_size_x() / __builtin_amdgcn_workgroup_size_x()))
#define HCSP_BLOCK_THREAD() (static_cast<int>(__builtin_amdgcn_workitem_id_x()))
#define HCSP_BLOCK_THREADS() (static_cast<int>(__builtin_amdgcn_workgroup_size_x()))
// HIP's __syncthreads (hip/amd_detail: __work_group_barrier): shared memory written before the
// barrier is visible to the whole workgroup after it
#define HCSP_BARRIER()                                     \
  do {                                                     \
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup"); \
    __builtin_amdgcn_s_barrier();                          \
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup"); \
  } while (0)
#define HCSP_SHARED(type, name, count) __shared__ type name[count]
#else
// the host build. A grid-stride launch runs the kernel on each of the emulated runtime's pool
// threads with that thread's index (emulated_runtime.cc), so a grid-stride loop covers every i
// exactly once. A block launch runs each block on one pool thread as one fiber per GPU thread
// (emulated_blocks.h): a barrier switches to the block's next fiber, and a block's shared
// arrays are that pool thread's (thread_local), so every block in flight has its own.
#define HCSP_EMULATED_GRID 1
#define HCSP_WAVE 1
#define HCSP_HD inline
#define HCSP_GLOBAL extern "C"
namespace hcsp::gpu {
extern thread_local int64_t emulatedThreadId;
extern thread_local int64_t emulatedThreadCount;
/** the running fiber's block launch ids (emulated_blocks.cc sets them before it resumes a fiber) */
struct EmulatedBlockIds {
  int64_t block = 0;
  int64_t blocks = 1;
  int thread = 0;
  int threads = 1;
};
extern thread_local EmulatedBlockIds emulatedBlockIds;
/** the block barrier: the calling fiber waits until every thread of its block reaches a barrier (`line`: which one) */
void emulatedBarrier(int line);
}  // namespace hcsp::gpu
#define HCSP_THREAD_ID() (::hcsp::gpu::emulatedThreadId)
#define HCSP_THREAD_COUNT() (::hcsp::gpu::emulatedThreadCount)
#define HCSP_BLOCK_ID() (::hcsp::gpu::emulatedBlockIds.block)
#define HCSP_BLOCK_COUNT() (::hcsp::gpu::emulatedBlockIds.blocks)
#define HCSP_BLOCK_THREAD() (::hcsp::gpu::emulatedBlockIds.thread)
#define HCSP_BLOCK_THREADS() (::hcsp::gpu::emulatedBlockIds.threads)
#define HCSP_BARRIER() ::hcsp::gpu::emulatedBarrier(__LINE__)
#define HCSP_SHARED(type, name, count) static thread_local type name[count]
#endif

// Block kernels: HCSP_BLOCK_ID() in [0, HCSP_BLOCK_COUNT()), HCSP_BLOCK_THREAD() in
// [0, HCSP_BLOCK_THREADS()); HCSP_BARRIER() must be reached by every thread of the block (the
// emulated device fails a launch where it is not); HCSP_SHARED(float, s, 128) declares a block's
// array s[128] in the kernel body (a fixed size; uninitialized at the block's start).

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
#define HCSP_FMAF(a, b, c) __fmaf_rn(a, b, c)
#define HCSP_FLOORF(x) floorf(x)
#define HCSP_FABSF(x) fabsf(x)
#define HCSP_COPYSIGNF(x, y) copysignf(x, y)
#define HCSP_SQRTF(x) __fsqrt_rn(x)
#define HCSP_FMAXF(x, y) fmaxf(x, y)
#define HCSP_FMINF(x, y) fminf(x, y)
#else
#define HCSP_FMAF(a, b, c) __builtin_fmaf(a, b, c)
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
