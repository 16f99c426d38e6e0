// Fake GPU vendor libraries for the native GPU tests (packages/backend-rocm/src/gpuRuntime.test.ts,
// comm/ncclCommunicator.test.ts): C sources compiled here into shared libraries that the addon
// loads in place of libamdhip64 / libcuda. Their "device" memory is host memory, their "code
// objects" are text files listing kernel names ("FAKE name name ...", NUL-terminated), and their
// kernels (runKernel) compute on the host. Knobs, all environment variables read at each
// call: FAKE_GPU_LOG (a file every call worth checking appends a line to), FAKE_GPU_COUNT,
// FAKE_COUNT_ERROR, FAKE_INIT_ERROR, FAKE_GCN_ARCH, FAKE_GPU_MEMORY (allocations above it fail as
// out of memory), FAKE_GPU_FREE and FAKE_GPU_TOTAL (the bytes hipMemGetInfo / cuMemGetInfo_v2
// report; default all of 192 GiB for hip, 141 GiB for cuda), FAKE_MEMSET_ERROR, FAKE_SYNC_ERROR,
// FAKE_LAUNCH_ERROR, FAKE_LOG_ADDRESSES (host<->device copies log the device address); compiled with -DFAKE_NO_PINNED, they lack the pinned-memory and
// asynchronous-copy entry points (hipHostMalloc, cuMemHostAlloc, ...). The runtimes keep the
// device current per thread (hipGetDevice, cuCtxGetCurrent) and export fakeLastStream(), the
// stream they created last, for a fake collective library to check what it is handed.

import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';

/** What every fake starts with: the includes, the log, the environment knobs, bf16, kernel lookup and the one kernel, error texts. */
export const FAKE_COMMON = String.raw`
#include <dlfcn.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static void note(const char* fmt, ...) {
  const char* path = getenv("FAKE_GPU_LOG");
  if (!path || !*path) return;
  FILE* f = fopen(path, "a");
  if (!f) return;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(f, fmt, ap);
  va_end(ap);
  fputc('\n', f);
  fclose(f);
}
static int envInt(const char* name, int dflt) { const char* v = getenv(name); return v && *v ? atoi(v) : dflt; }
static size_t envBytes(const char* name, size_t dflt) { const char* v = getenv(name); return v && *v ? (size_t)strtoull(v, 0, 10) : dflt; }
static int tooBig(size_t n) { const char* lim = getenv("FAKE_GPU_MEMORY"); return lim && *lim && n > strtoull(lim, 0, 10); }
static float b2f(uint16_t b) { uint32_t u = (uint32_t)b << 16; float f; memcpy(&f, &u, 4); return f; }
static uint16_t f2b(float f) {
  uint32_t u; memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}
/* a fake code object: "FAKE name name ...", NUL-terminated */
static int hasKernel(const char* image, const char* name) {
  size_t n = strlen(name);
  for (const char* p = strstr(image, name); p; p = strstr(p + 1, name)) {
    if (p[-1] == ' ' && (p[n] == ' ' || p[n] == '\n' || p[n] == 0)) return 1;
  }
  return 0;
}
/* an fp8 e4m3 byte as a float: e4m3fnuz (bias 8, 0x80 the NaN) or e4m3fn (bias 7, S.1111.111 the NaNs) */
static float fp8ToF32(uint8_t v, int fnuz) {
  int s = v >> 7, e = (v >> 3) & 15, m = v & 7;
  float r;
  if (fnuz) {
    if (v == 0x80) return NAN;
    r = e ? ldexpf(1.0f + m / 8.0f, e - 8) : ldexpf(m / 8.0f, -7);
  } else {
    if (e == 15 && m == 7) return NAN;
    r = e ? ldexpf(1.0f + m / 8.0f, e - 7) : ldexpf(m / 8.0f, -6);
  }
  return s ? -r : r;
}
#define ARG(T, i) (*(T const*)params[i])
/*
 * the kernels the fakes run, on the host, as native/src/gpu/kernels declares them:
 * hcsp_add_bf16(a, b, y, n); the reference-order GEMMs (kernels/gemm.cu; k in order, fp32, the
 * products exact so FMA or not is the same): hcsp_gemm_linear_bf16 and _v8 (x, w, y, rows, inF,
 * outF), hcsp_gemm_fp8_ptpc (q, sx, qW, sw, y, rows, inF, outF, fnuz, weightFirst)
 */
static void runKernel(const char* name, void** params) {
  if (strcmp(name, "hcsp_add_bf16") == 0) {
    const uint16_t* a = ARG(uint16_t*, 0);
    const uint16_t* b = ARG(uint16_t*, 1);
    uint16_t* y = ARG(uint16_t*, 2);
    int64_t n = ARG(int64_t, 3);
    for (int64_t i = 0; i < n; i++) y[i] = f2b(b2f(a[i]) + b2f(b[i]));
  } else if (strcmp(name, "hcsp_gemm_linear_bf16") == 0 || strcmp(name, "hcsp_gemm_linear_bf16_v8") == 0) {
    const uint16_t* x = ARG(uint16_t*, 0);
    const uint16_t* w = ARG(uint16_t*, 1);
    uint16_t* y = ARG(uint16_t*, 2);
    int64_t rows = ARG(int64_t, 3), inF = ARG(int64_t, 4), outF = ARG(int64_t, 5);
    for (int64_t t = 0; t < rows; t++) {
      for (int64_t o = 0; o < outF; o++) {
        float acc = 0.0f;
        for (int64_t k = 0; k < inF; k++) acc = acc + b2f(x[t * inF + k]) * b2f(w[o * inF + k]);
        y[t * outF + o] = f2b(acc);
      }
    }
  } else if (strcmp(name, "hcsp_gemm_fp8_ptpc") == 0) {
    const uint8_t* q = ARG(uint8_t*, 0);
    const float* sx = ARG(float*, 1);
    const uint8_t* qW = ARG(uint8_t*, 2);
    const float* sw = ARG(float*, 3);
    uint16_t* y = ARG(uint16_t*, 4);
    int64_t rows = ARG(int64_t, 5), inF = ARG(int64_t, 6), outF = ARG(int64_t, 7);
    int32_t fnuz = ARG(int32_t, 8), weightFirst = ARG(int32_t, 9);
    for (int64_t t = 0; t < rows; t++) {
      for (int64_t o = 0; o < outF; o++) {
        float acc = 0.0f;
        for (int64_t k = 0; k < inF; k++) acc = acc + fp8ToF32(q[t * inF + k], fnuz) * fp8ToF32(qW[o * inF + k], fnuz);
        y[t * outF + o] = f2b(weightFirst ? (acc * sw[o]) * sx[t] : (acc * sx[t]) * sw[o]);
      }
    }
  }
}
static const char* errText(int e) {
  switch (e) {
    case 2: return "out of memory";
    case 98: return "invalid device function";
    case 100: return "no CUDA-capable device is detected";
    case 200: return "device kernel image is invalid";
    case 500: return "named symbol not found";
    default: return "fake error";
  }
}
/* the stream the runtime created last: the fake collective library checks it is handed that one */
static void* lastStream = 0;
void* fakeLastStream(void) { return lastStream; }
`;

export const FAKE_HIP = String.raw`
static __thread int current = -1;
int hipGetDeviceCount(int* c) { *c = envInt("FAKE_GPU_COUNT", 1); return envInt("FAKE_COUNT_ERROR", 0); }
int hipSetDevice(int d) { current = d; note("hipSetDevice %d", d); return 0; }
int hipGetDevice(int* d) { *d = current; return 0; }
int hipDeviceGetAttribute(int* v, int attr, int dev) {
  if (attr == 63) { *v = 80; return 0; }
  if (attr == 87) { *v = 64; return 0; }
  return 1;
}
int hipDeviceGetName(char* n, int len, int dev) { snprintf(n, len, "Fake Instinct MI308X"); return 0; }
/* ROCm 6+: writes the R0600 layout (1472 bytes, gcnArchName at 1160) */
int hipGetDevicePropertiesR0600(void* p, int dev) {
  const char* a = getenv("FAKE_GCN_ARCH");
  memset(p, 0, 1472);
  strcpy((char*)p, "Fake Instinct MI308X");
  strcpy((char*)p + 1160, a && *a ? a : "gfx942:sramecc+:xnack-");
  return 0;
}
int hipMalloc(void** p, size_t n) { if (tooBig(n)) return 2; *p = calloc(1, n); note("hipMalloc %zu", n); return *p ? 0 : 2; }
int hipFree(void* p) { free(p); note("hipFree"); return 0; }
int hipMemcpy(void* d, const void* s, size_t n, int kind) {
  memcpy(d, s, n);
  note("hipMemcpy %zu kind=%d", n, kind);
  /* the device side's address, for a test that follows a buffer (FAKE_LOG_ADDRESSES=1) */
  if (envInt("FAKE_LOG_ADDRESSES", 0)) note("copy kind=%d device=%p", kind, kind == 1 ? d : (void*)s);
  return 0;
}
/* pinned host memory and asynchronous copies (the weight loader's staging); left out with -DFAKE_NO_PINNED */
#ifndef FAKE_NO_PINNED
int hipHostMalloc(void** p, size_t n, unsigned flags) { *p = malloc(n); note("hipHostMalloc %zu flags=%u", n, flags); return *p ? 0 : 2; }
int hipHostFree(void* p) { free(p); note("hipHostFree"); return 0; }
int hipMemcpyAsync(void* d, const void* s, size_t n, int kind, void* stream) { memcpy(d, s, n); note("hipMemcpyAsync %zu kind=%d stream=%p", n, kind, stream); return 0; }
#endif
int hipMemset(void* d, int v, size_t n) { memset(d, v, n); note("hipMemset %zu", n); return envInt("FAKE_MEMSET_ERROR", 0); }
int hipMemGetInfo(size_t* f, size_t* t) {
  *t = envBytes("FAKE_GPU_TOTAL", (size_t)192 << 30);
  *f = envBytes("FAKE_GPU_FREE", *t);
  note("hipMemGetInfo device %d", current);
  return 0;
}
int hipStreamCreate(void** s) { *s = malloc(8); lastStream = *s; note("hipStreamCreate %p", *s); return 0; }
int hipStreamDestroy(void* s) { free(s); note("hipStreamDestroy"); return 0; }
int hipStreamSynchronize(void* s) { note("hipStreamSynchronize %p", s); return envInt("FAKE_SYNC_ERROR", 0); }
int hipModuleLoadData(void** m, const void* image) {
  if (strncmp((const char*)image, "FAKE ", 5) != 0) return 200;
  *m = strdup((const char*)image);
  note("hipModuleLoadData");
  return 0;
}
int hipModuleUnload(void* m) { free(m); note("hipModuleUnload"); return 0; }
int hipModuleGetFunction(void** f, void* m, const char* name) {
  if (!hasKernel((const char*)m, name)) return 500;
  *f = strdup(name);
  return 0;
}
int hipModuleLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shm, void* stream,
                          void** params, void** extra) {
  int e = envInt("FAKE_LAUNCH_ERROR", 0);
  note("launch %s grid=%u,%u,%u block=%u,%u,%u shared=%u extra=%p", (const char*)f, gx, gy, gz, bx, by, bz, shm, (void*)extra);
  if (e) return e;
  runKernel((const char*)f, params);
  return 0;
}
const char* hipGetErrorString(int e) { return errText(e); }
`;

export const FAKE_CUDA = String.raw`
typedef unsigned long long dptr;
static __thread void* currentCtx = 0;
int cuInit(unsigned flags) { return envInt("FAKE_INIT_ERROR", 0); }
int cuDeviceGetCount(int* c) { *c = envInt("FAKE_GPU_COUNT", 1); return 0; }
int cuDeviceGet(int* d, int ordinal) { *d = ordinal; return 0; }
int cuDeviceGetName(char* n, int len, int dev) { snprintf(n, len, "Fake H200"); return 0; }
int cuDeviceGetAttribute(int* v, int attr, int dev) {
  switch (attr) {
    case 75: *v = 9; return 0;
    case 76: *v = 0; return 0;
    case 16: *v = 132; return 0;
    case 10: *v = 32; return 0;
    default: return 1;
  }
}
int cuDeviceTotalMem_v2(size_t* b, int dev) { *b = envBytes("FAKE_GPU_TOTAL", (size_t)141 << 30); return 0; }
int cuMemGetInfo_v2(size_t* f, size_t* t) {
  *t = envBytes("FAKE_GPU_TOTAL", (size_t)141 << 30);
  *f = envBytes("FAKE_GPU_FREE", *t);
  note("cuMemGetInfo context %p", currentCtx);
  return 0;
}
int cuDevicePrimaryCtxRetain(void** c, int dev) { *c = (void*)0x1234; note("cuDevicePrimaryCtxRetain %d", dev); return 0; }
int cuDevicePrimaryCtxRelease_v2(int dev) { note("cuDevicePrimaryCtxRelease %d", dev); return 0; }
int cuCtxSetCurrent(void* c) { currentCtx = c; note("cuCtxSetCurrent %p", c); return 0; }
int cuCtxGetCurrent(void** c) { *c = currentCtx; return 0; }
int cuMemAlloc_v2(dptr* p, size_t n) {
  if (tooBig(n)) return 2;
  void* q = calloc(1, n);
  *p = (dptr)(uintptr_t)q;
  note("cuMemAlloc %zu", n);
  return q ? 0 : 2;
}
int cuMemFree_v2(dptr p) { free((void*)(uintptr_t)p); note("cuMemFree"); return 0; }
int cuMemcpyHtoD_v2(dptr d, const void* s, size_t n) {
  memcpy((void*)(uintptr_t)d, s, n);
  if (envInt("FAKE_LOG_ADDRESSES", 0)) note("copy kind=1 device=%p", (void*)(uintptr_t)d);
  return 0;
}
int cuMemcpyDtoH_v2(void* d, dptr s, size_t n) {
  memcpy(d, (const void*)(uintptr_t)s, n);
  if (envInt("FAKE_LOG_ADDRESSES", 0)) note("copy kind=2 device=%p", (void*)(uintptr_t)s);
  return 0;
}
#ifndef FAKE_NO_PINNED
int cuMemHostAlloc(void** p, size_t n, unsigned flags) { *p = malloc(n); note("cuMemHostAlloc %zu flags=%u", n, flags); return *p ? 0 : 2; }
int cuMemFreeHost(void* p) { free(p); note("cuMemFreeHost"); return 0; }
int cuMemcpyHtoDAsync_v2(dptr d, const void* s, size_t n, void* stream) { memcpy((void*)(uintptr_t)d, s, n); note("cuMemcpyHtoDAsync %zu stream=%p", n, stream); return 0; }
#endif
int cuMemsetD8_v2(dptr d, unsigned char v, size_t n) { memset((void*)(uintptr_t)d, v, n); return envInt("FAKE_MEMSET_ERROR", 0); }
int cuStreamCreate(void** s, unsigned flags) { *s = malloc(8); lastStream = *s; note("cuStreamCreate %p flags=%u", *s, flags); return 0; }
int cuStreamDestroy_v2(void* s) { free(s); note("cuStreamDestroy"); return 0; }
int cuStreamSynchronize(void* s) { note("cuStreamSynchronize %p", s); return envInt("FAKE_SYNC_ERROR", 0); }
int cuModuleLoadData(void** m, const void* image) {
  if (strncmp((const char*)image, "FAKE ", 5) != 0) return 200;
  *m = strdup((const char*)image);
  return 0;
}
int cuModuleUnload(void* m) { free(m); return 0; }
int cuModuleGetFunction(void** f, void* m, const char* name) {
  if (!hasKernel((const char*)m, name)) return 500;
  *f = strdup(name);
  return 0;
}
int cuLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shm, void* stream, void** params,
                   void** extra) {
  int e = envInt("FAKE_LAUNCH_ERROR", 0);
  note("launch %s grid=%u,%u,%u block=%u,%u,%u shared=%u extra=%p", (const char*)f, gx, gy, gz, bx, by, bz, shm, (void*)extra);
  if (e) return e;
  runKernel((const char*)f, params);
  return 0;
}
int cuGetErrorString(int e, const char** s) { *s = errText(e); return 0; }
`;

// One fake collective library, built per runtime (-DFAKE_CUDA: NCCL over the fake libcuda; else
// RCCL over the fake libamdhip64) and once without ncclCommGetAsyncError (-DFAKE_NO_ASYNC).
// FAKE_NCCL_FAIL=<call> makes that call return ncclInvalidArgument (4); FAKE_NCCL_ASYNC=<r>
// makes ncclCommGetAsyncError report r; FAKE_NCCL_SLEEP_MS holds each collective that long.
// It checks what it is given (the datatype, the op, the counts, the stream against the
// runtime's, the device current on the calling thread, the unique id, nranks and rank), logs it
// with the buffers' addresses, and implements one rank's semantics: at world size 1 each
// collective is a copy; in a larger world the peers contribute zeros (all-reduce: a copy;
// reduce-scatter: this rank's block; all-gather: this rank's slot).
export const FAKE_NCCL = String.raw`
typedef struct { char internal[128]; } ncclUniqueId;
struct ncclComm { int nranks, rank; };
static int failing(const char* call) { const char* f = getenv("FAKE_NCCL_FAIL"); return f && strcmp(f, call) == 0; }
static void* runtimeSymbol(const char* name) {
#ifdef FAKE_CUDA
  void* h = dlopen(getenv("HCSP_CUDA_LIB"), RTLD_NOW | RTLD_NOLOAD);
#else
  void* h = dlopen(getenv("HCSP_HIP_LIB"), RTLD_NOW | RTLD_NOLOAD);
#endif
  return h ? dlsym(h, name) : 0;
}
/* the runtime's device current on this thread: the HIP device index, or 1 for a current CUDA context */
static int currentDevice(void) {
#ifdef FAKE_CUDA
  int (*get)(void**) = (int (*)(void**))runtimeSymbol("cuCtxGetCurrent");
  void* c = 0;
  return get && get(&c) == 0 && c ? 1 : -1;
#else
  int (*get)(int*) = (int (*)(int*))runtimeSymbol("hipGetDevice");
  int d = -1;
  return get && get(&d) == 0 ? d : -1;
#endif
}
static int streamIsRuntimes(void* stream) {
  void* (*last)(void) = (void* (*)(void))runtimeSymbol("fakeLastStream");
  return last && stream && last() == stream;
}
static size_t elementBytes(int type) {
  switch (type) {
    case 0: case 1: return 1;
    case 6: case 9: return 2;
    case 2: case 3: case 7: return 4;
    case 4: case 5: case 8: return 8;
    default: return 0;
  }
}
#ifdef FAKE_CUDA
int ncclGetVersion(int* v) { *v = envInt("FAKE_NCCL_VERSION", 2708); return 0; }
#else
int ncclGetVersion(int* v) { *v = envInt("FAKE_NCCL_VERSION", 21805); return 0; }
#endif
int ncclGetUniqueId(ncclUniqueId* id) {
  if (failing("ncclGetUniqueId")) return 4;
  for (int i = 0; i < 128; i++) id->internal[i] = (char)(i * 7 + 3);
  note("ncclGetUniqueId device=%d", currentDevice());
  return 0;
}
int ncclCommInitRank(struct ncclComm** comm, int nranks, ncclUniqueId id, int rank) {
  int idOk = 1;
  for (int i = 0; i < 128; i++) idOk &= id.internal[i] == (char)(i * 7 + 3);
  note("ncclCommInitRank nranks=%d rank=%d device=%d id=%s", nranks, rank, currentDevice(), idOk ? "ok" : "wrong");
  if (failing("ncclCommInitRank") || !idOk || nranks < 1 || rank < 0 || rank >= nranks) return 4;
  if (currentDevice() < 0) return 5;
  *comm = (struct ncclComm*)calloc(1, sizeof(struct ncclComm));
  (*comm)->nranks = nranks;
  (*comm)->rank = rank;
  return 0;
}
static int collective(const char* call, const void* s, void* r, size_t sendCount, size_t recvCount, size_t offset, int type, int op,
                      struct ncclComm* c, void* stream) {
  note("%s send=%zu recv=%zu type=%d op=%d stream=%s nranks=%d rank=%d device=%d sendbuf=%p recvbuf=%p", call, sendCount, recvCount, type, op,
       streamIsRuntimes(stream) ? "runtime" : "other", c->nranks, c->rank, currentDevice(), s, (void*)r);
  size_t es = elementBytes(type);
  if (failing(call) || !es || op != 0 || !streamIsRuntimes(stream)) return 4;
  if (currentDevice() < 0) return 5;
  int ms = envInt("FAKE_NCCL_SLEEP_MS", 0);
  if (ms) usleep((useconds_t)ms * 1000);
  /* the peers' contributions are zeros */
  if (recvCount > sendCount) memset(r, 0, recvCount * es);
  if (recvCount >= sendCount) memmove((char*)r + offset * es, s, sendCount * es);
  else memmove(r, (const char*)s + offset * es, recvCount * es);
  return 0;
}
int ncclAllReduce(const void* s, void* r, size_t count, int type, int op, struct ncclComm* c, void* stream) {
  return collective("ncclAllReduce", s, r, count, count, 0, type, op, c, stream);
}
int ncclReduceScatter(const void* s, void* r, size_t recvcount, int type, int op, struct ncclComm* c, void* stream) {
  return collective("ncclReduceScatter", s, r, recvcount * c->nranks, recvcount, recvcount * c->rank, type, op, c, stream);
}
int ncclAllGather(const void* s, void* r, size_t sendcount, int type, struct ncclComm* c, void* stream) {
  return collective("ncclAllGather", s, r, sendcount, sendcount * c->nranks, sendcount * c->rank, type, 0, c, stream);
}
int ncclCommDestroy(struct ncclComm* c) { note("ncclCommDestroy rank=%d", c->rank); free(c); return failing("ncclCommDestroy") ? 4 : 0; }
int ncclCommAbort(struct ncclComm* c) { note("ncclCommAbort rank=%d", c->rank); free(c); return 0; }
const char* ncclGetErrorString(int r) {
  switch (r) {
    case 4: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case 5: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case 6: return "remote process exited or there was a network error";
    default: return "fake result";
  }
}
#ifndef FAKE_NO_ASYNC
int ncclCommGetAsyncError(struct ncclComm* c, int* e) { *e = envInt("FAKE_NCCL_ASYNC", 0); return 0; }
#endif
`;

/** A temporary folder for the fakes: the compiled libraries, the log, code-object folders. */
export class FakeGpuFolder {
  dir = '';
  private readonly prefix: string;

  /** prefix: the folder's name in the temporary directory, before mkdtemp's suffix */
  constructor(prefix: string) {
    this.prefix = prefix;
  }

  /** makes the folder (in beforeAll) */
  create(): void {
    this.dir = mkdtempSync(join(tmpdir(), this.prefix));
  }

  /** removes the folder and all in it (in afterAll) */
  remove(): void {
    if (this.dir) rmSync(this.dir, { recursive: true, force: true });
  }

  /** a path in the folder */
  readonly lib = (name: string): string => join(this.dir, name);

  /** the log the fakes append to when FAKE_GPU_LOG names it */
  readonly log = (): string => join(this.dir, 'gpu.log');

  /** the log's text so far ('' before the first line) */
  readonly logText = (): string => {
    try {
      return readFileSync(this.log(), 'utf8');
    } catch {
      return '';
    }
  };

  /** each logged launch of `kernel` as "grid=X,Y,Z block=X,Y,Z", in order */
  readonly launches = (kernel: string): string[] => [...this.logText().matchAll(new RegExp(`^launch ${kernel} (grid=\\S+ block=\\S+)`, 'gm'))].map((m) => m[1]);

  /** the fake HIP and CUDA runtimes: <folder>/fakehip.so and fakecuda.so */
  compileRuntimes(): void {
    this.compile('fakehip', FAKE_HIP);
    this.compile('fakecuda', FAKE_CUDA);
  }

  /** code objects for gfx942 and sm_90 under <folder>/<root> that hold these kernels (basic.hsaco, basic.cubin) */
  basicCodeObjects(root: string, kernels: string[]): void {
    this.codeObjects(root, 'gfx942', { 'basic.hsaco': kernels });
    this.codeObjects(root, 'sm_90', { 'basic.cubin': kernels });
  }

  /** compiles FAKE_COMMON + source into <folder>/<name>.so */
  compile(name: string, source: string, defines: string[] = []): void {
    const c = this.lib(`${name}.c`);
    writeFileSync(c, FAKE_COMMON + source);
    const r = spawnSync('cc', ['-shared', '-fPIC', '-O1', '-ffp-contract=off', ...defines, '-o', this.lib(`${name}.so`), c, '-lm', '-ldl'], {
      encoding: 'utf8',
    });
    if (r.status !== 0) throw new Error(`cc ${name}.c failed: ${r.error?.message ?? ''}${r.stderr}`);
  }

  /** a code-object folder: <folder>/<name>/<arch>/<file> holding "FAKE <kernels>"; returns <folder>/<name> */
  codeObjects(name: string, arch: string, files: Record<string, string[]>): string {
    const root = this.lib(name);
    mkdirSync(join(root, arch), { recursive: true });
    for (const [file, kernels] of Object.entries(files)) writeFileSync(join(root, arch, file), `FAKE ${kernels.join(' ')}\n\0`);
    return root;
  }
}

/** The variables that choose the GPU a process opens (gpuSelection.ts): the index, the local ranks, the vendors' device masks. */
export const GPU_SELECTION_ENV = [
  'HCSP_GPU_INDEX',
  'LOCAL_RANK',
  'OMPI_COMM_WORLD_LOCAL_RANK',
  'ROCR_VISIBLE_DEVICES',
  'HIP_VISIBLE_DEVICES',
  'CUDA_VISIBLE_DEVICES',
];

/** Saves these environment variables now; the function returned puts them back as they were. */
export function saveEnv(keys: readonly string[]): () => void {
  const saved = Object.fromEntries(keys.map((k) => [k, process.env[k]]));
  return () => {
    for (const k of keys) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
  };
}

/** Puts these environment variables back as they were after each test of the calling block. */
export function restoreEnvAfterEach(keys: readonly string[]): void {
  const restore = saveEnv(keys);
  afterEach(() => restore());
}

/**
 * The fake runtimes for one describe block: the folder made and its runtimes compiled before
 * the block's tests and removed after them; `env`'s variables put back and the launch log
 * cleared after each test.
 */
export function useFakeGpuRuntimes(prefix: string, env: readonly string[]): FakeGpuFolder {
  const fake = new FakeGpuFolder(prefix);
  const restoreEnv = saveEnv(env);
  beforeAll(() => {
    fake.create();
    fake.compileRuntimes();
  }, 60_000);
  afterAll(() => fake.remove());
  afterEach(() => {
    restoreEnv();
    rmSync(fake.log(), { force: true });
  });
  return fake;
}

/**
 * useFakeGpuRuntimes for tests that open backends: before each test every variable of `env` is
 * unset and FAKE_GPU_LOG names the log; the backends pushed on `open` are disposed after each
 * test, before the variables are put back (vitest runs after-hooks last registered first).
 */
export function useFakeGpuBackends<B extends { dispose(): Promise<void> }>(prefix: string, env: readonly string[]): { fake: FakeGpuFolder; open: B[] } {
  const fake = useFakeGpuRuntimes(prefix, env);
  const open: B[] = [];
  beforeEach(() => {
    for (const k of env) delete process.env[k];
    process.env.FAKE_GPU_LOG = fake.log();
  });
  afterEach(async () => {
    for (const b of open.splice(0)) await b.dispose();
  });
  return { fake, open };
}
