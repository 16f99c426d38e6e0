// The vendor GEMMs of the GPU devices (blaslt.h): hipBLASLt on the hip device, cuBLASLt on the
// cuda device, each loaded at run time (HCSP_HIPBLASLT_LIB / HCSP_CUBLASLT_LIB, else
// libhipblaslt.so.1, .so.0 / libcublasLt.so.13, .so.12) and declared by the project's own ABI
// headers (blaslt_abi_hip.h, blaslt_abi_cuda.h: the two libraries' enum values differ).
//
// Row-major y[rows, outF] = x[rows, inF] . w[outF, inF]^T in the libraries' column-major terms:
// a row-major [r, c] matrix is a column-major [c, r] one with ld = c, so
//   D = y^T (m = outF, n = rows, ld = outF) = op(A) op(B) with
//   A = w viewed as [inF, outF] (ld inF), op(A) = T;  B = x viewed as [inF, rows] (ld inF), op(B) = N
// ("TN", the layout cuBLASLt requires for fp8 too). bf16 A/B/C/D, fp32 compute and scale type,
// alpha 1, beta 0 (C = D), the first algorithm of the library's heuristic, a 32 MiB workspace
// per device (allocated on first use, counted against the device's limit).
//
// Plans: the first call of a shape (A/B type, scales on or off, m, n, k; the transposes and D's
// type never vary) creates its matmul descriptor, layouts and preference and asks the heuristic
// once; the device keeps them (its extension slot, destroyed with it) and every later call of
// the shape only sets the scale pointers, which differ per call, and runs the matmul. A shape the
// heuristic has no algorithm for (none returned, or NOT_SUPPORTED) is remembered as such: the
// caller runs the exact kernel for it, and it is said once on stderr and listed in
// vendorGemmStats (for --json).
//
// Row-invariant plans (GemmMode::VendorInvariant, blaslt.h): keyed without the row count. What
// each library lets a caller pin, through the C API this file binds:
//   cuBLASLt: the heuristic's algorithm is a full configuration (id, tile, SPLITK_NUM, REDUCTION_SCHEME,
//     swizzle, stages, ...) readable with cublasLtMatmulAlgoConfigGetAttribute; a candidate with
//     SPLITK_NUM > 1 or a reduction scheme is refused, and cublasLtMatmulAlgoCheck says whether the
//     kept one runs each new M (layouts of that M, the same descriptor and algorithm). No public
//     attribute names a stream-K schedule; gpu-check's SP on/off step is the end-to-end check.
//   hipBLASLt: the algorithm is a solution index; TensileLite picks its split-k ("GSU") per
//     problem unless the C++ extension API pins it, and no C call checks an algorithm for a
//     problem. So the plan asks for no workspace (a split-k or stream-K solution keeps its partial
//     tiles there: with none, one that would split for some M cannot run it and says so), refuses
//     candidates that report needing any, and requests HIPBLASLT_MATMUL_DESC_UNIFORM_SUMMATION_ORDER_EXT
//     (no per-workgroup k stagger) where the library has it; where it does not, that is said once
//     on stderr. A matmul the library refuses for an M is the error naming the shape.
//
// FP8 PTPC: both headers have the outer-vector scale mode (A/B_SCALE_MODE = OUTER_VEC_32F), so the
// scales are applied by the library's epilogue: A's vector has M = outF elements (sw, per output
// channel), B's has N = rows (sx, per token), D(i, j) = scaleA[i] * scaleB[j] * acc(i, j), rounded
// once to bf16. In which order the library multiplies the two scales is its own: the reference's
// scaleOrder attribute (layers/fp8Linear.ts: 'weightFirst' = fl(fl(acc * sw) * sx), CK's
// MultiplyMultiply; 'tokenFirst' = fl(fl(acc * sx) * sw), CK-tile's MultiDMultiply) only matters
// to the bit-exact kernel (GemmMode::Exact), and vendor mode is judged by the vendor GEMM
// precision (a few bf16 ulps), so blaslt.h does not take it. A library without the mode (hipBLASLt
// of ROCm 6, cuBLASLt before it knew OUTER_VEC_32F) refuses it and the error says so: no unit-scale
// fallback with a separate scaling kernel here (that kernel would belong in kernels/gemm.cu).
#include "blaslt.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "../host/errors.h"
#include "blaslt_abi_cuda.h"
#include "blaslt_abi_hip.h"
#include "cuda_runtime.h"
#include "hip_runtime.h"

namespace hcsp::gpu {

namespace {

constexpr size_t kWorkspaceBytes = 32u << 20;

/** a dlopen'd vendor library, loaded once per process (a failure is retried next time) */
struct Loaded {
  std::mutex mutex;
  void* handle = nullptr;
  std::string name;
};

void* openVendor(Loaded& slot, const char* envVar, const std::vector<std::string>& defaults, const char* what) {
  std::lock_guard<std::mutex> lock(slot.mutex);
  if (slot.handle) return slot.handle;
  std::vector<std::string> names = defaults;
  const char* override = std::getenv(envVar);
  if (override && *override) names = {override};
  std::string tried;
  for (const auto& n : names) {
    if (void* h = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      slot.handle = h;
      slot.name = n;
      return h;
    }
    tried += (tried.empty() ? "" : ", ") + n;
  }
  fail(ErrorKind::Unsupported, std::string("no ") + what + " found for the vendor GEMM: tried " + tried + " (set " + envVar + " to the library's path)");
}

template <class F>
void needSymbol(void* lib, const std::string& libName, const char* symbol, F& fn) {
  fn = reinterpret_cast<F>(dlsym(lib, symbol));
  if (!fn) fail(ErrorKind::Unsupported, libName + " has no " + symbol);
}

template <class F>
void optionalSymbol(void* lib, const char* symbol, F& fn) {
  fn = reinterpret_cast<F>(dlsym(lib, symbol));
}

/** a matmul's shapes in column-major terms (see the top of this file) */
struct Problem {
  const char* op;     // for messages: "linear" or "fp8LinearPtpc"
  const char* dtype;  // of A and B, for messages: "bf16", "fp8e4m3fnuz", "fp8e4m3fn"
  int64_t m, n, k;
  const void* a;                  // w
  const void* b;                  // x or q
  void* d;                        // y
  const float* scaleA = nullptr;  // sw [m]
  const float* scaleB = nullptr;  // sx [n]
  bool invariant = false;         // one algorithm for every n (GemmMode::VendorInvariant)
};

std::string shapeText(const Problem& p) {
  return "m=" + std::to_string(p.m) + " (outF), n=" + std::to_string(p.n) + " (rows), k=" + std::to_string(p.k) + " (inF)";
}

/** a plan's key: A/B's library type, the outer-vector scales on or off, row-invariant, m, n (0 for a row-invariant plan: every n), k */
using PlanKey = std::tuple<int, bool, bool, int64_t, int64_t, int64_t>;

PlanKey planKey(const Problem& p, int abType) { return {abType, p.scaleA != nullptr, p.invariant, p.m, p.invariant ? 0 : p.n, p.k}; }

/** the row count a plan's heuristic is asked for: the call's, or the fixed one of a row-invariant plan */
int64_t planRows(const Problem& p) { return p.invariant ? kInvariantPlanRows : p.n; }

/** an M a row-invariant plan's algorithm cannot run: the shape named, no other algorithm tried */
[[noreturn]] void invariantRefused(const char* library, const std::string& algo, const Problem& p, const std::string& why, const std::string& tag) {
  fail(ErrorKind::Unsupported, std::string("vendor-invariant: the ") + library + " algorithm " + algo + " chosen for " + p.op + " N=" + std::to_string(p.m) +
                                   " K=" + std::to_string(p.k) + " " + p.dtype + " does not run M=" + std::to_string(p.n) + tag + ": " + why +
                                   "; no other algorithm is tried (it could give these rows other bits): use --gemm vendor or exact");
}

/** what both libraries' states count besides their plans */
struct PlanBook {
  int64_t heuristicQueries = 0;
  std::vector<GemmFallback> fallbacks;
  int64_t invariantRowCounts = 0;
  int64_t refusedCandidates = 0;
  bool saidNoUniformOrder = false;

  /** a shape the heuristic has no algorithm for: listed, and said on stderr (its plan remembers it, so once) */
  void noAlgorithm(const char* library, const GpuRuntime& rt, const Problem& p, const std::string& why) {
    fallbacks.push_back({p.op, p.n, p.m, p.k, p.dtype});
    const std::string line = std::string("hcsp: ") + library + " has no algorithm for " + p.op + " M=" + std::to_string(p.n) + " N=" + std::to_string(p.m) +
                             " K=" + std::to_string(p.k) + " " + p.dtype + " on " + rt.name() + (why.empty() ? "" : " (" + why + ")") +
                             (p.invariant ? "; using the exact GEMM kernel for every M (vendor-invariant)\n" : "; using the exact GEMM kernel\n");
    std::fputs(line.c_str(), stderr);
    std::fflush(stderr);
  }
};

// ---------------------------------------------------------------------------------------------
// hipBLASLt

namespace hl = hipblaslt;

Loaded hipLib;

const hl::HipBlasLtApi& hipBlasLt(std::string* name) {
  static std::mutex mutex;
  static hl::HipBlasLtApi api;
  static bool bound = false;
  void* lib = openVendor(hipLib, "HCSP_HIPBLASLT_LIB", {"libhipblaslt.so.1", "libhipblaslt.so.0", "libhipblaslt.so"}, "hipBLASLt");
  std::lock_guard<std::mutex> lock(mutex);
  *name = hipLib.name;
  if (bound) return api;
  hl::HipBlasLtApi a;
  needSymbol(lib, hipLib.name, "hipblasLtCreate", a.hipblasLtCreate);
  needSymbol(lib, hipLib.name, "hipblasLtDestroy", a.hipblasLtDestroy);
  needSymbol(lib, hipLib.name, "hipblasLtMatmulDescCreate", a.hipblasLtMatmulDescCreate);
  needSymbol(lib, hipLib.name, "hipblasLtMatmulDescDestroy", a.hipblasLtMatmulDescDestroy);
  needSymbol(lib, hipLib.name, "hipblasLtMatmulDescSetAttribute", a.hipblasLtMatmulDescSetAttribute);
  needSymbol(lib, hipLib.name, "hipblasLtMatrixLayoutCreate", a.hipblasLtMatrixLayoutCreate);
  needSymbol(lib, hipLib.name, "hipblasLtMatrixLayoutDestroy", a.hipblasLtMatrixLayoutDestroy);
  needSymbol(lib, hipLib.name, "hipblasLtMatmulPreferenceCreate", a.hipblasLtMatmulPreferenceCreate);
  needSymbol(lib, hipLib.name, "hipblasLtMatmulPreferenceDestroy", a.hipblasLtMatmulPreferenceDestroy);
  needSymbol(lib, hipLib.name, "hipblasLtMatmulPreferenceSetAttribute", a.hipblasLtMatmulPreferenceSetAttribute);
  needSymbol(lib, hipLib.name, "hipblasLtMatmulAlgoGetHeuristic", a.hipblasLtMatmulAlgoGetHeuristic);
  needSymbol(lib, hipLib.name, "hipblasLtMatmul", a.hipblasLtMatmul);
  api = a;
  bound = true;
  return api;
}

std::string hipStatus(hl::hipblasStatus_t s) {
  const bool known = s >= 0 && s < static_cast<int>(sizeof(hl::kStatusNames) / sizeof(hl::kStatusNames[0]));
  return std::string(known ? hl::kStatusNames[s] : "unknown hipBLASLt status") + " (status " + std::to_string(s) + ")";
}

void hipCheck(hl::hipblasStatus_t s, const std::string& call) {
  if (s != hl::HIPBLAS_STATUS_SUCCESS) fail(ErrorKind::Runtime, call + " failed: " + hipStatus(s));
}

/** one shape's descriptors and algorithm (a shape without one keeps hasAlgo false) */
struct HipPlan {
  const hl::HipBlasLtApi& api;
  hl::hipblasLtMatmulDesc_t desc = nullptr;
  hl::hipblasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;  // b, d: of the plan's row count
  hl::hipblasLtMatmulPreference_t pref = nullptr;
  bool hasAlgo = false;
  hl::hipblasLtMatmulAlgo_t algo{};
  int64_t rows = 0;  // the row count b and d describe (the heuristic's)
  /** a row-invariant plan's B and D layouts of each row count it ran */
  std::map<int64_t, std::pair<hl::hipblasLtMatrixLayout_t, hl::hipblasLtMatrixLayout_t>> rowLayouts;
  explicit HipPlan(const hl::HipBlasLtApi& x) : api(x) {}
  HipPlan(const HipPlan&) = delete;
  HipPlan& operator=(const HipPlan&) = delete;
  ~HipPlan() {
    for (auto& [n, bd] : rowLayouts) {
      api.hipblasLtMatrixLayoutDestroy(bd.first);
      api.hipblasLtMatrixLayoutDestroy(bd.second);
    }
    if (pref) api.hipblasLtMatmulPreferenceDestroy(pref);
    if (d) api.hipblasLtMatrixLayoutDestroy(d);
    if (b) api.hipblasLtMatrixLayoutDestroy(b);
    if (a) api.hipblasLtMatrixLayoutDestroy(a);
    if (desc) api.hipblasLtMatmulDescDestroy(desc);
  }
};

/** a device's hipBLASLt handle, workspace and plans (destroyed with the device, before its stream) */
struct HipLtState : HipRuntime::Extension {
  HipRuntime& rt;
  hl::HipBlasLtApi api;
  std::string lib;
  hl::hipblasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
  size_t workspaceBytes = 0;
  std::map<PlanKey, std::unique_ptr<HipPlan>> plans;
  PlanBook book;
  explicit HipLtState(HipRuntime& r) : rt(r) {}
  ~HipLtState() override {
    plans.clear();  // before the handle they were made with
    if (workspace) rt.releaseScratch(workspace, workspaceBytes);
    if (handle) api.hipblasLtDestroy(handle);
  }
};

/** the device's state, made on its first vendor GEMM (the caller holds the extension lock) */
HipLtState& hipState(HipRuntime& rt) {
  auto& slot = rt.extension();
  if (auto* st = dynamic_cast<HipLtState*>(slot.get())) return *st;
  std::string lib;
  const auto& api = hipBlasLt(&lib);
  auto fresh = std::make_unique<HipLtState>(rt);
  fresh->api = api;
  fresh->lib = lib;
  hipCheck(api.hipblasLtCreate(&fresh->handle), "hipblasLtCreate (" + lib + ")");
  fresh->workspace = rt.allocateScratch(kWorkspaceBytes, "the hipBLASLt workspace");
  fresh->workspaceBytes = kWorkspaceBytes;
  auto& st = *fresh;
  slot = std::move(fresh);
  return st;
}

void hipSetScales(const HipPlan& g, const Problem& p, const std::string& tag) {
  if (!p.scaleA) return;
  const void* sa = p.scaleA;
  const void* sb = p.scaleB;
  hipCheck(g.api.hipblasLtMatmulDescSetAttribute(g.desc, hl::HIPBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa, sizeof sa),
           "hipblasLtMatmulDescSetAttribute(A_SCALE_POINTER)" + tag);
  hipCheck(g.api.hipblasLtMatmulDescSetAttribute(g.desc, hl::HIPBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb, sizeof sb),
           "hipblasLtMatmulDescSetAttribute(B_SCALE_POINTER)" + tag);
}

/** the shape's plan: descriptors, layouts, the heuristic's algorithm or none */
std::unique_ptr<HipPlan> hipPlan(HipLtState& st, const Problem& p, hl::hipDataType abType, const std::string& tag) {
  const auto& api = st.api;
  auto g = std::make_unique<HipPlan>(api);
  hipCheck(api.hipblasLtMatmulDescCreate(&g->desc, hl::HIPBLAS_COMPUTE_32F, hl::HIP_R_32F), "hipblasLtMatmulDescCreate" + tag);
  const hl::hipblasOperation_t opT = hl::HIPBLAS_OP_T, opN = hl::HIPBLAS_OP_N;
  hipCheck(api.hipblasLtMatmulDescSetAttribute(g->desc, hl::HIPBLASLT_MATMUL_DESC_TRANSA, &opT, sizeof opT), "hipblasLtMatmulDescSetAttribute(TRANSA)" + tag);
  hipCheck(api.hipblasLtMatmulDescSetAttribute(g->desc, hl::HIPBLASLT_MATMUL_DESC_TRANSB, &opN, sizeof opN), "hipblasLtMatmulDescSetAttribute(TRANSB)" + tag);
  if (p.invariant) {
    const int32_t on = 1;
    if (api.hipblasLtMatmulDescSetAttribute(g->desc, hl::HIPBLASLT_MATMUL_DESC_UNIFORM_SUMMATION_ORDER_EXT, &on, sizeof on) != hl::HIPBLAS_STATUS_SUCCESS &&
        !st.book.saidNoUniformOrder) {
      st.book.saidNoUniformOrder = true;
      const std::string line =
          "hcsp: " + st.lib + " on " + st.rt.name() +
          " has no uniform summation order (HIPBLASLT_MATMUL_DESC_UNIFORM_SUMMATION_ORDER_EXT): vendor-invariant pins one solution per (N, K) "
          "with no workspace (no split-k), but not its per-workgroup k stagger; gpu-check's SP on/off step tells whether rows still match\n";
      std::fputs(line.c_str(), stderr);
      std::fflush(stderr);
    }
  }
  if (p.scaleA) {
    const hl::hipblasLtMatmulMatrixScale_t mode = hl::HIPBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
    for (auto attr : {hl::HIPBLASLT_MATMUL_DESC_A_SCALE_MODE, hl::HIPBLASLT_MATMUL_DESC_B_SCALE_MODE}) {
      hl::hipblasStatus_t s = api.hipblasLtMatmulDescSetAttribute(g->desc, attr, &mode, sizeof mode);
      if (s != hl::HIPBLAS_STATUS_SUCCESS) {
        fail(ErrorKind::Unsupported, std::string("hipblasLtMatmulDescSetAttribute(") + (attr == hl::HIPBLASLT_MATMUL_DESC_A_SCALE_MODE ? "A" : "B") +
                                         "_SCALE_MODE = OUTER_VEC_32F) failed" + tag + ": " + hipStatus(s) +
                                         ": this hipBLASLt has no per-token x per-channel scale mode (hipBLASLt 1.x of ROCm 7 has it); use the exact GEMM");
      }
    }
    hipSetScales(*g, p, tag);
  }
  hipCheck(api.hipblasLtMatrixLayoutCreate(&g->a, abType, p.k, p.m, p.k), "hipblasLtMatrixLayoutCreate(A)" + tag);
  g->rows = planRows(p);
  hipCheck(api.hipblasLtMatrixLayoutCreate(&g->b, abType, p.k, g->rows, p.k), "hipblasLtMatrixLayoutCreate(B)" + tag);
  hipCheck(api.hipblasLtMatrixLayoutCreate(&g->d, hl::HIP_R_16BF, p.m, g->rows, p.m), "hipblasLtMatrixLayoutCreate(D)" + tag);
  hipCheck(api.hipblasLtMatmulPreferenceCreate(&g->pref), "hipblasLtMatmulPreferenceCreate" + tag);
  // a row-invariant plan allows no workspace: split-k and stream-K solutions keep their partial tiles there
  const uint64_t ws = p.invariant ? 0 : st.workspaceBytes;
  hipCheck(api.hipblasLtMatmulPreferenceSetAttribute(g->pref, hl::HIPBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws),
           "hipblasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)" + tag);
  hl::hipblasLtMatmulHeuristicResult_t results[kInvariantCandidates]{};
  int found = 0;
  st.book.heuristicQueries++;
  hl::hipblasStatus_t hs =
      api.hipblasLtMatmulAlgoGetHeuristic(st.handle, g->desc, g->a, g->b, g->d, g->d, g->pref, p.invariant ? kInvariantCandidates : 1, results, &found);
  int pick = 0;
  if (p.invariant && hs == hl::HIPBLAS_STATUS_SUCCESS) {
    for (pick = 0; pick < found; pick++) {
      if (results[pick].state != hl::HIPBLAS_STATUS_SUCCESS) continue;
      if (results[pick].workspaceSize == 0) break;
      st.book.refusedCandidates++;
    }
    if (found >= 1 && pick == found) {
      st.book.noAlgorithm("hipBLASLt", st.rt, p,
                          "none of its " + std::to_string(found) + " candidates runs with no workspace (split-k and stream-K solutions need some)");
      return g;
    }
  }
  const hl::hipblasLtMatmulHeuristicResult_t& result = results[pick];
  if (hs == hl::HIPBLAS_STATUS_NOT_SUPPORTED || (hs == hl::HIPBLAS_STATUS_SUCCESS && (found < 1 || result.state != hl::HIPBLAS_STATUS_SUCCESS))) {
    st.book.noAlgorithm("hipBLASLt", st.rt, p, hs != hl::HIPBLAS_STATUS_SUCCESS ? hipStatus(hs) : found >= 1 ? hipStatus(result.state) : "");
    return g;
  }
  hipCheck(hs, "hipblasLtMatmulAlgoGetHeuristic" + tag);
  if (result.workspaceSize > ws) {
    fail(ErrorKind::Runtime, "hipblasLtMatmulAlgoGetHeuristic chose an algorithm needing " + std::to_string(result.workspaceSize) + " workspace bytes" + tag +
                                 ", more than the " + std::to_string(st.workspaceBytes) + " allowed");
  }
  g->algo = result.algo;
  g->hasAlgo = true;
  return g;
}

bool hipGemm(HipRuntime& rt, const Problem& p, hl::hipDataType abType) {
  std::lock_guard<std::mutex> lock(rt.extensionMutex());
  rt.makeCurrent();
  HipLtState& st = hipState(rt);
  const std::string tag = std::string(" (") + p.op + ", " + st.lib + ")";
  const PlanKey key = planKey(p, abType);
  auto it = st.plans.find(key);
  if (it == st.plans.end()) {
    it = st.plans.emplace(key, hipPlan(st, p, abType, tag)).first;
  } else if (it->second->hasAlgo) {
    hipSetScales(*it->second, p, tag);
  }
  HipPlan& g = *it->second;
  if (!g.hasAlgo) return false;
  hl::hipblasLtMatrixLayout_t b = g.b, d = g.d;
  // a row-invariant plan runs each M through layouts of its own (the planning row count's too), each counted once
  if (p.invariant) {
    auto [at, fresh] = g.rowLayouts.try_emplace(p.n, nullptr, nullptr);
    if (fresh) {
      hipCheck(st.api.hipblasLtMatrixLayoutCreate(&at->second.first, abType, p.k, p.n, p.k), "hipblasLtMatrixLayoutCreate(B)" + tag);
      hipCheck(st.api.hipblasLtMatrixLayoutCreate(&at->second.second, hl::HIP_R_16BF, p.m, p.n, p.m), "hipblasLtMatrixLayoutCreate(D)" + tag);
      st.book.invariantRowCounts++;
    }
    b = at->second.first;
    d = at->second.second;
  }
  // a dry run makes the plan (at a session's warm-up) and calls nothing
  if (rt.dryRun()) return true;
  const float alpha = 1.0f, beta = 0.0f;
  const hl::hipblasStatus_t s = st.api.hipblasLtMatmul(st.handle, g.desc, &alpha, p.a, g.a, p.b, b, &beta, p.d, d, p.d, d, &g.algo, st.workspace,
                                                       p.invariant ? 0 : st.workspaceBytes, rt.stream());
  if (s != hl::HIPBLAS_STATUS_SUCCESS && p.invariant) {
    int32_t solution = 0;
    std::memcpy(&solution, g.algo.data, sizeof solution);
    invariantRefused("hipBLASLt", "(solution " + std::to_string(solution) + ")", p, "hipblasLtMatmul: " + hipStatus(s), tag);
  }
  hipCheck(s, "hipblasLtMatmul" + tag + " for " + shapeText(p));
  return true;
}

// ---------------------------------------------------------------------------------------------
// cuBLASLt

namespace cl = cublaslt;

Loaded cudaLib;

const cl::CuBlasLtApi& cuBlasLt(std::string* name) {
  static std::mutex mutex;
  static cl::CuBlasLtApi api;
  static bool bound = false;
  void* lib = openVendor(cudaLib, "HCSP_CUBLASLT_LIB", {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"}, "cuBLASLt");
  std::lock_guard<std::mutex> lock(mutex);
  *name = cudaLib.name;
  if (bound) return api;
  cl::CuBlasLtApi a;
  needSymbol(lib, cudaLib.name, "cublasLtCreate", a.cublasLtCreate);
  needSymbol(lib, cudaLib.name, "cublasLtDestroy", a.cublasLtDestroy);
  needSymbol(lib, cudaLib.name, "cublasLtGetVersion", a.cublasLtGetVersion);
  optionalSymbol(lib, "cublasLtGetStatusName", a.cublasLtGetStatusName);
  optionalSymbol(lib, "cublasLtGetStatusString", a.cublasLtGetStatusString);
  needSymbol(lib, cudaLib.name, "cublasLtMatmulDescCreate", a.cublasLtMatmulDescCreate);
  needSymbol(lib, cudaLib.name, "cublasLtMatmulDescDestroy", a.cublasLtMatmulDescDestroy);
  needSymbol(lib, cudaLib.name, "cublasLtMatmulDescSetAttribute", a.cublasLtMatmulDescSetAttribute);
  needSymbol(lib, cudaLib.name, "cublasLtMatrixLayoutCreate", a.cublasLtMatrixLayoutCreate);
  needSymbol(lib, cudaLib.name, "cublasLtMatrixLayoutDestroy", a.cublasLtMatrixLayoutDestroy);
  needSymbol(lib, cudaLib.name, "cublasLtMatmulPreferenceCreate", a.cublasLtMatmulPreferenceCreate);
  needSymbol(lib, cudaLib.name, "cublasLtMatmulPreferenceDestroy", a.cublasLtMatmulPreferenceDestroy);
  needSymbol(lib, cudaLib.name, "cublasLtMatmulPreferenceSetAttribute", a.cublasLtMatmulPreferenceSetAttribute);
  needSymbol(lib, cudaLib.name, "cublasLtMatmulAlgoGetHeuristic", a.cublasLtMatmulAlgoGetHeuristic);
  needSymbol(lib, cudaLib.name, "cublasLtMatmul", a.cublasLtMatmul);
  optionalSymbol(lib, "cublasLtMatmulAlgoConfigGetAttribute", a.cublasLtMatmulAlgoConfigGetAttribute);
  optionalSymbol(lib, "cublasLtMatmulAlgoCheck", a.cublasLtMatmulAlgoCheck);
  api = a;
  bound = true;
  return api;
}

std::string cuStatus(const cl::CuBlasLtApi& api, cl::cublasStatus_t s) {
  const char* name = api.cublasLtGetStatusName ? api.cublasLtGetStatusName(s) : nullptr;
  const char* text = api.cublasLtGetStatusString ? api.cublasLtGetStatusString(s) : nullptr;
  std::string out = name && *name ? name : "cuBLASLt status";
  if (text && *text) out += std::string(" ") + text;
  return out + " (status " + std::to_string(s) + ")";
}

/** one shape's descriptors and algorithm (a shape without one keeps hasAlgo false) */
struct CudaPlan {
  const cl::CuBlasLtApi& api;
  cl::cublasLtMatmulDesc_t desc = nullptr;
  cl::cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;  // b, d: of the heuristic's row count
  cl::cublasLtMatmulPreference_t pref = nullptr;
  bool hasAlgo = false;
  cl::cublasLtMatmulAlgo_t algo{};
  int32_t algoId = -1;  // a row-invariant plan's CUBLASLT_ALGO_CONFIG_ID, for messages
  /** a row-invariant plan's B and D layouts of each row count it ran (cublasLtMatmulAlgoCheck passed) */
  std::map<int64_t, std::pair<cl::cublasLtMatrixLayout_t, cl::cublasLtMatrixLayout_t>> rowLayouts;
  explicit CudaPlan(const cl::CuBlasLtApi& x) : api(x) {}
  CudaPlan(const CudaPlan&) = delete;
  CudaPlan& operator=(const CudaPlan&) = delete;
  ~CudaPlan() {
    for (auto& [n, bd] : rowLayouts) {
      if (bd.first) api.cublasLtMatrixLayoutDestroy(bd.first);
      if (bd.second) api.cublasLtMatrixLayoutDestroy(bd.second);
    }
    if (pref) api.cublasLtMatmulPreferenceDestroy(pref);
    if (d) api.cublasLtMatrixLayoutDestroy(d);
    if (b) api.cublasLtMatrixLayoutDestroy(b);
    if (a) api.cublasLtMatrixLayoutDestroy(a);
    if (desc) api.cublasLtMatmulDescDestroy(desc);
  }
};

/** a device's cuBLASLt handle, workspace and plans (destroyed with the device, before its stream) */
struct CudaLtState : CudaRuntime::Extension {
  CudaRuntime& rt;
  cl::CuBlasLtApi api;
  std::string lib;
  cl::cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
  size_t workspaceBytes = 0;
  std::map<PlanKey, std::unique_ptr<CudaPlan>> plans;
  PlanBook book;
  explicit CudaLtState(CudaRuntime& r) : rt(r) {}
  ~CudaLtState() override {
    plans.clear();  // before the handle they were made with
    if (workspace) rt.releaseScratch(workspace, workspaceBytes);
    if (handle) api.cublasLtDestroy(handle);
  }
};

/** the device's state, made on its first vendor GEMM (the caller holds the extension lock) */
CudaLtState& cudaState(CudaRuntime& rt) {
  auto& slot = rt.extension();
  if (auto* st = dynamic_cast<CudaLtState*>(slot.get())) return *st;
  std::string lib;
  const auto& api = cuBlasLt(&lib);
  auto fresh = std::make_unique<CudaLtState>(rt);
  fresh->api = api;
  fresh->lib = lib;
  if (cl::cublasStatus_t s = api.cublasLtCreate(&fresh->handle)) fail(ErrorKind::Runtime, "cublasLtCreate (" + lib + ") failed: " + cuStatus(api, s));
  fresh->workspace = rt.allocateScratch(kWorkspaceBytes, "the cuBLASLt workspace");
  fresh->workspaceBytes = kWorkspaceBytes;
  auto& st = *fresh;
  slot = std::move(fresh);
  return st;
}

void cudaCheck(const cl::CuBlasLtApi& api, cl::cublasStatus_t s, const std::string& call, const std::string& tag) {
  if (s != cl::CUBLAS_STATUS_SUCCESS) fail(ErrorKind::Runtime, call + " failed" + tag + ": " + cuStatus(api, s));
}

void cudaSetScales(const CudaPlan& g, const Problem& p, const std::string& tag) {
  if (!p.scaleA) return;
  const void* sa = p.scaleA;
  const void* sb = p.scaleB;
  cudaCheck(g.api, g.api.cublasLtMatmulDescSetAttribute(g.desc, cl::CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa, sizeof sa),
            "cublasLtMatmulDescSetAttribute(A_SCALE_POINTER)", tag);
  cudaCheck(g.api, g.api.cublasLtMatmulDescSetAttribute(g.desc, cl::CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb, sizeof sb),
            "cublasLtMatmulDescSetAttribute(B_SCALE_POINTER)", tag);
}

/** the shape's plan: descriptors, layouts, the heuristic's algorithm or none */
std::unique_ptr<CudaPlan> cudaPlan(CudaLtState& st, const Problem& p, cl::cudaDataType abType, const std::string& tag) {
  const auto& api = st.api;
  auto check = [&](cl::cublasStatus_t s, const std::string& call) { cudaCheck(api, s, call, tag); };
  auto g = std::make_unique<CudaPlan>(api);
  check(api.cublasLtMatmulDescCreate(&g->desc, cl::CUBLAS_COMPUTE_32F, cl::CUDA_R_32F), "cublasLtMatmulDescCreate");
  const cl::cublasOperation_t opT = cl::CUBLAS_OP_T, opN = cl::CUBLAS_OP_N;
  check(api.cublasLtMatmulDescSetAttribute(g->desc, cl::CUBLASLT_MATMUL_DESC_TRANSA, &opT, sizeof opT), "cublasLtMatmulDescSetAttribute(TRANSA)");
  check(api.cublasLtMatmulDescSetAttribute(g->desc, cl::CUBLASLT_MATMUL_DESC_TRANSB, &opN, sizeof opN), "cublasLtMatmulDescSetAttribute(TRANSB)");
  if (p.scaleA) {
    const cl::cublasLtMatmulMatrixScale_t mode = cl::CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
    for (auto attr : {cl::CUBLASLT_MATMUL_DESC_A_SCALE_MODE, cl::CUBLASLT_MATMUL_DESC_B_SCALE_MODE}) {
      cl::cublasStatus_t s = api.cublasLtMatmulDescSetAttribute(g->desc, attr, &mode, sizeof mode);
      if (s != cl::CUBLAS_STATUS_SUCCESS) {
        fail(ErrorKind::Unsupported, std::string("cublasLtMatmulDescSetAttribute(") + (attr == cl::CUBLASLT_MATMUL_DESC_A_SCALE_MODE ? "A" : "B") +
                                         "_SCALE_MODE = OUTER_VEC_32F) failed" + tag + ": " + cuStatus(api, s) +
                                         ": this cuBLASLt has no per-token x per-channel scale mode; use the exact GEMM");
      }
    }
    cudaSetScales(*g, p, tag);
  }
  check(api.cublasLtMatrixLayoutCreate(&g->a, abType, p.k, p.m, p.k), "cublasLtMatrixLayoutCreate(A)");
  if (p.invariant && !(api.cublasLtMatmulAlgoConfigGetAttribute && api.cublasLtMatmulAlgoCheck)) {
    fail(ErrorKind::Unsupported, "vendor-invariant needs cublasLtMatmulAlgoConfigGetAttribute and cublasLtMatmulAlgoCheck, which " + st.lib + " lacks" + tag);
  }
  check(api.cublasLtMatrixLayoutCreate(&g->b, abType, p.k, planRows(p), p.k), "cublasLtMatrixLayoutCreate(B)");
  check(api.cublasLtMatrixLayoutCreate(&g->d, cl::CUDA_R_16BF, p.m, planRows(p), p.m), "cublasLtMatrixLayoutCreate(D)");
  check(api.cublasLtMatmulPreferenceCreate(&g->pref), "cublasLtMatmulPreferenceCreate");
  const uint64_t ws = st.workspaceBytes;
  check(api.cublasLtMatmulPreferenceSetAttribute(g->pref, cl::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws),
        "cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)");
  cl::cublasLtMatmulHeuristicResult_t results[kInvariantCandidates]{};
  int found = 0;
  st.book.heuristicQueries++;
  cl::cublasStatus_t hs =
      api.cublasLtMatmulAlgoGetHeuristic(st.handle, g->desc, g->a, g->b, g->d, g->d, g->pref, p.invariant ? kInvariantCandidates : 1, results, &found);
  int pick = 0;
  if (p.invariant && hs == cl::CUBLAS_STATUS_SUCCESS) {
    // the first candidate whose k is one sequence per output: split-k's partition and reduction are refused
    auto config = [&](const cl::cublasLtMatmulAlgo_t& algo, cl::cublasLtMatmulAlgoConfigAttributes_t attr, auto& value) {
      size_t written = 0;
      return api.cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &value, sizeof value, &written) == cl::CUBLAS_STATUS_SUCCESS && written == sizeof value;
    };
    for (pick = 0; pick < found; pick++) {
      const auto& r = results[pick];
      if (r.state != cl::CUBLAS_STATUS_SUCCESS || r.workspaceSize > st.workspaceBytes) continue;
      uint32_t splitK = 0, reduction = 0;
      int32_t id = -1;
      if (config(r.algo, cl::CUBLASLT_ALGO_CONFIG_SPLITK_NUM, splitK) && config(r.algo, cl::CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, reduction) &&
          config(r.algo, cl::CUBLASLT_ALGO_CONFIG_ID, id) && splitK <= 1 && reduction == cl::CUBLASLT_REDUCTION_SCHEME_NONE) {
        g->algoId = id;
        break;
      }
      st.book.refusedCandidates++;
    }
    if (found >= 1 && pick == found) {
      st.book.noAlgorithm("cuBLASLt", st.rt, p,
                          "none of its " + std::to_string(found) + " candidates sums each output's k in one sequence (no split-k) within the workspace");
      return g;
    }
  }
  const cl::cublasLtMatmulHeuristicResult_t& result = results[pick];
  if (hs == cl::CUBLAS_STATUS_NOT_SUPPORTED || (hs == cl::CUBLAS_STATUS_SUCCESS && (found < 1 || result.state != cl::CUBLAS_STATUS_SUCCESS))) {
    st.book.noAlgorithm("cuBLASLt", st.rt, p, hs != cl::CUBLAS_STATUS_SUCCESS ? cuStatus(api, hs) : found >= 1 ? cuStatus(api, result.state) : "");
    return g;
  }
  check(hs, "cublasLtMatmulAlgoGetHeuristic");
  if (result.workspaceSize > st.workspaceBytes) {
    fail(ErrorKind::Runtime, "cublasLtMatmulAlgoGetHeuristic chose an algorithm needing " + std::to_string(result.workspaceSize) + " workspace bytes" + tag +
                                 ", more than the " + std::to_string(st.workspaceBytes) + " allowed");
  }
  g->algo = result.algo;
  g->hasAlgo = true;
  return g;
}

bool cudaGemm(CudaRuntime& rt, const Problem& p, cl::cudaDataType abType) {
  std::lock_guard<std::mutex> lock(rt.extensionMutex());
  rt.makeCurrent();
  CudaLtState& st = cudaState(rt);
  const std::string tag = std::string(" (") + p.op + ", " + st.lib + " version " + std::to_string(st.api.cublasLtGetVersion()) + ")";
  const PlanKey key = planKey(p, abType);
  auto it = st.plans.find(key);
  if (it == st.plans.end()) {
    it = st.plans.emplace(key, cudaPlan(st, p, abType, tag)).first;
  } else if (it->second->hasAlgo) {
    cudaSetScales(*it->second, p, tag);
  }
  CudaPlan& g = *it->second;
  if (!g.hasAlgo) return false;
  cl::cublasLtMatrixLayout_t b = g.b, d = g.d;
  // a row-invariant plan: each M's layouts, and the library's check that the one algorithm runs it (once per M)
  if (p.invariant) {
    auto [at, fresh] = g.rowLayouts.try_emplace(p.n, nullptr, nullptr);
    if (fresh) {
      auto& [bn, dn] = at->second;
      cudaCheck(st.api, st.api.cublasLtMatrixLayoutCreate(&bn, abType, p.k, p.n, p.k), "cublasLtMatrixLayoutCreate(B)", tag);
      cudaCheck(st.api, st.api.cublasLtMatrixLayoutCreate(&dn, cl::CUDA_R_16BF, p.m, p.n, p.m), "cublasLtMatrixLayoutCreate(D)", tag);
      cl::cublasLtMatmulHeuristicResult_t checked{};
      const cl::cublasStatus_t cs = st.api.cublasLtMatmulAlgoCheck(st.handle, g.desc, g.a, bn, dn, dn, &g.algo, &checked);
      const std::string algo = "(id " + std::to_string(g.algoId) + ")";
      if (cs != cl::CUBLAS_STATUS_SUCCESS) {
        g.rowLayouts.erase(at);  // its layouts go: the next call of this M is refused again
        st.api.cublasLtMatrixLayoutDestroy(bn);
        st.api.cublasLtMatrixLayoutDestroy(dn);
        invariantRefused("cuBLASLt", algo, p, "cublasLtMatmulAlgoCheck: " + cuStatus(st.api, cs), tag);
      }
      if (checked.workspaceSize > st.workspaceBytes) {
        invariantRefused("cuBLASLt", algo, p,
                         "it needs " + std::to_string(checked.workspaceSize) + " workspace bytes, more than the " + std::to_string(st.workspaceBytes), tag);
      }
      st.book.invariantRowCounts++;
    }
    b = at->second.first;
    d = at->second.second;
  }
  // a dry run makes the plan (at a session's warm-up) and calls nothing
  if (rt.dryRun()) return true;
  const float alpha = 1.0f, beta = 0.0f;
  cudaCheck(st.api,
            st.api.cublasLtMatmul(st.handle, g.desc, &alpha, p.a, g.a, p.b, b, &beta, p.d, d, p.d, d, &g.algo, st.workspace, st.workspaceBytes, rt.stream()),
            "cublasLtMatmul for " + shapeText(p), tag);
  return true;
}

template <class State>
VendorGemmStats statsOf(const State& st) {
  VendorGemmStats out;
  for (const auto& [key, plan] : st.plans) {
    out.plans += plan->hasAlgo ? 1 : 0;
    out.invariantPlans += plan->hasAlgo && std::get<2>(key) ? 1 : 0;
  }
  out.heuristicQueries = st.book.heuristicQueries;
  out.fallbacks = st.book.fallbacks;
  out.invariantRowCounts = st.book.invariantRowCounts;
  out.refusedCandidates = st.book.refusedCandidates;
  return out;
}

[[noreturn]] void notAGpu(const char* fn, const GpuRuntime& rt) {
  fail(ErrorKind::Unsupported, std::string(fn) + ": the vendor GEMM runs on the hip and cuda devices, not on the " + rt.kind() + " device");
}

}  // namespace

bool vendorLinearBf16(GpuRuntime& rt, const uint16_t* x, int64_t rows, int64_t inF, const uint16_t* w, int64_t outF, uint16_t* y, bool rowInvariant) {
  if (rows <= 0 || outF <= 0) return true;
  // an empty k: y is all zeros, which the exact kernel writes (the libraries refuse k = 0)
  if (inF <= 0) return false;
  Problem p{"linear", "bf16", outF, rows, inF, w, x, y};
  p.invariant = rowInvariant;
  if (auto* h = dynamic_cast<HipRuntime*>(&rt)) return hipGemm(*h, p, hipblaslt::HIP_R_16BF);
  if (auto* c = dynamic_cast<CudaRuntime*>(&rt)) return cudaGemm(*c, p, cublaslt::CUDA_R_16BF);
  notAGpu("vendorLinearBf16", rt);
}

bool vendorFp8LinearPtpc(GpuRuntime& rt, const uint8_t* q, const float* sx, int64_t rows, int64_t inF, const uint8_t* qW, const float* sw, int64_t outF,
                         bool fnuz, uint16_t* y, bool rowInvariant) {
  if (rows <= 0 || outF <= 0) return true;
  if (inF <= 0) return false;
  Problem p{"fp8LinearPtpc", fnuz ? "fp8e4m3fnuz" : "fp8e4m3fn", outF, rows, inF, qW, q, y, sw, sx, rowInvariant};
  if (auto* h = dynamic_cast<HipRuntime*>(&rt)) return hipGemm(*h, p, fnuz ? hipblaslt::HIP_R_8F_E4M3_FNUZ : hipblaslt::HIP_R_8F_E4M3);
  if (auto* c = dynamic_cast<CudaRuntime*>(&rt)) {
    if (fnuz) fail(ErrorKind::Unsupported, "vendorFp8LinearPtpc: cuBLASLt has no e4m3fnuz type (the gfx94x encoding); the cuda device takes e4m3fn");
    return cudaGemm(*c, p, cublaslt::CUDA_R_8F_E4M3);
  }
  notAGpu("vendorFp8LinearPtpc", rt);
}

VendorGemmStats vendorGemmStats(GpuRuntime& rt) {
  auto* m = dynamic_cast<ModuleRuntime*>(&rt);
  if (!m) return {};
  std::lock_guard<std::mutex> lock(m->extensionMutex());
  if (const auto* st = dynamic_cast<const HipLtState*>(m->extension().get())) return statsOf(*st);
  if (const auto* st = dynamic_cast<const CudaLtState*>(m->extension().get())) return statsOf(*st);
  return {};
}

}  // namespace hcsp::gpu
