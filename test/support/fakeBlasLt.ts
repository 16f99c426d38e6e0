// A fake hipBLASLt / cuBLASLt for the GPU tests (packages/backend-rocm/src/gpuRuntime.test.ts,
// gpuInvariantGemm.test.ts): C source appended to FAKE_COMMON (fakeGpuLibraries.ts) and built
// twice, -DFAKE_HIP (hipBLASLt's names and values) or cuBLASLt's. Its matmul is BLAS's
// D = op(A) op(B) on column-major layouts, k in order in fp32 (bf16 and fp8 products are exact),
// then D(i,j) *= scaleA[i], then *= scaleB[j] for the outer-vector mode, whatever algorithm
// runs it. It logs each descriptor's, layout's and preference's creation and destruction, each
// heuristic query, check and matmul (with the algorithm's id). Knobs (environment, read at
// each call): FAKE_NO_ALGO lists shapes its heuristic has no algorithm for; FAKE_NO_SCALE_MODE
// refuses the outer-vector scale mode; FAKE_CANDIDATES lists what the heuristic returns, in
// order, ids 42, 43, ... (default "plain": one candidate, id 42): "plain" (no split-k, no
// workspace), "splitk" (SPLITK_NUM 4, reduction scheme COMPUTE_TYPE, 1 MiB of workspace), "ws"
// (no split-k, 1 MiB of workspace: how a hipBLASLt split-k or stream-K solution shows); with
// FAKE_UNSUPPORTED_ROWS ("n n ...") cublasLtMatmulAlgoCheck and the matmul refuse those D
// column counts (the rows, in the row-major terms of blaslt.cc); FAKE_NO_USO makes hipBLASLt
// refuse HIPBLASLT_MATMUL_DESC_UNIFORM_SUMMATION_ORDER_EXT (105), as releases before it do.

import { beforeAll } from 'vitest';
import { type FakeGpuFolder, useFakeGpuRuntimes } from './fakeGpuLibraries.ts';

export const FAKE_BLASLT = String.raw`
#ifdef FAKE_HIP
#define P(name) hipblasLt##name
enum { OP_N = 111, OP_T = 112, A_TRANSA = 0, A_TRANSB = 1, A_ASCALE = 5, A_BSCALE = 6, A_AMODE = 31, A_BMODE = 32, A_USO = 105, INVALID = 3, E4M3FNUZ = 1000,
       NOT_SUPPORTED = 7 };
typedef struct { uint8_t data[16]; size_t maxWorkspace; } Algo;
#else
#define P(name) cublasLt##name
enum { OP_N = 0, OP_T = 1, A_TRANSA = 3, A_TRANSB = 4, A_ASCALE = 17, A_BSCALE = 18, A_AMODE = 31, A_BMODE = 32, A_USO = -1, INVALID = 7, E4M3FNUZ = -1,
       NOT_SUPPORTED = 15 };
typedef struct { uint64_t data[8]; } Algo;
size_t cublasLtGetVersion(void) { return 130101; }
const char* cublasLtGetStatusName(int s) { return s == 7 ? "CUBLAS_STATUS_INVALID_VALUE" : s == 15 ? "CUBLAS_STATUS_NOT_SUPPORTED" : "CUBLAS_STATUS_OTHER"; }
const char* cublasLtGetStatusString(int s) { return "the fake refused it"; }
#endif
enum { BF16 = 14, E4M3 = 28, OUTER_VEC = 3 };
typedef struct { Algo algo; size_t workspaceSize; int state; float waves; int reserved[4]; } Result;
typedef struct { int compute, scaleType, transA, transB, modeA, modeB; const float* sa; const float* sb; } Desc;
typedef struct { int type; uint64_t rows, cols; int64_t ld; } Layout;

static float elem(const Layout* l, const void* p, int64_t i) {
  if (l->type == BF16) return b2f(((const uint16_t*)p)[i]);
  return fp8ToF32(((const uint8_t*)p)[i], l->type == E4M3FNUZ);
}

/* the heuristic's candidates (FAKE_CANDIDATES): kind i has id 42 + i */
enum { PLAIN = 0, SPLITK = 1, WS = 2 };
static int candidates(int* kinds, int max) {
  const char* s = getenv("FAKE_CANDIDATES");
  if (!s || !*s) s = "plain";
  int n = 0;
  char word[16];
  int used;
  while (n < max && sscanf(s, " %15s%n", word, &used) == 1) {
    kinds[n++] = strcmp(word, "splitk") == 0 ? SPLITK : strcmp(word, "ws") == 0 ? WS : PLAIN;
    s += used;
  }
  return n;
}
static int algoId(const Algo* a) { int id; memcpy(&id, a->data, sizeof id); return id; }
static int algoKind(const Algo* a) {
  int kinds[16];
  int n = candidates(kinds, 16), i = algoId(a) - 42;
  return i >= 0 && i < n ? kinds[i] : -1;
}
static size_t kindWorkspace(int kind) { return kind == PLAIN ? 0 : (size_t)1 << 20; }
/* FAKE_UNSUPPORTED_ROWS: "n n ...", D column counts no algorithm runs */
static int unsupportedRows(uint64_t n) {
  const char* s = getenv("FAKE_UNSUPPORTED_ROWS");
  long long v;
  int used;
  while (s && sscanf(s, " %lld%n", &v, &used) == 1) {
    if ((uint64_t)v == n) return 1;
    s += used;
  }
  return 0;
}

int P(Create)(void** h) { *h = malloc(8); note("create"); return 0; }
int P(Destroy)(void* h) { free(h); note("destroy"); return 0; }
int P(MatmulDescCreate)(Desc** d, int compute, int scale) {
  *d = (Desc*)calloc(1, sizeof(Desc));
  (*d)->compute = compute;
  (*d)->scaleType = scale;
  (*d)->transA = (*d)->transB = OP_N;
  note("desc compute=%d scale=%d at %p", compute, scale, (void*)*d);
  return 0;
}
int P(MatmulDescDestroy)(Desc* d) { note("desc destroy %p", (void*)d); free(d); return 0; }
int P(MatmulDescSetAttribute)(Desc* d, int attr, const void* buf, size_t n) {
  if (attr == A_USO && n == 4 && !envInt("FAKE_NO_USO", 0)) {
    note("attr %d = %d", attr, *(const int*)buf);
    return 0;
  }
  if ((attr == A_TRANSA || attr == A_TRANSB || attr == A_AMODE || attr == A_BMODE) && n == 4) {
    int v = *(const int*)buf;
    if (attr == A_TRANSA) d->transA = v;
    else if (attr == A_TRANSB) d->transB = v;
    else if (envInt("FAKE_NO_SCALE_MODE", 0)) return INVALID;
    else if (attr == A_AMODE) d->modeA = v;
    else d->modeB = v;
    note("attr %d = %d", attr, v);
    return 0;
  }
  if ((attr == A_ASCALE || attr == A_BSCALE) && n == sizeof(void*)) {
    if (attr == A_ASCALE) d->sa = *(const float* const*)buf;
    else d->sb = *(const float* const*)buf;
    note("attr %d = pointer", attr);
    return 0;
  }
  note("attr %d refused (%zu bytes)", attr, n);
  return INVALID;
}
int P(MatrixLayoutCreate)(Layout** l, int type, uint64_t rows, uint64_t cols, int64_t ld) {
  *l = (Layout*)calloc(1, sizeof(Layout));
  (*l)->type = type; (*l)->rows = rows; (*l)->cols = cols; (*l)->ld = ld;
  note("layout type=%d rows=%llu cols=%llu ld=%lld at %p", type, (unsigned long long)rows, (unsigned long long)cols, (long long)ld, (void*)*l);
  return 0;
}
int P(MatrixLayoutDestroy)(Layout* l) { note("layout destroy %p", (void*)l); free(l); return 0; }
int P(MatmulPreferenceCreate)(void** p) { *p = calloc(1, 8); note("pref create at %p", *p); return 0; }
int P(MatmulPreferenceDestroy)(void* p) { note("pref destroy %p", p); free(p); return 0; }
int P(MatmulPreferenceSetAttribute)(void* p, int attr, const void* buf, size_t n) {
  if (attr != 1 || n != 8) return INVALID;
  note("workspace %llu", (unsigned long long)*(const uint64_t*)buf);
  return 0;
}
/* FAKE_NO_ALGO: "m,n,k m,n,k ..." (D's rows, D's columns, k), shapes the heuristic has no algorithm for */
static int noAlgo(int64_t m, int64_t n, int64_t k) {
  const char* s = getenv("FAKE_NO_ALGO");
  long long a, b, c;
  int used;
  while (s && sscanf(s, " %lld,%lld,%lld%n", &a, &b, &c, &used) == 3) {
    if (a == m && b == n && c == k) return 1;
    s += used;
  }
  return 0;
}
int P(MatmulAlgoGetHeuristic)(void* h, Desc* d, Layout* a, Layout* b, Layout* c, Layout* dd, void* pref, int requested, Result* res, int* count) {
  memset(res, 0, sizeof(Result) * (requested > 0 ? requested : 0));
  int64_t k = d->transA == OP_T ? a->rows : a->cols;
  note("heuristic m=%llu n=%llu k=%lld requested=%d", (unsigned long long)dd->rows, (unsigned long long)dd->cols, (long long)k, requested);
  *count = 0;
#ifdef FAKE_HIP
  if (noAlgo(dd->rows, dd->cols, k)) return 0;  /* hipBLASLt: success, no algorithm returned */
#else
  if (noAlgo(dd->rows, dd->cols, k)) return NOT_SUPPORTED;  /* cuBLASLt's answer */
#endif
  int kinds[16];
  int n = candidates(kinds, 16);
  for (int i = 0; i < n && i < requested; i++) {
    int id = 42 + i;
    memcpy(res[i].algo.data, &id, sizeof id);
    res[i].workspaceSize = kindWorkspace(kinds[i]);
    *count = i + 1;
  }
  return 0;
}
#ifndef FAKE_HIP
/* the config of a candidate: ID (int32), SPLITK_NUM and REDUCTION_SCHEME (uint32) */
int cublasLtMatmulAlgoConfigGetAttribute(const Algo* algo, int attr, void* buf, size_t n, size_t* written) {
  int kind = algoKind(algo);
  if (kind < 0 || n != 4) return INVALID;
  if (attr == 0) { int id = algoId(algo); memcpy(buf, &id, 4); }
  else if (attr == 2) { uint32_t v = kind == SPLITK ? 4 : 1; memcpy(buf, &v, 4); }
  else if (attr == 3) { uint32_t v = kind == SPLITK ? 2 : 0; memcpy(buf, &v, 4); }
  else return INVALID;
  *written = 4;
  return 0;
}
int cublasLtMatmulAlgoCheck(void* h, Desc* d, Layout* a, Layout* b, Layout* c, Layout* dd, const Algo* algo, Result* res) {
  note("check m=%llu n=%llu algo=%d", (unsigned long long)dd->rows, (unsigned long long)dd->cols, algoId(algo));
  if (algoKind(algo) < 0) return INVALID;
  if (unsupportedRows(dd->cols)) return NOT_SUPPORTED;
  memset(res, 0, sizeof(Result));
  res->workspaceSize = kindWorkspace(algoKind(algo));
  return 0;
}
#endif
int P(Matmul)(void* h, Desc* d, const void* alpha, const void* A, Layout* la, const void* B, Layout* lb, const void* beta, const void* C, Layout* lc,
              void* D, Layout* ld, const Algo* algo, void* ws, size_t wsBytes, void* stream) {
  int kind = algoKind(algo);
  if (*(const float*)alpha != 1.0f || *(const float*)beta != 0.0f || kind < 0 || !ws || C != D || lc != ld || ld->type != BF16) return INVALID;
  if (kindWorkspace(kind) > wsBytes) return INVALID;
  int64_t m = ld->rows, n = ld->cols;
  if (unsupportedRows(n)) { note("matmul refused n=%lld algo=%d", (long long)n, algoId(algo)); return NOT_SUPPORTED; }
  int64_t k = d->transA == OP_T ? la->rows : la->cols;
  int64_t am = d->transA == OP_T ? la->cols : la->rows;
  int64_t bk = d->transB == OP_T ? lb->cols : lb->rows, bn = d->transB == OP_T ? lb->rows : lb->cols;
  if (am != m || bk != k || bn != n) { note("matmul shapes disagree"); return INVALID; }
  note("matmul m=%lld n=%lld k=%lld transA=%d transB=%d ws=%zu algo=%d", (long long)m, (long long)n, (long long)k, d->transA, d->transB, wsBytes, algoId(algo));
  for (int64_t j = 0; j < n; j++) {
    for (int64_t i = 0; i < m; i++) {
      float acc = 0.0f;
      for (int64_t l = 0; l < k; l++) {
        float a = elem(la, A, d->transA == OP_T ? l + i * la->ld : i + l * la->ld);
        float b = elem(lb, B, d->transB == OP_T ? j + l * lb->ld : l + j * lb->ld);
        acc = acc + a * b;
      }
      if (d->modeA == OUTER_VEC) acc = acc * d->sa[i];
      if (d->modeB == OUTER_VEC) acc = acc * d->sb[j];
      ((uint16_t*)D)[i + j * ld->ld] = f2b(acc);
    }
  }
  return 0;
}
`;

/**
 * useFakeGpuRuntimes (fakeGpuLibraries.ts) with the fake vendor GEMM libraries too:
 * <folder>/fakehipblaslt.so and fakecublaslt.so, compiled after the runtimes.
 */
export function useFakeGpuWithBlasLt(prefix: string, env: readonly string[]): FakeGpuFolder {
  const fake = useFakeGpuRuntimes(prefix, env);
  beforeAll(() => {
    fake.compile('fakehipblaslt', FAKE_BLASLT, ['-DFAKE_HIP']);
    fake.compile('fakecublaslt', FAKE_BLASLT);
  }, 60_000);
  return fake;
}
