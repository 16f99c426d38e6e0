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
// What both libraries' plans, states and calls share, over a library table (HipLt, CudaLt below:
// its API, handle types, destroyers, status text, and the steps that differ)

/** one shape's descriptors and algorithm (a shape without one keeps hasAlgo false) */
template <class Lt>
struct LtPlan {
  using Layout = typename Lt::Layout;
  const typename Lt::Api& api;
  typename Lt::Desc desc = nullptr;
  Layout a = nullptr, b = nullptr, d = nullptr;  // b, d: of the heuristic's row count
  typename Lt::Pref pref = nullptr;
  bool hasAlgo = false;
  typename Lt::Algo algo{};
  int32_t algoId = -1;  // a row-invariant plan's algorithm id where the library reports one, for messages
  /** a row-invariant plan's B and D layouts of each row count it ran */
  std::map<int64_t, std::pair<Layout, Layout>> rowLayouts;
  explicit LtPlan(const typename Lt::Api& x) : api(x) {}
  LtPlan(const LtPlan&) = delete;
  LtPlan& operator=(const LtPlan&) = delete;
  ~LtPlan() {
    for (auto& [n, bd] : rowLayouts) {
      if (bd.first) Lt::destroy(api, bd.first);
      if (bd.second) Lt::destroy(api, bd.second);
    }
    if (pref) Lt::destroy(api, pref);
    if (d) Lt::destroy(api, d);
    if (b) Lt::destroy(api, b);
    if (a) Lt::destroy(api, a);
    if (desc) Lt::destroy(api, desc);
  }
};

/** a device's library handle, workspace and plans (destroyed with the device, before its stream) */
template <class Lt>
struct LtState : ModuleRuntime::Extension {
  typename Lt::Runtime& rt;
  typename Lt::Api api;
  std::string lib;
  typename Lt::Handle handle = nullptr;
  void* workspace = nullptr;
  size_t workspaceBytes = 0;
  std::map<PlanKey, std::unique_ptr<LtPlan<Lt>>> plans;
  PlanBook book;
  explicit LtState(typename Lt::Runtime& r) : rt(r) {}
  ~LtState() override {
    plans.clear();  // before the handle they were made with
    if (workspace) rt.releaseScratch(workspace, workspaceBytes);
    if (handle) Lt::destroy(api, handle);
  }
};

/** the device's state, made on its first vendor GEMM (the caller holds the extension lock) */
template <class Lt>
LtState<Lt>& ltState(typename Lt::Runtime& rt) {
  auto& slot = rt.extension();
  if (auto* st = dynamic_cast<LtState<Lt>*>(slot.get())) return *st;
  std::string lib;
  const auto& api = Lt::load(&lib);
  auto fresh = std::make_unique<LtState<Lt>>(rt);
  fresh->api = api;
  fresh->lib = lib;
  if (auto s = Lt::create(api, &fresh->handle)) fail(ErrorKind::Runtime, std::string(Lt::kCreate) + " (" + lib + ") failed: " + Lt::status(api, s));
  fresh->workspace = rt.allocateScratch(kWorkspaceBytes, std::string("the ") + Lt::kName + " workspace");
  fresh->workspaceBytes = kWorkspaceBytes;
  auto& st = *fresh;
  slot = std::move(fresh);
  return st;
}

/** an FP8 GEMM's per-call scale pointers on the plan's descriptor */
template <class Lt>
void setScales(const LtPlan<Lt>& g, const Problem& p, const std::string& tag) {
  if (!p.scaleA) return;
  const void* sa = p.scaleA;
  const void* sb = p.scaleB;
  Lt::check(g.api, Lt::setDesc(g.api, g.desc, Lt::kAScalePointer, &sa, sizeof sa), std::string(Lt::kSetDesc) + "(A_SCALE_POINTER)", tag);
  Lt::check(g.api, Lt::setDesc(g.api, g.desc, Lt::kBScalePointer, &sb, sizeof sb), std::string(Lt::kSetDesc) + "(B_SCALE_POINTER)", tag);
}

/** one GEMM through the device's plan of its shape; false: the library has no algorithm for it (the caller runs the exact kernel) */
template <class Lt>
bool ltGemm(typename Lt::Runtime& rt, const Problem& p, typename Lt::DataType abType) {
  std::lock_guard<std::mutex> lock(rt.extensionMutex());
  rt.makeCurrent();
  LtState<Lt>& st = ltState<Lt>(rt);
  const std::string tag = Lt::tag(st, p);
  const PlanKey key = planKey(p, abType);
  auto it = st.plans.find(key);
  if (it == st.plans.end()) {
    it = st.plans.emplace(key, Lt::plan(st, p, abType, tag)).first;
  } else if (it->second->hasAlgo) {
    setScales(*it->second, p, tag);
  }
  LtPlan<Lt>& g = *it->second;
  if (!g.hasAlgo) return false;
  typename Lt::Layout b = g.b, d = g.d;
  // a row-invariant plan runs each M through layouts of its own (the planning row count's too), each made and counted once
  if (p.invariant) {
    auto [at, fresh] = g.rowLayouts.try_emplace(p.n, nullptr, nullptr);
    if (fresh) {
      Lt::rowLayouts(st, g, p, abType, at->second, tag);
      st.book.invariantRowCounts++;
    }
    b = at->second.first;
    d = at->second.second;
  }
  // a dry run makes the plan (at a session's warm-up) and calls nothing
  if (rt.dryRun()) return true;
  Lt::matmul(st, g, p, b, d, tag);
  return true;
}

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

struct HipLt {
  using Api = hl::HipBlasLtApi;
  using Status = hl::hipblasStatus_t;
  using Runtime = HipRuntime;
  using DataType = hl::hipDataType;
  using Handle = hl::hipblasLtHandle_t;
  using Desc = hl::hipblasLtMatmulDesc_t;
  using Layout = hl::hipblasLtMatrixLayout_t;
  using Pref = hl::hipblasLtMatmulPreference_t;
  using Algo = hl::hipblasLtMatmulAlgo_t;
  using Plan = LtPlan<HipLt>;
  using State = LtState<HipLt>;
  static constexpr const char* kName = "hipBLASLt";
  static constexpr const char* kCreate = "hipblasLtCreate";
  static constexpr const char* kSetDesc = "hipblasLtMatmulDescSetAttribute";
  static constexpr auto kAScalePointer = hl::HIPBLASLT_MATMUL_DESC_A_SCALE_POINTER;
  static constexpr auto kBScalePointer = hl::HIPBLASLT_MATMUL_DESC_B_SCALE_POINTER;

  static const Api& load(std::string* name) { return hipBlasLt(name); }
  static Status create(const Api& a, Handle* h) { return a.hipblasLtCreate(h); }
  static void destroy(const Api& a, Handle h) { a.hipblasLtDestroy(h); }
  static void destroy(const Api& a, Desc d) { a.hipblasLtMatmulDescDestroy(d); }
  static void destroy(const Api& a, Layout l) { a.hipblasLtMatrixLayoutDestroy(l); }
  static void destroy(const Api& a, Pref p) { a.hipblasLtMatmulPreferenceDestroy(p); }
  static Status setDesc(const Api& a, Desc d, hl::hipblasLtMatmulDescAttributes_t attr, const void* v, size_t n) {
    return a.hipblasLtMatmulDescSetAttribute(d, attr, v, n);
  }
  static std::string status(const Api&, Status s) { return hipStatus(s); }
  /** "<call> (<op>, <lib>) failed: <status>" */
  static void check(const Api&, Status s, const std::string& call, const std::string& tag) { hipCheck(s, call + tag); }
  static std::string tag(const State& st, const Problem& p) { return std::string(" (") + p.op + ", " + st.lib + ")"; }
  static std::unique_ptr<Plan> plan(State& st, const Problem& p, DataType abType, const std::string& tag);
  static void rowLayouts(State& st, Plan& g, const Problem& p, DataType abType, std::pair<Layout, Layout>& bd, const std::string& tag);
  static void matmul(State& st, const Plan& g, const Problem& p, Layout b, Layout d, const std::string& tag);
};

/** the shape's plan: descriptors, layouts, the heuristic's algorithm or none */
std::unique_ptr<HipLt::Plan> HipLt::plan(State& st, const Problem& p, DataType abType, const std::string& tag) {
  const auto& api = st.api;
  auto g = std::make_unique<Plan>(api);
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
    setScales(*g, p, tag);
  }
  hipCheck(api.hipblasLtMatrixLayoutCreate(&g->a, abType, p.k, p.m, p.k), "hipblasLtMatrixLayoutCreate(A)" + tag);
  hipCheck(api.hipblasLtMatrixLayoutCreate(&g->b, abType, p.k, planRows(p), p.k), "hipblasLtMatrixLayoutCreate(B)" + tag);
  hipCheck(api.hipblasLtMatrixLayoutCreate(&g->d, hl::HIP_R_16BF, p.m, planRows(p), p.m), "hipblasLtMatrixLayoutCreate(D)" + tag);
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

void HipLt::rowLayouts(State& st, Plan&, const Problem& p, DataType abType, std::pair<Layout, Layout>& bd, const std::string& tag) {
  hipCheck(st.api.hipblasLtMatrixLayoutCreate(&bd.first, abType, p.k, p.n, p.k), "hipblasLtMatrixLayoutCreate(B)" + tag);
  hipCheck(st.api.hipblasLtMatrixLayoutCreate(&bd.second, hl::HIP_R_16BF, p.m, p.n, p.m), "hipblasLtMatrixLayoutCreate(D)" + tag);
}

void HipLt::matmul(State& st, const Plan& g, const Problem& p, Layout b, Layout d, const std::string& tag) {
  const float alpha = 1.0f, beta = 0.0f;
  const hl::hipblasStatus_t s = st.api.hipblasLtMatmul(st.handle, g.desc, &alpha, p.a, g.a, p.b, b, &beta, p.d, d, p.d, d, &g.algo, st.workspace,
                                                       p.invariant ? 0 : st.workspaceBytes, st.rt.stream());
  if (s != hl::HIPBLAS_STATUS_SUCCESS && p.invariant) {
    int32_t solution = 0;
    std::memcpy(&solution, g.algo.data, sizeof solution);
    invariantRefused("hipBLASLt", "(solution " + std::to_string(solution) + ")", p, "hipblasLtMatmul: " + hipStatus(s), tag);
  }
  hipCheck(s, "hipblasLtMatmul" + tag + " for " + shapeText(p));
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

void cudaCheck(const cl::CuBlasLtApi& api, cl::cublasStatus_t s, const std::string& call, const std::string& tag) {
  if (s != cl::CUBLAS_STATUS_SUCCESS) fail(ErrorKind::Runtime, call + " failed" + tag + ": " + cuStatus(api, s));
}

struct CudaLt {
  using Api = cl::CuBlasLtApi;
  using Status = cl::cublasStatus_t;
  using Runtime = CudaRuntime;
  using DataType = cl::cudaDataType;
  using Handle = cl::cublasLtHandle_t;
  using Desc = cl::cublasLtMatmulDesc_t;
  using Layout = cl::cublasLtMatrixLayout_t;
  using Pref = cl::cublasLtMatmulPreference_t;
  using Algo = cl::cublasLtMatmulAlgo_t;
  using Plan = LtPlan<CudaLt>;
  using State = LtState<CudaLt>;
  static constexpr const char* kName = "cuBLASLt";
  static constexpr const char* kCreate = "cublasLtCreate";
  static constexpr const char* kSetDesc = "cublasLtMatmulDescSetAttribute";
  static constexpr auto kAScalePointer = cl::CUBLASLT_MATMUL_DESC_A_SCALE_POINTER;
  static constexpr auto kBScalePointer = cl::CUBLASLT_MATMUL_DESC_B_SCALE_POINTER;

  static const Api& load(std::string* name) { return cuBlasLt(name); }
  static Status create(const Api& a, Handle* h) { return a.cublasLtCreate(h); }
  static void destroy(const Api& a, Handle h) { a.cublasLtDestroy(h); }
  static void destroy(const Api& a, Desc d) { a.cublasLtMatmulDescDestroy(d); }
  static void destroy(const Api& a, Layout l) { a.cublasLtMatrixLayoutDestroy(l); }
  static void destroy(const Api& a, Pref p) { a.cublasLtMatmulPreferenceDestroy(p); }
  static Status setDesc(const Api& a, Desc d, cl::cublasLtMatmulDescAttributes_t attr, const void* v, size_t n) {
    return a.cublasLtMatmulDescSetAttribute(d, attr, v, n);
  }
  static std::string status(const Api& a, Status s) { return cuStatus(a, s); }
  /** "<call> failed (<op>, <lib> version V): <status>" */
  static void check(const Api& a, Status s, const std::string& call, const std::string& tag) { cudaCheck(a, s, call, tag); }
  static std::string tag(const State& st, const Problem& p) {
    return std::string(" (") + p.op + ", " + st.lib + " version " + std::to_string(st.api.cublasLtGetVersion()) + ")";
  }
  static std::unique_ptr<Plan> plan(State& st, const Problem& p, DataType abType, const std::string& tag);
  static void rowLayouts(State& st, Plan& g, const Problem& p, DataType abType, std::pair<Layout, Layout>& bd, const std::string& tag);
  static void matmul(State& st, const Plan& g, const Problem& p, Layout b, Layout d, const std::string& tag);
};

/** the shape's plan: descriptors, layouts, the heuristic's algorithm or none */
std::unique_ptr<CudaLt::Plan> CudaLt::plan(State& st, const Problem& p, DataType abType, const std::string& tag) {
  const auto& api = st.api;
  auto check = [&](cl::cublasStatus_t s, const std::string& call) { cudaCheck(api, s, call, tag); };
  auto g = std::make_unique<Plan>(api);
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
    setScales(*g, p, tag);
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

// each M's layouts, and the library's check that the one algorithm runs it (once per M)
void CudaLt::rowLayouts(State& st, Plan& g, const Problem& p, DataType abType, std::pair<Layout, Layout>& bd, const std::string& tag) {
  auto& [bn, dn] = bd;
  cudaCheck(st.api, st.api.cublasLtMatrixLayoutCreate(&bn, abType, p.k, p.n, p.k), "cublasLtMatrixLayoutCreate(B)", tag);
  cudaCheck(st.api, st.api.cublasLtMatrixLayoutCreate(&dn, cl::CUDA_R_16BF, p.m, p.n, p.m), "cublasLtMatrixLayoutCreate(D)", tag);
  cl::cublasLtMatmulHeuristicResult_t checked{};
  const cl::cublasStatus_t cs = st.api.cublasLtMatmulAlgoCheck(st.handle, g.desc, g.a, bn, dn, dn, &g.algo, &checked);
  const std::string algo = "(id " + std::to_string(g.algoId) + ")";
  if (cs != cl::CUBLAS_STATUS_SUCCESS) {
    st.api.cublasLtMatrixLayoutDestroy(bn);
    st.api.cublasLtMatrixLayoutDestroy(dn);
    g.rowLayouts.erase(p.n);  // its layouts go: the next call of this M is refused again
    invariantRefused("cuBLASLt", algo, p, "cublasLtMatmulAlgoCheck: " + cuStatus(st.api, cs), tag);
  }
  if (checked.workspaceSize > st.workspaceBytes) {
    invariantRefused("cuBLASLt", algo, p,
                     "it needs " + std::to_string(checked.workspaceSize) + " workspace bytes, more than the " + std::to_string(st.workspaceBytes), tag);
  }
}

void CudaLt::matmul(State& st, const Plan& g, const Problem& p, Layout b, Layout d, const std::string& tag) {
  const float alpha = 1.0f, beta = 0.0f;
  cudaCheck(st.api,
            st.api.cublasLtMatmul(st.handle, g.desc, &alpha, p.a, g.a, p.b, b, &beta, p.d, d, p.d, d, &g.algo, st.workspace, st.workspaceBytes, st.rt.stream()),
            "cublasLtMatmul for " + shapeText(p), tag);
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
  if (auto* h = dynamic_cast<HipRuntime*>(&rt)) return ltGemm<HipLt>(*h, p, hipblaslt::HIP_R_16BF);
  if (auto* c = dynamic_cast<CudaRuntime*>(&rt)) return ltGemm<CudaLt>(*c, p, cublaslt::CUDA_R_16BF);
  notAGpu("vendorLinearBf16", rt);
}

bool vendorFp8LinearPtpc(GpuRuntime& rt, const uint8_t* q, const float* sx, int64_t rows, int64_t inF, const uint8_t* qW, const float* sw, int64_t outF,
                         bool fnuz, uint16_t* y, bool rowInvariant) {
  if (rows <= 0 || outF <= 0) return true;
  if (inF <= 0) return false;
  Problem p{"fp8LinearPtpc", fnuz ? "fp8e4m3fnuz" : "fp8e4m3fn", outF, rows, inF, qW, q, y, sw, sx, rowInvariant};
  if (auto* h = dynamic_cast<HipRuntime*>(&rt)) return ltGemm<HipLt>(*h, p, fnuz ? hipblaslt::HIP_R_8F_E4M3_FNUZ : hipblaslt::HIP_R_8F_E4M3);
  if (auto* c = dynamic_cast<CudaRuntime*>(&rt)) {
    if (fnuz) fail(ErrorKind::Unsupported, "vendorFp8LinearPtpc: cuBLASLt has no e4m3fnuz type (the gfx94x encoding); the cuda device takes e4m3fn");
    return ltGemm<CudaLt>(*c, p, cublaslt::CUDA_R_8F_E4M3);
  }
  notAGpu("vendorFp8LinearPtpc", rt);
}

VendorGemmStats vendorGemmStats(GpuRuntime& rt) {
  auto* m = dynamic_cast<ModuleRuntime*>(&rt);
  if (!m) return {};
  std::lock_guard<std::mutex> lock(m->extensionMutex());
  if (const auto* st = dynamic_cast<const HipLt::State*>(m->extension().get())) return statsOf(*st);
  if (const auto* st = dynamic_cast<const CudaLt::State*>(m->extension().get())) return statsOf(*st);
  return {};
}

}  // namespace hcsp::gpu
